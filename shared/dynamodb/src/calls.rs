//! How the adapter calls DynamoDB: the one owner of retries and deadlines.
//!
//! The SDK client's own retry is off (the assembly builds it so); every
//! request goes through [`retrying`] (through [`Request::retried`], or, for
//! `BatchWriteItem`, the write path, which also retries `UnprocessedItems`),
//! which retries transient errors with the program's one backoff
//! (`storage::retry`: exponential, full jitter), and runs each attempt under the
//! time left in the operation's budget. An operation is
//! one call of a `Store` method that serves a client: every request it makes
//! shares one deadline (`CallPolicy::budget` from its start), so an endpoint
//! that accepts a connection and never answers holds an operation for the
//! budget, not for as long as the SDK would wait. Maintenance (rollups kept
//! by the stream function, `rollups rebuild`, `reindex`) may make thousands
//! of requests: there each request has a budget of its own.

use super::DynamoStore;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

pub use storage::retry::CallPolicy;

tokio::task_local! {
    /// The deadline of the store operation this task is in.
    static DEADLINE: Instant;
}

/// The deadline of the current operation, or one starting now.
fn deadline(policy: &CallPolicy) -> Instant {
    DEADLINE
        .try_with(|d| *d)
        .unwrap_or_else(|_| Instant::now() + policy.budget)
}

/// Runs one store operation: every request inside it shares one deadline,
/// `budget` from now (an operation inside another keeps the outer one).
pub(super) async fn operation<F: Future>(policy: &CallPolicy, f: F) -> F::Output {
    if DEADLINE.try_with(|_| ()).is_ok() {
        return f.await;
    }
    DEADLINE.scope(Instant::now() + policy.budget, f).await
}

/// Why an attempt was abandoned: the operation's budget ran out first.
#[derive(Debug, thiserror::Error)]
#[error("no answer within the operation's budget of {0:?}")]
pub struct DeadlineExceeded(pub Duration);

/// Runs `attempt` until it succeeds, fails for good (`transient` says no),
/// or the next wait would reach the operation's deadline: the one retry
/// loop of the adapter. Each attempt is cut off at the deadline, as
/// `timed_out()`. Boxed: the SDK's request futures are large, and an
/// operation nests many of them (a debug build overflowed a test thread's stack).
pub(super) async fn retrying<T, E, Fut>(
    policy: &CallPolicy,
    what: &'static str,
    mut attempt: impl FnMut() -> Fut + Send,
    transient: impl Fn(&E) -> bool + Send,
    timed_out: impl Fn() -> E + Send + Sync,
) -> Result<T, E>
where
    Fut: Future<Output = Result<T, E>> + Send,
    T: Send,
    E: std::error::Error + Send + Sync + 'static,
{
    use backon::Retryable;
    let deadline = deadline(policy);
    let timed_out = &timed_out;
    let cut_off = move || {
        let work = Box::pin(attempt());
        async move {
            tokio::time::timeout_at(deadline, work)
                .await
                .unwrap_or_else(|_| Err(timed_out()))
        }
    };
    cut_off
        .retry(storage::retry::exponential(policy.base_delay, policy.max_delay))
        .sleep(tokio::time::sleep)
        .when(transient)
        .adjust(move |_, delay| {
            let delay = storage::retry::full_jitter(delay?);
            (Instant::now() + delay < deadline).then_some(delay)
        })
        .notify(|err, delay| {
            tracing::warn!(error = %DisplayErrorContext(err), retry_in_ms = delay.as_millis() as u64, "{what} failed");
        })
        .await
}

/// The attempt cut off at the operation's deadline.
pub(super) fn deadline_exceeded<E>(policy: &CallPolicy) -> SdkError<E, HttpResponse> {
    SdkError::timeout_error(DeadlineExceeded(policy.budget))
}

/// Errors worth another try: timeouts, connection failures, throttling, 5xx.
/// A service error is told by its code, as the SDK parses it from every
/// answer (the typed variants carry it too).
pub(super) fn is_transient<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    match err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(ctx) if ctx.raw().status().is_server_error() => true,
        SdkError::ServiceError(ctx) => matches!(
            ctx.err().code().unwrap_or_default(),
            "ProvisionedThroughputExceededException"
                | "ThrottlingException"
                | "RequestLimitExceeded"
                | "InternalServerError"
                | "ReplicatedWriteConflictException"
                | "ServiceUnavailable"
                | "InternalFailure"
        ),
        _ => false,
    }
}

/// An SDK request the adapter sends: a fluent builder, cloned per attempt.
pub(super) trait Request: Clone + Send + Sync {
    type Output: Send;
    type Error: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static;

    fn send_once(
        self,
    ) -> impl Future<Output = Result<Self::Output, SdkError<Self::Error, HttpResponse>>> + Send;

    /// Sends the request with the adapter's retries, inside the current
    /// operation's deadline.
    fn retried(
        self,
        store: &DynamoStore,
    ) -> impl Future<Output = Result<Self::Output, SdkError<Self::Error, HttpResponse>>> + Send
    {
        let policy = store.policy;
        async move {
            retrying(
                &policy,
                "DynamoDB request",
                move || self.clone().send_once(),
                is_transient,
                || deadline_exceeded(&policy),
            )
            .await
        }
    }
}

macro_rules! requests {
    ($($op:ident :: $builder:ident => $output:ident, $error:ident;)*) => {$(
        impl Request for aws_sdk_dynamodb::operation::$op::builders::$builder {
            type Output = aws_sdk_dynamodb::operation::$op::$output;
            type Error = aws_sdk_dynamodb::operation::$op::$error;
            fn send_once(
                self,
            ) -> impl Future<Output = Result<Self::Output, SdkError<Self::Error, HttpResponse>>> + Send
            {
                self.send()
            }
        }
    )*};
}

requests! {
    query::QueryFluentBuilder => QueryOutput, QueryError;
    scan::ScanFluentBuilder => ScanOutput, ScanError;
    get_item::GetItemFluentBuilder => GetItemOutput, GetItemError;
    put_item::PutItemFluentBuilder => PutItemOutput, PutItemError;
    delete_item::DeleteItemFluentBuilder => DeleteItemOutput, DeleteItemError;
    update_item::UpdateItemFluentBuilder => UpdateItemOutput, UpdateItemError;
    batch_write_item::BatchWriteItemFluentBuilder => BatchWriteItemOutput, BatchWriteItemError;
    describe_table::DescribeTableFluentBuilder => DescribeTableOutput, DescribeTableError;
    create_table::CreateTableFluentBuilder => CreateTableOutput, CreateTableError;
    update_time_to_live::UpdateTimeToLiveFluentBuilder => UpdateTimeToLiveOutput, UpdateTimeToLiveError;
}
