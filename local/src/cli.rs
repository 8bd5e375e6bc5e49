//! The command line: every command and flag (each flag with its
//! environment variable), and how the flags become the one `Config`.

use clap::{Args, Parser, Subcommand};
use shared::auth::{BearerToken, ReadAccess};
use shared::config::{Config, StoreConfig};
use shared::store::{Indexes, Retention};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "ingester-local",
    version,
    about = "Run the IoT reading ingester locally: the Lambdas' HTTP application on a local server, or replaying Lambda events"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Back up the embedded store's file while a server may be writing to it: a consistent snapshot of one moment, checked (integrity, readings counted), written under a temporary name and renamed onto --to (docs/backup.md).
#[derive(clap::Args, Debug)]
pub(crate) struct BackupCommand {
    /// The store file to back up.
    #[arg(long, env = "INGESTER_DB", default_value = "ingester.db")]
    pub(crate) db: PathBuf,
    /// The backup file (replaced whole, only once the new copy is checked).
    #[arg(long)]
    pub(crate) to: PathBuf,
    /// Stores up to this many bytes are copied through memory (the
    /// fastest way); bigger ones page by page, in little memory. Lower
    /// it on a machine short of memory.
    #[arg(long, env = "INGESTER_BACKUP_IN_MEMORY_UP_TO", default_value_t = shared::store::sqlite::IN_MEMORY_LIMIT)]
    pub(crate) in_memory_up_to: u64,
}

impl BackupCommand {
    /// `ingester-local backup ...` parsed as a command of its own: clap then
    /// builds this command's flags alone, not every command's (a third of a
    /// millisecond of a 1 MB backup's few). Exits on `--help` or an error,
    /// as the whole command line does.
    pub(crate) fn parse_alone(args: &[std::ffi::OsString]) -> Self {
        use clap::{Args, FromArgMatches};
        let command =
            Self::augment_args(clap::Command::new("backup")).bin_name("ingester-local backup");
        let matches = command.get_matches_from(args);
        Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// A subscription to an MQTT broker beside the server (docs/mqtt.md).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct MqttArgs {
    /// Subscribe to this broker: mqtt://HOST[:PORT] or mqtts://HOST[:PORT].
    #[arg(long, env = "MQTT_URL")]
    pub(crate) mqtt: Option<String>,
    /// A topic filter to subscribe to (repeatable); by default every shape of docs/mqtt.md:
    /// readings/#, tele/+/SENSOR, zigbee2mqtt/#, +/status/+, shellies/#, dsmr/#.
    #[arg(
        long = "mqtt-topic",
        env = "MQTT_TOPICS",
        value_delimiter = ',',
        requires = "mqtt"
    )]
    pub(crate) mqtt_topics: Vec<String>,
    #[arg(long, env = "MQTT_USERNAME", requires = "mqtt")]
    pub(crate) mqtt_username: Option<String>,
    #[arg(long, env = "MQTT_PASSWORD", hide_env_values = true, requires = "mqtt")]
    pub(crate) mqtt_password: Option<String>,
    /// The CA certificate (PEM) of an mqtts:// broker.
    #[arg(long, env = "MQTT_CA", requires = "mqtt")]
    pub(crate) mqtt_ca: Option<PathBuf>,
    /// The client id, which names the broker's persistent session: keep it across restarts.
    #[arg(
        long,
        env = "MQTT_CLIENT_ID",
        default_value = "ingester-local",
        requires = "mqtt"
    )]
    pub(crate) mqtt_client_id: String,
    /// Publish messages that can never be stored to this topic (as they came).
    #[arg(long, env = "MQTT_DEAD_LETTER", requires = "mqtt")]
    pub(crate) mqtt_dead_letter: Option<String>,
}

