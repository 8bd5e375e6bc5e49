//! Export and import (issue 41, docs/backup.md) on both engines: a
//! household's readings (a meter with two counters, one with one, a plug, a
//! sensor that reports on change and moves rooms, a water meter with a
//! battery, a reading with no room) and the names its user gave go out as
//! line protocol and as CSV and come back bit for bit; a selection exports
//! only what it names; a damaged line is named by its number, the chunks
//! before it are stored and a second run stores each reading once; on
//! DynamoDB, readings whose raw items are gone come from their hour blocks.

use integration_tests::household::{household, DEVICES};
use integration_tests::{
    dynalite, every_reading, expire_raw_before, fresh_store, on_every_store,
    write_through_stream_functions, TestStore,
};
use shared::export::{export, Format, ImportError, Importer, Selection};
use shared::model::{DeviceId, Name, Reading, RoomId, TimeRange, Timestamp};
use shared::store::{Retention, Store};

fn id(s: &str) -> DeviceId {
    DeviceId::parse(s).unwrap()
}

fn room(s: &str) -> RoomId {
    RoomId::parse(s).unwrap()
}

fn everything() -> TimeRange {
    TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap()
}

/// Writes readings as ingest and the registry function would.
async fn load<S: Store>(store: &S, readings: &[Reading]) {
    for chunk in readings.chunks(1000) {
        assert!(store.write_readings(chunk).await.unwritten.is_empty());
    }
    if !store.capabilities().registry_follows_writes {
        let plan = shared::domain::registry::plan(readings.iter().enumerate());
        assert!(shared::registry::apply(store, &plan).await.is_empty());
    }
}

/// The names of a household: quotes, `#`, commas and non-ASCII included,
/// and a plug that is placed in a room but has sent nothing yet.
async fn name_things<S: Store>(store: &S) {
    let name = |s: &str| Name::parse(s).unwrap();
    store
        .set_device_profile(&id("meter-main"), Some(&name("Zähler, \"Haupt\" #1")), None)
        .await
        .unwrap();
    store
        .set_device_profile(&id("plug-new"), None, Some(&room("study")))
        .await
        .unwrap();
    store
        .set_room_name(&room("living"), Some(&name("Wohnzimmer")))
        .await
        .unwrap();
    store
        .set_room_name(&room("cellar"), Some(&name("Keller 🍷")))
        .await
        .unwrap();
    store.put_alert_rule("fuse", FUSE).await.unwrap();
}

/// An alert rule, as put: a whole export carries it.
const FUSE: &str =
    r#"{"above":9000,"kind":"threshold","quantity":"current_w","scope":{"device":"meter-main"}}"#;

async fn export_to_vec<S: Store>(store: &S, selection: &Selection, format: Format) -> Vec<u8> {
    let mut out = Vec::new();
    export(store, selection, format, &mut out, |_| {})
        .await
        .unwrap();
    out
}

async fn import_from<S: Store>(
    store: &S,
    file: &[u8],
) -> Result<shared::export::Imported, ImportError> {
    Importer::new(store, Timestamp::now())
        .run(file, |_| {})
        .await
}

async fn round_trips_bit_for_bit_in_both_shapes<S: TestStore>() {
    let readings = household(41, 48);
    let source = S::fresh("export-source").await;
    load(&source, &readings).await;
    name_things(&source).await;
    let all = Selection {
        devices: None,
        range: everything(),
    };
    for format in [Format::LineProtocol, Format::Csv] {
        let file = export_to_vec(&source, &all, format).await;
        let target = S::fresh("export-target").await;
        let imported = import_from(&target, &file).await.unwrap();
        assert_eq!(imported.readings, readings.len() as u64, "{format:?}");
        for device in DEVICES {
            let (a, b) = (
                every_reading(&source, &id(device)).await,
                every_reading(&target, &id(device)).await,
            );
            assert!(!a.is_empty());
            // Bit for bit: `Reading`'s equality compares each f64 exactly;
            // the bits say so for NaN-free values.
            assert_eq!(a, b, "{format:?} {device}");
            let bits = |r: &[Reading]| -> Vec<u64> {
                r.iter()
                    .flat_map(|x| x.measurement.values().iter().map(|(_, v)| v.to_bits()))
                    .collect()
            };
            assert_eq!(bits(&a), bits(&b));
        }
        let names = target.load_registry().await.unwrap();
        if format == Format::LineProtocol {
            assert_eq!(imported.profiles, 5);
            assert_eq!(
                target.alert_rules().await.unwrap(),
                vec![("fuse".to_owned(), FUSE.to_owned())]
            );
            assert_eq!(
                names.devices[&id("meter-main")].name.as_deref(),
                Some("Zähler, \"Haupt\" #1")
            );
            assert_eq!(names.devices[&id("plug-new")].room, Some(room("study")));
            assert_eq!(
                names.rooms[&room("living")].name.as_deref(),
                Some("Wohnzimmer")
            );
            assert_eq!(
                names.rooms[&room("cellar")].name.as_deref(),
                Some("Keller 🍷")
            );
            // A second import stores each reading once and changes nothing.
            import_from(&target, &file).await.unwrap();
            for device in DEVICES {
                assert_eq!(
                    every_reading(&target, &id(device)).await,
                    every_reading(&source, &id(device)).await
                );
            }
        } else {
            // CSV carries readings only.
            assert!(names
                .devices
                .get(&id("meter-main"))
                .is_none_or(|d| d.name.is_none()));
        }
    }
}

