//! Hello world on `lambda_runtime`: the baseline the functions' cold start and
//! memory are compared with (`benches/cold_start.rs`).

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async {
        Ok::<_, Error>(json!({"statusCode": 200, "body": "hello"}))
    }))
    .await
}
