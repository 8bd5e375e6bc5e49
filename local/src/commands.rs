//! The one-shot commands: `backup`, `restore`, `export`, `import`, `migrate`,
//! `rollups rebuild`, `blocks rebuild`, `reindex` and `replay`, each on the store its flags name.

use crate::cli::*;
use crate::serve::*;
use ingester_local::stop::Stop;
use ingester_local::{portable, replay, stream_poller::StreamPoller};
use shared::api::App;
use shared::config::Config;
use shared::export::{Format, Selection};
use shared::model::{DeviceId, TimeRange, Timestamp};
use shared::store::Store;
use std::path::PathBuf;
use std::time::Duration;

/// `rollups rebuild` on either engine: one device at a time (on the embedded
/// store each in its own transaction), with a progress bar.
pub(crate) async fn rebuild_rollups<S: shared::rollups::Upkeep>(
    store: &S,
    only: Option<DeviceId>,
    range: TimeRange,
) -> Result<bool, String> {
    let devices = ingester_local::blocks::devices_to_rebuild(store, only).await?;
    let bar = indicatif::ProgressBar::new(devices.len() as u64).with_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} devices {pos}/{len} {wide_bar} {msg} ({elapsed})",
        )
        .map_err(|e| e.to_string())?,
    );
    let mut written = 0;
    for device in &devices {
        bar.set_message(device.to_string());
        written += shared::rollups::rebuild_device(store, device, range)
            .await
            .map_err(|e| format!("{device}: {e}"))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "{}",
        serde_json::json!({"devices": devices.len(), "rollups_written": written})
    );
    Ok(true)
}

pub(crate) async fn migrate_between<
    A: Store + shared::store::Alerts,
    B: Store + shared::store::Alerts,
>(
    from: &A,
    to: &B,
    names: (&str, &str),
    checkpoint: &std::path::Path,
    page: usize,
) -> Result<bool, String> {
    let summary = ingester_local::migrate::run(from, to, names, checkpoint, page).await?;
    println!(
        "{}",
        serde_json::to_string(&summary).map_err(|e| e.to_string())?
    );
    Ok(true)
}

