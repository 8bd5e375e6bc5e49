//! The shape of the code, beside its layers (`layers.rs`): one noun per
//! file, a storage interface in small parts, the program assembled in one
//! place, one backoff. What the compiler cannot see.

use integration_tests::source_tree::{
    before_tests, crates, function_mains, offenders, repo, sources,
};
use std::collections::BTreeMap;

/// One noun per file: no file of the crates under `shared/` holds more than
/// 800 lines of code before its unit tests. The parser crates aside: a
/// grammar reads best whole.
#[test]
fn no_file_of_the_crates_is_over_800_lines_of_code() {
    let mut long = Vec::new();
    let mut counted = 0;
    for (name, src) in crates() {
        if name == "influxql-parser" || name == "line-protocol" {
            continue;
        }
        for file in sources(&src) {
            let path = file.strip_prefix(repo()).unwrap().display().to_string();
            // A file of tests alone (`tests.rs`, `sealed_tests.rs`) is all tests.
            if path.ends_with("tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let lines = before_tests(&text).lines().count();
            counted += 1;
            if lines > 800 {
                long.push(format!("{path}: {lines}"));
            }
        }
    }
    assert!(counted > 100, "{counted} files read");
    assert!(
        long.is_empty(),
        "over 800 lines of code:\n{}",
        long.join("\n")
    );
}

/// The storage interface is in parts by what their callers need (readings,
/// rollups, registry, alerts), each small enough to read at once; what an
/// engine does on its own is one value (`Capabilities`), not a flag each.
#[test]
fn the_storage_interface_is_in_small_parts() {
    let mut parts = BTreeMap::new();
    for file in sources(&repo().join("shared/storage/src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, _) in text.match_indices("\npub trait ") {
            let rest = &text[i + "\npub trait ".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
            let body = &rest[..rest.find("\n}\n").expect("a trait's end")];
            parts.insert(name, body.matches("\n    fn ").count());
        }
    }
    for part in [
        "ReadingStore",
        "RollupStore",
        "RegistryStore",
        "Alerts",
        "Store",
    ] {
        let methods = parts
            .get(part)
            .unwrap_or_else(|| panic!("no trait {part}: {parts:?}"));
        assert!((1..12).contains(methods), "{part} has {methods} methods");
    }
    assert_eq!(parts["Store"], 1, "Store is its parts and `capabilities`");
    for flag in [
        "fn registry_follows_writes",
        "fn answers_from_rollups",
        "fn indexes(",
    ] {
        let found = offenders("shared/storage/src", &[flag]);
        assert!(found.is_empty(), "a flag of its own: {found:?}");
    }
}

/// Only the assembly (`shared/src/assembly.rs`, with `sdk/`, the
/// configuration it asks for) builds an SDK configuration or a client; no
/// layer, no edge of `shared`, no function's `main` and no `ingester-local`
/// command does.
#[test]
fn the_program_is_assembled_in_one_place() {
    let mut found = Vec::new();
    let assembly = repo().join("shared/src/assembly.rs");
    let sdk = repo().join("shared/src/sdk");
    let mut files: Vec<_> = crates()
        .into_iter()
        .flat_map(|(_, src)| sources(&src))
        .filter(|file| *file != assembly && !file.starts_with(&sdk))
        .collect();
    files.extend(sources(&repo().join("local/src")));
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for needle in [
            "aws_config::",
            "Client::new(&",
            "Client::from_conf(",
            "DynamoStore::new(",
        ] {
            if before_tests(&text).contains(needle) {
                found.push(format!("{}: {needle}", file.display()));
            }
        }
    }
    assert!(found.is_empty(), "assembled elsewhere: {found:?}");
    for (name, text) in function_mains() {
        assert!(
            text.contains("shared::assembly::"),
            "{name} is not assembled"
        );
        assert!(
            !text.contains("aws_config") && !text.contains("aws_sdk_dynamodb"),
            "{name} builds its own"
        );
        // A thin main: it builds the state and runs a handler.
        assert!(text.lines().count() < 60, "{name}'s main is not thin");
    }
}

/// One backoff for every retry and reconnect (`storage::retry`, over
/// backon): no other file builds delays of its own.
#[test]
fn every_retry_and_reconnect_waits_by_the_one_backoff() {
    let mut files: Vec<_> = crates()
        .into_iter()
        .flat_map(|(_, src)| sources(&src))
        .collect();
    files.extend(sources(&repo().join("local/src")));
    let mut found = Vec::new();
    for file in &files {
        if file.ends_with("storage/src/retry.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // A delay that grows is a backoff only where something sleeps by it.
        let sleeps = text.contains("sleep(");
        for needle in [
            "ExponentialBuilder",
            "* 2).min(",
            "saturating_mul(1u32 <<",
            "struct Backoff",
        ] {
            if text.contains(needle) && (sleeps || needle == "ExponentialBuilder") {
                found.push(format!("{}: {needle}", file.display()));
            }
        }
    }
    assert!(files.len() > 100, "{} files read", files.len());
    assert!(found.is_empty(), "a backoff of its own: {found:?}");
}