impl MqttArgs {
    pub(crate) fn settings(&self) -> Option<ingester_local::mqtt::Settings> {
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
// Parsed once per run: the size of a variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub(crate) enum Command {
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
    Backup(BackupCommand),
    /// Put a backup in the embedded store's place: the backup is checked first, a store a server has open is refused, and the file replaced is kept beside it (DB.replaced-<time>) unless --discard-replaced (docs/backup.md).
    Restore {
        /// The backup file.
        from: PathBuf,
        /// The store file to replace.
        #[arg(long, env = "INGESTER_DB", default_value = "ingester.db")]
        db: PathBuf,
        /// Remove the replaced file instead of keeping it.
        #[arg(long)]
        discard_replaced: bool,
    },
    /// Write readings out as InfluxDB line protocol (the names users gave as comment lines) or CSV with a header: every device or some, over a time range, to a file or standard output, gzip optional; from the embedded store or a DynamoDB table (docs/backup.md).
    Export {
        /// Only this device (give it again for more).
        #[arg(long = "device")]
        devices: Vec<String>,
        /// Readings from this time on (ISO 8601).
        #[arg(long)]
        from: Option<String>,
        /// Readings before this time (ISO 8601).
        #[arg(long)]
        to: Option<String>,
        /// `line-protocol` or `csv`.
        #[arg(long, default_value = "line-protocol", value_parser = ["line-protocol", "csv"])]
        format: String,
        /// The file to write (put in place once complete); standard output when omitted or `-`.
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// gzip what is written (the default for a file named *.gz).
        #[arg(long)]
        gzip: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Read an export (line protocol or CSV, gzip or not) into the embedded store or a DynamoDB table: idempotent, so an import that stopped is run again (docs/backup.md).
    Import {
        /// The file; `-` for standard input.
        file: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// What a fleet costs a year on AWS, from the write units the tests measure through the real handlers for each way of sending, at list prices (docs/cost.md). Prints JSON.
    Cost {
        /// How many devices.
        #[arg(long)]
        devices: u64,
        /// How often each device takes a reading, such as 1m or 10s.
        #[arg(long, default_value = "1m", value_parser = ingester_local::scheduled_backups::parse_interval)]
        every: Duration,
        /// How readings arrive: http-each (a request a reading), http-hour (a device's hour in one request), iot-each (an MQTT message a reading through IoT Core, a rule per message), iot-batched (the same through Basic Ingest and a Kinesis stream read every 15 minutes).
        #[arg(long, default_value = "http-each", value_parser = ["http-each", "http-hour", "iot-each", "iot-batched"])]
        path: String,
        /// What sends: room-sensor or meter.
        #[arg(long, default_value = "room-sensor", value_parser = ["room-sensor", "meter"])]
        device: String,
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
    /// Alert rules (docs/alerts.md).
    Alerts {
        #[command(subcommand)]
        action: AlertsAction,
    },
    /// Hour blocks on DynamoDB (docs/blocks.md).
    Blocks {
        #[command(subcommand)]
        action: BlocksAction,
    },
}

#[derive(Subcommand)]
pub(crate) enum AlertsAction {
    /// Evaluate rules over stored readings as if time had run, and print each transition (pending, firing, resolved) as a JSON line: try a rule on history before relying on it.
    Replay {
        /// The rules: a YAML or JSON file with `rules:` mapping each name to a rule (docs/alerts.md).
        #[arg(long)]
        rules: PathBuf,
        /// The first evaluation (ISO 8601).
        #[arg(long)]
        from: String,
        /// The end (ISO 8601, exclusive).
        #[arg(long)]
        to: String,
        /// Time between evaluations, such as 1m.
        #[arg(long, default_value = "1m", value_parser = ingester_local::scheduled_backups::parse_interval)]
        every: Duration,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Subcommand)]
pub(crate) enum RollupsAction {
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
pub(crate) enum BlocksAction {
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

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "INGESTER_ADDR", default_value = "127.0.0.1:3000")]
    pub(crate) addr: SocketAddr,
    /// Bearer token required by POST /readings (none: open).
    #[arg(long, env = "INGEST_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// Serve on an address other than loopback without a token: anyone who
    /// can reach it may write, rename and read. Without this flag such an
    /// address needs --token.
    #[arg(long, env = "INGESTER_INSECURE_OPEN")]
    pub(crate) insecure_open: bool,
    /// Let anyone read (GET) even when a token is set; by default reads need it too.
    #[arg(long, env = "INGESTER_OPEN_READS")]
    pub(crate) open_reads: bool,
    /// How old the cached registry may get, in seconds.
    #[arg(long, env = "INGESTER_CACHE_TTL", default_value_t = 1)]
    pub(crate) cache_ttl: u64,
    /// How often the DynamoDB stream is polled for registry changes, in milliseconds.
    #[arg(long, env = "INGESTER_POLL_MS", default_value_t = 100)]
    pub(crate) poll_ms: u64,
    #[command(flatten)]
    pub(crate) mqtt: MqttArgs,
    #[command(flatten)]
    pub(crate) price: PriceArgs,
    #[command(flatten)]
    pub(crate) backups: BackupArgs,
    #[command(flatten)]
    pub(crate) alerts: AlertArgs,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// Alert rules evaluated by the server (docs/alerts.md).
#[derive(Args)]
pub(crate) struct AlertArgs {
    /// A YAML or JSON file of alert rules (`rules:` mapping names to rules), put into the store at start; rules already stored are evaluated too.
    #[arg(long, env = "INGESTER_ALERT_RULES")]
    pub(crate) alert_rules: Option<PathBuf>,
    /// How often every stored rule is evaluated, such as 1m.
    #[arg(long, env = "INGESTER_ALERT_EVERY", default_value = "1m",
          value_parser = ingester_local::scheduled_backups::parse_interval)]
    pub(crate) alert_every: Duration,
}

/// Backups beside the server (docs/backup.md).
#[derive(Args)]
pub(crate) struct BackupArgs {
    /// Back the store's file up into this folder at start and at every --backup-every (the embedded store's file only).
    #[arg(long, env = "INGESTER_BACKUP_DIR")]
    pub(crate) backup_dir: Option<PathBuf>,
    /// How often: a whole number and a unit (s, m, h, d), such as 24h.
    #[arg(long, env = "INGESTER_BACKUP_EVERY", default_value = "24h",
          value_parser = ingester_local::scheduled_backups::parse_interval)]
    pub(crate) backup_every: Duration,
    /// How many of the newest backups to keep in the folder.
    #[arg(long, env = "INGESTER_BACKUP_KEEP", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) backup_keep: u64,
    /// As `backup --in-memory-up-to`: stores up to this many bytes are copied through memory, bigger ones page by page.
    #[arg(long, env = "INGESTER_BACKUP_IN_MEMORY_UP_TO", default_value_t = shared::store::sqlite::IN_MEMORY_LIMIT)]
    pub(crate) backup_in_memory_up_to: u64,
}

