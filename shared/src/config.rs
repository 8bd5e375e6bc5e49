//! The one configuration of a process (DESIGN §6): read from the environment
//! on Lambda (`Config::from_env`), mapped from `ingester-local`'s flags at
//! home. `assembly` builds the program from it.

use domain::alerts::notification::REPEAT_INTERVAL;
use domain::indexes::Indexes;
use domain::retention::Retention;
use domain::tariff::{PriceTexts, Tariff};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;
use storage::retry::CallPolicy;
use usecases::alert_settings::{parse_repeat, AlertSettings};
use usecases::auth::{BearerToken, ReadAccess};
use usecases::notify::ReceiverSpec;

/// Which engine stores the readings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// A DynamoDB table (`TABLE_NAME`). `endpoint`: a DynamoDB-compatible
    /// server (dynalite, moto, DynamoDB Local); `None` for AWS, or the SDK's
    /// own `AWS_ENDPOINT_URL_DYNAMODB`/`AWS_ENDPOINT_URL`.
    DynamoDb {
        table: String,
        endpoint: Option<String>,
        /// Create the table as `template.yaml` defines it when it is missing.
        create_table: bool,
    },
    /// The embedded store: a file, or `None` for one in memory.
    Embedded { file: Option<PathBuf> },
}

#[derive(Debug, Clone)]
pub struct Config {
    /// `TABLE_NAME` (required on Lambda), or what `ingester-local` was given.
    pub store: StoreConfig,
    /// `INGEST_TOKEN`: when set and not empty, the write routes need it as a bearer token
    /// (for local use; on AWS the token comes from SSM, see `ingest_token_parameter`).
    pub ingest_token: Option<BearerToken>,
    /// `INGEST_TOKEN_PARAMETER`: the name of an SSM Parameter Store SecureString that
    /// holds the token, read once at cold start. Takes precedence over `INGEST_TOKEN`.
    pub ingest_token_parameter: Option<String>,
    /// `REGISTRY_CACHE_TTL_SECONDS` (default 30): how old the cached registry may get.
    pub registry_cache_ttl: Duration,
    /// `RETENTION_DAYS` (default 0: keep forever): readings get `expires_at`.
    pub retention: Option<Retention>,
    /// `RAW_READING_DAYS` (default 35, as the template's; 0 keeps raw items
    /// forever): on DynamoDB a reading's own item expires after this many
    /// days, and reads take it from its hour's block (docs/blocks.md).
    pub raw_window: Option<Retention>,
    /// `BATCH_BLOCKS` (default `true`, as the template's): on DynamoDB a
    /// device's readings in a batch holding two or more of a closed hour
    /// are written as hour blocks, not an item per reading, and reads of
    /// the raw window take the blocks too (docs/batches.md). Off on a table
    /// with an optional index on.
    pub batch_blocks: bool,
    /// `READS_REQUIRE_TOKEN` (default `true`): the GET routes need the token too, when one is set.
    pub read_access: ReadAccess,
    /// `ALL_DEVICES_SHARDS` (default 11): `all-time` shards, an odd number from 1
    /// to 63; every function of a deployment must agree (`docs/all-devices.md`).
    pub shards: u32,
    /// `ROOM_INDEX`, `BOX_SEARCH` and `ALL_DEVICES_FEED` (`enabled` or
    /// `disabled`; default `disabled`, as the template's): the optional
    /// indexes the table has
    /// (template parameters `RoomIndex`, `BoxSearch` and `AllDevicesFeed`,
    /// docs/cost.md).
    pub indexes: Indexes,
    /// `REGISTRY_LATEST_SECONDS` (default 900): how much newer a device's or
    /// room's latest reading must be before the registry function writes it
    /// again (`domain::registry_writes`; template parameter
    /// `RegistryLatestSeconds`). 0 writes every batch.
    pub registry_latest_interval: Duration,
    /// `MQTT_STREAM` (default unset): the Kinesis stream of IoT Core's
    /// messages the mqtt function reads on a schedule (template parameter
    /// `MqttPath=batched`, docs/batches.md); unset, it takes the topic
    /// rule's messages one at a time.
    pub mqtt_stream: Option<String>,
    /// `DYNAMODB_BUDGET_MS` (default 5000): how long one store operation on
    /// DynamoDB may take, retries included; the adapter owns every retry
    /// (`store::dynamodb::calls`).
    pub dynamodb: CallPolicy,
    /// `PRICE_PER_KWH`, `PRICE_PER_KWH_T1`, `PRICE_PER_KWH_T2`,
    /// `PRICE_PER_M3_GAS`, `PRICE_PER_M3_WATER` and `CURRENCY` (default
    /// unset, and `EUR`): flat prices the dashboard shows a meter's cost at
    /// (template parameters `PricePerKwh`, `PricePerKwhT1`, `PricePerKwhT2`,
    /// `PricePerM3Gas`, `PricePerM3Water` and `Currency`); unset, no cost.
    pub tariff: Option<Tariff>,
    /// `ALERT_TOPIC_ARN`, `ALERT_WEBHOOK_URL`, `ALERT_NTFY_URL` and
    /// `ALERT_REPEAT_INTERVAL` (default none, and `4h`): where the alerts
    /// function sends notifications (docs/alerts.md).
    pub alerts: AlertSettings,
}

