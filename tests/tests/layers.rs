//! The layers of docs/architecture.md are crates under `shared/`, and Cargo's
//! dependency graph keeps them apart: an import that runs the wrong way does
//! not compile. What the compiler cannot see is held here: that each crate
//! depends only on the layers below it (its manifest), that no module of a
//! crate imports itself in a circle, and the few rules about what a layer
//! may *do* that no import shows.

use integration_tests::source_tree::{crates, function_dirs, offenders, repo, sources};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What a crate that does no I/O of its own must not depend on.
const PURE: &[&str] = &[
    "aws",
    "lambda",
    "axum",
    "hyper",
    "rusqlite",
    "serde_dynamo",
    "tokio",
];

/// The layers, bottom up: each crate under `shared/`, the crates of ours it
/// may depend on, and the outside crates it must not (an SDK, a web
/// framework, an engine's driver).
const LAYERS: [(&str, &[&str], &[&str]); 9] = [
    // The parsers depend on nothing of ours (as InfluxDB 3 keeps its own).
    ("influxql-parser", &[], PURE),
    ("line-protocol", &[], PURE),
    ("domain", &[], PURE),
    (
        "storage",
        &["domain"],
        &["aws", "lambda", "axum", "hyper", "rusqlite", "serde_dynamo"],
    ),
    (
        "dynamodb",
        &["domain", "storage"],
        &["aws-config", "lambda", "axum", "rusqlite"],
    ),
    // A version 1 embedded file held DynamoDB's items: its upgrade reads
    // them with that engine's item codec (docs/embedded-store.md).
    (
        "sqlite",
        &["domain", "storage", "dynamodb"],
        &["aws", "lambda", "axum", "hyper"],
    ),
    (
        "usecases",
        &["domain", "storage", "influxql-parser", "line-protocol"],
        &[
            "aws-config",
            "aws-sdk-dynamodb",
            "aws_lambda_events",
            "lambda",
            "axum",
            "rusqlite",
            "serde_dynamo",
        ],
    ),
    (
        "api",
        &["domain", "storage", "usecases"],
        &["aws-sdk", "aws-config", "hyper", "rusqlite", "serde_dynamo"],
    ),
    // The assembly and the edges that run on Lambda: everything.
    (
        ".",
        &["domain", "storage", "dynamodb", "sqlite", "usecases", "api"],
        &[],
    ),
];

/// The names of a manifest's dependencies (every `[...dependencies]` table).
fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line.ends_with("dependencies]") && !line.contains("dev-dependencies");
            continue;
        }
        if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap();
            out.insert(name.to_string());
        }
    }
    out
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let ours: BTreeSet<&str> = LAYERS.iter().map(|(c, _, _)| *c).collect();
    for (krate, below, forbidden) in LAYERS {
        let deps = dependencies(&repo().join("shared").join(krate).join("Cargo.toml"));
        for dep in &deps {
            if ours.contains(dep.as_str()) {
                assert!(
                    below.contains(&dep.as_str()),
                    "shared/{krate} depends on {dep}"
                );
            }
            for f in forbidden {
                assert!(!dep.starts_with(f), "shared/{krate} depends on {dep}");
            }
        }
        // The walk reads the manifests it means to.
        if !below.is_empty() {
            assert!(deps.contains("domain"), "shared/{krate}: {deps:?}");
        }
    }
    // Every crate under shared/ has its place above.
    for (name, _) in crates() {
        assert!(ours.contains(name.as_str()), "shared/{name} has no layer");
    }
    // Functions and ingester-local name the assembly alone.
    let binaries = function_dirs().into_iter().chain([repo().join("local")]);
    for manifest in binaries.map(|dir| dir.join("Cargo.toml")) {
        let deps = dependencies(&manifest);
        for layer in ours.iter().filter(|l| **l != ".") {
            assert!(
                !deps.contains(*layer),
                "{} depends on {layer}",
                manifest.display()
            );
        }
        assert!(deps.contains("shared"), "{}", manifest.display());
        // Only a binary that serves HTTP builds the HTTP edge: the stream,
        // schedule and MQTT functions leave `shared`'s `api` off.
        let dir = manifest.parent().unwrap();
        let serves_http = sources(&dir.join("src")).iter().any(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.contains("lambda_http::run") || text.contains("axum::serve")
        });
        let text = std::fs::read_to_string(&manifest).unwrap();
        let shared_line = text.lines().find(|l| l.starts_with("shared")).unwrap();
        assert_eq!(
            shared_line.contains("\"api\""),
            serves_http,
            "{}: {shared_line}",
            manifest.display()
        );
    }
}

