//! The process's one HTTP client stack: HTTP/1.1 over hyper, TLS by rustls on
//! ring with the system's roots. The AWS SDK's clients ([`sdk`]) and the
//! alert receivers (`notify::http`) both speak through it, so a function
//! links one TLS library, one crypto provider and no HTTP/2 (issue 43,
//! docs/BENCHMARKS.md "Function footprint").

pub mod sdk;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// How long establishing a connection (to an AWS endpoint, a receiver) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A connector for http and https URLs.
pub type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// A connector whose TCP connect gives up after `connect_timeout`.
pub fn connector(connect_timeout: Option<Duration>) -> Result<Connector, String> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(connect_timeout);
    // ring named, not left to a process default: one crypto provider.
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
        .map_err(|e| format!("the system's TLS roots: {e}"))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp))
}

/// A client of whole-body requests (the alert receivers', SSM's), pooled,
/// giving up a connect after [`CONNECT_TIMEOUT`].
pub type Client = hyper_util::client::legacy::Client<Connector, Full<Bytes>>;

/// A [`Client`].
pub fn client() -> Result<Client, String> {
    Ok(
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .build(connector(Some(CONNECT_TIMEOUT))?),
    )
}
