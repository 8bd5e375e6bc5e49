//! Readings you can take anywhere (docs/backup.md): `export` writes a
//! store's readings, device by device in time order, as InfluxDB line
//! protocol (with the names users gave, as comment lines) or CSV; `import`
//! takes either back into any store. Both go through the `Store` trait
//! alone, so a DynamoDB table is read by the same rule as the query
//! function (hour blocks before the raw cutoff, raw items after it), and
//! either engine takes an import.

pub mod csv;
mod import;
pub mod line_protocol;

pub use import::{ImportError, Imported, Importer};

use domain::model::{DeviceId, TimeRange};
use line_protocol::Profile;
use std::io::Write;
use storage::{Order, RangeRequest, Store, StoreError};

/// The export's two shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    LineProtocol,
    Csv,
}

/// Which readings.
#[derive(Debug, Clone)]
pub struct Selection {
    /// `None`: every device of the registry.
    pub devices: Option<Vec<DeviceId>>,
    pub range: TimeRange,
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exported {
    pub devices: usize,
    pub readings: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("device {0} is not in the registry: it has sent no reading")]
    UnknownDevice(DeviceId),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("writing the export: {0}")]
    Write(#[from] std::io::Error),
}

/// Readings per page read from the store.
const PAGE: usize = 1000;

/// Writes the selection to `out`; `progress` hears the readings written so far.
pub async fn export<S: Store, W: Write>(
    store: &S,
    selection: &Selection,
    format: Format,
    out: W,
    mut progress: impl FnMut(u64),
) -> Result<Exported, ExportError> {
    let registry = store.load_registry().await?;
    let devices: Vec<DeviceId> = match &selection.devices {
        None => registry.devices.keys().cloned().collect(),
        Some(named) => {
            if let Some(unknown) = named.iter().find(|d| !registry.devices.contains_key(*d)) {
                return Err(ExportError::UnknownDevice(unknown.clone()));
            }
            named.clone()
        }
    };
    // A whole export carries the alert rules too (a selection leaves them).
    let rules = match selection.devices {
        None => store.alert_rules().await?,
        Some(_) => Vec::new(),
    };
    let mut sink = Sink::new(format, out)?;
    if let Sink::Lines(out, _) = &mut sink {
        for profile in profiles(&registry, &devices) {
            writeln!(out, "{}", profile.line())?;
        }
        for (name, json) in rules {
            writeln!(out, "{}", Profile::AlertRule { name, json }.line())?;
        }
    }
    let mut done = Exported {
        devices: devices.len(),
        readings: 0,
    };
    for device in &devices {
        let mut request = RangeRequest {
            range: selection.range,
            order: Order::Asc,
            limit: PAGE,
            after: None,
        };
        loop {
            let page = store.device_readings(device, &request).await?;
            for reading in &page.readings {
                sink.reading(reading)?;
            }
            done.readings += page.readings.len() as u64;
            progress(done.readings);
            match page.next {
                Some(next) => request.after = Some(next),
                None => break,
            }
        }
    }
    sink.finish()?;
    Ok(done)
}

/// The names (and rooms set by hand) of the exported devices, and the names
/// of the rooms they are in.
fn profiles(registry: &storage::RegistrySnapshot, devices: &[DeviceId]) -> Vec<Profile> {
    let mut out = Vec::new();
    let mut rooms = std::collections::BTreeSet::new();
    for id in devices {
        let Some(d) = registry.devices.get(id) else {
            continue;
        };
        rooms.extend(d.room.clone());
        let name = d
            .name
            .as_deref()
            .and_then(|n| domain::model::Name::parse(n).ok());
        // A room given to a device that has sent nothing yet is the user's
        // alone (a reporting device's room follows its readings).
        if name.is_some() || (d.latest.is_none() && d.room.is_some()) {
            out.push(Profile::Device {
                id: id.clone(),
                name,
                room: d.room.clone(),
            });
        }
    }
    for r in registry.rooms.values() {
        let exported = rooms.contains(&r.room_id) || r.devices.iter().any(|d| devices.contains(d));
        let name = r
            .name
            .as_deref()
            .and_then(|n| domain::model::Name::parse(n).ok());
        if let (true, Some(name)) = (exported, name) {
            out.push(Profile::Room {
                id: r.room_id.clone(),
                name,
            });
        }
    }
    out
}

/// Where readings are written, in the chosen shape.
enum Sink<W: Write> {
    /// The writer and the text of the lines of one reading, reused.
    Lines(W, String),
    /// Boxed: the CSV writer carries its buffer state.
    Csv(Box<::csv::Writer<W>>),
}

impl<W: Write> Sink<W> {
    fn new(format: Format, mut out: W) -> Result<Self, ExportError> {
        Ok(match format {
            Format::LineProtocol => {
                writeln!(out, "{}", line_protocol::HEADER)?;
                Sink::Lines(out, String::new())
            }
            Format::Csv => {
                let mut writer = ::csv::Writer::from_writer(out);
                writer.write_record(csv::header()).map_err(csv_error)?;
                Sink::Csv(Box::new(writer))
            }
        })
    }

    fn reading(&mut self, reading: &domain::model::Reading) -> Result<(), ExportError> {
        match self {
            Sink::Lines(out, text) => {
                text.clear();
                line_protocol::write_reading(text, reading);
                out.write_all(text.as_bytes())?;
            }
            Sink::Csv(writer) => writer.write_record(csv::row(reading)).map_err(csv_error)?,
        }
        Ok(())
    }

    fn finish(self) -> Result<(), ExportError> {
        match self {
            Sink::Lines(mut out, _) => out.flush()?,
            Sink::Csv(mut writer) => writer.flush()?,
        }
        Ok(())
    }
}

fn csv_error(e: ::csv::Error) -> ExportError {
    ExportError::Write(e.into())
}
