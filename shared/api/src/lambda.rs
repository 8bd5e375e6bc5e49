//! An API Gateway HTTP API (v2) event through the Router, converted both ways
//! by `lambda_http` exactly as on Lambda: how the tests and `ingester-local
//! replay` run `events/`.

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use axum::Router;
use base64::Engine;
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Context, LambdaEvent, Service};

/// The response API Gateway would get from the function for this event.
pub async fn invoke(router: Router, event: ApiGatewayV2httpRequest) -> ApiGatewayV2httpResponse {
    let mut adapter = Adapter::from(router);
    let event = LambdaEvent::new(LambdaRequest::ApiGatewayV2(event), Context::default());
    let Ok(response) = adapter.call(event).await;
    // The adapter's response type is not nameable outside lambda_http; its JSON
    // is what Lambda returns to API Gateway, so read that.
    let json = serde_json::to_value(&response).expect("a Lambda response serialises");
    let mut response: ApiGatewayV2httpResponse =
        serde_json::from_value(json).expect("lambda_http answers an API Gateway v2 response");
    if response.is_base64_encoded {
        if let Some(Body::Text(encoded)) = &response.body {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .expect("lambda_http encodes binary bodies as base64");
            response.body = Some(Body::Binary(bytes));
        }
    }
    response
}