/// How a switch is written: `enabled` or `disabled`.
pub const fn switch_text(on: bool) -> &'static str {
    if on {
        "enabled"
    } else {
        "disabled"
    }
}

/// `enabled` or `disabled`, for a setting named `name`.
pub fn parse_switch(name: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.trim() {
        "enabled" => Ok(true),
        "disabled" => Ok(false),
        _ => Err(ConfigError::Invalid {
            name,
            expected: "enabled or disabled",
            value: v.to_owned(),
        }),
    }
}

/// An odd shard count from 1 to `MAX_SHARDS`: with an even count the
/// calculated suffix crowds into few shards (see `keys::shard_of`).
pub fn parse_shards(v: &str) -> Result<u32, ConfigError> {
    match v.trim().parse::<u32>() {
        Ok(n) if n % 2 == 1 && n <= storage::keys::MAX_SHARDS => Ok(n),
        _ => Err(ConfigError::Invalid {
            name: "ALL_DEVICES_SHARDS",
            expected: "an odd number from 1 to 63",
            value: v.to_owned(),
        }),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("{name} must be {expected}, got {value:?}")]
    Invalid {
        name: &'static str,
        expected: &'static str,
        value: String,
    },
}

// The defaults are the template's (`Parameters` in template.yaml), so that a
// function started with `TABLE_NAME` alone, or `ingester-local` without
// flags, works on a table made from the template's defaults
// (tests/tests/template.rs reads them).

pub const DEFAULT_CACHE_TTL_SECONDS: u64 = 30;

/// A reading's raw item lives 35 days on DynamoDB (docs/blocks.md).
pub const DEFAULT_RAW_READING_DAYS: u32 = 35;

/// No optional index (docs/cost.md): room reads merge the room's devices'
/// partitions, and the box search and all-devices feed routes are off.
pub const DEFAULT_INDEXES: Indexes = Indexes {
    room_time: false,
    box_search: false,
    all_devices: false,
};

