//! `ingester-local`: the ingester's HTTP API on this machine, no AWS needed.
//!
//! `serve` answers DESIGN §5 on 127.0.0.1:3000 with the Lambdas' own Router
//! (`shared::api::router`), on an embedded SQLite store (default) or a
//! DynamoDB-compatible endpoint; `replay` runs Lambda event files through the
//! same Router and the registry handler.

use clap::{Args, Parser, Subcommand};
use ingester_local::stop::Stop;
use ingester_local::{replay, stream_poller::StreamPoller};
use shared::api::{App, RouteSet};
use shared::assembly::{self, Engine};
use shared::auth::{Access, BearerToken, ReadAccess};
use shared::config::{Config, StoreConfig};
use shared::model::{DeviceId, TimeRange, Timestamp};
use shared::store::{now_epoch_seconds, DynamoStore, Indexes, Retention, SqliteStore, Store};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// mimalloc, not glibc's malloc: a batch or a page builds and drops a value
/// per reading, and glibc's free lists were an eighth of the CPU of both
/// (docs/BENCHMARKS.md, "Sixth session").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// No transparent huge pages for this process, unless `MIMALLOC_ALLOW_THP`
/// says otherwise. mimalloc asks for them on its arenas, and the kernel then
/// clears a 2 MiB page at the first touch of each: a server's first batches
/// took 5-12 ms where the others take 0.7, for a heap of a few MB that
/// huge pages do not speed up, and a larger resident size
/// (docs/BENCHMARKS.md, "Eighth session"). This is what mimalloc does itself
/// with `MIMALLOC_ALLOW_THP=0`, which it reads before `main` runs.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: PR_SET_THP_DISABLE takes integers and touches no memory of
        // ours; it sets a flag of the process's address space.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}

#[derive(Parser)]
#[command(
    name = "ingester-local",
    version,
    about = "Run the IoT reading ingester locally: the Lambdas' HTTP application on a local server, or replaying Lambda events"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// A subscription to an MQTT broker beside the server (docs/mqtt.md).
#[derive(clap::Args, Debug, Clone)]
struct MqttArgs {
    /// Subscribe to this broker: mqtt://HOST[:PORT] or mqtts://HOST[:PORT].
    #[arg(long, env = "MQTT_URL")]
    mqtt: Option<String>,
    /// A topic filter to subscribe to (repeatable); by default every shape of docs/mqtt.md:
    /// readings/#, tele/+/SENSOR, zigbee2mqtt/#, +/status/+.
    #[arg(
        long = "mqtt-topic",
        env = "MQTT_TOPICS",
        value_delimiter = ',',
        requires = "mqtt"
    )]
    mqtt_topics: Vec<String>,
    #[arg(long, env = "MQTT_USERNAME", requires = "mqtt")]
    mqtt_username: Option<String>,
    #[arg(long, env = "MQTT_PASSWORD", hide_env_values = true, requires = "mqtt")]
    mqtt_password: Option<String>,
    /// The CA certificate (PEM) of an mqtts:// broker.
    #[arg(long, env = "MQTT_CA", requires = "mqtt")]
    mqtt_ca: Option<PathBuf>,
    /// The client id, which names the broker's persistent session: keep it across restarts.
    #[arg(
        long,
        env = "MQTT_CLIENT_ID",
        default_value = "ingester-local",
        requires = "mqtt"
    )]
    mqtt_client_id: String,
    /// Publish messages that can never be stored to this topic (as they came).
    #[arg(long, env = "MQTT_DEAD_LETTER", requires = "mqtt")]
    mqtt_dead_letter: Option<String>,
}

impl MqttArgs {
    fn settings(&self) -> Option<ingester_local::mqtt::Settings> {
        let url = self.mqtt.clone()?;
        Some(ingester_local::mqtt::Settings {
            url,
            username: self.mqtt_username.clone(),
            password: self.mqtt_password.clone(),
            ca_file: self.mqtt_ca.clone(),
            topics: if self.mqtt_topics.is_empty() {
                ingester_local::mqtt::DEFAULT_TOPICS
                    .iter()
                    .map(|t| t.to_string())
                    .collect()
            } else {
                self.mqtt_topics.clone()
            },
            client_id: self.mqtt_client_id.clone(),
            dead_letter: self.mqtt_dead_letter.clone(),
        })
    }
}

