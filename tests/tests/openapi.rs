//! `docs/openapi.yaml` describes exactly the routes the router serves, and each
//! documented status code is one the router can produce for that route kind.

use serde_yaml_ng::Value as Yaml;
use shared::api::ROUTES;
use std::collections::BTreeSet;

fn spec() -> Yaml {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.yaml"))
            .unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

#[test]
fn the_openapi_paths_are_the_router_routes() {
    let spec = spec();
    let mut documented = BTreeSet::new();
    for (path, item) in spec["paths"].as_mapping().unwrap() {
        for (method, _) in item.as_mapping().unwrap() {
            let method = method.as_str().unwrap();
            if method != "parameters" {
                documented.insert((method.to_uppercase(), path.as_str().unwrap().to_owned()));
            }
        }
    }
    let served: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(documented, served);
}

#[test]
fn every_operation_documents_its_errors() {
    let spec = spec();
    for (path, item) in spec["paths"].as_mapping().unwrap() {
        for (method, op) in item.as_mapping().unwrap() {
            if method.as_str() == Some("parameters") {
                continue;
            }
            let responses = op["responses"].as_mapping().unwrap();
            let path = path.as_str().unwrap();
            // What each kind of route can answer: the InfluxDB probes only succeed;
            // `/query` answers its statements' errors inside a 200, a query it
            // cannot parse with a 400.
            let codes: &[&str] = match (path, method.as_str()) {
                // A removal answers no body.
                ("/alerts/rules/{id}", Some("delete")) => &["204", "400", "401", "404", "503"],
                _ => match path {
                    "/health" => &["200"],
                    "/ping" => &["204"],
                    "/query" => &["200", "400", "401", "503"],
                    "/write" | "/api/v2/write" => &["204", "400", "401", "413", "503"],
                    // Pages show the sign-in form (a 200) rather than a 401.
                    "/" | "/ui/devices/{id}" | "/ui/rooms/{id}" => &["200", "400", "503"],
                    "/ui/login" => &["303", "400", "401"],
                    _ => &["200", "400", "401", "503"],
                },
            };
            for code in codes {
                assert!(
                    responses.contains_key(*code),
                    "{method:?} {path:?} documents {code}"
                );
            }
        }
    }
}
