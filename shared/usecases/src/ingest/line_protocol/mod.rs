//! InfluxDB line protocol → readings: the ingest boundary for Telegraf, Home
//! Assistant, Tasmota, Node-RED and the InfluxDB client libraries. The mapping
//! (docs/line-protocol.md) is:
//!
//! * the device is the first of the tags `device`, `device_id`, `entity_id`, `host`;
//! * the room is the tag `room`, else the room the device is registered in;
//! * a field named after a catalogue quantity is that quantity
//!   (`climate,device=th-1,room=living temperature=21.5,humidity=45`);
//! * a field `value` is the quantity its measurement names, by catalogue name,
//!   a short name (`temperature,device=x value=22.6`, as Tasmota writes) or a
//!   unit and device class as Home Assistant writes them (`home_assistant`:
//!   `°C`, `%` of class `humidity`, `kWh` bought or sold as the entity's name says);
//! * other fields (Home Assistant's attributes) are ignored, and a line with no
//!   quantity at all is skipped and counted;
//! * lines of one device at one time are one reading (Tasmota writes one line
//!   per quantity, with no time);
//! * all or nothing: the first bad line rejects the request, naming the line.

use domain::model::{
    plausible_time, DeviceId, KnownIds, Measurement, Quantity, Reading, RoomId, Timestamp,
};
mod home_assistant;

use line_protocol::{fast, numbered_lines, Field, LineView};

/// The unit of the timestamps of a request (`precision=`); nanoseconds by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
}

impl Precision {
    /// The v2 API's names (`ns`, `us`, `ms`, `s`) and the v1 API's (`n`, `u`, `ms`, `s`, `m`, `h`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ns" | "n" => Precision::Nanoseconds,
            "us" | "u" | "µ" => Precision::Microseconds,
            "ms" => Precision::Milliseconds,
            "s" => Precision::Seconds,
            "m" => Precision::Minutes,
            "h" => Precision::Hours,
            _ => return None,
        })
    }

    /// Milliseconds since the epoch (rounded down), or `None` when out of range.
    fn to_millis(self, t: i64) -> Option<i64> {
        match self {
            Precision::Nanoseconds => Some(t.div_euclid(1_000_000)),
            Precision::Microseconds => Some(t.div_euclid(1_000)),
            Precision::Milliseconds => Some(t),
            Precision::Seconds => t.checked_mul(1_000),
            Precision::Minutes => t.checked_mul(60_000),
            Precision::Hours => t.checked_mul(3_600_000),
        }
    }
}

/// The first bad line of a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LineError {
    /// 1-based, counting every line of the body.
    pub line: usize,
    pub message: String,
}

/// What a request's lines hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    pub readings: Vec<Reading>,
    /// Lines with no quantity of the catalogue (another program's metrics).
    pub skipped: usize,
    /// The first of them, and why it holds no quantity (`skipped_line`):
    /// worded once a request, as a body of another program's metrics may
    /// skip most of its lines.
    pub first_skipped: Option<String>,
}

/// Tags that name the device, in the order they are looked for.
pub const DEVICE_TAGS: [&str; 4] = ["device", "device_id", "entity_id", "host"];

/// One line's share of a reading: lines of one device at one time are merged.
struct Gathered {
    device_id: DeviceId,
    timestamp: Timestamp,
    line: usize,
    room: Option<RoomId>,
    values: Vec<(Quantity, f64)>,
}

pub fn parse(
    body: &str,
    precision: Precision,
    now: Timestamp,
    room_of: impl Fn(&DeviceId) -> Option<RoomId>,
) -> Result<Lines, LineError> {
    // Plain lines (no escapes or quoted strings: Telegraf's, the client
    // libraries') take the fast parser. Line numbers are only needed for an
    // error, so a body that fails, or is not plain, is read by the crate's
    // parser line by line, which names the line (and forgives `\r\n` endings).
    let mut plain = Gatherer::new(body, precision, now);
    if let Some(Ok(())) = fast::read_plain(body, |line| plain.line(0, line)) {
        if let Ok(lines) = plain.finish(&room_of) {
            return Ok(lines);
        }
    }
    parse_without_fast_path(body, precision, now, room_of)
}

