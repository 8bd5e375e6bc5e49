//! `serve`: the store opened from the `Config`, the Router behind
//! `axum::serve`, and the jobs beside it (the retention purge, the stream
//! poller, an MQTT subscription), until a stop signal.

use crate::cli::*;
use crate::Failure;
use ingester_local::stop::Stop;
use ingester_local::stream_poller::StreamPoller;
use shared::api::backup_health::BackupHealth;
use shared::api::{App, RouteSet};
use shared::assembly::{self, Engine};
use shared::auth::Access;
use shared::config::{Config, StoreConfig};
use shared::model::Timestamp;
use shared::store::{now_epoch_seconds, DynamoStore, SqliteStore, Store};
use std::net::SocketAddr;
use std::time::Duration;

/// Starts the subscription, if one is asked for, beside `app`'s server.
pub(crate) fn subscribe<S: Store>(
    app: App<S>,
    mqtt: &MqttArgs,
) -> Result<(App<S>, Option<tokio::task::JoinHandle<()>>), String> {
    let Some(settings) = mqtt.settings() else {
        return Ok((app, None));
    };
    settings.options()?;
    let health = std::sync::Arc::new(shared::mqtt::subscription::SubscriptionHealth::default());
    let app = app.with_subscription(health.clone());
    let (store, registry) = (app.store.clone(), app.registry.clone());
    let task = tokio::spawn(async move {
        if let Err(e) = ingester_local::mqtt::run(settings, store, registry, health).await {
            tracing::error!(error = %e, "the mqtt subscription stopped");
        }
    });
    Ok((app, Some(task)))
}

// Parsed once at start: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
/// An assembled store, with what `serve` and `replay` need beside it on DynamoDB.
pub(crate) enum Backend {
    Embedded(SqliteStore),
    Dynamo(DynamoStore, aws_sdk_dynamodbstreams::Client, String),
}

/// Assembles what a configuration names (`shared::assembly`, as the Lambdas
/// do). Sealing the embedded store's closed days stops between two days when
/// `stop` is asked.
pub(crate) async fn open(config: &Config, stop: &Stop) -> Result<(Backend, Access), String> {
    let assembled = assembly::assemble(config)
        .await
        .map_err(|e| e.to_string())?;
    let backend = match assembled.engine {
        Engine::Embedded(store) => {
            seal_closed_days(&store, stop).await?;
            Backend::Embedded(store)
        }
        Engine::DynamoDb(store) => {
            let sdk = assembled.sdk.as_ref().ok_or("no SDK configuration")?;
            let region = sdk.region().map(|r| r.to_string()).unwrap_or_default();
            let streams = aws_sdk_dynamodbstreams::Client::new(sdk);
            Backend::Dynamo(store, streams, region)
        }
    };
    Ok((backend, assembled.access))
}

/// Seals the closed days that a file holds as rows (all of them in a file
/// from before version 4; those that closed while the server was stopped),
/// a device's day to a transaction, so that a stop resumes where it was.
/// The progress bar shows on a terminal only.
pub(crate) async fn seal_closed_days(store: &SqliteStore, stop: &Stop) -> Result<(), String> {
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} sealing closed days into blocks {pos}/{len} {wide_bar} ({elapsed}, {eta} left)",
        )
        .map_err(|e| e.to_string())?,
    );
    let shown = bar.clone();
    let stop = stop.clone();
    let started = std::time::Instant::now();
    let sealed = store
        .seal_closed_days(Timestamp::now().millis(), move |done, total| {
            shown.set_length(total as u64);
            shown.set_position(done as u64);
            if stop.is_asked() {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        })
        .await
        .map_err(|e| format!("sealing closed days: {e}"))?;
    bar.finish_and_clear();
    if sealed > 0 {
        tracing::info!(
            days = sealed,
            seconds = started.elapsed().as_secs_f64(),
            "sealed closed days into blocks"
        );
    }
    Ok(())
}

/// The HTTP application on an assembled store.
pub(crate) async fn app<S: Store>(
    config: &Config,
    store: S,
    access: Access,
) -> Result<App<S>, String> {
    assembly::app(config, store, access, RouteSet::All)
        .await
        .map_err(|e| e.to_string())
}

/// Whether `serve` may start: on loopback always; elsewhere only with a
/// token, or when the user says `--insecure-open` on purpose.
pub(crate) fn door_check(
    addr: SocketAddr,
    has_token: bool,
    insecure_open: bool,
) -> Result<(), String> {
    // `to_canonical`: `::ffff:127.0.0.1` is loopback too.
    if addr.ip().to_canonical().is_loopback() || has_token {
        return Ok(());
    }
    if insecure_open {
        tracing::warn!(%addr, "serving without a token on a non-loopback address (--insecure-open): anyone who can reach it may write, rename and read");
        return Ok(());
    }
    Err(format!(
        "refusing to serve on {addr} without a token: anyone on the network could write, rename and read. \
         Set --token (or INGEST_TOKEN), serve on 127.0.0.1, or pass --insecure-open if that is what you mean"
    ))
}