/// Starts the subscription, if one is asked for, beside `app`'s server.
fn subscribe<S: Store>(
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
#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API (DESIGN §5): the Lambdas' Router on a local address.
    Serve(ServeArgs),
    /// Run Lambda event files (API Gateway v2, DynamoDB Streams) through the Router and the registry handler, and print each answer.
    Replay {
        /// Event files, run in the order given.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Copy every reading, name and registry entry from one store to another: the embedded file and a DynamoDB table, either way. Resumable, idempotent, verified by counting both sides.
    Migrate {
        /// The source: an embedded store file (`ingester.db`), or `dynamodb:TABLE` (AWS) or `dynamodb:TABLE@URL` (a DynamoDB-compatible endpoint).
        #[arg(long)]
        from: String,
        /// The target, in the same form as --from.
        #[arg(long)]
        to: String,
        /// Where the position reached is kept, to resume after an interruption.
        #[arg(long, default_value = "migrate-checkpoint.json")]
        checkpoint: PathBuf,
        /// Create the target table when it does not exist yet, as template.yaml defines it (a DynamoDB target).
        #[arg(long)]
        create_table: bool,
        /// Retention of the readings written to the target, in days (0: forever).
        #[arg(long, env = "RETENTION_DAYS", default_value_t = 0)]
        retention_days: u32,
        /// Readings per page read and written.
        #[arg(long, default_value_t = ingester_local::migrate::PAGE as u64,
              value_parser = clap::value_parser!(u64).range(1..=1000))]
        page: u64,
    },
    /// Give every reading on a DynamoDB table the keys of the optional indexes that are on (--box-search, --all-devices-feed, --shards, as the stack has them): after turning an index on, changing the shard count, or for readings from before the index. Parallel Scan segments, resumable, with a progress bar; removes nothing (docs/cost.md).
    Reindex {
        /// Parallel Scan segments.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(i32).range(1..=64))]
        segments: i32,
        /// Where each segment's position is kept, to resume after an interruption.
        #[arg(long, default_value = "reindex-checkpoint.json")]
        checkpoint: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Hour and day rollups (docs/rollups.md).
    Rollups {
        #[command(subcommand)]
        action: RollupsAction,
    },
    /// Hour blocks on DynamoDB (docs/blocks.md).
    Blocks {
        #[command(subcommand)]
        action: BlocksAction,
    },
}

#[derive(Subcommand)]
enum RollupsAction {
    /// Rebuild rollups from the readings, on the embedded store or DynamoDB: after a restore, for readings written by hand, or on a DynamoDB table written before rollups (docs/rollups.md). Opening a file from before rollups builds them already.
    Rebuild {
        /// The first day to rebuild (RFC 3339; its UTC day is rebuilt whole). Default: the first reading.
        #[arg(long)]
        from: Option<String>,
        /// The end of the range to rebuild (RFC 3339, exclusive; the UTC day holding it is rebuilt whole). Default: the last reading.
        #[arg(long)]
        to: Option<String>,
        /// Only this device.
        #[arg(long)]
        device: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Subcommand)]
