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
    let tls = tls_config()?;
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*tls).clone())
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp))
}

/// TLS with the system's roots, read once per process: every connector of
/// a cold start (the SDK's, SSM's, a receiver's) shares them.
fn tls_config() -> Result<std::sync::Arc<rustls::ClientConfig>, String> {
    static TLS: std::sync::OnceLock<Result<std::sync::Arc<rustls::ClientConfig>, String>> =
        std::sync::OnceLock::new();
    TLS.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        let found = system_roots();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(format!(
                "no TLS roots in the system's store: {:?}",
                found.errors
            ));
        }
        // ring named, not left to a process default: one crypto provider.
        let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(std::sync::Arc::new(tls))
    })
    .clone()
}

/// The system's trusted roots: its bundle file alone where it has one
/// (Debian's `ca-certificates.crt`, Amazon Linux's `ca-bundle.crt`), or
/// what `SSL_CERT_FILE`/`SSL_CERT_DIR` name. rustls-native-certs left to
/// itself also reads every file of the certificates directory, the same
/// roots again: 290 files and 2 ms of each cold start on Debian, against
/// 0.6 ms for the bundle (docs/BENCHMARKS.md "Function footprint"). The
/// directory holds only one root more here, Debian's self-signed
/// `ssl-cert-snakeoil.pem` for `localhost`, which no client should trust; a
/// root dropped there without `update-ca-certificates` needs `SSL_CERT_DIR`.
fn system_roots() -> rustls_native_certs::CertificateResult {
    let asked =
        std::env::var_os("SSL_CERT_FILE").is_some() || std::env::var_os("SSL_CERT_DIR").is_some();
    roots(asked)
}

/// The bundle file alone, unless the environment `asked` for paths.
fn roots(asked: bool) -> rustls_native_certs::CertificateResult {
    match openssl_probe::probe().cert_file {
        Some(bundle) if !asked => rustls_native_certs::load_certs_from_paths(Some(&bundle), None),
        _ => rustls_native_certs::load_native_certs(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_bundle_alone_holds_every_root_the_whole_store_does() {
        let bundle = roots(false);
        assert!(bundle.errors.is_empty(), "{:?}", bundle.errors);
        let of = |certs: Vec<rustls::pki_types::CertificateDer<'static>>| -> BTreeSet<Vec<u8>> {
            certs.into_iter().map(|c| c.to_vec()).collect()
        };
        let everything = of(rustls_native_certs::load_native_certs().certs);
        let bundle = of(bundle.certs);
        // Nothing the whole store does not trust; most of what it trusts.
        assert!(bundle.len() > 10, "{}", bundle.len());
        assert!(bundle.is_subset(&everything));
        assert!(
            bundle.len() * 10 >= everything.len() * 9,
            "{} of {}",
            bundle.len(),
            everything.len()
        );
        assert!(connector(None).is_ok());
    }
}
