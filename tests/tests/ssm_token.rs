//! The token comes from an SSM Parameter Store SecureString (moto has SSM): read
//! and decrypted once, never shown in an error.

use integration_tests::moto;

fn ssm() -> aws_sdk_ssm::Client {
    integration_tests::ssm_client(&moto())
}

#[tokio::test]
async fn the_token_is_read_from_a_secure_string_and_never_shown() {
    let client = ssm();
    let name = format!("/iot-ingester/test-{}/ingest-token", std::process::id());
    client
        .put_parameter()
        .name(&name)
        .value("ssm-s3cret-Zq9")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .overwrite(true)
        .send()
        .await
        .unwrap();
    let token = shared::assembly::fetch_token(&client, &name).await.unwrap();
    assert!(token.admits_token("ssm-s3cret-Zq9"));
    assert!(!token.admits_token("ssm-s3cret-Zq"));

    let missing = shared::assembly::fetch_token(&client, "/iot-ingester/nope")
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("/iot-ingester/nope"), "{missing}");
    let empty_name = format!("{name}-empty");
    client
        .put_parameter()
        .name(&empty_name)
        .value(" ")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .send()
        .await
        .unwrap();
    let empty = shared::assembly::fetch_token(&client, &empty_name)
        .await
        .unwrap_err()
        .to_string();
    assert!(empty.contains("is empty"), "{empty}");
    assert!(!format!("{token:?}").contains("ssm-s3cret"));
}