enum BlocksAction {
    /// Give every hour with readings its block, on a DynamoDB table written before blocks: run it before turning on `RawReadingDays`. Device by device, with a progress bar; a checkpoint file names the devices done, so a run that stopped resumes after them (the file is removed when every device is done).
    Rebuild {
        /// Only this device.
        #[arg(long)]
        device: Option<String>,
        /// Where the devices done are kept.
        #[arg(long, default_value = "blocks-checkpoint.json")]
        checkpoint: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// The configuration of a store named on the command line (`migrate`): a
/// file, `dynamodb:TABLE` or `dynamodb:TABLE@URL`; every other setting
/// (the optional indexes, shards, the DynamoDB budget) from the
/// environment, as the table's stack has them, through the same `Config`
/// the Lambdas read.
fn spec_config(spec: &str, create_table: bool, retention_days: u32) -> Result<Config, String> {
    let store = match spec.strip_prefix("dynamodb:") {
        Some(rest) => {
            let (table, endpoint) = match rest.split_once('@') {
                Some((table, url)) => (table, Some(url.to_owned())),
                None => (rest, None),
            };
            StoreConfig::DynamoDb {
                table: table.to_owned(),
                endpoint,
                create_table,
            }
        }
        None => StoreConfig::Embedded {
            file: Some(PathBuf::from(spec)),
        },
    };
    let mut config =
        Config::with_store(store, |k| std::env::var(k).ok()).map_err(|e| e.to_string())?;
    config.retention = Retention::days(retention_days);
    // A migration keeps every raw item unless told otherwise: it may outrun
    // the stream's 24 hours, and an hour the rollups function never folded
    // into its block would lose its readings to TTL (docs/migrate.md).
    if std::env::var_os("RAW_READING_DAYS").is_none() {
        config.raw_window = None;
    }
    Ok(config)
}

/// `rollups rebuild` on either engine: one device at a time (on the embedded
/// store each in its own transaction), with a progress bar.
async fn rebuild_rollups<S: shared::rollups::Upkeep>(
    store: &S,
    only: Option<DeviceId>,
    range: TimeRange,
) -> Result<bool, String> {
    let devices = ingester_local::blocks::devices_to_rebuild(store, only).await?;
    let bar = indicatif::ProgressBar::new(devices.len() as u64).with_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} devices {pos}/{len} {wide_bar} {msg} ({elapsed})",
        )
        .map_err(|e| e.to_string())?,
    );
    let mut written = 0;
    for device in &devices {
        bar.set_message(device.to_string());
        written += store
            .rebuild_rollups(device, range)
            .await
            .map_err(|e| format!("{device}: {e}"))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "{}",
        serde_json::json!({"devices": devices.len(), "rollups_written": written})
    );
    Ok(true)
}

async fn migrate_between<A: Store, B: Store>(
    from: &A,
    to: &B,
    names: (&str, &str),
    checkpoint: &std::path::Path,
    page: usize,
) -> Result<bool, String> {
    let summary = ingester_local::migrate::run(from, to, names, checkpoint, page).await?;
    println!(
        "{}",
        serde_json::to_string(&summary).map_err(|e| e.to_string())?
    );
    Ok(true)
}

/// `serve`'s flags; each has an environment variable, which the service's
/// settings file (`local/debian/default`) sets.
#[derive(Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "INGESTER_ADDR", default_value = "127.0.0.1:3000")]
    addr: SocketAddr,
    /// Bearer token required by POST /readings (none: open).
    #[arg(long, env = "INGEST_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Serve on an address other than loopback without a token: anyone who
    /// can reach it may write, rename and read. Without this flag such an
    /// address needs --token.
    #[arg(long, env = "INGESTER_INSECURE_OPEN")]
    insecure_open: bool,
    /// Let anyone read (GET) even when a token is set; by default reads need it too.
    #[arg(long, env = "INGESTER_OPEN_READS")]
    open_reads: bool,
    /// How old the cached registry may get, in seconds.
    #[arg(long, env = "INGESTER_CACHE_TTL", default_value_t = 1)]
    cache_ttl: u64,
    /// How often the DynamoDB stream is polled for registry changes, in milliseconds.
    #[arg(long, env = "INGESTER_POLL_MS", default_value_t = 100)]
    poll_ms: u64,
    #[command(flatten)]
    mqtt: MqttArgs,
    #[command(flatten)]
    price: PriceArgs,
    #[command(flatten)]
    store: StoreArgs,
}

/// What the dashboard shows energy's cost at (docs/dashboard.md).
#[derive(Args)]
struct PriceArgs {
    /// A flat price per kWh bought (a decimal, such as 0.31); unset, the dashboard shows no cost.
    #[arg(long, env = "PRICE_PER_KWH")]
    price_per_kwh: Option<String>,
    /// The price's currency, an ISO 4217 code.
    #[arg(long, env = "CURRENCY", default_value = shared::domain::tariff::DEFAULT_CURRENCY)]
    currency: String,
}

