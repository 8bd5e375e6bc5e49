//! The HTTP client of the webhook and ntfy receivers, on the stack the AWS
//! SDK's clients use (`crate::https`), so a receiver adds no TLS of its own
//! to a function.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;

pub use crate::https::{client, Client as HttpClient};

/// POSTs `body` with `headers`; a 2xx is success, anything else an error
/// with the status and the start of the answer.
pub async fn post(
    client: &HttpClient,
    url: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> Result<(), String> {
    let mut request = hyper::Request::post(url);
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("{url}: {e}"))?;
    let response = client
        .request(request)
        .await
        .map_err(|e| format!("{url}: {}", error_chain(&e)))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    Err(format!("{url}: {status} {}", text.trim()))
}

/// An error with its causes, as `connection refused` sits below hyper's
/// `client error (Connect)`.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