/// The registry function's default interval for latest values: at one
/// reading a minute, a device's latest is written every 15th reading
/// (docs/cost.md explains the choice).
pub const DEFAULT_REGISTRY_LATEST_SECONDS: u64 = 900;

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// A Lambda's configuration: `TABLE_NAME` and the settings below.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let table = get("TABLE_NAME")
            .filter(|t| !t.is_empty())
            .ok_or(ConfigError::Missing("TABLE_NAME"))?;
        let store = StoreConfig::DynamoDb {
            table,
            endpoint: None,
            create_table: false,
        };
        Self::with_store(store, get)
    }

    /// A configuration for `store`, every other setting from `get` (the
    /// environment) or its default.
    pub fn with_store(
        store: StoreConfig,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let ingest_token = get("INGEST_TOKEN").and_then(|t| BearerToken::new(&t));
        let ingest_token_parameter = get("INGEST_TOKEN_PARAMETER").filter(|p| !p.trim().is_empty());
        let registry_cache_ttl = match get("REGISTRY_CACHE_TTL_SECONDS") {
            None => Duration::from_secs(DEFAULT_CACHE_TTL_SECONDS),
            Some(v) => Duration::from_secs(v.trim().parse().map_err(|_| ConfigError::Invalid {
                name: "REGISTRY_CACHE_TTL_SECONDS",
                expected: "a whole number of seconds",
                value: v.clone(),
            })?),
        };
        // A number of days, 0 (or unset) for forever.
        let days = |name: &'static str, expected: &'static str| match get(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Retention::days)
                .map_err(|_| ConfigError::Invalid {
                    name,
                    expected,
                    value: v.clone(),
                }),
        };
        let retention = days(
            "RETENTION_DAYS",
            "a whole number of days (0 keeps readings forever)",
        )?;
        let raw_window = match get("RAW_READING_DAYS") {
            None => Retention::days(DEFAULT_RAW_READING_DAYS),
            Some(_) => days(
                "RAW_READING_DAYS",
                "a whole number of days (0 keeps raw items forever)",
            )?,
        };
        let batch_blocks = match get("BATCH_BLOCKS").as_deref().map(str::trim) {
            None | Some("true") => true,
            Some("false") => false,
            Some(v) => {
                return Err(ConfigError::Invalid {
                    name: "BATCH_BLOCKS",
                    expected: "true or false",
                    value: v.to_owned(),
                })
            }
        };
        let read_access = match get("READS_REQUIRE_TOKEN").as_deref().map(str::trim) {
            None | Some("true") => ReadAccess::Token,
            Some("false") => ReadAccess::Open,
            Some(v) => {
                return Err(ConfigError::Invalid {
                    name: "READS_REQUIRE_TOKEN",
                    expected: "true or false",
                    value: v.to_owned(),
                })
            }
        };
        let shards = match get("ALL_DEVICES_SHARDS") {
            None => storage::keys::DEFAULT_SHARDS,
            Some(v) => parse_shards(&v)?,
        };
        let switch = |name: &'static str, default: bool| match get(name) {
            None => Ok(default),
            Some(v) => parse_switch(name, &v),
        };
        let indexes = Indexes {
            room_time: switch("ROOM_INDEX", DEFAULT_INDEXES.room_time)?,
            box_search: switch("BOX_SEARCH", DEFAULT_INDEXES.box_search)?,
            all_devices: switch("ALL_DEVICES_FEED", DEFAULT_INDEXES.all_devices)?,
        };
        let registry_latest_interval = match get("REGISTRY_LATEST_SECONDS") {
            None => Duration::from_secs(DEFAULT_REGISTRY_LATEST_SECONDS),
            Some(v) => Duration::from_secs(v.trim().parse().map_err(|_| ConfigError::Invalid {
                name: "REGISTRY_LATEST_SECONDS",
                expected: "a whole number of seconds",
                value: v.clone(),
            })?),
        };
        let mut dynamodb = CallPolicy::default();
        if let Some(v) = get("DYNAMODB_BUDGET_MS") {
            dynamodb.budget = match v.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => {
                    return Err(ConfigError::Invalid {
                        name: "DYNAMODB_BUDGET_MS",
                        expected: "a whole number of milliseconds above 0",
                        value: v,
                    })
                }
            };
        }
        let prices = [
            "PRICE_PER_KWH",
            "PRICE_PER_KWH_T1",
            "PRICE_PER_KWH_T2",
            "PRICE_PER_M3_GAS",
            "PRICE_PER_M3_WATER",
        ]
        .map(|name| get(name).unwrap_or_default());
        let currency = get("CURRENCY").unwrap_or_default();
        let [kwh, kwh_t1, kwh_t2, m3_gas, m3_water] = prices.each_ref().map(String::as_str);
        let texts = PriceTexts {
            kwh,
            kwh_t1,
            kwh_t2,
            m3_gas,
            m3_water,
        };
        let tariff = Tariff::parse_prices(texts, &currency).map_err(|_| ConfigError::Invalid {
            name: "PRICE_PER_KWH, PRICE_PER_KWH_T1, PRICE_PER_KWH_T2, PRICE_PER_M3_GAS, \
                   PRICE_PER_M3_WATER and CURRENCY",
            expected: "prices from 0 to 100 and a currency code of three capital letters",
            value: format!("{} {currency}", prices.join(" ")),
        })?;
        let alerts = alert_settings(&get)?;
        Ok(Self {
            alerts,
            store,
            ingest_token,
            ingest_token_parameter,
            registry_cache_ttl,
            retention,
            raw_window,
            batch_blocks,
            read_access,
            shards,
            indexes,
            registry_latest_interval,
            mqtt_stream: get("MQTT_STREAM").filter(|s| !s.trim().is_empty()),
            dynamodb,
            tariff,
        })
    }
}