impl PriceArgs {
    fn tariff(&self) -> Result<Option<shared::domain::tariff::Tariff>, String> {
        shared::domain::tariff::Tariff::parse(
            self.price_per_kwh.as_deref().unwrap_or(""),
            &self.currency,
        )
        .map_err(|e| format!("--price-per-kwh/--currency: {e}"))
    }
}

#[derive(Args)]
struct StoreArgs {
    /// SQLite database file of the embedded store (created if missing).
    #[arg(long, env = "INGESTER_DB", default_value = "ingester.db")]
    db: PathBuf,
    /// Use an embedded store that lives only as long as the process.
    #[arg(long, env = "INGESTER_MEMORY", conflicts_with_all = ["db", "table"])]
    memory: bool,
    /// A DynamoDB-compatible endpoint (DynamoDB Local, moto, dynalite); omit it with --table for AWS itself.
    #[arg(long, env = "INGESTER_DYNAMODB_ENDPOINT", requires = "table")]
    dynamodb_endpoint: Option<String>,
    /// Use this DynamoDB table instead of the embedded store.
    #[arg(long, env = "INGESTER_TABLE", conflicts_with = "db")]
    table: Option<String>,
    /// Create the table, when it does not exist yet, as template.yaml defines it (keys, the room-time index and the enabled optional ones, stream, TTL).
    #[arg(long, env = "INGESTER_CREATE_TABLE", requires = "table")]
    create_table: bool,
    /// Keep readings this many days (0: forever); expired ones are hidden and, on the embedded store, deleted.
    #[arg(long, env = "RETENTION_DAYS", default_value_t = 0)]
    retention_days: u32,
    /// On DynamoDB: keep a reading's own item this many days (0: forever); older readings are read from hour blocks, which the rollups function writes (docs/blocks.md). Set it as the table's stack has `RawReadingDays`.
    #[arg(long, env = "RAW_READING_DAYS", default_value_t = shared::config::DEFAULT_RAW_READING_DAYS)]
    raw_reading_days: u32,
    /// Shards of the all-devices time index on DynamoDB (odd, 1-63); the embedded store has no shards.
    #[arg(long, env = "ALL_DEVICES_SHARDS", default_value_t = shared::keys::DEFAULT_SHARDS,
          value_parser = |v: &str| shared::config::parse_shards(v).map_err(|e| e.to_string()))]
    shards: u32,
    /// The room-time index on DynamoDB: `enabled` or `disabled`, as the stack's RoomIndex parameter (docs/cost.md).
    #[arg(long, env = "ROOM_INDEX", default_value = shared::config::switch_text(shared::config::DEFAULT_INDEXES.room_time), action = clap::ArgAction::Set,
          value_parser = |v: &str| shared::config::parse_switch("ROOM_INDEX", v).map_err(|e| e.to_string()))]
    room_index: bool,
    /// How much newer a latest reading must be before the stream poller writes a registry item again (DynamoDB only; docs/cost.md).
    #[arg(long, env = "REGISTRY_LATEST_SECONDS", default_value_t = shared::config::DEFAULT_REGISTRY_LATEST_SECONDS)]
    registry_latest_seconds: u64,
    /// The box search indexes (room-z, device-z) on DynamoDB: `enabled` or `disabled`, as the stack's BoxSearch parameter (docs/cost.md).
    #[arg(long, env = "BOX_SEARCH", default_value = shared::config::switch_text(shared::config::DEFAULT_INDEXES.box_search), action = clap::ArgAction::Set,
          value_parser = |v: &str| shared::config::parse_switch("BOX_SEARCH", v).map_err(|e| e.to_string()))]
    box_search: bool,
    /// The all-devices feed index (all-time) on DynamoDB: `enabled` or `disabled`, as the stack's AllDevicesFeed parameter.
    #[arg(long, env = "ALL_DEVICES_FEED", default_value = shared::config::switch_text(shared::config::DEFAULT_INDEXES.all_devices), action = clap::ArgAction::Set,
          value_parser = |v: &str| shared::config::parse_switch("ALL_DEVICES_FEED", v).map_err(|e| e.to_string()))]
    all_devices_feed: bool,
    /// File that keeps the stream position across restarts (DynamoDB only).
    #[arg(long, env = "INGESTER_STREAM_CHECKPOINT", requires = "table")]
    stream_checkpoint: Option<PathBuf>,
    /// How long one store operation on DynamoDB may take, retries included (the adapter's budget).
    #[arg(long, env = "DYNAMODB_BUDGET_MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..))]
    dynamodb_budget_ms: u64,
}

