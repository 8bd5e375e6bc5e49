//! A Lambda Runtime API emulator: enough of `/2018-06-01/runtime/...` for a
//! real `lambda_runtime` binary to take events and post its answers.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};

#[derive(Default)]
struct Shared {
    answers: Mutex<HashMap<String, Result<Value, Value>>>,
    answered: Notify,
    /// When the function first asked for an event: its initialisation is over.
    first_poll: Mutex<Option<Instant>>,
}

struct Emulator {
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<(String, Value)>>,
    shared: Arc<Shared>,
}

/// A function binary of this build's profile, for a bench: the binaries sit
/// next to the running bench's own `deps/` folder.
pub fn function_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build {}-p {name}` first",
        path.display(),
        if exe.to_string_lossy().contains("/release/") {
            "--release "
        } else {
            ""
        }
    );
    path
}

/// A running emulator and the function process attached to it.
pub struct Runtime {
    pub addr: String,
    send: mpsc::UnboundedSender<(String, Value)>,
    shared: Arc<Shared>,
    child: Option<Child>,
    next_id: usize,
}

impl Runtime {
    pub async fn start() -> Self {
        let (send, recv) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        let state = Arc::new(Emulator {
            events: tokio::sync::Mutex::new(recv),
            shared: shared.clone(),
        });
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(response),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Runtime {
            addr,
            send,
            shared,
            child: None,
            next_id: 0,
        }
    }

    /// Starts a function binary against this emulator, with extra environment.
    pub fn spawn(&mut self, binary: &str, env: &[(&str, &str)]) {
        let mut cmd = Command::new(binary);
        cmd.env_clear()
            .env("AWS_LAMBDA_RUNTIME_API", &self.addr)
            .env("AWS_LAMBDA_FUNCTION_NAME", "under-test")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/under-test")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "stream")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        self.child = Some(cmd.spawn().expect("function binary starts"));
    }

    /// The function process's id (for reading its memory use).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a function was spawned").id()
    }

    /// The function process's peak resident memory (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/<pid>/status")
    }

    /// Waits until the function first polls for an event, i.e. has finished its
    /// initialisation, and returns when that happened.
    pub async fn ready(&self) -> Instant {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let notified = self.shared.answered.notified();
            if let Some(at) = *self.shared.first_poll.lock().unwrap() {
                return at;
            }
            if let Some(init) = self.shared.answers.lock().unwrap().get("init") {
                panic!("the function failed to initialise: {init:?}");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the function did not initialise within 30 s"
            );
            let _ = tokio::time::timeout(left, notified).await;
        }
    }

    /// Invokes the function with `event` and waits for its answer (Err for an error answer).
    pub async fn invoke(&mut self, event: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = format!("req-{}", self.next_id);
        self.send.send((id.clone(), event)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let notified = self.shared.answered.notified();
            if let Some(answer) = self.shared.answers.lock().unwrap().remove(&id) {
                return answer;
            }
            if let Some(init) = self.shared.answers.lock().unwrap().get("init") {
                panic!("the function failed to initialise: {init:?}");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no answer to {id} within 30 s");
            let _ = tokio::time::timeout(left, notified).await;
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

async fn next(State(s): State<Arc<Emulator>>) -> (HeaderMap, String) {
    {
        let mut first = s.shared.first_poll.lock().unwrap();
        if first.is_none() {
            *first = Some(Instant::now());
            s.shared.answered.notify_waiters();
        }
    }
    // The emulator is being dropped (its function killed): nobody reads this
    // answer, and a panic here would only print noise in the bench's output.
    let Some((id, event)) = s.events.lock().await.recv().await else {
        return (HeaderMap::new(), String::new());
    };
    let mut h = HeaderMap::new();
    h.insert(
        "lambda-runtime-aws-request-id",
        HeaderValue::from_str(&id).unwrap(),
    );
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 30_000;
    h.insert(
        "lambda-runtime-deadline-ms",
        HeaderValue::from_str(&deadline.to_string()).unwrap(),
    );
    h.insert(
        "lambda-runtime-invoked-function-arn",
        HeaderValue::from_static("arn:aws:lambda:us-east-1:123456789012:function:under-test"),
    );
    h.insert(
        "lambda-runtime-trace-id",
        HeaderValue::from_static("Root=1-00000000-000000000000000000000000"),
    );
    h.insert("content-type", HeaderValue::from_static("application/json"));
    (h, event.to_string())
}

fn record(s: &Shared, id: String, answer: Result<Value, Value>) -> StatusCode {
    s.answers.lock().unwrap().insert(id, answer);
    s.answered.notify_waiters();
    StatusCode::ACCEPTED
}

async fn response(
    State(s): State<Arc<Emulator>>,
    Path(id): Path<String>,
    body: String,
) -> StatusCode {
    record(
        &s.shared,
        id,
        Ok(serde_json::from_str(&body).unwrap_or(Value::String(body))),
    )
}

async fn error(State(s): State<Arc<Emulator>>, Path(id): Path<String>, body: String) -> StatusCode {
    record(
        &s.shared,
        id,
        Err(serde_json::from_str(&body).unwrap_or(Value::String(body))),
    )
}

async fn init_error(State(s): State<Arc<Emulator>>, body: String) -> StatusCode {
    record(
        &s.shared,
        "init".into(),
        Err(serde_json::from_str(&body).unwrap_or(Value::String(body))),
    )
}

/// A sample event of `events/`, as a function is sent it.
pub fn sample_event(name: &str) -> Value {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The JSON body of a function's answer to API Gateway.
pub fn answer_body(answer: &Value) -> Value {
    serde_json::from_str(answer["body"].as_str().unwrap()).unwrap()
}

/// A dynalite table holding the readings of the sample batch post
/// (`events/02-post-readings-batch.json`), as the read functions' tests start.
pub async fn sample_batch_table(name: &str) -> shared::store::DynamoStore {
    let posted: Vec<Value> = serde_json::from_str(
        sample_event("02-post-readings-batch.json")["body"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let now = shared::model::Timestamp::now();
    let readings: Vec<shared::model::Reading> = posted
        .iter()
        .map(|v| shared::model::Reading::from_json(v, now, |_| None).unwrap())
        .collect();
    crate::dynalite_table_with(name, &readings).await
}
