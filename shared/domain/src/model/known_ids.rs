//! Ids already parsed in one request. A batch names a few devices and rooms,
//! reading after reading: each text is parsed once and then shared (an `Arc`
//! each, see `ids`), instead of parsed and allocated again. Shared ids also
//! make the write path's `IdIndex` look-up one hash of an address.

use super::{DeviceId, RoomId};
use smallvec::SmallVec;

/// Ids parsed so far, most recent last (a handful: a linear search beats
/// hashing). The first few are kept inline: a single reading (an MQTT
/// message, a device's stored latest reading as the registry loads) checks
/// its ids through this too, and must not allocate for it.
pub struct KnownIds<T>(SmallVec<[T; 4]>);

impl<T> Default for KnownIds<T> {
    fn default() -> Self {
        Self(SmallVec::new())
    }
}

/// How many ids `KnownIds` keeps.
const KNOWN_IDS: usize = 16;

impl<T: Clone + AsRef<str>> KnownIds<T> {
    /// The id of `text`: a clone of the one parsed before, or `parse`'s.
    pub fn get_or_parse<E>(
        &mut self,
        text: &str,
        parse: impl Fn(&str) -> Result<T, E>,
    ) -> Result<T, E> {
        // The last bytes first: ids of a batch often differ only there
        // (`sensor-2`, `sensor-3`), and a comparison of equal lengths is
        // otherwise a call to `memcmp`.
        let same = |id: &&T| {
            let id = id.as_ref().as_bytes();
            id.last() == text.as_bytes().last() && id == text.as_bytes()
        };
        if let Some(id) = self.0.iter().rev().find(same) {
            return Ok(id.clone());
        }
        let id = parse(text)?;
        if self.0.len() == KNOWN_IDS {
            self.0.remove(0);
        }
        self.0.push(id.clone());
        Ok(id)
    }
}

/// The devices and rooms one request named so far.
#[derive(Default)]
pub struct RequestIds {
    pub devices: KnownIds<DeviceId>,
    pub rooms: KnownIds<RoomId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_text_gives_the_same_id_and_a_bad_one_its_error() {
        let mut known = KnownIds::<DeviceId>::default();
        let a = known.get_or_parse("meter-1", DeviceId::parse).unwrap();
        let b = known.get_or_parse("meter-1", DeviceId::parse).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.as_ref().as_ptr(), b.as_ref().as_ptr(), "one shared text");
        let c = known.get_or_parse("meter-2", DeviceId::parse).unwrap();
        assert_eq!(c.as_ref(), "meter-2");
        assert!(known.get_or_parse("bad id!", DeviceId::parse).is_err());
        // Past its size the oldest is forgotten, and parsed again when named.
        for n in 0..KNOWN_IDS {
            known
                .get_or_parse(&format!("d-{n}"), DeviceId::parse)
                .unwrap();
        }
        let again = known.get_or_parse("meter-1", DeviceId::parse).unwrap();
        assert_eq!(again, a);
        assert_ne!(again.as_ref().as_ptr(), a.as_ref().as_ptr());
    }
}