/// `parse` without the fast parser for plain lines: what the fuzz target
/// compares `parse` against (the fast parser must never change an answer).
#[doc(hidden)]
pub fn parse_without_fast_path(
    body: &str,
    precision: Precision,
    now: Timestamp,
    room_of: impl Fn(&DeviceId) -> Option<RoomId>,
) -> Result<Lines, LineError> {
    let mut gatherer = Gatherer::new(body, precision, now);
    for (line, parsed) in numbered_lines(body) {
        let parsed = parsed.map_err(|e| LineError {
            line,
            message: format!("not line protocol: {e}"),
        })?;
        gatherer.line(line, &parsed)?;
    }
    gatherer.finish(&room_of)
}

/// A request's lines as they are read, then merged into readings.
struct Gatherer {
    gathered: Vec<Gathered>,
    skipped: usize,
    first_skipped: Option<String>,
    precision: Precision,
    now: Timestamp,
    // A batch names few devices and rooms, line after line: each is parsed
    // once, then shared (`KnownIds`).
    devices: KnownIds<DeviceId>,
    rooms: KnownIds<RoomId>,
    /// The device and room of each numbered series (`LineView::series`)
    /// read so far: a series' lines share them, found without its tags.
    series: Vec<Option<(DeviceId, Option<RoomId>)>>,
}

impl Gatherer {
    fn new(body: &str, precision: Precision, now: Timestamp) -> Self {
        Self {
            gathered: Vec::with_capacity(memchr::memchr_iter(b'\n', body.as_bytes()).count() + 1),
            skipped: 0,
            first_skipped: None,
            precision,
            now,
            devices: KnownIds::default(),
            rooms: KnownIds::default(),
            series: Vec::new(),
        }
    }

    /// Reads one line (`line`: its 1-based number, or 0 when unknown).
    fn line(&mut self, line: usize, parsed: &impl LineView) -> Result<(), LineError> {
        let fail = |message: String| LineError { line, message };
        let values = quantities(parsed).map_err(fail)?;
        if values.is_empty() {
            self.skipped += 1;
            if self.first_skipped.is_none() {
                self.first_skipped = Some(skipped_line(parsed));
            }
            return Ok(());
        }
        let known = parsed
            .series()
            .and_then(|k| self.series.get(k).cloned().flatten());
        let (device_id, room) = match known {
            Some(ids) => ids,
            None => {
                let device_id = device_of(parsed, &mut self.devices).map_err(fail)?;
                let room = match parsed.tag("room") {
                    Some(r) => Some(
                        self.rooms
                            .get_or_parse(r, RoomId::parse)
                            .map_err(|e| fail(format!("tag room: {e}")))?,
                    ),
                    None => None,
                };
                if let Some(k) = parsed.series() {
                    if self.series.len() <= k {
                        self.series.resize(k + 1, None);
                    }
                    self.series[k] = Some((device_id.clone(), room.clone()));
                }
                (device_id, room)
            }
        };
        let (precision, now) = (self.precision, self.now);
        let timestamp = match parsed.timestamp() {
            None => now,
            Some(t) => precision
                .to_millis(t)
                .and_then(|ms| Timestamp::from_millis(ms).ok())
                .ok_or_else(|| format!("timestamp {t} is out of range for precision {precision:?}"))
                .and_then(|ts| plausible_time(ts, now))
                .map_err(|m| fail(format!("timestamp {m}")))?,
        };
        self.gathered.push(Gathered {
            device_id,
            timestamp,
            line,
            room,
            values,
        });
        Ok(())
    }

