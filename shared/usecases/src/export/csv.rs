//! The export's CSV: a header `time,device_id,room` and a column per
//! catalogue quantity (all of them, in catalogue order, so that every export
//! has the same columns), then a row per reading: the time as UTC ISO 8601
//! with milliseconds, an empty cell where a reading has no room or no such
//! quantity. Read back, any subset and order of those columns is taken
//! (`time` and `device_id` are needed), so a spreadsheet's file imports too.

use domain::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};

/// The header's fixed columns.
const TIME: &str = "time";
const DEVICE: &str = "device_id";
const ROOM: &str = "room";

/// The header row.
pub fn header() -> Vec<&'static str> {
    let mut columns = vec![TIME, DEVICE, ROOM];
    columns.extend(Quantity::ALL.iter().map(|q| q.name()));
    columns
}

/// A reading's row, in the header's order.
pub fn row(reading: &Reading) -> Vec<String> {
    let mut cells = vec![
        reading.timestamp.to_string(),
        reading.device_id.to_string(),
        reading.room().map(|r| r.to_string()).unwrap_or_default(),
    ];
    cells.extend(
        Quantity::ALL
            .iter()
            .map(|q| reading.get(*q).map(|v| v.to_string()).unwrap_or_default()),
    );
    cells
}

/// What each column of a file's header is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    Time,
    Device,
    Room,
    Value(Quantity),
}

/// A file's header, read: how to make a reading of each row.
#[derive(Debug, Clone)]
pub struct Columns(Vec<Column>);

impl Columns {
    /// Every column must be known and appear once; `time` and `device_id` are needed.
    pub fn parse(header: &csv::StringRecord) -> Result<Self, String> {
        let mut columns = Vec::with_capacity(header.len());
        for name in header.iter() {
            let column = match name.trim() {
                TIME => Column::Time,
                DEVICE => Column::Device,
                ROOM => Column::Room,
                other => Column::Value(Quantity::parse(other).ok_or_else(|| {
                    format!("column {other:?} is neither time, device_id, room nor a quantity of the catalogue")
                })?),
            };
            if columns.contains(&column) {
                return Err(format!("column {name:?} appears twice"));
            }
            columns.push(column);
        }
        for (needed, name) in [(Column::Time, TIME), (Column::Device, DEVICE)] {
            if !columns.contains(&needed) {
                return Err(format!("the header has no {name} column"));
            }
        }
        Ok(Self(columns))
    }

    /// A row's reading. Values are checked as ingest checks them.
    pub fn reading(&self, record: &csv::StringRecord) -> Result<Reading, String> {
        if record.len() != self.0.len() {
            return Err(format!(
                "{} cells where the header has {} columns",
                record.len(),
                self.0.len()
            ));
        }
        let (mut time, mut device, mut room, mut values) = (None, None, None, Vec::new());
        for (column, cell) in self.0.iter().zip(record.iter()) {
            let cell = cell.trim();
            match column {
                Column::Time => {
                    time = Some(Timestamp::parse(cell).map_err(|e| format!("time {cell:?}: {e}"))?)
                }
                Column::Device => {
                    device = Some(
                        DeviceId::parse(cell).map_err(|e| format!("device_id {cell:?}: {e}"))?,
                    )
                }
                Column::Room if cell.is_empty() => {}
                Column::Room => {
                    room = Some(RoomId::parse(cell).map_err(|e| format!("room {cell:?}: {e}"))?)
                }
                Column::Value(_) if cell.is_empty() => {}
                Column::Value(q) => {
                    let v: f64 = cell
                        .parse()
                        .map_err(|_| format!("{} {cell:?} is not a number", q.name()))?;
                    values.push((*q, v));
                }
            }
        }
        let measurement = Measurement::new(room, values).map_err(|problems| {
            problems
                .iter()
                .map(|p| format!("{} {}", p.field, p.message).trim().to_owned())
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        Ok(Reading {
            device_id: device.expect("the header has a device_id column"),
            timestamp: time.expect("the header has a time column"),
            measurement,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cells: &[&str]) -> csv::StringRecord {
        csv::StringRecord::from(cells.to_vec())
    }

    #[test]
    fn a_row_reads_back_as_its_reading() {
        let reading = Reading {
            device_id: DeviceId::parse("th-1").unwrap(),
            timestamp: Timestamp::parse("2024-02-29T23:59:59.999Z").unwrap(),
            measurement: Measurement::new(
                Some(RoomId::parse("attic").unwrap()),
                vec![(Quantity::Temperature, -7.1), (Quantity::Humidity, 1e-3)],
            )
            .unwrap(),
        };
        let columns = Columns::parse(&record(&header())).unwrap();
        let cells = row(&reading);
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        assert_eq!(columns.reading(&record(&cells)).unwrap(), reading);
    }

    #[test]
    fn a_spreadsheet_s_columns_in_any_order_are_taken_and_unknown_ones_named() {
        let columns = Columns::parse(&record(&["current_w", "device_id", "time"])).unwrap();
        let r = columns
            .reading(&record(&["230.5", "plug-2", "2025-01-01T00:00:00Z"]))
            .unwrap();
        assert_eq!(r.get(Quantity::Power), Some(230.5));
        assert_eq!(r.room(), None);
        let e = Columns::parse(&record(&["time", "device_id", "watts"])).unwrap_err();
        assert!(e.contains("\"watts\""), "{e}");
        let e = Columns::parse(&record(&["time", "current_w"])).unwrap_err();
        assert!(e.contains("device_id"), "{e}");
        let e = columns
            .reading(&record(&["hot", "plug-2", "2025-01-01T00:00:00Z"]))
            .unwrap_err();
        assert!(e.contains("current_w \"hot\""), "{e}");
        let e = columns.reading(&record(&["1", "plug-2"])).unwrap_err();
        assert!(e.contains("2 cells"), "{e}");
    }
}
