//! Reading routes asked of two stores that should answer alike (the same
//! readings stored two ways): answers without what they cost to read, and
//! every page of a range.

use crate::{answer, api_event, handle};
use serde_json::Value;
use shared::api::App;
use shared::store::Store;

/// An answer without what reading it cost (that differs, by design).
pub fn strip(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.remove("read_units");
        m.remove("items_read");
        for x in m.values_mut() {
            *x = strip(x.take());
        }
    }
    if let Value::Array(a) = &mut v {
        for x in a.iter_mut() {
            *x = strip(x.take());
        }
    }
    v
}

/// A GET through the Router, its answer stripped.
pub async fn get<S: Store>(app: &App<S>, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
    let (status, body) = answer(&handle(app, api_event("GET", path, query, None, &[])).await);
    (status, strip(body))
}

/// Every page of a range, concatenated.
pub async fn all_pages<S: Store>(app: &App<S>, path: &str, query: &[(&str, &str)]) -> Vec<Value> {
    let mut cursor: Option<String> = None;
    let mut out = Vec::new();
    for _ in 0..1000 {
        let mut q = query.to_vec();
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let (status, body) = get(app, path, &q).await;
        assert_eq!(status, 200, "{path} {q:?}: {body}");
        out.extend(body["readings"].as_array().unwrap().iter().cloned());
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return out,
        }
    }
    panic!("{path}: more than 1000 pages");
}

/// Every page of each range path answers alike on `a` and `b`.
pub async fn pages_alike<S: Store>(
    a: &App<S>,
    b: &App<S>,
    paths: &[String],
    query: &[(&str, &str)],
) {
    for path in paths {
        let (x, y) = (
            all_pages(a, path, query).await,
            all_pages(b, path, query).await,
        );
        assert_eq!(x, y, "{path} {query:?}");
    }
}

/// Each stats or energy path answers alike on `a` and `b` over
/// `from`..`to`, at three bucket widths, and answers 200.
pub async fn aggregates_alike<S: Store>(
    a: &App<S>,
    b: &App<S>,
    paths: &[&str],
    from: &str,
    to: &str,
) {
    for path in paths {
        for bucket in ["15m", "1h", "1d"] {
            let q = [("from", from), ("to", to), ("bucket", bucket)];
            let (x, y) = (get(a, path, &q).await, get(b, path, &q).await);
            assert_eq!(x.0, 200, "{path} {q:?}: {}", x.1);
            assert_eq!(x, y, "{path} {q:?}");
        }
    }
}

/// The application on `store`, every route, reads open: what the
/// comparisons ask.
pub async fn open_app<S: Store>(store: S) -> App<S> {
    let mut app = crate::app(store, None, shared::api::RouteSet::All).await;
    app.access.reads = shared::api::ReadAccess::Open;
    app
}