impl StoreArgs {
    /// The one `Config` these flags (and `serve`'s) stand for.
    fn config(&self, token: Option<&str>, open_reads: bool, cache_ttl: Duration) -> Config {
        let store = match &self.table {
            Some(table) => StoreConfig::DynamoDb {
                table: table.clone(),
                endpoint: self.dynamodb_endpoint.clone(),
                create_table: self.create_table,
            },
            None => StoreConfig::Embedded {
                file: (!self.memory).then(|| self.db.clone()),
            },
        };
        Config {
            store,
            ingest_token: token.and_then(BearerToken::new),
            ingest_token_parameter: None,
            registry_cache_ttl: cache_ttl,
            retention: Retention::days(self.retention_days),
            raw_window: Retention::days(self.raw_reading_days),
            read_access: if open_reads {
                ReadAccess::Open
            } else {
                ReadAccess::Token
            },
            shards: self.shards,
            indexes: Indexes {
                room_time: self.room_index,
                box_search: self.box_search,
                all_devices: self.all_devices_feed,
            },
            registry_latest_interval: Duration::from_secs(self.registry_latest_seconds),
            dynamodb: shared::store::dynamodb::CallPolicy {
                budget: Duration::from_millis(self.dynamodb_budget_ms),
                ..Default::default()
            },
            tariff: None,
        }
    }
}

/// An assembled store, with what `serve` and `replay` need beside it on DynamoDB.
enum Backend {
    Embedded(SqliteStore),
    Dynamo(DynamoStore, aws_sdk_dynamodbstreams::Client, String),
}