/// What the dashboard shows energy's cost at (docs/dashboard.md).
#[derive(Args)]
pub(crate) struct PriceArgs {
    /// A flat price per kWh bought (a decimal, such as 0.31); unset, the dashboard shows no cost.
    #[arg(long, env = "PRICE_PER_KWH")]
    pub(crate) price_per_kwh: Option<String>,
    /// A two-tariff meter's price per kWh bought in tariff 1 (such as
    /// 0.22); unset, tariff 1 has the flat price.
    #[arg(long = "price-per-kwh-t1", env = "PRICE_PER_KWH_T1")]
    pub(crate) price_per_kwh_t1: Option<String>,
    /// The same in tariff 2.
    #[arg(long = "price-per-kwh-t2", env = "PRICE_PER_KWH_T2")]
    pub(crate) price_per_kwh_t2: Option<String>,
    /// A flat price per m³ of gas (such as 1.20); unset, gas has no cost.
    #[arg(long = "price-per-m3-gas", env = "PRICE_PER_M3_GAS")]
    pub(crate) price_per_m3_gas: Option<String>,
    /// A flat price per m³ of water (such as 4.50); unset, water has no cost.
    #[arg(long = "price-per-m3-water", env = "PRICE_PER_M3_WATER")]
    pub(crate) price_per_m3_water: Option<String>,
    /// The price's currency, an ISO 4217 code.
    #[arg(long, env = "CURRENCY", default_value = shared::domain::tariff::DEFAULT_CURRENCY)]
    pub(crate) currency: String,
}

impl PriceArgs {
    pub(crate) fn tariff(&self) -> Result<Option<shared::domain::tariff::Tariff>, String> {
        fn text(p: &Option<String>) -> &str {
            p.as_deref().unwrap_or("")
        }
        let texts = shared::domain::tariff::PriceTexts {
            kwh: text(&self.price_per_kwh),
            kwh_t1: text(&self.price_per_kwh_t1),
            kwh_t2: text(&self.price_per_kwh_t2),
            m3_gas: text(&self.price_per_m3_gas),
            m3_water: text(&self.price_per_m3_water),
        };
        shared::domain::tariff::Tariff::parse_prices(texts, &self.currency).map_err(|e| {
            format!(
                "--price-per-kwh/--price-per-kwh-t1/--price-per-kwh-t2/--price-per-m3-gas/\
                 --price-per-m3-water/--currency: {e}"
            )
        })
    }
}

