//! The AWS SDK's configuration, the one every SDK client of a process is
//! built from (`assembly::sdk_config`): its HTTP client, its retry and
//! timeout policy, and where its region, credentials and endpoints come
//! from.
//!
//! On Lambda they come from the environment alone ([`environment`]): Lambda
//! sets the region and the execution role's credentials there, and
//! aws-config's chains (profiles, SSO, STS, IMDS, containers) would add
//! about 0.35 MB to each function for sources it never reads (issue 43).
//! `ingester-local`, run by a person with `~/.aws` profiles, builds with the
//! `aws-profiles` feature and uses aws-config's standard chains
//! ([`profiles`]) everywhere but on Lambda.

pub mod environment;
#[cfg(feature = "kinesis")]
pub mod kinesis;
pub mod parameter;
#[cfg(feature = "aws-profiles")]
mod profiles;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_types::SdkConfig;
use std::time::Duration;

/// The SDK configuration: region and credentials as above (the region
/// defaults to us-east-1 where none is set, as local servers ignore it),
/// `endpoint` when given, connect and attempt timeouts, and the SDK's
/// standard retry for the clients that keep it (SSM, Streams, SNS).
pub async fn config(endpoint: Option<&str>, budget: Duration) -> SdkConfig {
    let retry = RetryConfig::standard().with_max_attempts(3);
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(usecases::https::CONNECT_TIMEOUT)
        .operation_attempt_timeout(budget)
        .build();
    #[cfg(feature = "aws-profiles")]
    if std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_none() {
        return profiles::config(endpoint, retry, timeouts).await;
    }
    environment::config(&|name| std::env::var(name).ok(), endpoint)
        .retry_config(retry)
        .timeout_config(timeouts)
        .build()
}

/// Whether `url` is a server on this machine (dynalite, moto, DynamoDB
/// Local), which takes any credentials.
fn is_local(url: &str) -> bool {
    url.contains("://127.") || url.contains("://localhost") || url.contains("://[::1]")
}
