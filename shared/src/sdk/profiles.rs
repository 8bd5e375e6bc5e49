//! The SDK configuration off Lambda (`ingester-local`): aws-config's standard
//! region and credential chains, so a person's `~/.aws` profiles, SSO and
//! the rest work as with the AWS CLI.

use aws_config::meta::region::RegionProviderChain;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};

pub async fn config(
    endpoint: Option<&str>,
    retry: RetryConfig,
    timeouts: TimeoutConfig,
) -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(usecases::https::sdk::client())
        .region(RegionProviderChain::default_provider().or_else("us-east-1"))
        .retry_config(retry)
        .timeout_config(timeouts);
    if let Some(url) = endpoint {
        loader = loader.endpoint_url(url);
        // Local servers accept any credentials; AWS needs real ones from the usual chain.
        if super::is_local(url) && std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            loader = loader.credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "local",
                "local",
                None,
                None,
                "ingester-local",
            ));
        }
    }
    loader.load().await
}