/// The embedded store's TTL: deletes expired readings now and then every minute.
pub(crate) async fn purge_expired(store: SqliteStore) {
    loop {
        match store.delete_expired(now_epoch_seconds()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(readings = n, "deleted expired readings"),
            Err(err) => tracing::warn!(error = %err, "deleting expired readings failed"),
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
}

pub(crate) async fn poll_stream(mut poller: StreamPoller, store: DynamoStore, every: Duration) {
    loop {
        match poller.poll_once(&store).await {
            Ok(n) if n > 0 => tracing::debug!(records = n, "registry updated from the stream"),
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "stream poll failed"),
        }
        tokio::time::sleep(every).await;
    }
}

/// Serves until `stop` is asked, then lets the requests under way finish
/// (a reading is acknowledged only after it is committed).
pub(crate) async fn serve<S: Store>(
    app: App<S>,
    addr: SocketAddr,
    feeder: tokio::task::JoinHandle<()>,
    mqtt: &MqttArgs,
    stop: &Stop,
) -> Result<(), String> {
    let (app, subscription) = subscribe(app, mqtt)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("listening on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!("serving on http://{local}");
    ingester_local::readiness::ready(local);
    let result = axum::serve(listener, shared::api::router(app))
        .with_graceful_shutdown({
            let stop = stop.clone();
            async move {
                stop.asked().await;
                ingester_local::readiness::stopping();
            }
        })
        .await
        .map_err(|e| e.to_string());
    feeder.abort();
    if let Some(task) = subscription {
        task.abort();
    }
    result
}

/// `serve`, until a stop signal: one before the server is up ends the
/// opening (a seal stops between two days), one after it lets the requests
/// under way finish. Either way the store closes and the status is 0.
pub(crate) async fn serve_command(args: ServeArgs, stop: &Stop) -> Result<bool, Failure> {
    let ServeArgs {
        addr,
        token,
        insecure_open,
        open_reads,
        cache_ttl,
        poll_ms,
        mqtt,
        price,
        backups,
        alerts,
        store,
    } = args;
    let mut config = store.config(token.as_deref(), open_reads, Duration::from_secs(cache_ttl));
    config.tariff = price.tariff().map_err(Failure::Settings)?;
    door_check(addr, config.ingest_token.is_some(), insecure_open).map_err(Failure::Settings)?;
    // Backups need the embedded store's file: a setting that cannot work.
    let schedule =
        match (&backups.backup_dir, &config.store) {
            (None, _) => None,
            (Some(dir), StoreConfig::Embedded { file: Some(db) }) => {
                Some(ingester_local::scheduled_backups::Schedule {
                    db: db.clone(),
                    dir: dir.clone(),
                    every: backups.backup_every,
                    keep: backups.backup_keep as usize,
                    in_memory_up_to: backups.backup_in_memory_up_to,
                })
            }
            (Some(_), _) => return Err(Failure::Settings(
                "--backup-dir backs up the embedded store's file (--db), not --memory or --table"
                    .into(),
            )),
        };
    // A rules file that does not parse is a setting that cannot work.
    let alert_file = match &alerts.alert_rules {
        Some(path) => ingester_local::alert_rules::load_file(path).map_err(Failure::Settings)?,
        None => Default::default(),
    };
    let alert_rules = alert_file.rules;
    let mqtt_settings = mqtt.settings();
    let receivers = alert_file
        .settings
        .build(None, |name, topic| match &mqtt_settings {
            Some(settings) => {
                ingester_local::mqtt_alerts::MqttReceiver::start(name, topic, settings)
                    .map(|r| std::sync::Arc::new(r) as _)
            }
            None => {
                Err("an mqtt receiver publishes on the broker of --mqtt, which is not set".into())
            }
        })
        .map_err(Failure::Settings)?;
    let receiver_names: Vec<String> = receivers.names().iter().map(|n| n.to_string()).collect();
    let every = Duration::from_millis(poll_ms);
    let Some(opened) = stop.or(open(&config, stop)).await else {
        return Ok(true);
    };
    match opened? {
        (Backend::Embedded(s), access) => {
            // The registry is kept in the write transaction: only the
            // retention purge runs beside the server.
            let Some(app) = stop.or(app(&config, s.clone(), access)).await else {
                return Ok(true);
            };
            // Rollups an earlier version left stale, rebuilt beside the
            // server (`rollups::catch_up`), its progress on `/health`.
            let progress = std::sync::Arc::new(shared::rollups::CatchUp::default());
            let catch_up = tokio::spawn({
                let (s, progress) = (s.clone(), progress.clone());
                async move { shared::rollups::catch_up(&s, &progress).await }
            });
            let mut app = app?
                .with_alert_receivers(receiver_names)
                .with_catch_up(progress);
            let scheduled = match schedule {
                Some(schedule) => {
                    let health = std::sync::Arc::new(BackupHealth::default());
                    app = app.with_backups(health.clone());
                    Some(tokio::spawn(ingester_local::scheduled_backups::run(
                        schedule, health,
                    )))
                }
                None => None,
            };
            let evaluation = ingester_local::scheduled_alerts::start(
                &s,
                &alert_rules,
                alerts.alert_every,
                receivers,
            )
            .await
            .map_err(Failure::Other)?;
            let feeder = tokio::spawn(purge_expired(s));
            let served = serve(app, addr, feeder, &mqtt, stop).await;
            if let Some(task) = scheduled {
                task.abort();
            }
            evaluation.abort();
            catch_up.abort();
            served?;
        }
        (Backend::Dynamo(s, streams, region), access) => {
            let poller = StreamPoller::new(streams, region, store.stream_checkpoint.clone())
                .with_registry_interval(config.registry_latest_interval);
            let Some(app) = stop.or(app(&config, s.clone(), access)).await else {
                return Ok(true);
            };
            let evaluation = ingester_local::scheduled_alerts::start(
                &s,
                &alert_rules,
                alerts.alert_every,
                receivers,
            )
            .await
            .map_err(Failure::Other)?;
            let feeder = tokio::spawn(poll_stream(poller, s, every));
            let app = app?.with_alert_receivers(receiver_names);
            let served = serve(app, addr, feeder, &mqtt, stop).await;
            evaluation.abort();
            served?;
        }
    }
    Ok(true)
}
