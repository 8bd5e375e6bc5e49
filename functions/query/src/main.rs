//! `query` Lambda: API Gateway HTTP API v2 events. Wiring only; handlers live in `shared`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use shared::api::{self, RouteSet};
use shared::aws_lambda_events::apigw::ApiGatewayV2httpRequest;

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let config = shared::config::Config::from_env()?;
    let app = shared::cold_start(&config, RouteSet::Query).await?;
    let app = &app;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<ApiGatewayV2httpRequest>| async move {
            Ok::<_, Error>(api::handle(app, event.payload).await)
        },
    ))
    .await
}