/// The module a file of a crate's `src` is (`rows`, `upgrade::from_v1`;
/// `""` for lib.rs).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
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
fn imports(file: &Path, module: &str, modules: &BTreeSet<String>) -> Vec<String> {
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

/// No circles among the modules of a crate: each can be read, and moved,
/// knowing only what it imports.
#[test]
fn no_module_of_a_crate_imports_itself_in_a_circle() {
    let mut graphs = BTreeMap::new();
    for (_, src) in crates() {
        let files = sources(&src);
        let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
        let graph: BTreeMap<String, BTreeSet<String>> = files
            .iter()
            .map(|f| {
                let m = module_of(&src, f);
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
            "import circles in {}:\n{}",
            src.display(),
            circles.join("\n")
        );
        let name = src.parent().unwrap().file_name().unwrap();
        graphs.insert(name.to_string_lossy().into_owned(), graph);
    }
    // The walk sees imports.
    assert!(graphs["sqlite"]["rows"].contains("schema"));
    assert!(graphs["usecases"]["alerts::evaluate"].contains("notify"));
}

/// Rollups are recomputed once, by the domain's rule (`domain::rollup_upkeep`):
/// no engine drives the cascade or folds spans to store them.
#[test]
fn no_engine_recomputes_rollups() {
    for engine in ["shared/dynamodb/src", "shared/sqlite/src"] {
        let found = offenders(engine, &["Cascade", "leaving(", "fn rebuild("]);
        assert!(
            found.is_empty(),
            "an engine recomputes:\n{}",
            found.join("\n")
        );
    }
}

/// The dashboard is an edge: it reads through the query use case, never
/// the store's reads.
#[test]
fn the_dashboard_reads_through_the_query_use_case() {
    let found = offenders(
        "shared/api/src/dashboard",
        &[
            ".device_readings(",
            ".room_readings(",
            ".all_readings(",
            ".latest_reading(",
            ".rollups(",
            ".z_range(",
            "RangeRequest",
        ],
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_alert_receivers_are_adapters_and_the_alerts_use_case_names_none() {
    // notify/ (webhook, ntfy, SNS) answers the port `notify::Receiver`: it
    // sends what it is given and imports no other use case.
    let found = offenders(
        "shared/usecases/src/notify",
        &[
            "crate::alerts",
            "crate::registry",
            "crate::ingest",
            "crate::query",
            "storage::",
        ],
    );
    assert!(
        found.is_empty(),
        "notify/ reaches up:\n{}",
        found.join("\n")
    );
    // The use case sees receivers through the port only.
    let found = offenders(
        "shared/usecases/src/alerts",
        &[
            "crate::notify::webhook",
            "crate::notify::ntfy",
            "crate::notify::sns",
            "aws_sdk_sns",
            "hyper",
        ],
    );
    assert!(
        found.is_empty(),
        "alerts/ reaches out:\n{}",
        found.join("\n")
    );
}

/// Every crate and every function is shown in docs/architecture.md.
#[test]
fn every_crate_and_function_is_in_the_architecture() {
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    for (krate, _, _) in LAYERS.iter().filter(|(c, _, _)| *c != ".") {
        assert!(
            doc.contains(&format!("shared/{krate}/")),
            "docs/architecture.md does not show shared/{krate}/"
        );
    }
    // The binaries' line lists them: `functions/{ingest,query,...}`.
    let listed = doc
        .split("functions/{")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("docs/architecture.md lists the functions");
    for dir in function_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            listed.split(',').any(|f| f == name),
            "docs/architecture.md does not show functions/{name}"
        );
    }
}

/// The edges (HTTP, MQTT, the stream and schedule handlers, the CLI) reach storage
/// only through the use cases: no edge calls an operation of the storage
/// interface itself, outside its tests.
#[test]
fn edges_reach_storage_through_the_use_cases() {
    let mut operations = BTreeSet::new();
    for file in sources(&repo().join("shared/storage/src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, _) in text.match_indices("\npub trait ") {
            let rest = &text[i..];
            let body = &rest[..rest.find("\n}\n").expect("a trait's end")];
            for (j, _) in body.match_indices("\n    fn ") {
                let name: String = body[j + "\n    fn ".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                // One-word names (`device`, `room`) are also the model's
                // accessors; the rest name storage alone.
                if name.contains('_')
                    || ["deliveries", "delivered", "capabilities"].contains(&name.as_str())
                {
                    operations.insert(format!(".{name}("));
                }
            }
        }
    }
    assert!(operations.contains(".write_readings(") && operations.contains(".alert_rules("));
    let mut found = Vec::new();
    for dir in [
        "shared/api/src",
        "shared/src/mqtt",
        "shared/src/stream",
        "shared/src/schedule",
        "local/src",
    ] {
        for file in sources(&repo().join(dir)) {
            let name = file.strip_prefix(repo()).unwrap().display().to_string();
            if name.ends_with("tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            // Up to its unit tests (`#[cfg(test)]` or `#[cfg(all(test, ...))]`).
            let code = text.split("\nmod tests {").next().unwrap();
            for (n, line) in code.lines().enumerate() {
                let line = line.split("//").next().unwrap();
                for op in &operations {
                    if line.contains(op.as_str()) {
                        found.push(format!("{name}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "an edge calls the store:\n{}",
        found.join("\n")
    );
}
