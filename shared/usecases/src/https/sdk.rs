//! The AWS SDK's HTTP client on the process's stack ([`super::connector`]).
//!
//! The SDK's own (`aws-smithy-http-client`) always links HTTP/2 (`h2`), which
//! DynamoDB, SSM, SNS and Streams are never spoken to in: about 0.3 MB of
//! every function (docs/BENCHMARKS.md). This is the same adapter over
//! hyper-util's pooled client, HTTP/1.1 only.

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::sync::Mutex;
use std::time::Duration;

type Pool = Client<super::Connector, SdkBody>;

/// The client every SDK client is given: one connection pool per connect
/// timeout the SDK asks for (in practice one: [`super::CONNECT_TIMEOUT`]).
#[derive(Debug, Default)]
struct Hyper {
    pools: Mutex<Vec<(Option<Duration>, SharedHttpConnector)>>,
}

/// The SDK's HTTP client (`assembly::sdk_config`).
pub fn client() -> SharedHttpClient {
    SharedHttpClient::new(Hyper::default())
}

impl HttpClient for Hyper {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let timeout = settings.connect_timeout();
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, pool)) = pools.iter().find(|(t, _)| *t == timeout) {
            return pool.clone();
        }
        let pool = SharedHttpConnector::new(Pooled(
            super::connector(timeout).map(|c| Client::builder(TokioExecutor::new()).build(c)),
        ));
        pools.push((timeout, pool.clone()));
        pool
    }
}

/// A pool, or why there is none (the system's roots could not be read):
/// then every request fails with that reason.
#[derive(Debug)]
struct Pooled(Result<Pool, String>);

impl HttpConnector for Pooled {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let pool = match &self.0 {
            Ok(pool) => pool.clone(),
            Err(reason) => {
                return HttpConnectorFuture::ready(Err(ConnectorError::other(
                    reason.clone().into(),
                    None,
                )))
            }
        };
        let request = match request.try_into_http1x() {
            Ok(request) => request,
            Err(e) => return HttpConnectorFuture::ready(Err(ConnectorError::user(e.into()))),
        };
        HttpConnectorFuture::new(async move {
            let response = pool.request(request).await.map_err(classify)?;
            HttpResponse::try_from(response.map(SdkBody::from_body_1_x))
                .map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}

/// A failed exchange, as the SDK's retry reads it: a connect or I/O failure
/// and a connection closed early may be retried; the rest may not.
fn classify(e: hyper_util::client::legacy::Error) -> ConnectorError {
    let transient = e.is_connect()
        || find::<std::io::Error>(&e).is_some()
        || find::<hyper::Error>(&e)
            .is_some_and(|h| h.is_closed() || h.is_canceled() || h.is_incomplete_message());
    let timed_out = find::<hyper::Error>(&e).is_some_and(hyper::Error::is_timeout);
    let boxed: aws_smithy_runtime_api::box_error::BoxError = Box::new(e);
    if timed_out {
        ConnectorError::timeout(boxed)
    } else if transient {
        ConnectorError::io(boxed)
    } else {
        ConnectorError::other(boxed, None)
    }
}

/// The first error of type `E` in `e`'s chain of causes.
fn find<'a, E: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a E> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(found) = e.downcast_ref::<E>() {
            return Some(found);
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn pooled() -> Pooled {
        Pooled(
            super::super::connector(Some(Duration::from_secs(2)))
                .map(|c| Client::builder(TokioExecutor::new()).build(c)),
        )
    }

    fn get(url: &str) -> HttpRequest {
        HttpRequest::try_from(hyper::Request::get(url).body(SdkBody::from("{}")).unwrap()).unwrap()
    }

    /// A server that answers each connection with `answer` after reading
    /// the request's head (or closes at once when `answer` is empty).
    async fn server(answer: &'static [u8]) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                if answer.is_empty() {
                    continue;
                }
                let mut head = [0u8; 1024];
                let _ = socket.read(&mut head).await;
                let _ = socket.write_all(answer).await;
            }
        });
        url
    }

    #[tokio::test]
    async fn an_answer_comes_back_with_its_status_and_body() {
        let url = server(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
        let response = pooled().call(get(&url)).await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let body = http_body_util::BodyExt::collect(response.into_body()).await;
        assert_eq!(body.unwrap().to_bytes(), &b"ok"[..]);
    }

    #[tokio::test]
    async fn a_refused_or_dropped_connection_is_an_io_error_the_sdk_may_retry() {
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}/", listener.local_addr().unwrap())
        };
        let refused = pooled().call(get(&closed)).await.unwrap_err();
        assert!(refused.is_io(), "{refused:?}");
        let dropped = pooled().call(get(&server(b"").await)).await.unwrap_err();
        assert!(dropped.is_io(), "{dropped:?}");
    }

    #[tokio::test]
    async fn a_garbled_answer_is_an_error_not_retried() {
        let url = server(b"NOT HTTP AT ALL\r\n\r\n").await;
        let garbled = pooled().call(get(&url)).await.unwrap_err();
        assert!(!garbled.is_io() && !garbled.is_timeout(), "{garbled:?}");
    }
}
