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
    // The functions' own SDK configuration, as on Lambda: the token is read
    // by a GetParameter of their own, signed with its credentials.
    let sdk = shared::assembly::sdk_config(Some(&moto()), std::time::Duration::from_secs(5)).await;
    let token = shared::assembly::fetch_token(&sdk, &name).await.unwrap();
    assert!(token.admits_token("ssm-s3cret-Zq9"));
    assert!(!token.admits_token("ssm-s3cret-Zq"));

    let missing = shared::assembly::fetch_token(&sdk, "/iot-ingester/nope")
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("/iot-ingester/nope"), "{missing}");
    assert!(missing.contains("ParameterNotFound"), "{missing}");
    let empty_name = format!("{name}-empty");
    client
        .put_parameter()
        .name(&empty_name)
        .value(" ")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .send()
        .await
        .unwrap();
    let empty = shared::assembly::fetch_token(&sdk, &empty_name)
        .await
        .unwrap_err()
        .to_string();
    assert!(empty.contains("is empty"), "{empty}");
    assert!(!format!("{token:?}").contains("ssm-s3cret"));
}

/// SSM failing for a moment (a 500, a throttle) is tried again; a refusal
/// (here, credentials it does not take) is not.
#[tokio::test]
async fn a_transient_ssm_failure_is_retried_and_a_refusal_is_not() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // Answers in turn: a 500, a throttle, then the parameter.
    async fn flaky(answers: Vec<(u16, &'static str)>) -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = vec![0u8; 8192];
                let n = socket.read(&mut request).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&request[..n]).to_lowercase();
                assert!(text.contains("authorization: aws4-hmac-sha256"), "{text}");
                assert!(
                    text.contains("x-amz-target: amazonssm.getparameter"),
                    "{text}"
                );
                let i = seen.fetch_add(1, Ordering::SeqCst).min(answers.len() - 1);
                let (status, body) = answers[i];
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/x-amz-json-1.1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        (url, calls)
    }
    let (url, calls) = flaky(vec![
        (
            500,
            r#"{"__type":"InternalServerError","message":"try later"}"#,
        ),
        (
            400,
            r#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#,
        ),
        (
            200,
            r#"{"Parameter":{"Name":"/t","Type":"SecureString","Value":"fl4ky-tok"}}"#,
        ),
    ])
    .await;
    let sdk = shared::assembly::sdk_config(Some(&url), std::time::Duration::from_secs(5)).await;
    let token = shared::assembly::fetch_token(&sdk, "/t").await.unwrap();
    assert!(token.admits_token("fl4ky-tok"));
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    let (url, calls) = flaky(vec![(
        400,
        r#"{"__type":"UnrecognizedClientException","message":"The security token included in the request is invalid."}"#,
    )])
    .await;
    let sdk = shared::assembly::sdk_config(Some(&url), std::time::Duration::from_secs(5)).await;
    let refused = shared::assembly::fetch_token(&sdk, "/t")
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("UnrecognizedClientException"), "{refused}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