/// Where alerts go, from the environment (`get`); an empty variable is unset.
fn alert_settings(get: &impl Fn(&str) -> Option<String>) -> Result<AlertSettings, ConfigError> {
    let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    let repeat_interval = match get("ALERT_REPEAT_INTERVAL") {
        None => REPEAT_INTERVAL,
        Some(v) => parse_repeat(&v).ok_or(ConfigError::Invalid {
            name: "ALERT_REPEAT_INTERVAL",
            expected: "a duration of at least a minute: 30m, 4h, 1d",
            value: v.clone(),
        })?,
    };
    let mut receivers = Vec::new();
    let mut add = |var: &'static str, name: &str, spec: serde_json::Value| match get(var) {
        None => Ok(()),
        Some(_) => ReceiverSpec::parse(name, &spec)
            .map(|s| receivers.push((name.to_owned(), s)))
            .map_err(|e| ConfigError::Invalid {
                name: var,
                expected: "a receiver's address (docs/alerts.md)",
                value: e.to_string(),
            }),
    };
    add(
        "ALERT_TOPIC_ARN",
        "sns",
        json!({"kind": "sns", "topic_arn": get("ALERT_TOPIC_ARN")}),
    )?;
    add(
        "ALERT_WEBHOOK_URL",
        "webhook",
        json!({"kind": "webhook", "url": get("ALERT_WEBHOOK_URL")}),
    )?;
    add(
        "ALERT_NTFY_URL",
        "ntfy",
        json!({"kind": "ntfy", "url": get("ALERT_NTFY_URL")}),
    )?;
    Ok(AlertSettings {
        repeat_interval,
        receivers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn table_name_is_required_and_the_rest_has_defaults() {
        assert!(matches!(cfg(&[]), Err(ConfigError::Missing("TABLE_NAME"))));
        let c = cfg(&[("TABLE_NAME", "readings")]).unwrap();
        assert_eq!(c.registry_cache_ttl, Duration::from_secs(30));
        assert_eq!(c.shards, 11);
        assert_eq!(
            cfg(&[("TABLE_NAME", "t"), ("ALL_DEVICES_SHARDS", "7")])
                .unwrap()
                .shards,
            7
        );
        for bad in ["8", "0", "65", "x"] {
            assert!(
                cfg(&[("TABLE_NAME", "t"), ("ALL_DEVICES_SHARDS", bad)]).is_err(),
                "{bad}"
            );
        }
        assert!(c.ingest_token.is_none());
        assert_eq!(c.dynamodb.budget, Duration::from_secs(5));
        assert_eq!(
            cfg(&[("TABLE_NAME", "t"), ("DYNAMODB_BUDGET_MS", "1500")])
                .unwrap()
                .dynamodb
                .budget,
            Duration::from_millis(1500)
        );
        assert!(cfg(&[("TABLE_NAME", "t"), ("DYNAMODB_BUDGET_MS", "0")]).is_err());
        let c = cfg(&[
            ("TABLE_NAME", "t"),
            ("INGEST_TOKEN", "abc"),
            ("REGISTRY_CACHE_TTL_SECONDS", "5"),
        ])
        .unwrap();
        assert!(c.ingest_token.is_some());
        assert_eq!(c.registry_cache_ttl, Duration::from_secs(5));
        assert!(matches!(
            cfg(&[("TABLE_NAME", "t"), ("REGISTRY_CACHE_TTL_SECONDS", "soon")]),
            Err(ConfigError::Invalid { .. })
        ));
        assert!(cfg(&[("TABLE_NAME", "t"), ("INGEST_TOKEN", "")])
            .unwrap()
            .ingest_token
            .is_none());
        // No price unless one is set; the template's defaults set none.
        assert_eq!(c.tariff, None);
        let priced = cfg(&[
            ("TABLE_NAME", "t"),
            ("PRICE_PER_KWH", "0.32"),
            ("CURRENCY", "GBP"),
        ])
        .unwrap();
        assert_eq!(
            priced
                .tariff
                .as_ref()
                .map(|t| (t.per_kwh().unwrap(), t.currency())),
            Some((0.32, "GBP"))
        );
        assert_eq!(
            cfg(&[
                ("TABLE_NAME", "t"),
                ("PRICE_PER_KWH", ""),
                ("CURRENCY", "EUR")
            ])
            .unwrap()
            .tariff,
            None
        );
        assert!(cfg(&[("TABLE_NAME", "t"), ("PRICE_PER_KWH", "lots")]).is_err());
    }

    fn settings(pairs: &[(&str, &str)]) -> Result<AlertSettings, ConfigError> {
        let m: HashMap<&str, &str> = pairs.iter().copied().collect();
        alert_settings(&|k| m.get(k).map(|v| v.to_string()))
    }

    #[test]
    fn none_by_default_and_each_variable_a_receiver() {
        assert_eq!(settings(&[]).unwrap(), AlertSettings::default());
        let s = settings(&[
            (
                "ALERT_TOPIC_ARN",
                "arn:aws:sns:eu-west-1:123456789012:alerts",
            ),
            ("ALERT_NTFY_URL", "https://ntfy.sh/house"),
            ("ALERT_WEBHOOK_URL", ""),
            ("ALERT_REPEAT_INTERVAL", "1h"),
        ])
        .unwrap();
        let names: Vec<&str> = s.receivers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["sns", "ntfy"]);
        assert_eq!(s.repeat_interval, Duration::from_secs(3600));
        assert!(settings(&[("ALERT_REPEAT_INTERVAL", "10s")]).is_err());
        assert!(settings(&[("ALERT_WEBHOOK_URL", "not a url")]).is_err());
    }
}
