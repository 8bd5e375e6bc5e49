//! Alert rules and series states on DynamoDB (`store::Alerts`): an item per
//! rule in `pk=ALERT#RULE` (its JSON as put), an item per series that is not
//! inactive in `pk=ALERT#STATE`, `sk=<rule>#<device>` (`keys`). Neither
//! partition can be a device's (ids hold no `#`), and neither `sk` is a
//! reading's, so the stream functions and `reindex` pass them by.

use super::calls::{self, Request};
use super::{metered_write, s, unavailable, DynamoStore};
use crate::domain::alerts::{Phase, SeriesKey, SeriesState, States};
use crate::keys::{self, attr, ALERT_RULES_PARTITION, ALERT_STATES_PARTITION};
use crate::model::Timestamp;
use crate::store::{Alerts, StoreError};
use aws_sdk_dynamodb::types::{ReturnConsumedCapacity, ReturnValue};
use serde::{Deserialize, Serialize};

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

impl DynamoStore {
    async fn put_item_of<T: Serialize>(&self, item: &T) -> Result<(), StoreError> {
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
}
