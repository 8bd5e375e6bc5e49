//! The SDK configuration a Lambda's environment gives: `AWS_REGION`, the
//! execution role's `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
//! `AWS_SESSION_TOKEN`, and endpoints from `AWS_ENDPOINT_URL_<SERVICE>` or
//! `AWS_ENDPOINT_URL`, as aws-config reads them from the environment.

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
use aws_types::sdk_config::Builder;
use aws_types::service_config::{LoadServiceConfig, ServiceConfigKey};
use aws_types::SdkConfig;

/// A variable of the environment, or of a test's.
pub type Lookup<'a> = &'a (dyn Fn(&str) -> Option<String> + Send + Sync);

/// The configuration `lookup` gives, with the process's HTTP client, and
/// `endpoint` over any the environment names.
pub fn config(lookup: Lookup<'_>, endpoint: Option<&str>) -> Builder {
    let var = |name: &str| lookup(name).filter(|v| !v.is_empty());
    let region = var("AWS_REGION")
        .or_else(|| var("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".to_owned());
    let credentials = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => Some(Credentials::new(
            id,
            secret,
            var("AWS_SESSION_TOKEN"),
            None,
            "environment",
        )),
        // Local servers accept any credentials.
        _ if endpoint.is_some_and(super::is_local) => Some(Credentials::new(
            "local",
            "local",
            None,
            None,
            "ingester-local",
        )),
        // No credentials: each call fails saying so.
        _ => None,
    };
    let mut builder = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .http_client(usecases::https::sdk::client())
        // An endpoint given wins over the environment's (as aws-config's
        // loader ignores them then).
        .service_config(Endpoints(match endpoint {
            Some(_) => Vec::new(),
            None => ["AWS_ENDPOINT_URL"]
                .into_iter()
                .chain(SERVICES.iter().map(|s| s.1))
                .filter_map(|name| var(name).map(|url| (name, url)))
                .collect(),
        }));
    if let Some(credentials) = credentials {
        builder = builder.credentials_provider(SharedCredentialsProvider::new(credentials));
    }
    if let Some(url) = endpoint {
        builder = builder.endpoint_url(url);
    }
    builder
}

/// The services this program calls, by the SDK's service id, and the
/// variable that names an endpoint for each.
const SERVICES: [(&str, &str); 4] = [
    ("DynamoDB", "AWS_ENDPOINT_URL_DYNAMODB"),
    ("DynamoDB Streams", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"),
    ("SSM", "AWS_ENDPOINT_URL_SSM"),
    ("SNS", "AWS_ENDPOINT_URL_SNS"),
];

/// The endpoint variables the environment set, read when a client is built.
#[derive(Debug)]
struct Endpoints(Vec<(&'static str, String)>);

impl LoadServiceConfig for Endpoints {
    fn load_config(&self, key: ServiceConfigKey<'_>) -> Option<String> {
        if key.env() != "AWS_ENDPOINT_URL" {
            return None;
        }
        let own = SERVICES
            .iter()
            .find(|(id, _)| *id == key.service_id())
            .map(|(_, name)| *name);
        let url = |wanted: &str| {
            self.0
                .iter()
                .find(|(name, _)| *name == wanted)
                .map(|(_, url)| url.clone())
        };
        own.and_then(url).or_else(|| url("AWS_ENDPOINT_URL"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::config::ProvideCredentials;

    fn from(vars: &'static [(&'static str, &'static str)], endpoint: Option<&str>) -> SdkConfig {
        let lookup = move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        config(&lookup, endpoint).build()
    }

    fn endpoint_of(sdk: &SdkConfig, service_id: &str) -> Option<String> {
        sdk.service_config()?.load_config(
            ServiceConfigKey::builder()
                .service_id(service_id)
                .env("AWS_ENDPOINT_URL")
                .profile("endpoint_url")
                .build()
                .unwrap(),
        )
    }

    #[tokio::test]
    async fn lambda_s_variables_give_the_region_and_the_role_s_credentials() {
        let sdk = from(
            &[
                ("AWS_REGION", "eu-central-1"),
                ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
                ("AWS_SECRET_ACCESS_KEY", "secret"),
                ("AWS_SESSION_TOKEN", "session"),
            ],
            None,
        );
        assert_eq!(sdk.region().unwrap().as_ref(), "eu-central-1");
        let credentials = sdk
            .credentials_provider()
            .unwrap()
            .provide_credentials()
            .await
            .unwrap();
        assert_eq!(credentials.access_key_id(), "AKIDEXAMPLE");
        assert_eq!(credentials.session_token(), Some("session"));
        assert_eq!(endpoint_of(&sdk, "DynamoDB"), None);
    }

    #[test]
    fn without_variables_the_region_is_us_east_1_and_only_a_local_server_gets_credentials() {
        let aws = from(&[], None);
        assert_eq!(aws.region().unwrap().as_ref(), "us-east-1");
        assert!(aws.credentials_provider().is_none());
        let local = from(&[], Some("http://127.0.0.1:8000"));
        assert!(local.credentials_provider().is_some());
        assert_eq!(local.endpoint_url(), Some("http://127.0.0.1:8000"));
        assert!(from(&[], Some("https://dynamodb.example.com"))
            .credentials_provider()
            .is_none());
    }

    #[test]
    fn a_service_s_own_endpoint_wins_over_the_general_one() {
        let sdk = from(
            &[
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
                ("AWS_ENDPOINT_URL_SNS", "http://127.0.0.1:2"),
                ("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "http://127.0.0.1:3"),
            ],
            None,
        );
        assert_eq!(
            endpoint_of(&sdk, "SNS").as_deref(),
            Some("http://127.0.0.1:2")
        );
        assert_eq!(
            endpoint_of(&sdk, "DynamoDB Streams").as_deref(),
            Some("http://127.0.0.1:3")
        );
        assert_eq!(
            endpoint_of(&sdk, "DynamoDB").as_deref(),
            Some("http://127.0.0.1:1")
        );
        let given = from(
            &[("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:2")],
            Some("http://127.0.0.1:9"),
        );
        assert_eq!(endpoint_of(&given, "DynamoDB"), None);
        assert_eq!(given.endpoint_url(), Some("http://127.0.0.1:9"));
    }
}