/// `serve`'s flags; each has an environment variable, which the service's
/// settings file (`local/debian/default`) sets.
pub(crate) async fn one_shot(command: Command, stop: &Stop) -> Result<bool, String> {
    match command {
        Command::Serve(_) => unreachable!("run serves"),
        Command::Backup(_) => unreachable!("main runs backup before any runtime starts"),
        Command::Cost {
            devices,
            every,
            path,
            device,
        } => {
            use shared::fleet_cost::{Device, Fleet, Path, PRICES_AS_OF};
            let fleet = Fleet {
                devices,
                every,
                device: match device.as_str() {
                    "meter" => Device::Meter,
                    _ => Device::RoomSensor,
                },
                path: Path::parse(&path)?,
            };
            let bill = fleet.bill();
            let round = |d: f64| (d * 100.0).round() / 100.0;
            println!(
                "{}",
                serde_json::json!({
                    "devices": devices,
                    "every_seconds": every.as_secs_f64(),
                    "path": path,
                    "device": device,
                    "readings_a_year": bill.readings.round(),
                    "write_units_a_reading": bill.write_units_a_reading,
                    "dollars_a_year": {
                        "dynamodb_writes": round(bill.dynamodb_writes),
                        "api_gateway": round(bill.api_gateway),
                        "iot_core": round(bill.iot_core),
                        "kinesis": round(bill.kinesis),
                        "lambda_requests": round(bill.lambda),
                        "total": round(bill.total),
                    },
                    "left_out": "Lambda duration, storage, reads",
                    "prices": PRICES_AS_OF,
                })
            );
            Ok(true)
        }
        Command::Restore {
            from,
            db,
            discard_replaced,
        } => {
            let done = shared::store::sqlite::restore(&from, &db, discard_replaced)
                .await
                .map_err(|e| format!("restore: {e}"))?;
            println!(
                "{}",
                serde_json::json!({
                    "restored": db.display().to_string(),
                    "readings": done.readings,
                    "replaced": done.replaced.map(|p| p.display().to_string()),
                })
            );
            Ok(true)
        }
        Command::Migrate {
            from,
            to,
            checkpoint,
            create_table,
            retention_days,
            page,
        } => {
            let (source, _) = open(&spec_config(&from, false, 0)?, stop).await?;
            let (target, _) = open(&spec_config(&to, create_table, retention_days)?, stop).await?;
            let names = (from.as_str(), to.as_str());
            let page = page as usize;
            match (source, target) {
                (Backend::Embedded(a), Backend::Embedded(b)) => {
                    migrate_between(&a, &b, names, &checkpoint, page).await
                }
                (Backend::Embedded(a), Backend::Dynamo(b, ..)) => {
                    migrate_between(&a, &b, names, &checkpoint, page).await
                }
                (Backend::Dynamo(a, ..), Backend::Embedded(b)) => {
                    migrate_between(&a, &b, names, &checkpoint, page).await
                }
                (Backend::Dynamo(a, ..), Backend::Dynamo(b, ..)) => {
                    migrate_between(&a, &b, names, &checkpoint, page).await
                }
            }
        }
        Command::Rollups {
            action:
                RollupsAction::Rebuild {
                    from,
                    to,
                    device,
                    store,
                },
        } => {
            let range = time_range(from, to)?;
            let device = device
                .map(|d| DeviceId::parse(&d).map_err(|e| format!("--device: {e}")))
                .transpose()?;
            match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
                Backend::Embedded(s) => rebuild_rollups(&s, device, range).await,
                Backend::Dynamo(s, ..) => rebuild_rollups(&s, device, range).await,
            }
        }
        Command::Blocks {
            action:
                BlocksAction::Rebuild {
                    device,
                    checkpoint,
                    store,
                },
        } => {
            let device = device
                .map(|d| DeviceId::parse(&d).map_err(|e| format!("--device: {e}")))
                .transpose()?;
            match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
                Backend::Embedded(_) => Err(
                    "blocks rebuild is for a DynamoDB table (--table): the embedded store seals its closed days into blocks itself"
                        .into(),
                ),
                Backend::Dynamo(s, ..) => {
                    let done = ingester_local::blocks::rebuild(&s, device, &checkpoint).await?;
                    println!(
                        "{}",
                        serde_json::json!({"devices": done.devices, "resumed_after": done.skipped, "items_written": done.written})
                    );
                    Ok(true)
                }
            }
        }
        Command::Reindex {
            segments,
            checkpoint,
            store,
        } => match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
            Backend::Embedded(_) => Err(
                "reindex is for a DynamoDB table (--table): the embedded store keeps its indexes itself"
                    .into(),
            ),
            Backend::Dynamo(s, ..) => {
                let done = ingester_local::reindex::run(&s, segments, &checkpoint, true).await?;
                println!(
                    "{}",
                    serde_json::json!({"segments": segments, "scanned": done.scanned, "updated": done.updated})
                );
                Ok(true)
            }
        },
        Command::Export {
            devices,
            from,
            to,
            format,
            out,
            gzip,
            store,
        } => {
            let devices = devices
                .iter()
                .map(|d| DeviceId::parse(d).map_err(|e| format!("--device {d}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            let selection = Selection {
                devices: (!devices.is_empty()).then_some(devices),
                range: time_range(from, to)?,
            };
            let format = match format.as_str() {
                "csv" => Format::Csv,
                _ => Format::LineProtocol,
            };
            existing_store(&store)?;
            let out = out.as_deref();
            let done = match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
                Backend::Embedded(s) => portable::export(&s, &selection, format, out, gzip).await,
                Backend::Dynamo(s, ..) => portable::export(&s, &selection, format, out, gzip).await,
            }?;
            eprintln!(
                "{}",
                serde_json::json!({"devices": done.devices, "readings": done.readings})
            );
            Ok(true)
        }
        Command::Import { file, store } => {
            let done = match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
                Backend::Embedded(s) => portable::import(&s, &file).await,
                Backend::Dynamo(s, ..) => portable::import(&s, &file).await,
            }?;
            println!(
                "{}",
                serde_json::json!({"readings": done.readings, "skipped_lines": done.skipped_lines, "names": done.profiles})
            );
            Ok(true)
        }
        Command::Alerts {
            action:
                AlertsAction::Replay {
                    rules,
                    from,
                    to,
                    every,
                    store,
                },
        } => {
            let rules = ingester_local::alert_rules::load(&rules)?;
            let range = time_range(Some(from), Some(to))?;
            let events = match open(&store.config(None, false, Duration::ZERO), stop).await?.0 {
                Backend::Embedded(s) => shared::alerts::replay(&s, &rules, range, every).await,
                Backend::Dynamo(s, ..) => shared::alerts::replay(&s, &rules, range, every).await,
            }
            .map_err(|e| format!("alerts replay: {e}"))?;
            for e in &events {
                println!("{}", ingester_local::alert_rules::event_json(e));
            }
            eprintln!("{}", serde_json::json!({"rules": rules.len(), "transitions": events.len()}));
            Ok(true)
        }
        Command::Replay { files, store } => {
            let config = store.config(None, true, Duration::ZERO);
            replay_on(&config, &store, &files, stop).await
        }
    }
}

