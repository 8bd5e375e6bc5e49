//! A fault-injecting HTTP proxy in front of a real DynamoDB-API server. It
//! passes requests through, but for `BatchWriteItem` it can hold items back
//! (returning them as `UnprocessedItems`) or kill the server after a number of
//! batches; and it records exactly which items the server acknowledged.

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::response::Response;
use axum::Router;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::process::Child;
use std::sync::{Arc, Mutex};

pub enum Fault {
    /// Items whose `pk` satisfies this are never passed on; they come back unprocessed.
    HoldBack(fn(&str) -> bool),
    /// After this many BatchWriteItem calls have been passed on, kill the server.
    KillAfter(usize, Arc<Mutex<Child>>),
}

#[derive(Default)]
pub struct Seen {
    /// `(pk, sk)` of every item the server answered 200 for and did not leave unprocessed.
    pub acknowledged: BTreeSet<(String, String)>,
    pub batch_calls: usize,
    /// Requests passed on, by operation (`UpdateItem`, `Query`, ...).
    pub calls: std::collections::BTreeMap<String, usize>,
    /// When each request reached the proxy and when its answer left it:
    /// the proxy's own work counted as the server's, so that what a client
    /// behind it is timed for excludes every hop (the footprint bench).
    pub held: Vec<(std::time::Instant, std::time::Instant)>,
}

impl Seen {
    /// How long at least one request was waiting on the server: what a
    /// client behind the proxy waited on the server itself, requests made
    /// side by side counted once.
    /// [`Seen::waited`], then forgets those requests: what the next step
    /// waits is timed from here.
    pub fn take_waited(&mut self) -> std::time::Duration {
        let waited = self.waited();
        self.held.clear();
        waited
    }

    pub fn waited(&self) -> std::time::Duration {
        let mut spans = self.held.clone();
        spans.sort();
        let mut total = std::time::Duration::ZERO;
        let mut current: Option<(std::time::Instant, std::time::Instant)> = None;
        for (from, to) in spans {
            current = match current {
                Some((a, b)) if from <= b => Some((a, b.max(to))),
                Some((a, b)) => {
                    total += b - a;
                    Some((from, to))
                }
                None => Some((from, to)),
            };
        }
        total + current.map_or(std::time::Duration::ZERO, |(a, b)| b - a)
    }
}

struct ProxyState {
    upstream: String,
    fault: Fault,
    seen: Arc<Mutex<Seen>>,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<bytes::Bytes>>,
}

pub struct FaultProxy {
    pub url: String,
    pub seen: Arc<Mutex<Seen>>,
}

impl FaultProxy {
    pub async fn start(upstream: &str, fault: Fault) -> FaultProxy {
        Self::start_on(0, upstream, fault).await
    }

    /// On a given port of 127.0.0.1 (0: any): a server that comes up where a
    /// client was already pointed.
    pub async fn start_on(port: u16, upstream: &str, fault: Fault) -> FaultProxy {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = Arc::new(ProxyState {
            upstream: upstream.trim_end_matches('/').to_owned(),
            fault,
            seen: seen.clone(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        let app = Router::new().fallback(proxy).with_state(state);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FaultProxy { url, seen }
    }
}

fn key(w: &Value) -> (String, String) {
    let item = &w["PutRequest"]["Item"];
    (
        item["pk"]["S"].as_str().unwrap_or("").to_owned(),
        item["sk"]["S"].as_str().unwrap_or("").to_owned(),
    )
}

async fn proxy(State(s): State<Arc<ProxyState>>, request: Request) -> Response {
    let arrived = std::time::Instant::now();
    let response = pass_on(&s, request).await;
    s.seen
        .lock()
        .unwrap()
        .held
        .push((arrived, std::time::Instant::now()));
    response
}

async fn pass_on(s: &ProxyState, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, 64 << 20).await.unwrap();
    let operation = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or("")
        .to_owned();
    *s.seen
        .lock()
        .unwrap()
        .calls
        .entry(operation.clone())
        .or_default() += 1;
    let is_batch = operation == "BatchWriteItem";
    let (forward, held, table) = if is_batch {
        let mut json: Value = serde_json::from_slice(&bytes).unwrap();
        let table = json["RequestItems"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let writes = json["RequestItems"][&table].as_array().unwrap().clone();
        let (held, passed): (Vec<Value>, Vec<Value>) = match &s.fault {
            Fault::HoldBack(hold) => writes.into_iter().partition(|w| hold(&key(w).0)),
            Fault::KillAfter(..) => (Vec::new(), writes),
        };
        {
            let mut seen = s.seen.lock().unwrap();
            seen.batch_calls += 1;
            if let Fault::KillAfter(after, child) = &s.fault {
                if seen.batch_calls > *after {
                    let _ = child.lock().unwrap().kill();
                }
            }
        }
        if passed.is_empty() {
            let answer = json!({"UnprocessedItems": {table.clone(): held}});
            return Response::builder()
                .status(200)
                .header("content-type", "application/x-amz-json-1.0")
                .body(Body::from(answer.to_string()))
                .unwrap();
        }
        json["RequestItems"][&table] = Value::Array(passed);
        (serde_json::to_vec(&json).unwrap(), held, Some(table))
    } else {
        (bytes.to_vec(), Vec::new(), None)
    };
    let sent: Vec<Value> = if is_batch {
        let json: Value = serde_json::from_slice(&forward).unwrap();
        json["RequestItems"][table.as_ref().unwrap()]
            .as_array()
            .unwrap()
            .clone()
    } else {
        Vec::new()
    };
    let mut upstream = axum::http::Request::builder()
        .method(parts.method.clone())
        .uri(format!("{}{}", s.upstream, parts.uri));
    for (name, value) in parts.headers.iter() {
        if name != "host" && name != "content-length" {
            upstream = upstream.header(name, value);
        }
    }
    let answered = s
        .client
        .request(
            upstream
                .body(Full::new(bytes::Bytes::from(forward)))
                .unwrap(),
        )
        .await;
    let answer = match answered {
        Ok(r) => r,
        // The server is gone: what a dead endpoint looks like to the SDK.
        Err(_) => {
            return Response::builder()
                .status(502)
                .body(Body::from("upstream unreachable"))
                .unwrap()
        }
    };
    let status = answer.status();
    let headers = answer.headers().clone();
    let body = answer
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = if is_batch && status.is_success() {
        let mut json: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
        let table = table.unwrap();
        let unprocessed: Vec<Value> = json["UnprocessedItems"][&table]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let left: BTreeSet<(String, String)> = unprocessed.iter().map(key).collect();
        {
            let mut seen = s.seen.lock().unwrap();
            for w in &sent {
                if !left.contains(&key(w)) {
                    seen.acknowledged.insert(key(w));
                }
            }
        }
        let mut all = unprocessed;
        all.extend(held);
        json["UnprocessedItems"] = if all.is_empty() {
            json!({})
        } else {
            json!({table: all})
        };
        bytes::Bytes::from(serde_json::to_vec(&json).unwrap())
    } else {
        body
    };
    let mut response = Response::builder().status(status.as_u16());
    for (name, value) in headers.iter() {
        if name != "content-length" && name != "x-amz-crc32" {
            response = response.header(name, value);
        }
    }
    response.body(Body::from(body)).unwrap()
}