    /// The readings: lines of one device at one time merged.
    fn finish(self, room_of: &impl Fn(&DeviceId) -> Option<RoomId>) -> Result<Lines, LineError> {
        let Self {
            mut gathered,
            skipped,
            first_skipped,
            ..
        } = self;
        // Readings come out ordered by time, then device (times mostly differ, so
        // this compares few ids). The sort is stable: the lines of one reading stay
        // in body order, and a later line's value and room win.
        gathered.sort_by(|a, b| {
            a.timestamp
                .cmp(&b.timestamp)
                .then_with(|| a.device_id.cmp(&b.device_id))
        });
        let mut readings: Vec<Reading> = Vec::with_capacity(gathered.len());
        let mut lines = gathered.into_iter().peekable();
        while let Some(mut g) = lines.next() {
            while let Some(next) =
                lines.next_if(|n| n.device_id == g.device_id && n.timestamp == g.timestamp)
            {
                g.room = next.room.or(g.room);
                for (q, v) in next.values {
                    match g.values.iter_mut().find(|(k, _)| *k == q) {
                        Some((_, earlier)) => *earlier = v,
                        None => g.values.push((q, v)),
                    }
                }
            }
            let room = g.room.or_else(|| room_of(&g.device_id));
            let measurement = Measurement::new(room, g.values).map_err(|problems| LineError {
                line: g.line,
                message: problems
                    .iter()
                    .map(|p| format!("{} {}", p.field, p.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            })?;
            readings.push(Reading {
                device_id: g.device_id,
                timestamp: g.timestamp,
                measurement,
            });
        }
        Ok(Lines {
            readings,
            skipped,
            first_skipped,
        })
    }
}

fn device_of(line: &impl LineView, known: &mut KnownIds<DeviceId>) -> Result<DeviceId, String> {
    let (tag, mut value) = DEVICE_TAGS
        .iter()
        .find_map(|t| line.tag(t).map(|v| (*t, v)))
        .ok_or_else(|| format!("no device: give a tag {}", DEVICE_TAGS.join(", ")))?;
    // Home Assistant's tariff entity is its meter's (`home_assistant`).
    if tag == "entity_id" && measured(line).is_some_and(|(q, _)| tariff(q)) {
        if let Some((meter, _)) = home_assistant::tariff_entity(value) {
            value = meter;
        }
    }
    known
        .get_or_parse(value, DeviceId::parse)
        .map_err(|e| format!("tag {tag}: {e}"))
}

/// The catalogue quantities of a line, by field name or, for a field `value`,
/// by what its measurement names. A field that is a quantity must be a number.
fn quantities(line: &impl LineView) -> Result<Vec<(Quantity, f64)>, String> {
    let mut out = Vec::with_capacity(4);
    for (name, value) in line.fields() {
        let (q, convert): (Quantity, Convert) = if let Some(q) = Quantity::parse(name) {
            (q, |v| v)
        } else if name == "value" {
            match measured(line) {
                Some(found) => found,
                None => continue,
            }
        } else {
            continue; // an attribute (Home Assistant's friendly_name_str, ...)
        };
        let Field::Number(v) = value else {
            return Err(format!("field {name} ({}) must be a number", q.name()));
        };
        // The same quantity twice in a line (`temperature=` and `value=`): the later wins.
        match out.iter_mut().find(|(k, _)| *k == q) {
            Some((_, earlier)) => *earlier = convert(v),
            None => out.push((q, convert(v))),
        }
    }
    Ok(out)
}

/// A line that holds no quantity, named by its measurement and device tag,
/// and why: what `/health` shows of one, so that a user can see why an
/// entity of theirs is not stored.
fn skipped_line(line: &impl LineView) -> String {
    let device = DEVICE_TAGS
        .iter()
        .find_map(|t| line.tag(t).map(|v| format!(",{t}={v}")))
        .unwrap_or_default();
    let why = if line.fields().any(|(name, _)| name == "value") {
        home_assistant::why_not(line)
    } else {
        "no field is named as a quantity of the catalogue (docs/quantities.md)".to_owned()
    };
    format!("{}{device}: {why}", line.measurement())
}

/// Whether `q` is one tariff's counter.
fn tariff(q: Quantity) -> bool {
    domain::aggregate::counter::Counter::of_quantity(q)
        .is_some_and(|c| domain::aggregate::counter::Counter::TARIFFS.contains(&c))
}

/// From the unit a client sent to the catalogue's.
type Convert = fn(f64) -> f64;

/// The quantity a line's `value` is (and how to convert it): its measurement
/// as a catalogue name or a short name (`temperature`, as Tasmota writes), else
/// the unit and device class Home Assistant writes.
fn measured(line: &impl LineView) -> Option<(Quantity, Convert)> {
    let measurement = line.measurement();
    let named = Quantity::parse(measurement).or_else(|| {
        Some(match measurement.to_ascii_lowercase().as_str() {
            "temperature" | "temp" => Quantity::Temperature,
            "humidity" => Quantity::Humidity,
            "battery" => Quantity::Battery,
            "pressure" => Quantity::Pressure,
            "co2" | "carbondioxide" | "eco2" => Quantity::Co2,
            "pm2.5" | "pm25" => Quantity::Pm25,
            "illuminance" | "lux" => Quantity::Illuminance,
            "power" => Quantity::Power,
            "voltage" => Quantity::Voltage,
            "current" => Quantity::Current,
            _ => return None,
        })
    });
    match named {
        Some(q) => Some((q, |v| v)),
        None => home_assistant::quantity(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Lines of a few series in any order (the fast parser's memo of
        /// series, and the device and room each series gives) are read as
        /// the crate's parser reads them: readings, merged lines, rooms
        /// from tags or the registry, and errors.
        #[test]
        fn a_body_of_repeated_series_reads_as_without_the_fast_path(
            series in prop::collection::vec(
                ("climate|power|°C|humidity", 0..4usize, prop::option::of(0..3usize), "device|host|entity_id"),
                1..5,
            ),
            lines in prop::collection::vec(
                (any::<prop::sample::Index>(), "temperature|humidity|value|current_w|x", -50.0..150.0f64, 0..4i64),
                1..30,
            ),
        ) {
            let body: Vec<String> = lines
                .iter()
                .map(|(pick, field, v, minute)| {
                    let (m, device, room, tag) = &series[pick.index(series.len())];
                    let room = room.map(|r| format!(",room=r{r}")).unwrap_or_default();
                    format!("{m},{tag}=d{device}{room} {field}={v:.1} {}", 1_795_222_923_000 + minute * 60_000)
                })
                .collect();
            let body = body.join("\n");
            let room_of = |d: &DeviceId| (d.as_str() == "d1").then(|| RoomId::parse("registered").unwrap());
            prop_assert_eq!(
                parse(&body, Precision::Milliseconds, now(), room_of),
                parse_without_fast_path(&body, Precision::Milliseconds, now(), room_of),
                "{}", body
            );
        }
    }

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-22T00:00:00Z").unwrap()
    }

    fn lines(body: &str) -> Result<Lines, LineError> {
        parse(body, Precision::Nanoseconds, now(), |_| None)
    }

    fn shape(r: &Reading) -> serde_json::Value {
        serde_json::to_value(r).unwrap()
    }

    #[test]
    fn a_plain_line_with_catalogue_fields_is_one_reading() {
        let out = lines(
            "climate,device=th-1,room=living temperature=21.5,humidity=45 1795222923000000000\n",
        )
        .unwrap();
        assert_eq!(out.skipped, 0);
        assert_eq!(
            shape(&out.readings[0]),
            serde_json::json!({"device_id":"th-1","timestamp":"2026-11-21T01:02:03.000Z","type":"climate","room":"living","temperature":21.5,"humidity":45.0})
        );
    }

    #[test]
    fn home_assistant_units_and_attributes() {
        // Measurement = the unit, tag entity_id, field value, attributes as extra fields.
        let body = concat!(
            "°C,domain=sensor,entity_id=living_temperature value=21.5,friendly_name_str=\"Living\",device_class_str=\"temperature\",state_class_str=\"measurement\" 1795222923000000000\n",
            "%,domain=sensor,entity_id=living_humidity value=45,device_class_str=\"humidity\" 1795222923000000000\n",
            "%,domain=sensor,entity_id=phone_battery value=80,device_class_str=\"battery\" 1795222923000000000\n",
            "W,domain=sensor,entity_id=fridge_power value=85.5,voltage=229.9,battery_pct=90 1795222923000000000\n",
            "°F,domain=sensor,entity_id=porch value=50 1795222923000000000\n",
            "state,domain=binary_sensor,entity_id=door value=1i,state=\"on\" 1795222923000000000\n",
            "%,domain=sensor,entity_id=cpu_use value=12 1795222923000000000\n",
        );
        let out = lines(body).unwrap();
        assert_eq!(out.skipped, 2, "a binary sensor and an unclassed %");
        assert_eq!(
            out.first_skipped.as_deref(),
            Some("state,entity_id=door: the value's measurement \"state\" (unit \"state\") names no quantity of the catalogue (docs/line-protocol.md)")
        );
        let by_device: BTreeMap<String, serde_json::Value> = out
            .readings
            .iter()
            .map(|r| (r.device_id.to_string(), shape(r)))
            .collect();
        assert_eq!(by_device["living_temperature"]["temperature"], 21.5);
        assert_eq!(by_device["living_humidity"]["humidity"], 45.0);
        assert_eq!(by_device["phone_battery"]["battery_pct"], 80.0);
        assert_eq!(by_device["fridge_power"]["current_w"], 85.5);
        assert!(
            by_device["fridge_power"].get("voltage_v").is_none(),
            "an attribute is not a quantity"
        );
        assert_eq!(
            by_device["fridge_power"]["battery_pct"], 90.0,
            "a field named as in the catalogue is"
        );
        assert_eq!(by_device["porch"]["temperature"], 10.0);
        assert!(by_device["living_temperature"].get("room").is_none());
    }

    /// A utility meter's tariff entities, and the DSMR integration's, are
    /// one meter each (issue 79): its id without the tariff, each value
    /// that tariff's counter; lines of one time merge into one reading.
    #[test]
    fn home_assistant_tariff_entities_are_one_meter() {
        let t = 1795222923000000000i64;
        let body = format!(
            "kWh,domain=sensor,entity_id=energy_t1 value=600.5,device_class_str=\"energy\",state_class_str=\"total_increasing\" {t}\n\
             kWh,domain=sensor,entity_id=energy_t2 value=400.25,device_class_str=\"energy\",state_class_str=\"total_increasing\" {t}\n\
             kWh,domain=sensor,entity_id=p1_energy_production_tarif_2 value=12.5,device_class_str=\"energy\" {}\n\
             °C,domain=sensor,entity_id=probe_t1 value=21.5 {t}\n",
            t + 1_000_000_000
        );
        let out = lines(&body).unwrap();
        let shapes: Vec<_> = out.readings.iter().map(shape).collect();
        let energy = out
            .readings
            .iter()
            .find(|r| r.device_id.as_str() == "energy")
            .unwrap();
        assert_eq!(
            (
                energy.get(Quantity::EnergyBoughtT1),
                energy.get(Quantity::EnergyBoughtT2)
            ),
            (Some(600.5), Some(400.25)),
            "{shapes:?}"
        );
        assert_eq!(energy.get(Quantity::EnergyBought), None);
        let p1 = out
            .readings
            .iter()
            .find(|r| r.device_id.as_str() == "p1_energy_production")
            .unwrap();
        assert_eq!(p1.get(Quantity::EnergySoldT2), Some(12.5));
        assert!(
            out.readings
                .iter()
                .any(|r| r.device_id.as_str() == "probe_t1"),
            "a temperature is no tariff: {shapes:?}"
        );
        assert_eq!(out.readings.len(), 3);
    }

    #[test]
    fn home_assistant_energy_counters_go_one_way_or_the_other() {
        let t = 1795222923000000000i64;
        let body = format!(
            "kWh,domain=sensor,entity_id=grid_import value=1234.5,device_class_str=\"energy\",state_class_str=\"total_increasing\",friendly_name_str=\"Grid import\" {t}\n\
             kWh,domain=sensor,entity_id=grid_export value=310.25,device_class_str=\"energy\",state_class_str=\"total_increasing\" {t}\n\
             Wh,domain=sensor,entity_id=plug_energy value=1234567,device_class_str=\"energy\",state_class_str=\"total_increasing\" {t}\n\
             MWh,domain=sensor,entity_id=farm_production value=1.5,device_class_str=\"energy\" {t}\n\
             KWh,domain=sensor,entity_id=heat_pump_energy value=3120.5,device_class_str=\"energy\" {t}\n\
             kWh,domain=sensor,entity_id=car_battery value=41.2,device_class_str=\"energy_storage\",state_class_str=\"measurement\" {t}\n\
             kWh,domain=sensor,entity_id=home_battery value=8.2,state_class_str=\"measurement\" {t}\n\
             mWh,domain=sensor,entity_id=tiny_energy value=5,device_class_str=\"energy\" {t}\n\
             kW,domain=sensor,entity_id=power_consumption value=0.35,device_class_str=\"power\" {t}\n\
             cumulative_kwh_n,domain=sensor,entity_id=meter_two value=42.5,device_class_str=\"energy\",unit_of_measurement_str=\"kWh\" {t}\n"
        );
        let out = lines(&body).unwrap();
        assert_eq!(
            out.skipped, 3,
            "stored energy is no counter, and mWh no unit of it"
        );
        assert_eq!(
            out.first_skipped.as_deref(),
            Some("kWh,entity_id=car_battery: a value in kWh with class energy_storage and state class measurement is stored energy, not a counter of energy bought or sold")
        );
        let of = |device: &str| {
            let r = out
                .readings
                .iter()
                .find(|r| r.device_id.as_str() == device)
                .unwrap();
            (r.get(Quantity::EnergyBought), r.get(Quantity::EnergySold))
        };
        assert_eq!(of("grid_import"), (Some(1234.5), None));
        assert_eq!(of("grid_export"), (None, Some(310.25)));
        assert_eq!(of("plug_energy"), (Some(1234.567), None), "Wh in kWh");
        assert_eq!(of("farm_production"), (None, Some(1500.0)), "MWh in kWh");
        assert_eq!(
            of("heat_pump_energy"),
            (Some(3120.5), None),
            "a unit in any case"
        );
        assert_eq!(
            of("meter_two"),
            (None, Some(42.5)),
            "override_measurement decides for a name that says nothing"
        );
        let power = out
            .readings
            .iter()
            .find(|r| r.device_id.as_str() == "power_consumption");
        assert_eq!(power.unwrap().get(Quantity::Power), Some(350.0), "kW in W");
    }

    #[test]
    fn home_assistant_with_the_class_or_the_entity_as_measurement() {
        // `measurement_attr: domain__device_class`, then `entity_id`: the unit
        // is then a field of its own.
        let t = 1795222923000000000i64;
        let body = format!(
            "sensor__temperature,domain=sensor,entity_id=porch value=50,unit_of_measurement_str=\"°F\" {t}\n\
             sensor__humidity,domain=sensor,entity_id=porch_humidity value=61,unit_of_measurement_str=\"%\" {t}\n\
             sensor__energy,domain=sensor,entity_id=meter_returned value=12.5,unit_of_measurement_str=\"kWh\" {t}\n\
             sensor.cellar_temperature,domain=sensor,entity_id=cellar_temperature value=11.5,unit_of_measurement_str=\"°C\",device_class_str=\"temperature\" {t}\n\
             sensor,domain=sensor,entity_id=cpu value=12,unit_of_measurement_str=\"%\" {t}\n"
        );
        let out = lines(&body).unwrap();
        assert_eq!(out.skipped, 1, "a % without a class");
        assert!(
            out.first_skipped
                .as_deref()
                .is_some_and(|l| l.starts_with("sensor,entity_id=cpu: a value in % ")),
            "{:?}",
            out.first_skipped
        );
        let get = |device: &str, q: Quantity| {
            let r = out
                .readings
                .iter()
                .find(|r| r.device_id.as_str() == device)
                .unwrap();
            r.get(q)
        };
        assert_eq!(get("porch", Quantity::Temperature), Some(10.0));
        assert_eq!(get("porch_humidity", Quantity::Humidity), Some(61.0));
        assert_eq!(get("meter_returned", Quantity::EnergySold), Some(12.5));
        assert_eq!(get("cellar_temperature", Quantity::Temperature), Some(11.5));
    }

    #[test]
    fn tasmota_lines_without_time_are_one_reading_per_device() {
        let body = "temperature,device=tasmota_1,sensor=am2301 value=22.6\nhumidity,device=tasmota_1,sensor=am2301 value=40.1\n";
        let out = lines(body).unwrap();
        assert_eq!(out.readings.len(), 1);
        let r = &out.readings[0];
        assert_eq!(r.timestamp, now());
        assert_eq!(
            (r.get(Quantity::Temperature), r.get(Quantity::Humidity)),
            (Some(22.6), Some(40.1))
        );
    }

    #[test]
    fn precisions_scale_timestamps() {
        for (p, t) in [
            (Precision::Nanoseconds, 1_795_222_923_250_000_000i64),
            (Precision::Microseconds, 1_795_222_923_250_000),
            (Precision::Milliseconds, 1_795_222_923_250),
            (Precision::Seconds, 1_795_222_923),
        ] {
            let out = parse(&format!("m,device=d current_w=1 {t}"), p, now(), |_| None).unwrap();
            let want = if p == Precision::Seconds {
                "2026-11-21T01:02:03.000Z"
            } else {
                "2026-11-21T01:02:03.250Z"
            };
            assert_eq!(out.readings[0].timestamp.to_string(), want, "{p:?}");
        }
        assert_eq!(Precision::parse("u"), Some(Precision::Microseconds));
        assert_eq!(Precision::parse("x"), None);
    }

    #[test]
    fn bad_lines_are_named() {
        let err = lines("ok,device=a current_w=1\n\nbroken line here\n").unwrap_err();
        assert_eq!(err.line, 3);
        let err = lines("m,device=a temperature=\"warm\"").unwrap_err();
        assert!(err.message.contains("must be a number"), "{}", err.message);
        let err = lines("m,device=a,room=x co2_ppm=-3").unwrap_err();
        assert!(err.message.contains("co2_ppm"), "{}", err.message);
        let err = lines("m,sensor=a current_w=1").unwrap_err();
        assert!(err.message.contains("no device"), "{}", err.message);
        let err = lines("m,device=DEVICE current_w=1").unwrap_err();
        assert!(err.message.contains("tag device"), "{}", err.message);
        let err = lines("m,device=a current_w=1 5").unwrap_err();
        assert!(err.message.contains("before 2000"), "{}", err.message);
        let err = parse(
            "m,device=a current_w=1 9223372036854775807",
            Precision::Hours,
            now(),
            |_| None,
        )
        .unwrap_err();
        assert!(err.message.contains("out of range"), "{}", err.message);
    }

    #[test]
    fn the_registered_room_is_used_when_no_tag_gives_one() {
        let out = parse(
            "°C,entity_id=bedroom_t value=19",
            Precision::Nanoseconds,
            now(),
            |_| Some(RoomId::parse("bedroom").unwrap()),
        )
        .unwrap();
        assert_eq!(out.readings[0].room().map(|r| r.as_str()), Some("bedroom"));
    }

    #[test]
    fn errors_name_the_line_counting_blank_lines_and_comments_and_crlf_is_accepted() {
        let good = "power,device=m-1 current_w=5 1795222923000000000";
        let body = format!(
            "# a comment\n\n{good}\n  \npower,device=m-1 current_w=\"x\" 1795222983000000000\n"
        );
        let err = lines(&body).unwrap_err();
        assert_eq!(err.line, 5, "{err}");
        let err = lines(&format!("{good}\n\nnot line protocol\n")).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
        let err = lines(&format!("{good}\npower,device=m-1 current_w=2e9\n")).unwrap_err();
        assert_eq!(err.line, 2, "out of range is named by its line too: {err}");
        let crlf = lines(&format!(
            "{good}\r\npower,device=m-1 current_w=6 1795222983000000000\r\n"
        ))
        .unwrap();
        assert_eq!(crlf.readings.len(), 2);
        assert_eq!(crlf.readings[1].get(Quantity::Power), Some(6.0));
        // A no-break space is not whitespace: it is the measurement here (found by fuzzing).
        let nbsp = "\u{a0} temperature=7,00=07 1795222923000000000";
        assert_eq!(
            parse_without_fast_path(nbsp, Precision::Nanoseconds, now(), |_| None),
            lines(nbsp)
        );
    }
}