/// `--from` and `--to` as a range: from the first reading to the last when omitted.
fn time_range(from: Option<String>, to: Option<String>) -> Result<TimeRange, String> {
    let time = |name: &str, v: Option<String>, default: Timestamp| match v {
        None => Ok(default),
        Some(text) => Timestamp::parse(&text).map_err(|e| format!("--{name}: {e}")),
    };
    TimeRange::new(
        time("from", from, Timestamp::MIN)?,
        time("to", to, Timestamp::MAX)?,
    )
    .map_err(|e| format!("--from and --to: {e}"))
}

/// An export reads a store that is there: a file name given wrong is an
/// error, not a new, empty store.
fn existing_store(store: &StoreArgs) -> Result<(), String> {
    if store.table.is_none() && !store.memory && !store.db.exists() {
        return Err(format!("{}: no such store file", store.db.display()));
    }
    Ok(())
}

/// `replay` on the assembled store.
pub(crate) async fn replay_on(
    config: &Config,
    store: &StoreArgs,
    files: &[PathBuf],
    stop: &Stop,
) -> Result<bool, String> {
    match open(config, stop).await? {
        (Backend::Embedded(s), access) => {
            // The registry follows each write: nothing to wait for between events.
            let app = app(config, s, access).await?;
            Ok(replay_files(&app, files, || async { Ok(()) }).await)
        }
        (Backend::Dynamo(s, streams, region), access) => {
            let app = app(config, s.clone(), access).await?;
            let poller = std::sync::Mutex::new(Some(StreamPoller::new(
                streams,
                region,
                store.stream_checkpoint.clone(),
            )));
            Ok(replay_files(&app, files, || async {
                let taken = poller.lock().unwrap().take();
                if let Some(mut p) = taken {
                    let result = p.poll_once(&s).await;
                    *poller.lock().unwrap() = Some(p);
                    result?;
                }
                Ok(())
            })
            .await)
        }
    }
}

/// Replays each file; prints `{"file", "response"}` per line. False if any file failed.
pub(crate) async fn replay_files<S: shared::rollups::Upkeep, F, Fut>(
    app: &App<S>,
    files: &[PathBuf],
    after_each: F,
) -> bool
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut ok = true;
    for file in files {
        let name = file.display().to_string();
        let event = std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|t| replay::recognise(&t));
        match event {
            Ok(event) => {
                let response = replay::run(app, event).await;
                println!(
                    "{}",
                    serde_json::json!({ "file": name, "response": response })
                );
                if let Err(e) = after_each().await {
                    eprintln!("warning: after {name}: the registry did not catch up: {e}");
                }
            }
            Err(e) => {
                eprintln!("error: {name}: {e}");
                ok = false;
            }
        }
    }
    ok
}

/// `ingester-local backup`: on the calling thread, no runtime needed.
pub(crate) fn backup_command(backup: BackupCommand) -> Result<(), String> {
    let BackupCommand {
        db,
        to,
        in_memory_up_to,
    } = backup;
    let started = std::time::Instant::now();
    let spinner = indicatif::ProgressBar::new_spinner().with_message(format!(
        "backing up {} to {}",
        db.display(),
        to.display()
    ));
    // Its ticking thread only where someone watches (a terminal).
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        spinner.enable_steady_tick(Duration::from_millis(200));
    }
    let done = shared::store::sqlite::backup_blocking(&db, &to, in_memory_up_to);
    spinner.finish_and_clear();
    let done = done.map_err(|e| format!("backup: {e}"))?;
    println!(
        "{}",
        serde_json::json!({
            "to": to.display().to_string(),
            "readings": done.readings,
            "bytes": done.bytes,
            "seconds": started.elapsed().as_secs_f64(),
            "copy_seconds": done.copy_seconds,
            "check_seconds": done.check_seconds,
            "sync_seconds": done.sync_seconds,
            "copied": done.copied.as_str(),
        })
    );
    Ok(())
}
