//! A small HTTP receiver on 127.0.0.1 for the alert tests: it records every
//! request (path, headers, body) and answers 200, or 503 while it is set
//! down, as ntfy or a webhook would when its server is away. Stopped on drop.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Router;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    down: AtomicBool,
}

pub struct HttpReceiver {
    pub url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

async fn take(
    State(s): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    if s.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    s.received.lock().unwrap().push(Received {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    StatusCode::OK
}

impl HttpReceiver {
    /// Listening on a free port; `url` is its root with `path` appended.
    pub async fn start(path: &str) -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(take).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{path}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, shared, task }
    }

    /// Answers 503 to everything (true) or takes requests again (false).
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
    }

    /// What it took so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

impl Drop for HttpReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}
