//! Domain types. Parsing is validation: a value of these types is always valid (DESIGN §3).
//! Nothing here knows about AWS, HTTP or storage.

mod ids;
mod reading;
mod timestamp;

pub use ids::{DeviceId, IdError, Name, RoomId};
pub use reading::{Climate, FieldProblem, Measurement, Power, Reading, ReadingKind, BOUNDS};
pub use timestamp::{TimeRange, Timestamp, TimestampError};
