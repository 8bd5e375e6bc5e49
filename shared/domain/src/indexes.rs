//! Which optional indexes a deployment keeps: a setting of the
//! configuration that the DynamoDB adapter obeys (docs/cost.md).

/// The optional indexes of a DynamoDB deployment (template parameters
/// `BoxSearch` and `AllDevicesFeed`, docs/cost.md). A reading enters an index,
/// and pays its write units, only when the index is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexes {
    /// `room-time`: a room's readings from one index (template parameter
    /// `RoomIndex`). Without it, a room's readings are merged from its
    /// devices' partitions (`domain::room_presence`); the answers are the same.
    pub room_time: bool,
    /// `room-z` and `device-z`: the box search routes.
    pub box_search: bool,
    /// `all-time`: `GET /readings`.
    pub all_devices: bool,
}

impl Indexes {
    pub const ALL: Indexes = Indexes {
        room_time: true,
        box_search: true,
        all_devices: true,
    };
    /// No optional index: the default template's.
    pub const NONE: Indexes = Indexes {
        room_time: false,
        box_search: false,
        all_devices: false,
    };
}

impl Default for Indexes {
    fn default() -> Self {
        Self::ALL
    }
}
