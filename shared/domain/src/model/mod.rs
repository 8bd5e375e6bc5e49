//! Domain types. Parsing is validation: a value of these types is always valid (DESIGN §3).
//! Nothing here knows about AWS, HTTP or storage.

mod climate_box;
mod id_index;
mod ids;
mod interval;
mod known_ids;
mod plain_json;
mod quantity;
mod raw_reading;
mod reading;
mod span;
mod timestamp;
mod unit;
mod value_memo;
mod zone;

pub use climate_box::ClimateBox;
pub use id_index::{FastMap, IdIndex, SharedText};
pub use ids::{device_id_text, DeviceId, IdError, Name, RoomId};
pub use interval::parse_interval;
pub use known_ids::{KnownIds, RequestIds};
pub use plain_json::read_plain;
pub use quantity::{
    celsius_from_fahrenheit, watts_from_kilowatts, whole_thousandths, Quantity, QuantityKind,
    ReadingKind, Spec,
};
pub use raw_reading::{RawBody, RawReading, RawValue};
pub use reading::{plausible_time, FieldProblem, Measurement, Reading, BOUNDS};
pub use span::{Span, DAY_MS, HOUR_MS};
pub use timestamp::{TimeRange, Timestamp, TimestampError};
pub use unit::Unit;
pub use value_memo::ValueMemo;
pub use zone::{UnknownZone, Zone, ZoneOffset};
