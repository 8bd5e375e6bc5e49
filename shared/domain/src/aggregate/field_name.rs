//! A bucket's field: a quantity, ordered by its name, as answers list
//! fields. Its order is a table lookup (`Quantity::name_rank`), not a string
//! comparison: a zone's year of days merges 17,568 fields into buckets a
//! request, and comparing names was a fifth of its fold.

use crate::model::Quantity;
use std::borrow::Borrow;

/// A quantity as a bucket's field; it is looked up by name too (`Borrow<str>`:
/// its order is its name's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldName(pub Quantity);

impl FieldName {
    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

impl Ord for FieldName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.name_rank().cmp(&other.0.name_rank())
    }
}

impl PartialOrd for FieldName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Borrow<str> for FieldName {
    fn borrow(&self) -> &str {
        self.0.name()
    }
}

impl std::fmt::Display for FieldName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Quantity::name_rank`'s table, and the promise `Borrow<str>` makes:
    /// the order is the names'.
    #[test]
    fn orders_as_its_name_does() {
        for a in Quantity::ALL {
            for b in Quantity::ALL {
                assert_eq!(
                    FieldName(a).cmp(&FieldName(b)),
                    a.name().cmp(b.name()),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
