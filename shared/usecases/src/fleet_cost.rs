//! What a fleet costs a year on AWS (issue 78, docs/cost.md): the write
//! units a reading takes on each way readings arrive, as the tests measure
//! them through the real handlers on dynalite (`tests/tests/cost.rs`,
//! `tests/tests/batch_blocks.rs`, which hold these figures to what they
//! measure), priced at the list prices below. `ingester-local cost` prints
//! it; the fleet table in docs/cost.md is computed by it.

use std::time::Duration;

/// Whose prices, and when they were read.
pub const PRICES_AS_OF: &str = "AWS list prices, us-east-1, as of November 2026";

/// Dollars a million: on-demand DynamoDB write request units (since
/// November 2024), API Gateway HTTP API requests, Lambda requests, IoT Core
/// messages, rules triggered and actions run, and connection-minutes.
pub const WRITE_UNITS: f64 = 0.625;
pub const API_REQUESTS: f64 = 1.00;
pub const LAMBDA_REQUESTS: f64 = 0.20;
pub const IOT_MESSAGES: f64 = 1.00;
pub const IOT_RULES: f64 = 0.15;
pub const IOT_ACTIONS: f64 = 0.15;
pub const IOT_CONNECTION_MINUTES: f64 = 0.08;
/// Dollars a provisioned Kinesis shard-hour, and a million PUT payload
/// units (a record of up to 25 KB is one).
pub const KINESIS_SHARD_HOUR: f64 = 0.015;
pub const KINESIS_PUT_UNITS: f64 = 0.014;
/// Records a second a shard takes at most (Kinesis' limit is 1,000): what
/// the mqtt function's run reads of a shard in one batch
/// (`schedule::mqtt_stream`) at a run every 15 minutes.
pub const RECORDS_A_SHARD_SECOND: f64 = 500.0;

/// Write units a reading posted alone (its item, the registry and rollups
/// functions' share), measured at one reading a minute and every 10 s.
pub const ITEMS_ROOM_SENSOR: (f64, f64) = (1.34, 1.06);
pub const ITEMS_METER: (f64, f64) = (1.27, 1.04);
/// Write units a reading when a device's hour arrives in one request
/// (docs/batches.md), a meter and a room sensor at one reading a minute.
pub const HOUR_BATCHES: f64 = 0.053;
/// Write units a reading of a room sensor at a message a minute on IoT
/// Core's batching path (Basic Ingest, Kinesis, a run every 15 minutes;
/// `tests/tests/mqtt_stream.rs`), the registry's latest values kept every
/// 900 s (the template's default) and every hour.
pub const IOT_STREAM: (f64, f64) = (0.228, 0.128);

const MINUTES_A_YEAR: f64 = 525_600.0;
const HOURS_A_YEAR: f64 = 8_760.0;

/// How readings arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// One HTTP request a reading (`POST /readings` or `/api/v2/write`).
    HttpEach,
    /// A device's (or hub's) hour in one HTTP request.
    HttpHour,
    /// One MQTT message a reading through IoT Core, a rule invoking the
    /// mqtt function per message.
    IotEach,
    /// One MQTT message a reading through IoT Core's Basic Ingest, a rule
    /// putting it on a Kinesis stream the mqtt function reads every 15
    /// minutes (docs/batches.md).
    IotBatched,
}

impl Path {
    pub const ALL: [Path; 4] = [
        Path::HttpEach,
        Path::HttpHour,
        Path::IotEach,
        Path::IotBatched,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Path::HttpEach => "http-each",
            Path::HttpHour => "http-hour",
            Path::IotEach => "iot-each",
            Path::IotBatched => "iot-batched",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("{s:?}: one of http-each, http-hour, iot-each, iot-batched"))
    }
}

/// What sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    RoomSensor,
    Meter,
}

/// A fleet: how many devices, how often each sends a reading, how.
#[derive(Debug, Clone, Copy)]
pub struct Fleet {
    pub devices: u64,
    pub every: Duration,
    pub device: Device,
    pub path: Path,
}

/// A year of a fleet: what it sends and what each part of AWS charges.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Bill {
    pub readings: f64,
    pub write_units_a_reading: f64,
    pub dynamodb_writes: f64,
    pub api_gateway: f64,
    pub iot_core: f64,
    pub kinesis: f64,
    pub lambda: f64,
    pub total: f64,
}

impl Fleet {
    /// Write units a reading, from the measured figures: the rate measured
    /// nearer to this one (the registry's share grows as readings thin out,
    /// so rates slower than a minute are an underestimate).
    pub fn write_units_a_reading(&self) -> f64 {
        let (minute, ten_seconds) = match self.device {
            Device::RoomSensor => ITEMS_ROOM_SENSOR,
            Device::Meter => ITEMS_METER,
        };
        match self.path {
            Path::HttpHour => HOUR_BATCHES,
            // Measured at a message a minute; rarer messages share a run's
            // block put among fewer readings (an underestimate there).
            Path::IotBatched => IOT_STREAM.0,
            Path::HttpEach | Path::IotEach if self.every.as_secs_f64() >= 35.0 => minute,
            Path::HttpEach | Path::IotEach => ten_seconds,
        }
    }

