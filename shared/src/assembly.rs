//! The program, assembled in one place from one [`Config`]: the SDK
//! configuration (with its retry and timeout policy, written here), the
//! store, the access rules and the HTTP application. Every Lambda's `main`
//! and every `ingester-local` command goes through it.

use crate::config::{Config, StoreConfig};
#[cfg(feature = "api")]
use api::{App, RouteSet};
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_types::SdkConfig;
use dynamodb::DynamoStore;
use std::time::Duration;
#[cfg(feature = "api")]
use storage::Store;
use storage::StoreError;
use usecases::auth::{Access, BearerToken};

pub use usecases::https::CONNECT_TIMEOUT;

#[derive(Debug, thiserror::Error)]
pub enum AssemblyError {
    #[error("SSM parameter {name}: {reason}")]
    TokenParameter { name: String, reason: String },
    #[error("table {table}: {source}")]
    Table { table: String, source: StoreError },
    #[error("opening the embedded store {file}: {source}")]
    Embedded { file: String, source: StoreError },
    #[error("the embedded store is not built into this binary")]
    NoEmbeddedStore,
    #[error("this function needs a DynamoDB table (TABLE_NAME)")]
    NotDynamoDb,
    #[error("alert receivers: {0}")]
    Receivers(String),
    #[error("loading the registry: {0}")]
    Registry(StoreError),
}

/// The engine a configuration names, opened.
#[derive(Clone)]
pub enum Engine {
    DynamoDb(DynamoStore),
    #[cfg(feature = "sqlite")]
    Embedded(sqlite::SqliteStore),
}

/// What a process runs on: its engine, its access rules and, on DynamoDB,
/// the SDK configuration its other AWS clients (Streams) are built from.
pub struct Assembly {
    pub engine: Engine,
    pub access: Access,
    pub sdk: Option<SdkConfig>,
}

/// The SDK configuration every AWS client of the process is built from
/// (`sdk`: on Lambda from the environment alone, elsewhere by aws-config's
/// chains when built in): `endpoint` when given, connect and attempt
/// timeouts, and the SDK's standard retry for the clients that keep it
/// (SSM, Streams, SNS). DynamoDB's client turns it off: its adapter owns
/// retries (`dynamodb_client`).
pub async fn sdk_config(endpoint: Option<&str>, budget: Duration) -> SdkConfig {
    crate::sdk::config(endpoint, budget).await
}

/// The one HTTP client of every SDK client (and of the credential
/// providers): HTTP/1.1 over rustls on ring with the system's roots, the
/// stack the alert receivers use too (`https`, issue 43).
pub fn https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    usecases::https::sdk::client()
}

/// The DynamoDB client: the SDK's retry off (one retry owner: the adapter,
/// `store::dynamodb::calls`), every attempt cut off at the budget.
pub fn dynamodb_client(sdk: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(sdk)
            .retry_config(RetryConfig::disabled())
            .build(),
    )
}

/// The store a DynamoDB configuration names, on an SDK configuration.
pub fn dynamodb_store(config: &Config, sdk: &SdkConfig, table: &str) -> DynamoStore {
    DynamoStore::new(dynamodb_client(sdk), table)
        .with_policy(config.dynamodb)
        .with_retention(config.retention)
        .with_raw_window(config.raw_window)
        .with_hour_blocks(config.batch_blocks)
        .with_shards(config.shards)
        .with_indexes(config.indexes)
}

/// Reads the token from an SSM SecureString (decrypted). The value never
/// appears in an error: only the parameter's name does.
pub async fn fetch_token(sdk: &SdkConfig, name: &str) -> Result<BearerToken, AssemblyError> {
    let fail = |reason: String| AssemblyError::TokenParameter {
        name: name.to_owned(),
        reason,
    };
    let value = crate::sdk::parameter::get_decrypted(sdk, name)
        .await
        .map_err(fail)?;
    BearerToken::new(&value).ok_or_else(|| fail("is empty".into()))
}

/// Builds what a configuration names: the SDK configuration (once, on
/// DynamoDB; for SSM alone when the embedded store reads its token from it),
/// the store (creating the table when asked), the token (from SSM when
/// `INGEST_TOKEN_PARAMETER` is set) and the access rules. Fails fast, so a
/// misconfigured process never serves.
pub async fn assemble(config: &Config) -> Result<Assembly, AssemblyError> {
    let (engine, sdk) = engine(config).await?;
    let token = match &config.ingest_token_parameter {
        Some(name) => {
            let embedded;
            let sdk = match &sdk {
                Some(sdk) => sdk,
                None => {
                    embedded = sdk_config(None, config.dynamodb.budget).await;
                    &embedded
                }
            };
            Some(fetch_token(sdk, name).await?)
        }
        None => config.ingest_token.clone(),
    };
    Ok(Assembly {
        engine,
        access: Access {
            token,
            reads: config.read_access,
        },
        sdk,
    })
}