/// Assembles what a configuration names (`shared::assembly`, as the Lambdas
/// do). Sealing the embedded store's closed days stops between two days when
/// `stop` is asked.
async fn open(config: &Config, stop: &Stop) -> Result<(Backend, Access), String> {
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
async fn seal_closed_days(store: &SqliteStore, stop: &Stop) -> Result<(), String> {
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
async fn app<S: Store>(config: &Config, store: S, access: Access) -> Result<App<S>, String> {
    assembly::app(config, store, access, RouteSet::All)
        .await
        .map_err(|e| e.to_string())
}

/// Whether `serve` may start: on loopback always; elsewhere only with a
/// token, or when the user says `--insecure-open` on purpose.
fn door_check(addr: SocketAddr, has_token: bool, insecure_open: bool) -> Result<(), String> {
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
async fn purge_expired(store: SqliteStore) {
    loop {
        match store.delete_expired(now_epoch_seconds()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(readings = n, "deleted expired readings"),
            Err(err) => tracing::warn!(error = %err, "deleting expired readings failed"),
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
}

async fn poll_stream(mut poller: StreamPoller, store: DynamoStore, every: Duration) {
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
async fn serve<S: Store>(
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

/// Why the program ends with a failure: settings that cannot work, which
/// exit with status 78 (EX_CONFIG, which the service unit does not restart
/// on: a restart would only say the same), or anything else (status 1).
enum Failure {
    Settings(String),
    Other(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Other(e)
    }
}

/// Exit status of settings that cannot work (sysexits.h's EX_CONFIG).
const EX_CONFIG: u8 = 78;

/// `serve`, until a stop signal: one before the server is up ends the
/// opening (a seal stops between two days), one after it lets the requests
/// under way finish. Either way the store closes and the status is 0.
async fn serve_command(args: ServeArgs, stop: &Stop) -> Result<bool, Failure> {
    let ServeArgs {
        addr,
        token,
        insecure_open,
        open_reads,
        cache_ttl,
        poll_ms,
        mqtt,
        price,
        store,
    } = args;
    let mut config = store.config(token.as_deref(), open_reads, Duration::from_secs(cache_ttl));
    config.tariff = price.tariff().map_err(Failure::Settings)?;
    door_check(addr, config.ingest_token.is_some(), insecure_open).map_err(Failure::Settings)?;
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
            let feeder = tokio::spawn(purge_expired(s));
            serve(app?, addr, feeder, &mqtt, stop).await?;
        }
        (Backend::Dynamo(s, streams, region), access) => {
            let poller = StreamPoller::new(streams, region, store.stream_checkpoint.clone())
                .with_registry_interval(config.registry_latest_interval);
            let Some(app) = stop.or(app(&config, s.clone(), access)).await else {
                return Ok(true);
            };
            let feeder = tokio::spawn(poll_stream(poller, s, every));
            serve(app?, addr, feeder, &mqtt, stop).await?;
        }
    }
    Ok(true)
}

async fn run(cli: Cli, stop: &Stop) -> Result<bool, Failure> {
    match cli.command {
        Command::Serve(args) => serve_command(args, stop).await,
        // The one-shot commands resume from their checkpoints (or start
        // over harmlessly): a stop ends them at their next await.
        command => match stop.or(one_shot(command, stop)).await {
            Some(done) => Ok(done?),
            None => Err(Failure::Other("stopped by a signal before the end".into())),
        },
    }
}

async fn one_shot(command: Command, stop: &Stop) -> Result<bool, String> {
    match command {
        Command::Serve(_) => unreachable!("run serves"),
        Command::Migrate {
            from,
            to,
            checkpoint,
            create_table,
            retention_days,
            page,
        } => {
            let (source, _) = open(&spec_config(&from, false, 0)?, stop).await?;
            let (target, _) = open(&spec_config(&to, create_table, retention_days)?, stop).await?;
            let names = (from.as_str(), to.as_str());
            let page = page as usize;
            match (source, target) {
                (Backend::Embedded(a), Backend::Embedded(b)) => {
                    migrate_between(&a, &b, names, &checkpoint, page).await
                }
                (Backend::Embedded(a), Backend::Dynamo(b, ..)) => {
                    migrate_between(&a, &b, names, &checkpoint, page).await
                }
                (Backend::Dynamo(a, ..), Backend::Embedded(b)) => {
                    migrate_between(&a, &b, names, &checkpoint, page).await
                }
                (Backend::Dynamo(a, ..), Backend::Dynamo(b, ..)) => {
                    migrate_between(&a, &b, names, &checkpoint, page).await
                }
            }
        }
        Command::Rollups {
            action:
                RollupsAction::Rebuild {
                    from,
                    to,
                    device,
                    store,
                },
        } => {
            let time = |name: &str, v: Option<String>, default: Timestamp| match v {
                None => Ok(default),
                Some(text) => Timestamp::parse(&text).map_err(|e| format!("--{name}: {e}")),
            };
            let range = TimeRange::new(
                time("from", from, Timestamp::MIN)?,
                time("to", to, Timestamp::MAX)?,
            )
            .map_err(|e| format!("--from and --to: {e}"))?;
            let device = device
                .map(|d| DeviceId::parse(&d).map_err(|e| format!("--device: {e}")))
                .transpose()?;
            match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
                Backend::Embedded(s) => rebuild_rollups(&s, device, range).await,
                Backend::Dynamo(s, ..) => rebuild_rollups(&s, device, range).await,
            }
        }
        Command::Blocks {
            action:
                BlocksAction::Rebuild {
                    device,
                    checkpoint,
                    store,
                },
        } => {
            let device = device
                .map(|d| DeviceId::parse(&d).map_err(|e| format!("--device: {e}")))
                .transpose()?;
            match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
                Backend::Embedded(_) => Err(
                    "blocks rebuild is for a DynamoDB table (--table): the embedded store seals its closed days into blocks itself"
                        .into(),
                ),
                Backend::Dynamo(s, ..) => {
                    let done = ingester_local::blocks::rebuild(&s, device, &checkpoint).await?;
                    println!(
                        "{}",
                        serde_json::json!({"devices": done.devices, "resumed_after": done.skipped, "items_written": done.written})
                    );
                    Ok(true)
                }
            }
        }
        Command::Reindex {
            segments,
            checkpoint,
            store,
        } => match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
            Backend::Embedded(_) => Err(
                "reindex is for a DynamoDB table (--table): the embedded store keeps its indexes itself"
                    .into(),
            ),
            Backend::Dynamo(s, ..) => {
                let done = ingester_local::reindex::run(&s, segments, &checkpoint, true).await?;
                println!(
                    "{}",
                    serde_json::json!({"segments": segments, "scanned": done.scanned, "updated": done.updated})
                );
                Ok(true)
            }
        },
        Command::Replay { files, store } => {
            let config = store.config(None, true, Duration::ZERO);
            replay_on(&config, &store, &files, stop).await
        }
    }
}

/// `replay` on the assembled store.
async fn replay_on(
    config: &Config,
    store: &StoreArgs,
    files: &[PathBuf],
    stop: &Stop,
) -> Result<bool, String> {
    match open(config, stop).await? {
        (Backend::Embedded(s), access) => {
            // The registry follows each write: nothing to wait for between events.
            let app = app(config, s, access).await?;
            Ok(replay_files(&app, files, || async { Ok(()) }).await)
        }
        (Backend::Dynamo(s, streams, region), access) => {
            let app = app(config, s.clone(), access).await?;
            let poller = std::sync::Mutex::new(Some(StreamPoller::new(
                streams,
                region,
                store.stream_checkpoint.clone(),
            )));
            Ok(replay_files(&app, files, || async {
                let taken = poller.lock().unwrap().take();
                if let Some(mut p) = taken {
                    let result = p.poll_once(&s).await;
                    *poller.lock().unwrap() = Some(p);
                    result?;
                }
                Ok(())
            })
            .await)
        }
    }
}

/// Replays each file; prints `{"file", "response"}` per line. False if any file failed.
async fn replay_files<S: shared::rollups::Upkeep, F, Fut>(
    app: &App<S>,
    files: &[PathBuf],
    after_each: F,
) -> bool
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut ok = true;
    for file in files {
        let name = file.display().to_string();
        let event = std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|t| replay::recognise(&t));
        match event {
            Ok(event) => {
                let response = replay::run(app, event).await;
                println!(
                    "{}",
                    serde_json::json!({ "file": name, "response": response })
                );
                if let Err(e) = after_each().await {
                    eprintln!("warning: after {name}: the registry did not catch up: {e}");
                }
            }
            Err(e) => {
                eprintln!("error: {name}: {e}");
                ok = false;
            }
        }
    }
    ok
}