async fn a_selection_exports_only_its_devices_and_times<S: TestStore>() {
    let readings = household(7, 48);
    let source = S::fresh("export-some").await;
    load(&source, &readings).await;
    name_things(&source).await;
    let (from, to) = (readings[100].timestamp, readings[2000].timestamp);
    let some = Selection {
        devices: Some(vec![id("meter-main"), id("water-meter")]),
        range: TimeRange::new(from, to).unwrap(),
    };
    let file = export_to_vec(&source, &some, Format::LineProtocol).await;
    let text = String::from_utf8(file.clone()).unwrap();
    assert!(
        !text.contains("plug-washer") && !text.contains("a4:c1"),
        "other devices exported"
    );
    // The meter's name, and the name of the room the water meter is in.
    assert!(text.contains("# device meter-main "), "{}", &text[..400]);
    assert!(text.contains("# room cellar "));
    assert!(!text.contains("# room living "));
    assert!(
        !text.contains("# alert-rule"),
        "a selection leaves the rules"
    );
    let target = S::fresh("export-some-target").await;
    let imported = import_from(&target, &file).await.unwrap();
    let wanted: Vec<&Reading> = readings
        .iter()
        .filter(|r| {
            ["meter-main", "water-meter"].contains(&r.device_id.as_str())
                && r.timestamp >= from
                && r.timestamp < to
        })
        .collect();
    assert_eq!(imported.readings, wanted.len() as u64);
    assert!(every_reading(&target, &id("plug-washer")).await.is_empty());
    let unknown = Selection {
        devices: Some(vec![id("no-such-meter")]),
        range: everything(),
    };
    let mut sink = Vec::new();
    let err = export(&source, &unknown, Format::Csv, &mut sink, |_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no-such-meter"), "{err}");
}

async fn a_damaged_line_is_named_and_a_second_run_completes<S: TestStore>() {
    let readings = household(3, 120);
    let source = S::fresh("export-damaged").await;
    load(&source, &readings).await;
    let all = Selection {
        devices: None,
        range: everything(),
    };
    let text = String::from_utf8(export_to_vec(&source, &all, Format::LineProtocol).await).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 8000, "{} lines", lines.len());
    // Line 7003 (1-based) gets a value out of range, in the second chunk.
    let mut damaged: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let bad = &mut damaged[7002];
    let (head, time) = bad.rsplit_once(' ').unwrap();
    let (series, _) = head.split_once(' ').unwrap();
    *bad = format!("{series} humidity=140 {time}");
    let target = S::fresh("export-damaged-target").await;
    let err = import_from(&target, damaged.join("\n").as_bytes())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ImportError::Line { line: 7003, message } if message.contains("humidity")),
        "{err}"
    );
    // The first chunk is stored, not the damaged one.
    let stored: usize = {
        let mut n = 0;
        for device in DEVICES {
            n += every_reading(&target, &id(device)).await.len();
        }
        n
    };
    assert!(stored >= 3000 && stored < readings.len(), "{stored} stored");
    // The file mended, a second run stores every reading once.
    let imported = import_from(&target, text.as_bytes()).await.unwrap();
    assert_eq!(imported.readings, readings.len() as u64);
    for device in DEVICES {
        assert_eq!(
            every_reading(&target, &id(device)).await,
            every_reading(&source, &id(device)).await
        );
    }
    // Not an export at all: a clear error naming the line.
    let err = import_from(
        &target,
        b"time,device_id,current_w\n2025-01-01T00:00:00Z,plug-1,abc\n",
    )
    .await
    .unwrap_err();
    assert!(err.to_string().starts_with("line 2: current_w"), "{err}");
}

on_every_store!(
    round_trips_bit_for_bit_in_both_shapes,
    a_selection_exports_only_its_devices_and_times,
    a_damaged_line_is_named_and_a_second_run_completes
);

/// On DynamoDB with a raw window, readings older than the window are read
/// from their hour blocks, as the query function reads them: the export
/// holds every reading, equal to a table that kept every raw item.
#[tokio::test]
async fn a_table_s_export_reads_blocks_where_raw_items_are_gone() {
    let readings = household(11, 48);
    let kept = fresh_store(&dynalite(), "export-raw").await;
    let windowed = fresh_store(&dynalite(), "export-blocks")
        .await
        .with_raw_window(Retention::days(1));
    for store in [&kept, &windowed] {
        for chunk in readings.chunks(1000) {
            write_through_stream_functions(store, chunk).await;
        }
    }
    let cutoff = windowed.raw_cutoff().expect("a raw window");
    let gone = expire_raw_before(&windowed, &readings, cutoff).await;
    assert!(gone > readings.len() / 3, "{gone} raw items gone");
    let all = Selection {
        devices: None,
        range: everything(),
    };
    let a = export_to_vec(&kept, &all, Format::LineProtocol).await;
    let b = export_to_vec(&windowed, &all, Format::LineProtocol).await;
    assert_eq!(
        String::from_utf8(a).unwrap(),
        String::from_utf8(b.clone()).unwrap()
    );
    let target = shared::store::SqliteStore::in_memory().unwrap();
    let imported = import_from(&target, &b).await.unwrap();
    assert_eq!(imported.readings, readings.len() as u64);
}
