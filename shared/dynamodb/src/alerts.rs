//! Alert rules, series states and waiting notifications on DynamoDB
//! (`store::Alerts`): an item per rule in `pk=ALERT#RULE` (its JSON as
//! put), an item per series that is not inactive in `pk=ALERT#STATE`,
//! `sk=<rule>#<device>`, and an item per notification waiting for a
//! receiver in `pk=ALERT#DELIVERY`, `sk=<receiver>#<rule>#<device>` (`keys`). Neither
//! partition can be a device's (ids hold no `#`), and neither `sk` is a
//! reading's, so the stream functions and `reindex` pass them by.

use super::calls::{self, Request};
use super::{metered_write, s, unavailable, DynamoStore};
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConsumedCapacity, ReturnConsumedCapacity, ReturnValue,
};
use domain::alerts::{Delivery, Phase, SeriesKey, SeriesState, States};
use domain::model::Timestamp;
use serde::{Deserialize, Serialize};
use storage::keys::{
    self, attr, ALERT_DELIVERIES_PARTITION, ALERT_RULES_PARTITION, ALERT_STATES_PARTITION,
};
use storage::{Alerts, StoreError};

#[derive(Serialize, Deserialize)]
struct RuleItem {
    pk: String,
    sk: String,
    rule: String,
}

/// A series' state; times in milliseconds.
#[derive(Serialize, Deserialize)]
struct StateItem {
    pk: String,
    sk: String,
    firing: bool,
    since: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    quiet_since: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    notified: Option<i64>,
}

fn time(ms: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_millis(ms).map_err(|e| StoreError::Corrupt(format!("alert state: {e}")))
}

impl StateItem {
    fn of((rule, device): &SeriesKey, state: &SeriesState) -> Option<Self> {
        let (firing, since, quiet_since) = match state.phase {
            Phase::Inactive => return None,
            Phase::Pending { since } => (false, since, None),
            Phase::Firing { since, quiet_since } => (true, since, quiet_since),
        };
        Some(Self {
            pk: ALERT_STATES_PARTITION.into(),
            sk: keys::alert_state_sk(rule, device),
            firing,
            since: since.millis(),
            quiet_since: quiet_since.map(Timestamp::millis),
            value: state.value,
            notified: state.notified.map(Timestamp::millis),
        })
    }

    fn into_state(self) -> Result<(SeriesKey, SeriesState), StoreError> {
        let key = keys::parse_alert_state_sk(&self.sk)
            .ok_or_else(|| StoreError::Corrupt(format!("alert state sk {:?}", self.sk)))?;
        let since = time(self.since)?;
        let phase = if self.firing {
            Phase::Firing {
                since,
                quiet_since: self.quiet_since.map(time).transpose()?,
            }
        } else {
            Phase::Pending { since }
        };
        Ok((
            key,
            SeriesState {
                phase,
                value: self.value,
                notified: self.notified.map(time).transpose()?,
            },
        ))
    }
}

/// A notification waiting for a receiver; times in milliseconds.
#[derive(Serialize, Deserialize)]
struct DeliveryItem {
    pk: String,
    sk: String,
    receiver: String,
    /// `domain::alerts::Notification` as JSON.
    notification: String,
    queued_at: i64,
    attempts: u32,
    next_attempt: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failing_since: Option<i64>,
}

impl DeliveryItem {
    fn of(d: &Delivery) -> Result<Self, StoreError> {
        Ok(Self {
            pk: ALERT_DELIVERIES_PARTITION.into(),
            sk: keys::alert_delivery_sk(&d.receiver, &d.notification.rule, &d.notification.device),
            receiver: d.receiver.clone(),
            notification: serde_json::to_string(&d.notification)
                .map_err(|e| StoreError::Corrupt(format!("alert delivery: {e}")))?,
            queued_at: d.queued_at.millis(),
            attempts: d.attempts,
            next_attempt: d.next_attempt.millis(),
            last_error: d.last_error.clone(),
            failing_since: d.failing_since.map(Timestamp::millis),
        })
    }

    fn into_delivery(self) -> Result<Delivery, StoreError> {
        Ok(Delivery {
            receiver: self.receiver,
            notification: serde_json::from_str(&self.notification)
                .map_err(|e| StoreError::Corrupt(format!("alert delivery: {e}")))?,
            queued_at: time(self.queued_at)?,
            attempts: self.attempts,
            next_attempt: time(self.next_attempt)?,
            last_error: self.last_error,
            failing_since: self.failing_since.map(time).transpose()?,
        })
    }
}

