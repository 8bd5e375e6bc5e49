//! The layers of docs/architecture.md, read from the imports: data flows one
//! way (edges → use cases → storage → domain), and no arrow points outward.
//! A line of a file that names another module of the crate (`crate::x`) or
//! an SDK is an import, whether in a `use` or a path.

use std::path::{Path, PathBuf};

fn sources(under: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![under.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn shared_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/src")
}

/// Every (file, line) under `dir` (relative to `shared/src`) that names one
/// of `forbidden`, outside comments.
fn offenders(dir: &str, forbidden: &[&str], except: &[&str]) -> Vec<String> {
    let root = shared_src();
    let base = root.join(dir);
    let files = if base.is_dir() {
        sources(&base)
    } else {
        vec![base]
    };
    let mut found = Vec::new();
    for file in files {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        if except.iter().any(|e| name == *e) {
            continue;
        }
        for (n, line) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for f in forbidden {
                if code.contains(f) {
                    found.push(format!("{name}:{}: {f}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    found
}

const SDKS: [&str; 4] = [
    "aws_sdk_dynamodb",
    "aws_lambda_events",
    "aws_config",
    "lambda_http",
];

#[test]
fn the_domain_imports_no_store_api_edge_use_case_or_sdk() {
    let mut forbidden = vec![
        "crate::store",
        "crate::api",
        "crate::stream",
        "crate::registry",
        "crate::ingest",
        "crate::query",
        "crate::rollups",
        "crate::mqtt",
        "crate::influxql",
        "crate::config",
        "crate::assembly",
        "axum",
    ];
    forbidden.extend(SDKS);
    for dir in ["domain", "model"] {
        let found = offenders(dir, &forbidden, &[]);
        assert!(found.is_empty(), "{dir}/ reaches up:\n{}", found.join("\n"));
    }
}

#[test]
fn keys_import_only_the_model() {
    let mut forbidden = vec![
        "crate::domain",
        "crate::store",
        "crate::api",
        "crate::stream",
        "crate::registry",
        "crate::ingest",
        "crate::query",
    ];
    forbidden.extend(SDKS);
    let found = offenders("keys", &forbidden, &[]);
    assert!(found.is_empty(), "keys/ reaches up:\n{}", found.join("\n"));
}

#[test]
fn no_adapter_imports_a_use_case_or_an_edge() {
    let forbidden = [
        "crate::registry",
        "crate::api",
        "crate::stream",
        "crate::mqtt",
        "crate::influxql",
        "crate::ingest",
        "crate::query",
        "crate::config",
        "crate::assembly",
        // Rollup upkeep is the domain's (`domain::rollup_upkeep`), which
        // the embedded store runs in its write transaction; the use case
        // above it is not a store's to call.
        "crate::rollups",
    ];
    let found = offenders("store", &forbidden, &[]);
    assert!(
        found.is_empty(),
        "store/ runs a use case:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_rollups_use_case_owns_recompute_and_rebuild_once() {
    // No store verb keeps rollups: the use case does, over `RollupSpans`.
    let store = std::fs::read_to_string(shared_src().join("store/mod.rs")).unwrap();
    for verb in [
        "fn refresh_rollups",
        "fn rebuild_rollups",
        "fn rollup_devices",
    ] {
        assert!(!store.contains(verb), "the Store trait has `{verb}`");
    }
    // No adapter drives the cascade or folds spans to store them.
    let found = offenders("store", &["Cascade", "leaving(", "fn rebuild("], &[]);
    assert!(
        found.is_empty(),
        "an adapter recomputes:\n{}",
        found.join("\n")
    );
    // The use case names no engine's internals and no edge; only its
    // `upkeep.rs` says which engine runs which part.
    let mut forbidden = vec![
        "crate::api",
        "crate::stream",
        "crate::assembly",
        "crate::store::dynamodb",
        "crate::store::sqlite",
        "rusqlite",
        "serde_dynamo",
        "axum",
    ];
    forbidden.extend(SDKS);
    let found = offenders("rollups", &forbidden, &[]);
    assert!(
        found.is_empty(),
        "rollups/ reaches out:\n{}",
        found.join("\n")
    );
    let found = offenders(
        "rollups",
        &["DynamoStore", "SqliteStore"],
        &["rollups/upkeep.rs"],
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_embedded_store_and_the_store_s_shared_modules_speak_no_dynamodb() {
    let mut forbidden = SDKS.to_vec();
    forbidden.push("serde_dynamo");
    let found = offenders(
        "store/sqlite",
        &forbidden,
        // The version 1 upgrade reads DynamoDB's item shape, by design and
        // only there (through the adapter's codec, not the SDK): it is
        // still checked for the SDKs below. The unit tests write version 1
        // files in that shape to upgrade them.
        &[
            "store/sqlite/upgrade/from_v1_items.rs",
            "store/sqlite/tests.rs",
        ],
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
    let found = offenders("store/sqlite/upgrade/from_v1_items.rs", &SDKS, &[]);
    assert!(found.is_empty(), "{}", found.join("\n"));
    for shared in ["store/mod.rs", "store/metering.rs"] {
        let found = offenders(shared, &forbidden, &[]);
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}

#[test]
fn use_cases_see_no_edge_and_no_sdk() {
    let mut forbidden = vec![
        "crate::api",
        "crate::stream",
        "crate::mqtt",
        "crate::influxql",
        "crate::assembly",
        "axum",
    ];
    forbidden.extend(SDKS);
    for dir in [
        "ingest", "query.rs", "registry", "rollups", "export", "alerts",
    ] {
        let found = offenders(dir, &forbidden, &[]);
        assert!(found.is_empty(), "{dir} reaches up:\n{}", found.join("\n"));
    }
}

#[test]
fn config_and_auth_import_no_api() {
    // Their types are the domain's (or the retry helper's), never an
    // adapter's; auth knows no HTTP (how a request presents the token is
    // the edge's, api/presented.rs).
    for file in ["config.rs", "auth.rs"] {
        let found = offenders(
            file,
            &[
                "crate::api",
                "crate::stream",
                "crate::store::dynamodb",
                "crate::store::sqlite",
                "axum",
                "http::",
            ],
            &[],
        );
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}

/// Only the assembly builds an SDK configuration or a DynamoDB client
/// (`sdk/` the configuration it asks for).
#[test]
fn the_program_is_assembled_in_one_place() {
    let root = shared_src();
    let mut found = Vec::new();
    for file in sources(&root) {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        if name == "assembly.rs" || name.starts_with("sdk/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for needle in [
            "aws_config::load_defaults",
            "aws_config::defaults",
            "Client::new(&",
        ] {
            if text.contains(needle) && !name.ends_with("tests.rs") {
                found.push(format!("{name}: {needle}"));
            }
        }
    }
    for (bin, text) in function_mains() {
        assert!(text.contains("shared::assembly::"), "{bin} builds its own");
        assert!(!text.contains("aws_config"), "{bin} loads an SDK config");
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../local/src");
    for file in sources(&local) {
        let text = std::fs::read_to_string(&file).unwrap();
        if text.contains("aws_config::") || text.contains("DynamoStore::new(") {
            found.push(file.display().to_string());
        }
    }
    assert!(found.is_empty(), "assembled elsewhere: {found:?}");
}

/// One backoff for every retry and reconnect (`shared/src/retry.rs`, over
/// backon): no other file builds delays of its own.
#[test]
fn every_retry_and_reconnect_waits_by_the_one_backoff() {
    let mut files = sources(&shared_src());
    files.extend(sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../local/src"),
    ));
    let mut found = Vec::new();
    for file in files {
        if file.ends_with("retry.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
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
    assert!(found.is_empty(), "a backoff of its own: {found:?}");
}

/// The module a file of `shared/src` is (`store::sqlite::rows`; `""` for lib.rs).
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix(shared_src()).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// The modules a file names through `crate::`, `super::` or `self::` paths
/// (braced lists included), outside comments and its unit tests; a module's
/// own children are containment, not an import.
fn imports(file: &Path, module: &str, modules: &std::collections::BTreeSet<String>) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let here: Vec<&str> = if module.is_empty() {
        vec![]
    } else {
        module.split("::").collect()
    };
    let resolve = |path: &[&str]| -> Option<String> {
        let (mut base, mut rest): (Vec<&str>, &[&str]) = match *path.first()? {
            "crate" => (vec![], &path[1..]),
            "self" => (here.clone(), &path[1..]),
            "super" => (here.clone(), path),
            _ => return None,
        };
        while rest.first() == Some(&"super") {
            base.pop();
            rest = &rest[1..];
        }
        let full: Vec<&str> = base.into_iter().chain(rest.iter().copied()).collect();
        (1..=full.len())
            .rev()
            .map(|k| full[..k].join("::"))
            .find(|m| modules.contains(m))
            .filter(|m| m != module && !m.starts_with(&format!("{module}::")))
    };
    let path_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for start in ["crate::", "super::", "self::"] {
            for (i, _) in code.match_indices(start) {
                if i > 0 && path_char(code[..i].chars().last().unwrap()) {
                    continue;
                }
                let tail = &code[i..];
                let end = tail.find(|c: char| !path_char(c)).unwrap_or(tail.len());
                let path: Vec<&str> = tail[..end].split("::").filter(|s| !s.is_empty()).collect();
                out.extend(resolve(&path));
                // `use super::{a, b::c}`: each item of the list.
                if tail[end..].starts_with('{') {
                    let list = &tail[end + 1..tail.find('}').unwrap_or(tail.len())];
                    for item in list.split(',') {
                        let item = item.trim().split(" as ").next().unwrap_or("");
                        let mut p = path.clone();
                        p.extend(item.split("::").filter(|s| !s.is_empty() && *s != "self"));
                        out.extend(resolve(&p));
                    }
                }
            }
        }
    }
    out
}

/// No circles among the modules of `shared/src`: each can be read, and
/// moved, knowing only what it imports.
#[test]
fn no_module_of_the_library_imports_itself_in_a_circle() {
    use std::collections::{BTreeMap, BTreeSet};
    let files = sources(&shared_src());
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    let graph: BTreeMap<String, BTreeSet<String>> = files
        .iter()
        .map(|f| {
            let m = module_of(f);
            let to = imports(f, &m, &modules).into_iter().collect();
            (m, to)
        })
        .collect();
    // A circle is a path back to where it started: depth-first, each
    // module's reach walked once.
    let mut circles = Vec::new();
    for start in graph.keys() {
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in &graph[&at] {
                if next == start {
                    circles.push(path.join(" → ") + " → " + start);
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
    // The walk sees imports: the store's trait is imported by its adapters.
    assert!(graph["store::sqlite::rows"].contains("store::sqlite::schema"));
    assert!(graph["store::dynamodb::presence"].contains("domain::room_presence"));
}

/// The dashboard is an edge: it reads through the query use case, never
/// the store's reads.
#[test]
fn the_dashboard_reads_through_the_query_use_case() {
    let found = offenders(
        "api/dashboard",
        &[
            ".device_readings(",
            ".room_readings(",
            ".all_readings(",
            ".latest_reading(",
            ".rollups(",
            ".z_range(",
            "RangeRequest",
        ],
        &[],
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Each function crate's name and its `main.rs`: a crate per function in
/// `functions/`, beside them their one build script (link.rs).
fn function_mains() -> Vec<(String, String)> {
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    let mut mains = Vec::new();
    for entry in std::fs::read_dir(&functions).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(entry.path().join("src/main.rs")).unwrap();
            mains.push((name, text));
        }
    }
    assert!(mains.len() >= 7, "{mains:?}");
    mains
}

/// Every module of the library and every function crate has its place in
/// docs/architecture.md's layers: a new one must be placed here (and so
/// guarded by the tests above) before it builds.
#[test]
fn every_module_and_function_has_a_layer() {
    const LAYERS: [(&str, &[&str]); 5] = [
        (
            "assembly",
            &[
                "config.rs",
                "alert_settings.rs",
                "assembly.rs",
                "sdk",
                "auth.rs",
                "retry.rs",
                "telemetry.rs",
                "lib.rs",
            ],
        ),
        ("edges", &["api", "mqtt", "stream", "schedule"]),
        (
            "use cases",
            &[
                "ingest", "query.rs", "influxql", "registry", "rollups", "export", "alerts",
            ],
        ),
        ("storage", &["store", "notify", "https"]),
        ("domain", &["domain", "model", "keys"]),
    ];
    let placed: Vec<&str> = LAYERS.iter().flat_map(|(_, m)| m.iter().copied()).collect();
    let mut unplaced = Vec::new();
    for entry in std::fs::read_dir(shared_src()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !placed.contains(&name.as_str()) {
            unplaced.push(name);
        }
    }
    assert!(unplaced.is_empty(), "modules without a layer: {unplaced:?}");
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md"),
    )
    .unwrap();
    for module in placed.iter().filter(|m| **m != "lib.rs") {
        let shown = module.trim_end_matches(".rs");
        assert!(
            doc.contains(shown),
            "docs/architecture.md does not show {module}"
        );
    }
    for (name, text) in function_mains() {
        assert!(
            text.contains("shared::assembly::"),
            "{name} is not assembled"
        );
        assert!(
            !text.contains("aws_sdk_dynamodb") && !text.contains("shared::store::DynamoStore::new"),
            "{name} builds its own store"
        );
        // A thin main: it builds the state and runs a handler.
        assert!(text.lines().count() < 60, "{name}'s main is not thin");
        assert!(
            doc.contains(&name),
            "docs/architecture.md does not show functions/{name}"
        );
    }
}

#[test]
fn the_alert_receivers_are_adapters_and_the_alerts_use_case_names_none() {
    // notify/ (webhook, ntfy, SNS) answers the port `notify::Receiver`: it
    // sends what it is given and imports no use case, edge or store.
    let forbidden = [
        "crate::alerts",
        "crate::api",
        "crate::stream",
        "crate::schedule",
        "crate::registry",
        "crate::ingest",
        "crate::query",
        "crate::store",
        "crate::config",
        "crate::assembly",
    ];
    let found = offenders("notify", &forbidden, &[]);
    assert!(
        found.is_empty(),
        "notify/ reaches up:\n{}",
        found.join("\n")
    );
    // The use case sees receivers through the port only.
    let mut forbidden = vec![
        "crate::api",
        "crate::schedule",
        "crate::assembly",
        "crate::notify::webhook",
        "crate::notify::ntfy",
        "crate::notify::sns",
        "crate::store::dynamodb",
        "crate::store::sqlite",
        "aws_sdk_sns",
        "hyper",
    ];
    forbidden.extend(SDKS);
    let found = offenders("alerts", &forbidden, &[]);
    assert!(
        found.is_empty(),
        "alerts/ reaches out:\n{}",
        found.join("\n")
    );
}