    /// Its year, in dollars. Lambda duration and storage are left out
    /// (docs/cost.md); the stream functions run at most once a second
    /// (registry) and once per 5 minutes or 10,000 records (rollups) on one
    /// shard, and only for reading items.
    pub fn bill(&self) -> Bill {
        let every_minutes = self.every.as_secs_f64().max(0.001) / 60.0;
        let per_minute = self.devices as f64 / every_minutes;
        let readings = per_minute * MINUTES_A_YEAR;
        let units = self.write_units_a_reading();
        let million = |n: f64, price: f64| n * price / 1e6;
        let dynamodb_writes = million(readings * units, WRITE_UNITS);
        let stream_calls = |items_per_minute: f64| {
            let registry = items_per_minute.min(60.0) * MINUTES_A_YEAR;
            let rollups = (items_per_minute * 5.0 / 10_000.0).ceil() / 5.0 * MINUTES_A_YEAR;
            registry + rollups
        };
        let (api_gateway, iot_core, lambda) = match self.path {
            Path::HttpEach => (
                million(readings, API_REQUESTS),
                0.0,
                million(readings + stream_calls(per_minute), LAMBDA_REQUESTS),
            ),
            Path::HttpHour => {
                let requests = self.devices as f64 * HOURS_A_YEAR;
                (
                    million(requests, API_REQUESTS),
                    0.0,
                    million(requests, LAMBDA_REQUESTS),
                )
            }
            Path::IotEach => (
                0.0,
                million(readings, IOT_MESSAGES + IOT_RULES + IOT_ACTIONS)
                    + million(self.devices as f64 * MINUTES_A_YEAR, IOT_CONNECTION_MINUTES),
                million(readings + stream_calls(per_minute), LAMBDA_REQUESTS),
            ),
            // Basic Ingest: no messaging charge; a run every 15 minutes.
            Path::IotBatched => (
                0.0,
                million(readings, IOT_RULES + IOT_ACTIONS)
                    + million(self.devices as f64 * MINUTES_A_YEAR, IOT_CONNECTION_MINUTES),
                million(MINUTES_A_YEAR / 15.0, LAMBDA_REQUESTS),
            ),
        };
        let kinesis = match self.path {
            Path::IotBatched => {
                let shards = (per_minute / 60.0 / RECORDS_A_SHARD_SECOND).ceil().max(1.0);
                shards * HOURS_A_YEAR * KINESIS_SHARD_HOUR + million(readings, KINESIS_PUT_UNITS)
            }
            _ => 0.0,
        };
        Bill {
            readings,
            write_units_a_reading: units,
            dynamodb_writes,
            api_gateway,
            iot_core,
            kinesis,
            lambda,
            total: dynamodb_writes + api_gateway + iot_core + kinesis + lambda,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(devices: u64, path: Path) -> Bill {
        Fleet {
            devices,
            every: Duration::from_secs(60),
            device: Device::RoomSensor,
            path,
        }
        .bill()
    }

    #[test]
    fn ten_thousand_sensors_a_minute_cost_what_the_issue_worked_out() {
        // Issue 78's table, on the same prices and units: about $10,900,
        // $400 and $13,000 a year.
        let each = fleet(10_000, Path::HttpEach);
        assert!((each.readings - 5.256e9).abs() < 1.0);
        assert!((10_000.0..11_500.0).contains(&each.total), "{each:?}");
        let hour = fleet(10_000, Path::HttpHour);
        assert!(hour.total < 1_000.0, "{hour:?}");
        assert!((87.0..89.0).contains(&hour.api_gateway), "{hour:?}");
        let iot = fleet(10_000, Path::IotEach);
        assert!((7_200.0..7_300.0).contains(&iot.iot_core), "{iot:?}");
        // Basic Ingest and Kinesis: under $3,000 (issue 78), one shard.
        let batched = fleet(10_000, Path::IotBatched);
        assert!(batched.total <= 3_000.0, "{batched:?}");
        assert!(
            (1_990.0..2_000.0).contains(&batched.iot_core),
            "{batched:?}"
        );
        assert!((200.0..210.0).contains(&batched.kinesis), "{batched:?}");
        // 100,000 devices: four shards.
        let fleet_of = fleet(100_000, Path::IotBatched);
        assert!(
            (4.0 * 131.0..4.0 * 132.0).contains(&(fleet_of.kinesis - 735.84)),
            "{fleet_of:?}"
        );
        // Twice the devices, twice the bill (one stream shard's calls aside).
        let double = fleet(20_000, Path::HttpHour);
        assert!((double.total / hour.total - 2.0).abs() < 0.01);
    }

    #[test]
    fn paths_parse_by_name() {
        for p in Path::ALL {
            assert_eq!(Path::parse(p.name()), Ok(p));
        }
        assert!(Path::parse("carrier-pigeon").is_err());
    }
}