/// A write conditioned on a delivery's `queued_at`: a failed condition (a
/// newer notification replaced it) is no error, and costs the unit
/// DynamoDB charges for it.
fn unless_replaced<O, E, R>(
    result: Result<O, SdkError<E, R>>,
    consumed: impl Fn(&O) -> Option<&ConsumedCapacity>,
) -> Result<(), StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(out) => {
            metered_write(consumed(&out));
            Ok(())
        }
        Err(e)
            if e.as_service_error().and_then(|s| s.code())
                == Some("ConditionalCheckFailedException") =>
        {
            storage::metering::add_write_units(1.0);
            Ok(())
        }
        Err(e) => Err(unavailable(e)),
    }
}

impl DynamoStore {
    pub(crate) async fn put_item_of<T: Serialize>(&self, item: &T) -> Result<(), StoreError> {
        let item: serde_dynamo::Item =
            serde_dynamo::to_item(item).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let out = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item.into()))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .retried(self)
            .await
            .map_err(unavailable)?;
        metered_write(out.consumed_capacity());
        Ok(())
    }

    /// Replaces a delivery only if it is still the one queued at `queued_at`.
    async fn put_delivery(&self, item: DeliveryItem, queued_at: i64) -> Result<(), StoreError> {
        let row: serde_dynamo::Item =
            serde_dynamo::to_item(&item).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(row.into()))
            .condition_expression("#q = :q")
            .expression_attribute_names("#q", "queued_at")
            .expression_attribute_values(":q", AttributeValue::N(queued_at.to_string()))
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        unless_replaced(put.retried(self).await, |o| o.consumed_capacity())
    }

    async fn delete_key(&self, pk: &str, sk: &str) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(attr::PK, s(pk))
            .key(attr::SK, s(sk))
            .return_values(ReturnValue::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .retried(self)
            .await
            .map_err(unavailable)?;
        metered_write(out.consumed_capacity());
        Ok(out.attributes().is_some())
    }
}

impl Alerts for DynamoStore {
    async fn alert_rules(&self) -> Result<Vec<(String, String)>, StoreError> {
        calls::operation(&self.policy, async {
            let items: Vec<RuleItem> = self.partition(ALERT_RULES_PARTITION).await?;
            Ok(items.into_iter().map(|i| (i.sk, i.rule)).collect())
        })
        .await
    }

    async fn put_alert_rule(&self, name: &str, json: &str) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            self.put_item_of(&RuleItem {
                pk: ALERT_RULES_PARTITION.into(),
                sk: name.into(),
                rule: json.into(),
            })
            .await
        })
        .await
    }

    async fn delete_alert_rule(&self, name: &str) -> Result<bool, StoreError> {
        calls::operation(&self.policy, self.delete_key(ALERT_RULES_PARTITION, name)).await
    }

    async fn alert_states(&self) -> Result<States, StoreError> {
        calls::operation(&self.policy, async {
            let items: Vec<StateItem> = self.partition(ALERT_STATES_PARTITION).await?;
            let mut out = States::default();
            for item in items {
                let (key, state) = item.into_state()?;
                out.0.insert(key, state);
            }
            Ok(out)
        })
        .await
    }

    async fn save_alert_states(
        &self,
        changed: &[(SeriesKey, Option<SeriesState>)],
    ) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            for (key, state) in changed {
                match state.as_ref().and_then(|s| StateItem::of(key, s)) {
                    Some(item) => self.put_item_of(&item).await?,
                    None => {
                        self.delete_key(
                            ALERT_STATES_PARTITION,
                            &keys::alert_state_sk(&key.0, &key.1),
                        )
                        .await?;
                    }
                }
            }
            Ok(())
        })
        .await
    }

    async fn queue_deliveries(&self, queued: &[Delivery]) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            for d in queued {
                self.put_item_of(&DeliveryItem::of(d)?).await?;
            }
            Ok(())
        })
        .await
    }

    async fn deliveries(&self) -> Result<Vec<Delivery>, StoreError> {
        calls::operation(&self.policy, async {
            let items: Vec<DeliveryItem> = self.partition(ALERT_DELIVERIES_PARTITION).await?;
            items.into_iter().map(DeliveryItem::into_delivery).collect()
        })
        .await
    }

    async fn delivered(&self, d: &Delivery) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            let sk =
                keys::alert_delivery_sk(&d.receiver, &d.notification.rule, &d.notification.device);
            let res = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key(attr::PK, s(ALERT_DELIVERIES_PARTITION))
                .key(attr::SK, s(&sk))
                .condition_expression("#q = :q")
                .expression_attribute_names("#q", "queued_at")
                .expression_attribute_values(
                    ":q",
                    AttributeValue::N(d.queued_at.millis().to_string()),
                )
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await;
            unless_replaced(res, |o| o.consumed_capacity())
        })
        .await
    }

    async fn delivery_failed(&self, d: &Delivery) -> Result<(), StoreError> {
        calls::operation(&self.policy, async {
            self.put_delivery(DeliveryItem::of(d)?, d.queued_at.millis())
                .await
        })
        .await
    }
}
