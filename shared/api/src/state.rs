//! The application state every route shares, built once per process by
//! [`App::new`]: the Lambdas' cold start, `ingester-local serve` and the tests.

use crate::auth::Access;
use std::time::Duration;
use storage::{Store, StoreError};
use usecases::registry::RegistryCache;

/// Which routes a process serves: each Lambda its own, the local server all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteSet {
    /// `POST /readings` and the renames (`PUT`): the ingest function.
    Ingest,
    /// The JSON reads (every other `GET`): the query function.
    Query,
    /// What people and Grafana look at: the dashboard's pages, charts and
    /// sign-in, and InfluxQL on `/query`: the dashboard function. Apart from
    /// the JSON reads so that neither function links the other's code
    /// (issue 43: the query function under 8 MB).
    Dashboard,
    /// Both: `ingester-local serve`.
    All,
}

impl RouteSet {
    /// Whether this set serves a route of the given kind.
    pub const fn serves(self, kind: RouteSet) -> bool {
        matches!(
            (self, kind),
            (RouteSet::All, _)
                | (RouteSet::Ingest, RouteSet::Ingest)
                | (RouteSet::Query, RouteSet::Query)
                | (RouteSet::Dashboard, RouteSet::Dashboard)
        )
    }
}

/// The routes a binary can serve, known when it is compiled: a Lambda
/// links the handlers of its own set only (issue 43), the others being dead
/// code its optimiser drops. The process's `App::routes` narrows it further
/// at run time (tests serve one set from a binary that links all).
pub trait Linked: Send + Sync + 'static {
    const SET: RouteSet;
}

/// The ingest function's routes.
pub struct IngestRoutes;
/// The query function's routes.
pub struct QueryRoutes;
/// The dashboard function's routes.
pub struct DashboardRoutes;
/// Every route: `ingester-local`, the tests.
pub struct AllRoutes;

impl Linked for IngestRoutes {
    const SET: RouteSet = RouteSet::Ingest;
}
impl Linked for QueryRoutes {
    const SET: RouteSet = RouteSet::Query;
}
impl Linked for DashboardRoutes {
    const SET: RouteSet = RouteSet::Dashboard;
}
impl Linked for AllRoutes {
    const SET: RouteSet = RouteSet::All;
}

/// Everything a route needs, built once.
#[derive(Clone)]
pub struct App<S> {
    pub store: S,
    pub registry: RegistryCache,
    pub access: Access,
    pub routes: RouteSet,
    /// An MQTT subscription beside the server, for `GET /health`.
    pub subscription: Option<std::sync::Arc<crate::subscription::SubscriptionHealth>>,
    /// Scheduled backups beside the server, for `GET /health`.
    pub backups: Option<std::sync::Arc<super::backup_health::BackupHealth>>,
    /// The price the dashboard shows energy's cost at, when one is set.
    pub tariff: Option<domain::tariff::Tariff>,
    /// The alert receivers beside the server (`serve --alert-rules`), whose
    /// health `GET /health` reports.
    pub alert_receivers: Option<Vec<String>>,
    /// The lines the InfluxDB write API skipped, for `GET /health`.
    pub skipped_lines: std::sync::Arc<super::skipped_lines::SkippedLines>,
    /// The rebuild of rollups an earlier version left (`rollups::catch_up`),
    /// for `GET /health`.
    pub catch_up: Option<std::sync::Arc<usecases::rollups::CatchUp>>,
}

impl<S: Store> App<S> {
    /// The one constructor: loads the registry (every page) into the cache, which
    /// also warms the store's connection, so the first request pays no set-up.
    pub async fn new(
        store: S,
        access: Access,
        routes: RouteSet,
        registry_ttl: Duration,
    ) -> Result<Self, StoreError> {
        let registry = RegistryCache::load(&store, registry_ttl).await?;
        Ok(Self::with_registry(store, registry, access, routes))
    }

    /// As [`App::new`], but the registry is loaded by the first request
    /// (`layers::registry_loaded`), not here: a Lambda's init makes no call
    /// (issue 43). A first load that fails is that request's 503, and the
    /// next request tries again.
    pub fn loading_on_first_request(
        store: S,
        access: Access,
        routes: RouteSet,
        registry_ttl: Duration,
    ) -> Self {
        Self::with_registry(store, RegistryCache::unloaded(registry_ttl), access, routes)
    }

    fn with_registry(store: S, registry: RegistryCache, access: Access, routes: RouteSet) -> Self {
        Self {
            store,
            registry,
            access,
            routes,
            subscription: None,
            backups: None,
            tariff: None,
            alert_receivers: None,
            skipped_lines: Default::default(),
            catch_up: None,
        }
    }

    /// Reports the rebuild of rollups an earlier version left in `GET /health`.
    pub fn with_catch_up(mut self, progress: std::sync::Arc<usecases::rollups::CatchUp>) -> Self {
        self.catch_up = Some(progress);
        self
    }

    /// Shows energy's cost at this price on the dashboard.
    pub fn with_tariff(mut self, tariff: Option<domain::tariff::Tariff>) -> Self {
        self.tariff = tariff;
        self
    }

    /// Reports scheduled backups in `GET /health`.
    pub fn with_backups(
        mut self,
        health: std::sync::Arc<super::backup_health::BackupHealth>,
    ) -> Self {
        self.backups = Some(health);
        self
    }

    /// Reports alert receivers' health in `GET /health` (none: no check).
    pub fn with_alert_receivers(mut self, names: Vec<String>) -> Self {
        self.alert_receivers = (!names.is_empty()).then_some(names);
        self
    }

    /// Reports an MQTT subscription's health in `GET /health`.
    pub fn with_subscription(
        mut self,
        health: std::sync::Arc<crate::subscription::SubscriptionHealth>,
    ) -> Self {
        self.subscription = Some(health);
        self
    }
}
