//! `import`: an export (or any line protocol or CSV of the same columns)
//! back into a store, a chunk at a time, through the same idempotent writes
//! as ingest: importing a file twice stores each reading once, so an import
//! that stopped is run again from the start.
//!
//! Unlike `POST /write`, a reading with no `room` tag stays without a room
//! (an export tags every reading that had one), so what comes back is what
//! went out. Lines of one reading must be next to each other, as an export
//! writes them: a chunk ends only where the time changes.

use super::csv::Columns;
use super::line_protocol::Profile;
use crate::ingest::line_protocol::{self, Precision};
use domain::model::{Reading, Timestamp};
use std::io::{BufRead, Read};
use storage::{Store, StoreError};

/// Lines (or rows) written to the store at once.
const CHUNK: usize = 5000;

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
    pub readings: u64,
    /// Line-protocol lines with no quantity of the catalogue.
    pub skipped_lines: u64,
    /// Device and room names (and rooms set by hand), and alert rules, applied.
    pub profiles: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("line {line}: {message}")]
    Line { line: u64, message: String },
    #[error("{unwritten} readings of lines {first_line}-{last_line} could not be stored; the readings before them are: run the import again (readings already stored are stored once)")]
    Unwritten {
        unwritten: usize,
        first_line: u64,
        last_line: u64,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("reading the file: {0}")]
    Read(#[from] std::io::Error),
}

/// An import into one store.
pub struct Importer<'s, S> {
    store: &'s S,
    now: Timestamp,
    done: Imported,
}

impl<'s, S: Store> Importer<'s, S> {
    pub fn new(store: &'s S, now: Timestamp) -> Self {
        Self {
            store,
            now,
            done: Imported::default(),
        }
    }

    /// Reads `input` to its end into the store; `progress` hears the
    /// readings stored so far. Line protocol or CSV, told apart by the first line that is not blank:
    /// a CSV header names `time` and `device_id` as cells.
    pub async fn run(
        mut self,
        mut input: impl BufRead,
        mut progress: impl FnMut(u64),
    ) -> Result<Imported, ImportError> {
        let mut first = String::new();
        let mut skipped = 0u64;
        loop {
            first.clear();
            if input.read_line(&mut first)? == 0 {
                return Ok(self.done);
            }
            if !first.trim().is_empty() {
                break;
            }
            skipped += 1;
        }
        let cells: Vec<&str> = first.trim().split(',').map(str::trim).collect();
        if cells.contains(&"time") && cells.contains(&"device_id") {
            let reader = ::csv::ReaderBuilder::new()
                .has_headers(true)
                .from_reader(std::io::Cursor::new(first.clone()).chain(input));
            self.csv(reader, skipped, &mut progress).await?;
        } else {
            self.lines(first, input, skipped, &mut progress).await?;
        }
        Ok(self.done)
    }

    async fn lines(
        &mut self,
        first: String,
        mut input: impl BufRead,
        skipped: u64,
        progress: &mut impl FnMut(u64),
    ) -> Result<(), ImportError> {
        let mut chunk = String::new();
        let mut chunk_lines = 0usize;
        let mut chunk_first = skipped + 1;
        let mut profiles = Vec::new();
        let mut line = first;
        let mut number = skipped + 1;
        let mut last_time = String::new();
        loop {
            if let Some(profile) = Profile::parse(&line) {
                profiles.push(profile.map_err(|message| ImportError::Line {
                    line: number,
                    message,
                })?);
            }
            let time = line.trim_end().rsplit(' ').next().unwrap_or("");
            if chunk_lines >= CHUNK && time != last_time {
                self.write_lines(&chunk, chunk_first).await?;
                progress(self.done.readings);
                chunk.clear();
                chunk_lines = 0;
                chunk_first = number;
            }
            last_time.clear();
            last_time.push_str(time);
            chunk.push_str(&line);
            if !line.ends_with('\n') {
                chunk.push('\n');
            }
            chunk_lines += 1;
            line.clear();
            if input.read_line(&mut line)? == 0 {
                break;
            }
            number += 1;
        }
        self.write_lines(&chunk, chunk_first).await?;
        progress(self.done.readings);
        self.apply(profiles).await
    }

    async fn write_lines(&mut self, chunk: &str, first_line: u64) -> Result<(), ImportError> {
        let parsed = line_protocol::parse(chunk, Precision::Nanoseconds, self.now, |_| None)
            .map_err(|e| ImportError::Line {
                line: first_line + e.line as u64 - 1,
                message: e.message,
            })?;
        self.done.skipped_lines += parsed.skipped as u64;
        let last_line = first_line + chunk.lines().count() as u64 - 1;
        self.write(parsed.readings, first_line, last_line).await
    }

    async fn csv(
        &mut self,
        mut reader: ::csv::Reader<impl std::io::Read>,
        skipped: u64,
        progress: &mut impl FnMut(u64),
    ) -> Result<(), ImportError> {
        let header_line = skipped + 1;
        let columns = reader
            .headers()
            .map_err(|e| ImportError::Line {
                line: header_line,
                message: e.to_string(),
            })
            .and_then(|h| {
                Columns::parse(h).map_err(|message| ImportError::Line {
                    line: header_line,
                    message,
                })
            })?;
        let mut readings = Vec::with_capacity(CHUNK);
        let mut first_line = header_line + 1;
        let mut record = ::csv::StringRecord::new();
        loop {
            let line = skipped + reader.position().line();
            let more = reader
                .read_record(&mut record)
                .map_err(|e| ImportError::Line {
                    line,
                    message: e.to_string(),
                })?;
            if more {
                let reading = columns
                    .reading(&record)
                    .map_err(|message| ImportError::Line { line, message })?;
                readings.push(reading);
            }
            if readings.len() >= CHUNK || (!more && !readings.is_empty()) {
                let last_line = skipped + reader.position().line().saturating_sub(1);
                self.write(std::mem::take(&mut readings), first_line, last_line)
                    .await?;
                progress(self.done.readings);
                first_line = last_line + 1;
            }
            if !more {
                return Ok(());
            }
        }
    }

    async fn write(
        &mut self,
        readings: Vec<Reading>,
        first_line: u64,
        last_line: u64,
    ) -> Result<(), ImportError> {
        if readings.is_empty() {
            return Ok(());
        }
        let count = readings.len() as u64;
        let report = self.store.write_owned_readings(readings).await;
        if !report.unwritten.is_empty() {
            return Err(ImportError::Unwritten {
                unwritten: report.unwritten.len(),
                first_line,
                last_line,
            });
        }
        self.done.readings += count;
        Ok(())
    }

    /// Names last, as `migrate` copies them: a device's or room's record may
    /// be made by its readings first.
    async fn apply(&mut self, profiles: Vec<Profile>) -> Result<(), ImportError> {
        for profile in profiles {
            match &profile {
                Profile::Device { id, name, room } => {
                    self.store
                        .set_device_profile(id, name.as_ref(), room.as_ref())
                        .await?
                }
                Profile::Room { id, name } => self.store.set_room_name(id, Some(name)).await?,
                Profile::AlertRule { name, json } => self.store.put_alert_rule(name, json).await?,
            }
            self.done.profiles += 1;
        }
        Ok(())
    }
}