#[derive(Args)]
pub(crate) struct StoreArgs {
    /// SQLite database file of the embedded store (created if missing).
    #[arg(long, env = "INGESTER_DB", default_value = "ingester.db")]
    pub(crate) db: PathBuf,
    /// Use an embedded store that lives only as long as the process.
    #[arg(long, env = "INGESTER_MEMORY", conflicts_with_all = ["db", "table"])]
    pub(crate) memory: bool,
    /// A DynamoDB-compatible endpoint (DynamoDB Local, moto, dynalite); omit it with --table for AWS itself.
    #[arg(long, env = "INGESTER_DYNAMODB_ENDPOINT", requires = "table")]
    pub(crate) dynamodb_endpoint: Option<String>,
    /// Use this DynamoDB table instead of the embedded store.
    #[arg(long, env = "INGESTER_TABLE", conflicts_with = "db")]
    pub(crate) table: Option<String>,
    /// Create the table, when it does not exist yet, as template.yaml defines it (keys, the room-time index and the enabled optional ones, stream, TTL).
    #[arg(long, env = "INGESTER_CREATE_TABLE", requires = "table")]
    pub(crate) create_table: bool,
    /// Keep readings this many days (0: forever); expired ones are hidden and, on the embedded store, deleted.
    #[arg(long, env = "RETENTION_DAYS", default_value_t = 0)]
    pub(crate) retention_days: u32,
    /// On DynamoDB: keep a reading's own item this many days (0: forever); older readings are read from hour blocks, which the rollups function writes (docs/blocks.md). Set it as the table's stack has `RawReadingDays`.
    #[arg(long, env = "RAW_READING_DAYS", default_value_t = shared::config::DEFAULT_RAW_READING_DAYS)]
    pub(crate) raw_reading_days: u32,
    /// On DynamoDB: write a device's readings in a request holding two or more of a closed hour as hour blocks, not an item per reading (docs/batches.md). Set it as the table's stack has `BatchBlocks`.
    #[arg(long, env = "BATCH_BLOCKS", default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) batch_blocks: bool,
    /// Shards of the all-devices time index on DynamoDB (odd, 1-63); the embedded store has no shards.
    #[arg(long, env = "ALL_DEVICES_SHARDS", default_value_t = shared::keys::DEFAULT_SHARDS,
          value_parser = |v: &str| shared::config::parse_shards(v).map_err(|e| e.to_string()))]
    pub(crate) shards: u32,
    /// The room-time index on DynamoDB: `enabled` or `disabled`, as the stack's RoomIndex parameter (docs/cost.md).
    #[arg(long, env = "ROOM_INDEX", default_value = shared::config::switch_text(shared::config::DEFAULT_INDEXES.room_time), action = clap::ArgAction::Set,
          value_parser = |v: &str| shared::config::parse_switch("ROOM_INDEX", v).map_err(|e| e.to_string()))]
    pub(crate) room_index: bool,
    /// How much newer a latest reading must be before the stream poller writes a registry item again (DynamoDB only; docs/cost.md).
    #[arg(long, env = "REGISTRY_LATEST_SECONDS", default_value_t = shared::config::DEFAULT_REGISTRY_LATEST_SECONDS)]
    pub(crate) registry_latest_seconds: u64,
    /// The box search indexes (room-z, device-z) on DynamoDB: `enabled` or `disabled`, as the stack's BoxSearch parameter (docs/cost.md).
    #[arg(long, env = "BOX_SEARCH", default_value = shared::config::switch_text(shared::config::DEFAULT_INDEXES.box_search), action = clap::ArgAction::Set,
          value_parser = |v: &str| shared::config::parse_switch("BOX_SEARCH", v).map_err(|e| e.to_string()))]
    pub(crate) box_search: bool,
    /// The all-devices feed index (all-time) on DynamoDB: `enabled` or `disabled`, as the stack's AllDevicesFeed parameter.
    #[arg(long, env = "ALL_DEVICES_FEED", default_value = shared::config::switch_text(shared::config::DEFAULT_INDEXES.all_devices), action = clap::ArgAction::Set,
          value_parser = |v: &str| shared::config::parse_switch("ALL_DEVICES_FEED", v).map_err(|e| e.to_string()))]
    pub(crate) all_devices_feed: bool,
    /// File that keeps the stream position across restarts (DynamoDB only).
    #[arg(long, env = "INGESTER_STREAM_CHECKPOINT", requires = "table")]
    pub(crate) stream_checkpoint: Option<PathBuf>,
    /// How long one store operation on DynamoDB may take, retries included (the adapter's budget).
    #[arg(long, env = "DYNAMODB_BUDGET_MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) dynamodb_budget_ms: u64,
}

impl StoreArgs {
    /// The one `Config` these flags (and `serve`'s) stand for.
    pub(crate) fn config(
        &self,
        token: Option<&str>,
        open_reads: bool,
        cache_ttl: Duration,
    ) -> Config {
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
            // `serve`'s alert file says where alerts go (docs/alerts.md).
            alerts: Default::default(),
            ingest_token: token.and_then(BearerToken::new),
            ingest_token_parameter: None,
            registry_cache_ttl: cache_ttl,
            retention: Retention::days(self.retention_days),
            raw_window: Retention::days(self.raw_reading_days),
            batch_blocks: self.batch_blocks,
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
            // Read on AWS alone, by the mqtt function.
            mqtt_stream: None,
            dynamodb: shared::store::dynamodb::CallPolicy {
                budget: Duration::from_millis(self.dynamodb_budget_ms),
                ..Default::default()
            },
            tariff: None,
        }
    }
}

/// The configuration of a store named on the command line (`migrate`): a
/// file, `dynamodb:TABLE` or `dynamodb:TABLE@URL`; every other setting
/// (the optional indexes, shards, the DynamoDB budget) from the
/// environment, as the table's stack has them, through the same `Config`
/// the Lambdas read.
pub(crate) fn spec_config(
    spec: &str,
    create_table: bool,
    retention_days: u32,
) -> Result<Config, String> {
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