fn main() -> ExitCode {
    // Before any thread starts, so that every thread inherits it.
    ingester_local::stop::hold_signals();
    no_transparent_huge_pages();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Under systemd stderr is the journal: no colour codes in it.
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .compact()
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let stop = Stop::listen().map_err(|e| format!("listening for stop signals: {e}"))?;
        run(cli, &stop).await
    });
    // Ends every task, so the last handle on the store goes and the store
    // closes (its last seal and checkpoint), after blocking work under way.
    drop(runtime);
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(Failure::Settings(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(EX_CONFIG)
        }
        Err(Failure::Other(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::door_check;

    /// The service's settings file (`debian/default`) names every flag of
    /// `serve` by its environment variable, and names nothing else: a
    /// household can set anything there, and nothing it sets is ignored.
    #[test]
    fn every_serve_flag_has_a_variable_in_the_settings_file() {
        use clap::CommandFactory;
        let cli = super::Cli::command();
        let serve = cli.find_subcommand("serve").unwrap();
        let mut flags: Vec<String> = Vec::new();
        for arg in serve.get_arguments() {
            if matches!(arg.get_id().as_str(), "help" | "version") {
                continue;
            }
            let env = arg
                .get_env()
                .unwrap_or_else(|| panic!("--{} has no environment variable", arg.get_id()));
            flags.push(env.to_string_lossy().into_owned());
        }
        let file = include_str!("../debian/default");
        let named: Vec<String> = file
            .lines()
            .map(|l| l.trim_start_matches('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(name, _)| name.to_owned())
            .filter(|name| {
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
            })
            .collect();
        // Not the Lambdas' names: a shell that exported TABLE_NAME for them
        // must not switch `serve` to a table.
        assert!(!flags
            .iter()
            .any(|f| f == "TABLE_NAME" || f == "DYNAMODB_ENDPOINT"));
        flags.sort();
        let mut in_file: Vec<String> = named.into_iter().filter(|n| n != "RUST_LOG").collect();
        in_file.sort();
        assert_eq!(in_file, flags);
    }

    #[test]
    fn the_door_is_open_only_on_loopback_with_a_token_or_on_purpose() {
        let addr = |a: &str| a.parse().unwrap();
        for loopback in ["127.0.0.1:3000", "[::1]:3000", "[::ffff:127.0.0.1]:3000"] {
            assert!(
                door_check(addr(loopback), false, false).is_ok(),
                "{loopback}"
            );
        }
        for network in ["0.0.0.0:3000", "[::]:3000", "192.168.1.20:3000"] {
            let refused = door_check(addr(network), false, false).unwrap_err();
            assert!(refused.contains("--token") && refused.contains("--insecure-open"));
            assert!(door_check(addr(network), true, false).is_ok(), "{network}");
            assert!(door_check(addr(network), false, true).is_ok(), "{network}");
        }
    }

    /// `serve` without flags is configured as a function started with
    /// `TABLE_NAME` alone (whose defaults are the template's,
    /// tests/tests/template.rs), and the settings file's commented values are
    /// those defaults.
    #[test]
    fn serve_s_defaults_are_the_config_s_and_the_settings_file_s() {
        use clap::Parser;
        let args = super::Cli::parse_from(["ingester-local", "serve", "--table", "t"]);
        let super::Command::Serve(serve) = args.command else {
            panic!("not serve");
        };
        let ours = serve.store.config(None, false, std::time::Duration::ZERO);
        let theirs =
            shared::config::Config::from_lookup(|k| (k == "TABLE_NAME").then(|| "t".into()))
                .unwrap();
        assert_eq!(ours.raw_window, theirs.raw_window);
        assert_eq!(ours.retention, theirs.retention);
        assert_eq!(ours.indexes, theirs.indexes);
        assert_eq!(ours.shards, theirs.shards);
        assert_eq!(
            ours.registry_latest_interval,
            theirs.registry_latest_interval
        );
        assert_eq!(ours.dynamodb.budget, theirs.dynamodb.budget);
        let file = include_str!("../debian/default");
        let commented = |name: &str| -> String {
            file.lines()
                .find_map(|l| l.strip_prefix(&format!("#{name}=")))
                .unwrap_or_else(|| panic!("{name} is not in the settings file"))
                .to_owned()
        };
        let days = |r: Option<shared::store::Retention>, name: &str| {
            let n: u32 = commented(name).parse().unwrap();
            assert_eq!(shared::store::Retention::days(n), r, "{name}");
        };
        days(theirs.raw_window, "RAW_READING_DAYS");
        let switch = |on: bool, name: &str| {
            assert_eq!(commented(name), shared::config::switch_text(on), "{name}");
        };
        switch(theirs.indexes.room_time, "ROOM_INDEX");
        switch(theirs.indexes.box_search, "BOX_SEARCH");
        switch(theirs.indexes.all_devices, "ALL_DEVICES_FEED");
        assert_eq!(commented("ALL_DEVICES_SHARDS"), theirs.shards.to_string());
        assert_eq!(
            commented("REGISTRY_LATEST_SECONDS"),
            theirs.registry_latest_interval.as_secs().to_string()
        );
        assert_eq!(
            commented("DYNAMODB_BUDGET_MS"),
            theirs.dynamodb.budget.as_millis().to_string()
        );
    }

    /// An empty token is no token: the door stays shut.
    #[test]
    fn an_empty_token_is_no_token() {
        use clap::Parser;
        let args = super::Cli::parse_from(["ingester-local", "serve", "--memory"]);
        let super::Command::Serve(serve) = args.command else {
            panic!("not serve");
        };
        let config = serve
            .store
            .config(Some("   "), false, std::time::Duration::ZERO);
        assert!(config.ingest_token.is_none());
        assert!(door_check(
            "0.0.0.0:3000".parse().unwrap(),
            config.ingest_token.is_some(),
            false
        )
        .is_err());
    }
}
