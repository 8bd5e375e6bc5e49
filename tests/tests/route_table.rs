//! The route table, checked both ways against the router (issue 77, point
//! 4): every `(method, path)` of `ROUTES` is served, and no other method on
//! those paths, nor any path beside them, is. `openapi.rs` and `template.rs`
//! hold docs/openapi.yaml and template.yaml to the same table.

use integration_tests::{answer, api_event, app, handle};
use shared::api::{RouteSet, ROUTES};
use shared::store::SqliteStore;
use std::collections::BTreeSet;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "DELETE", "PATCH"];

/// A template with its `{id}` filled in.
fn concrete(template: &str) -> String {
    template.replace("{id}", "x-1")
}

/// Whether `path` is `template` with some id in its `{id}`.
fn fits(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len() && t.iter().zip(&p).all(|(t, p)| *t == "{id}" || t == p)
}

/// Whether the router serves `method path`: neither a 405 nor its fallback's 404.
async fn served(app: &shared::api::App<SqliteStore>, method: &str, path: &str) -> bool {
    let body = (method != "GET").then_some("{}");
    let (status, answer) = answer(&handle(app, api_event(method, path, &[], body, &[])).await);
    let fallback = status == 404
        && answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("no route"));
    status != 405 && !fallback
}

#[tokio::test]
async fn the_router_serves_exactly_the_route_table() {
    let app = app(SqliteStore::in_memory().unwrap(), None, RouteSet::All).await;
    let table: BTreeSet<(&str, &str)> = ROUTES.iter().copied().collect();
    let templates: BTreeSet<&str> = ROUTES.iter().map(|(_, p)| *p).collect();
    for template in &templates {
        let path = concrete(template);
        for method in METHODS {
            assert_eq!(
                served(&app, method, &path).await,
                table.contains(&(method, *template)),
                "{method} {template}"
            );
        }
        // A path one step past a route is none (unless it is a route's
        // with `extra` as its id).
        let beside = format!("{}/extra", path.trim_end_matches('/'));
        if templates.iter().any(|t| fits(t, &beside)) {
            continue;
        }
        for method in METHODS {
            assert!(
                !served(&app, method, &beside).await,
                "{method} {beside} is served but not in ROUTES"
            );
        }
    }
}
