//! One SSM call, `GetParameter` with decryption: how an HTTP function reads
//! its token once per cold start.
//!
//! Not through `aws-sdk-ssm`: its client (its operations' machinery and its
//! own copy of the endpoint rules) was about 0.3 MB of each HTTP function,
//! for this one call (issue 43, docs/BENCHMARKS.md "Function footprint").
//! The request is signed by aws-sigv4, the SDK's own signer, with the
//! credentials of the process's SDK configuration, and sent through the
//! process's HTTP client; transient failures are retried by the program's
//! one backoff (`retry`).

use aws_sdk_dynamodb::config::ProvideCredentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_types::service_config::ServiceConfigKey;
use aws_types::SdkConfig;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use std::time::{Duration, SystemTime};

/// How many times a transient failure is tried again.
const RETRIES: usize = 2;

/// The value of the parameter `name`, decrypted. An error says why, never
/// with the value.
pub async fn get_decrypted(sdk: &SdkConfig, name: &str) -> Result<String, String> {
    let client = usecases::https::client()?;
    let endpoint = endpoint(sdk)?;
    let body = serde_json::json!({"Name": name, "WithDecryption": true}).to_string();
    // Each attempt within the configuration's attempt timeout.
    let attempt = sdk
        .timeout_config()
        .and_then(|t| t.operation_attempt_timeout())
        .unwrap_or(Duration::from_secs(5));
    let once = || async {
        tokio::time::timeout(attempt, call(sdk, &client, &endpoint, &body))
            .await
            .unwrap_or_else(|_| Err(Failure::Transient(format!("{endpoint}: timed out"))))
    };
    // The program's one backoff, as the DynamoDB adapter retries (`calls`).
    use backon::Retryable;
    let answer = once
        .retry(
            storage::retry::exponential(Duration::from_millis(50), Duration::from_secs(1))
                .with_max_times(RETRIES),
        )
        .sleep(tokio::time::sleep)
        .when(|failure| matches!(failure, Failure::Transient(_)))
        .adjust(|_, delay| Some(storage::retry::full_jitter(delay?)))
        .await
        .map_err(|(Failure::Transient(reason) | Failure::Final(reason))| reason)?;
    value(&answer)
}

/// Why a call failed, and whether trying again may help.
enum Failure {
    Transient(String),
    Final(String),
}

/// SSM's endpoint: the one the environment or the configuration names
/// (a local server), or the region's.
fn endpoint(sdk: &SdkConfig) -> Result<String, String> {
    let named = sdk.service_config().and_then(|c| {
        c.load_config(
            ServiceConfigKey::builder()
                .service_id("SSM")
                .env("AWS_ENDPOINT_URL")
                .profile("endpoint_url")
                .build()
                .ok()?,
        )
    });
    if let Some(url) = named.or_else(|| sdk.endpoint_url().map(str::to_owned)) {
        return Ok(url.trim_end_matches('/').to_owned());
    }
    let region = sdk.region().ok_or("no AWS region is set")?;
    let domain = if region.as_ref().starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    Ok(format!("https://ssm.{region}.{domain}"))
}

/// One signed `GetParameter` request; the answer's JSON body on a 2xx.
async fn call(
    sdk: &SdkConfig,
    client: &usecases::https::Client,
    endpoint: &str,
    body: &str,
) -> Result<serde_json::Value, Failure> {
    let final_ = |reason: String| Failure::Final(reason);
    let credentials = sdk
        .credentials_provider()
        .ok_or_else(|| final_("no AWS credentials are set".into()))?
        .provide_credentials()
        .await
        .map_err(|e| final_(format!("AWS credentials: {e}")))?;
    let region = sdk.region().map_or("us-east-1", |r| r.as_ref());
    let url = format!("{endpoint}/");
    let mut request = hyper::Request::post(&url)
        .header("content-type", "application/x-amz-json-1.1")
        .header("x-amz-target", "AmazonSSM.GetParameter")
        .body(Full::new(Bytes::from(body.to_owned())))
        .map_err(|e| final_(format!("{url}: {e}")))?;
    let host = request
        .uri()
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_default();
    request.headers_mut().insert(
        hyper::header::HOST,
        host.parse()
            .map_err(|_| final_(format!("{url}: no host")))?,
    );
    let identity = credentials.into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("ssm")
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| final_(format!("signing: {e}")))?
        .into();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let signable = SignableRequest::new(
        "POST",
        url.as_str(),
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(body.as_bytes()),
    )
    .map_err(|e| final_(format!("signing: {e}")))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| final_(format!("signing: {e}")))?
        .into_parts();
    instructions.apply_to_request_http1x(&mut request);

    let answer = client
        .request(request)
        .await
        .map_err(|e| Failure::Transient(format!("{url}: {e}")))?;
    let status = answer.status();
    let bytes = answer
        .into_body()
        .collect()
        .await
        .map_err(|e| Failure::Transient(format!("{url}: {e}")))?
        .to_bytes();
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if status.is_success() {
        return Ok(json);
    }
    // SSM's errors: `{"__type": "ParameterNotFound", "message": "..."}`.
    let kind = json["__type"].as_str().unwrap_or("");
    let kind = kind.rsplit('#').next().unwrap_or(kind);
    let message = json["message"]
        .as_str()
        .or(json["Message"].as_str())
        .unwrap_or("");
    let reason = format!("{kind} ({status}) {message}").trim().to_owned();
    if status.is_server_error() || kind.contains("Throttl") || kind == "TooManyUpdates" {
        Err(Failure::Transient(reason))
    } else {
        Err(Failure::Final(reason))
    }
}

/// The parameter's value from `GetParameter`'s answer.
fn value(answer: &serde_json::Value) -> Result<String, String> {
    answer["Parameter"]["Value"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "the answer has no Parameter.Value".to_owned())
}
