//! Hello world on `lambda_runtime` that also builds a DynamoDB client as the
//! functions do (`shared::assembly`: the SDK's configuration, its HTTPS
//! client, the DynamoDB client): the floor the SDK sets, which the
//! functions' size, start-up and memory are held to
//! (`benches/footprint.rs`, issue 43). It answers each event with a
//! DescribeTable of `TABLE_NAME`, so the client is used, not optimised out.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let table = std::env::var("TABLE_NAME")?;
    let sdk = shared::assembly::sdk_config(None, std::time::Duration::from_secs(5)).await;
    let client = shared::assembly::dynamodb_client(&sdk);
    let (client, table) = (&client, &table);
    lambda_runtime::run(service_fn(move |_: LambdaEvent<Value>| async move {
        let out = client.describe_table().table_name(table).send().await?;
        let status = out
            .table()
            .and_then(|t| t.table_status())
            .map(|s| s.as_str().to_owned());
        Ok::<_, Error>(json!({"statusCode": 200, "body": status}))
    }))
    .await
}