/// The store a configuration names, and on DynamoDB the SDK configuration it
/// was built on: all a function that serves no request needs (no token, so
/// no SSM client in its binary).
async fn engine(config: &Config) -> Result<(Engine, Option<SdkConfig>), AssemblyError> {
    match &config.store {
        StoreConfig::DynamoDb {
            table,
            endpoint,
            create_table,
        } => {
            let sdk = sdk_config(endpoint.as_deref(), config.dynamodb.budget).await;
            let store = dynamodb_store(config, &sdk, table);
            let table_error = |source| AssemblyError::Table {
                table: table.clone(),
                source,
            };
            // Created when missing, so that the same command line works again.
            if *create_table && !store.table_exists().await.map_err(table_error)? {
                store.create_table().await.map_err(table_error)?;
                tracing::info!(table, "table created");
            }
            Ok((Engine::DynamoDb(store), Some(sdk)))
        }
        StoreConfig::Embedded { file } => Ok((embedded(config, file.as_deref())?, None)),
    }
}

/// The DynamoDB store of a function that has no other engine, with its SDK
/// configuration.
async fn dynamodb_engine(config: &Config) -> Result<(DynamoStore, SdkConfig), AssemblyError> {
    match engine(config).await? {
        (Engine::DynamoDb(store), Some(sdk)) => Ok((store, sdk)),
        _ => Err(AssemblyError::NotDynamoDb),
    }
}

#[cfg(feature = "sqlite")]
fn embedded(config: &Config, file: Option<&std::path::Path>) -> Result<Engine, AssemblyError> {
    use sqlite::SqliteStore;
    let store = match file {
        Some(path) => SqliteStore::open(path),
        None => SqliteStore::in_memory(),
    }
    .map_err(|source| AssemblyError::Embedded {
        file: file.map_or("(memory)".into(), |f| f.display().to_string()),
        source,
    })?;
    Ok(Engine::Embedded(store.with_retention(config.retention)))
}

#[cfg(not(feature = "sqlite"))]
fn embedded(_: &Config, _: Option<&std::path::Path>) -> Result<Engine, AssemblyError> {
    Err(AssemblyError::NoEmbeddedStore)
}

impl Assembly {
    /// The DynamoDB store of a function that has no other engine.
    pub fn into_dynamodb(self) -> Result<DynamoStore, AssemblyError> {
        match self.engine {
            Engine::DynamoDb(store) => Ok(store),
            #[cfg(feature = "sqlite")]
            Engine::Embedded(_) => Err(AssemblyError::NotDynamoDb),
        }
    }
}

/// The HTTP application on a store: the registry loaded into its cache
/// (which also warms the connection), the access rules, the routes served.
#[cfg(feature = "api")]
pub async fn app<S: Store>(
    config: &Config,
    store: S,
    access: Access,
    routes: RouteSet,
) -> Result<App<S>, AssemblyError> {
    App::new(store, access, routes, config.registry_cache_ttl)
        .await
        .map(|app| configured(config, app))
        .map_err(AssemblyError::Registry)
}

/// The settings an app takes from the configuration beyond its store.
#[cfg(feature = "api")]
fn configured<S: Store>(config: &Config, app: App<S>) -> App<S> {
    // `GET /health` reports the alert receivers a deployment has (on AWS
    // the ingest function is told of the SNS topic's receiver).
    let receivers = config.alerts.receivers.iter().map(|(name, _)| name.clone());
    app.with_tariff(config.tariff.clone())
        .with_alert_receivers(receivers.collect())
}

/// An HTTP Lambda's cold start: the assembly on DynamoDB, then its app,
/// whose first request loads the registry (no call in init, issue 43).
#[cfg(feature = "api")]
pub async fn http_function(
    config: &Config,
    routes: RouteSet,
) -> Result<App<DynamoStore>, AssemblyError> {
    let assembly = assemble(config).await?;
    let access = assembly.access.clone();
    let store = assembly.into_dynamodb()?;
    Ok(configured(
        config,
        App::loading_on_first_request(store, access, routes, config.registry_cache_ttl),
    ))
}

/// The alerts function's cold start: its store and the receivers its
/// settings name (`config.alerts`); SNS on the assembly's SDK configuration.
pub async fn alerts_function(
    config: &Config,
) -> Result<(DynamoStore, usecases::notify::Receivers), AssemblyError> {
    let assembly = assemble(config).await?;
    let receivers = config
        .alerts
        .build(assembly.sdk.as_ref(), |_, _| {
            Err(
                "an mqtt receiver publishes on a home broker: on AWS use sns, webhook or ntfy"
                    .into(),
            )
        })
        .map_err(AssemblyError::Receivers)?;
    Ok((assembly.into_dynamodb()?, receivers))
}

/// A stream Lambda's cold start: its DynamoDB store (no token: it serves no
/// request).
pub async fn stream_function(config: &Config) -> Result<DynamoStore, AssemblyError> {
    Ok(dynamodb_engine(config).await?.0)
}

/// The Kinesis stream of IoT Core's messages `MQTT_STREAM` names, for the
/// mqtt-stream function's runs (docs/batches.md); `None` where it is unset.
#[cfg(feature = "kinesis")]
pub async fn mqtt_stream(config: &Config) -> Option<crate::sdk::kinesis::KinesisStream> {
    let name = config.mqtt_stream.clone()?;
    let sdk = sdk_config(None, config.dynamodb.budget).await;
    Some(crate::sdk::kinesis::KinesisStream {
        client: aws_sdk_kinesis::Client::new(&sdk),
        name,
    })
}
