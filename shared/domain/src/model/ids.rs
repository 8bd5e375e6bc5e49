//! Device and room identifiers: charset, length and reserved names of DESIGN §3.

use std::fmt;

/// Why an identifier was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {max} characters, got {len}")]
    TooLong { max: usize, len: usize },
    #[error("character {ch:?} at position {pos} is not allowed (allowed: {allowed})")]
    BadChar {
        ch: char,
        pos: usize,
        allowed: &'static str,
    },
    #[error("{0:?} is reserved (it names a registry partition)")]
    Reserved(String),
}

/// Ids that would collide with the registry partitions (`pk=DEVICE`, `pk=ROOM`).
const RESERVED: [&str; 2] = ["DEVICE", "ROOM"];

/// The characters an id may hold: ASCII letters and digits, `.`, `_`, `-`,
/// and `:` where `allow_colon` (device ids: MAC addresses).
fn id_char(ch: char, allow_colon: bool) -> bool {
    ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-') || (allow_colon && ch == ':')
}

/// A device id's text from free text (an MQTT topic level, a Zigbee2MQTT
/// friendly name with spaces and slashes): a character a device id may not
/// hold becomes `-`. The result may still be refused (empty, too long,
/// reserved) when it is parsed.
pub fn device_id_text(free: &str) -> String {
    free.chars()
        .map(|c| if id_char(c, true) { c } else { '-' })
        .collect()
}

fn check(s: &str, max: usize, allow_colon: bool, allowed: &'static str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty);
    }
    let len = s.chars().count();
    if len > max {
        return Err(IdError::TooLong { max, len });
    }
    for (pos, ch) in s.chars().enumerate() {
        if !id_char(ch, allow_colon) {
            return Err(IdError::BadChar { ch, pos, allowed });
        }
    }
    if RESERVED.contains(&s) {
        return Err(IdError::Reserved(s.to_owned()));
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $max:expr, $colon:expr, $allowed:expr) => {
        $(#[$doc])*
        // Shared text: readings and registry records clone ids all the time
        // (every reading read back carries its device's), and a clone of an
        // `Arc<str>` is a count, not an allocation.
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(std::sync::Arc<str>);

        impl $name {
            pub const MAX_LEN: usize = $max;

            pub fn parse(s: &str) -> Result<Self, IdError> {
                check(s, $max, $colon, $allowed)?;
                Ok(Self(s.into()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl super::SharedText for $name {
            fn text(&self) -> &str {
                &self.0
            }
            fn address(&self) -> usize {
                self.0.as_ptr() as usize
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }
    };
}

id_type!(
    /// A device id: 1-128 characters of `[A-Za-z0-9._:-]`, not `DEVICE` or `ROOM`.
    DeviceId, 128, true, "A-Z a-z 0-9 . _ : -"
);
id_type!(
    /// A room id: 1-64 characters of `[A-Za-z0-9._-]`, not `DEVICE` or `ROOM`. Stable; its name may change.
    RoomId, 64, false, "A-Z a-z 0-9 . _ -"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Free text becomes a device id's text by the same character rule the
    /// parser checks: what it makes parses (when not empty or too long).
    #[test]
    fn free_text_becomes_a_device_id_by_the_parser_s_rule() {
        assert_eq!(device_id_text("Kitchen sensor/1"), "Kitchen-sensor-1");
        assert_eq!(device_id_text("aa:bb:cc_1.x-y"), "aa:bb:cc_1.x-y");
        assert_eq!(device_id_text("Küche #2"), "K-che--2");
        for text in [
            "Kitchen sensor/1",
            "a b c",
            "Wohnzimmer (Fenster)",
            "x\ty\n",
        ] {
            let made = device_id_text(text);
            assert!(DeviceId::parse(&made).is_ok(), "{text:?} -> {made:?}");
        }
    }

    #[test]
    fn device_ids_follow_the_charset_and_length() {
        assert!(DeviceId::parse("meter-1:a.b_c").is_ok());
        assert_eq!(DeviceId::parse(""), Err(IdError::Empty));
        assert!(matches!(
            DeviceId::parse("a#b"),
            Err(IdError::BadChar {
                ch: '#',
                pos: 1,
                ..
            })
        ));
        assert!(matches!(
            DeviceId::parse("a b"),
            Err(IdError::BadChar { ch: ' ', .. })
        ));
        assert!(matches!(DeviceId::parse("é"), Err(IdError::BadChar { .. })));
        assert!(DeviceId::parse(&"x".repeat(128)).is_ok());
        assert_eq!(
            DeviceId::parse(&"x".repeat(129)),
            Err(IdError::TooLong { max: 128, len: 129 })
        );
    }

    #[test]
    fn reserved_partition_names_are_rejected_for_both_kinds() {
        for s in ["DEVICE", "ROOM"] {
            assert!(matches!(DeviceId::parse(s), Err(IdError::Reserved(_))));
            assert!(matches!(RoomId::parse(s), Err(IdError::Reserved(_))));
        }
        // Only the exact partition names collide.
        assert!(DeviceId::parse("device").is_ok());
        assert!(RoomId::parse("ROOMS").is_ok());
    }

    #[test]
    fn room_ids_are_shorter_and_have_no_colon() {
        assert!(RoomId::parse("chiyoda1-A").is_ok());
        assert!(matches!(
            RoomId::parse("a:b"),
            Err(IdError::BadChar { ch: ':', .. })
        ));
        assert!(RoomId::parse(&"r".repeat(64)).is_ok());
        assert!(matches!(
            RoomId::parse(&"r".repeat(65)),
            Err(IdError::TooLong { .. })
        ));
    }
}

/// A user-given display name of a device or room: 1-100 characters after
/// trimming, no control characters. The id stays stable; the name may change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name(String);

impl Name {
    pub const MAX_LEN: usize = 100;

    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.is_empty() {
            return Err("must not be empty (send null to remove the name)".into());
        }
        let len = t.chars().count();
        if len > Self::MAX_LEN {
            return Err(format!(
                "must be at most {} characters, got {len}",
                Self::MAX_LEN
            ));
        }
        if let Some(c) = t.chars().find(|c| c.is_control()) {
            return Err(format!("must not contain control characters (found {c:?})"));
        }
        Ok(Self(t.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod name_tests {
    use super::Name;

    #[test]
    fn names_are_trimmed_bounded_and_printable() {
        assert_eq!(
            Name::parse("  Bedroom sensor ").unwrap().as_str(),
            "Bedroom sensor"
        );
        assert_eq!(Name::parse("寝室").unwrap().as_str(), "寝室");
        assert!(Name::parse("   ").is_err());
        assert!(Name::parse(&"x".repeat(101)).is_err());
        assert!(Name::parse("a\u{0}b").is_err());
    }
}
