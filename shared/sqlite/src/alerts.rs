//! Alert rules, series states and waiting notifications in the embedded
//! store (`store::Alerts`): the tables `alert_rules`, `alert_states` and
//! `alert_deliveries` (`schema::ALERTS`).

use super::{db_err, write_with, SqliteStore};
use domain::alerts::{Delivery, Phase, SeriesKey, SeriesState, States};
use domain::model::{DeviceId, Timestamp};
use rusqlite::{params, Connection};
use storage::{Alerts, StoreError};

fn time(ms: Option<i64>) -> Result<Option<Timestamp>, StoreError> {
    ms.map(|ms| Timestamp::from_millis(ms).map_err(|e| StoreError::Corrupt(e.to_string())))
        .transpose()
}

fn states(conn: &Connection) -> Result<States, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT rule, device, firing, since, quiet_since, value, notified FROM alert_states",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, bool>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, Option<i64>>(4)?,
                r.get::<_, Option<f64>>(5)?,
                r.get::<_, Option<i64>>(6)?,
            ))
        })
        .map_err(db_err)?;
    let mut out = States::default();
    for row in rows {
        let (rule, device, firing, since, quiet_since, value, notified) = row.map_err(db_err)?;
        let device = DeviceId::parse(&device).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let since = time(Some(since))?.expect("a time");
        let phase = if firing {
            Phase::Firing {
                since,
                quiet_since: time(quiet_since)?,
            }
        } else {
            Phase::Pending { since }
        };
        out.0.insert(
            (rule, device),
            SeriesState {
                phase,
                value,
                notified: time(notified)?,
            },
        );
    }
    Ok(out)
}

fn save(conn: &Connection, changed: &[(SeriesKey, Option<SeriesState>)]) -> Result<(), StoreError> {
    for ((rule, device), state) in changed {
        let (firing, since, quiet_since) = match state.map(|s| s.phase) {
            None | Some(Phase::Inactive) => {
                conn.prepare_cached("DELETE FROM alert_states WHERE rule = ?1 AND device = ?2")
                    .and_then(|mut s| s.execute(params![rule, device.as_str()]))
                    .map_err(db_err)?;
                continue;
            }
            Some(Phase::Pending { since }) => (false, since, None),
            Some(Phase::Firing { since, quiet_since }) => (true, since, quiet_since),
        };
        let state = state.expect("a state");
        conn.prepare_cached(
            "INSERT OR REPLACE INTO alert_states
             (rule, device, firing, since, quiet_since, value, notified)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .and_then(|mut s| {
            s.execute(params![
                rule,
                device.as_str(),
                firing,
                since.millis(),
                quiet_since.map(Timestamp::millis),
                state.value,
                state.notified.map(Timestamp::millis),
            ])
        })
        .map_err(db_err)?;
    }
    Ok(())
}

fn deliveries(conn: &Connection) -> Result<Vec<Delivery>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT receiver, notification, queued_at, attempts, next_attempt, last_error,
                    failing_since
             FROM alert_deliveries ORDER BY receiver, queued_at",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, u32>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<i64>>(6)?,
            ))
        })
        .map_err(db_err)?;
    let mut out = Vec::new();
    for row in rows {
        let (receiver, json, queued_at, attempts, next_attempt, last_error, failing_since) =
            row.map_err(db_err)?;
        out.push(Delivery {
            receiver,
            notification: serde_json::from_str(&json)
                .map_err(|e| StoreError::Corrupt(format!("alert delivery: {e}")))?,
            queued_at: time(Some(queued_at))?.expect("a time"),
            attempts,
            next_attempt: time(Some(next_attempt))?.expect("a time"),
            last_error,
            failing_since: time(failing_since)?,
        });
    }
    Ok(out)
}

fn put_delivery(conn: &Connection, d: &Delivery) -> Result<(), StoreError> {
    let json = serde_json::to_string(&d.notification)
        .map_err(|e| StoreError::Corrupt(format!("alert delivery: {e}")))?;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO alert_deliveries
         (receiver, rule, device, notification, queued_at, attempts, next_attempt, last_error,
          failing_since)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .and_then(|mut s| {
        s.execute(params![
            d.receiver,
            d.notification.rule,
            d.notification.device,
            json,
            d.queued_at.millis(),
            d.attempts,
            d.next_attempt.millis(),
            d.last_error,
            d.failing_since.map(Timestamp::millis),
        ])
    })
    .map(|_| ())
    .map_err(db_err)
}

/// Whether the delivery waiting for `d`'s receiver and series is `d` itself.
fn still_queued(conn: &Connection, d: &Delivery) -> Result<bool, StoreError> {
    conn.prepare_cached(
        "SELECT 1 FROM alert_deliveries
         WHERE receiver = ?1 AND rule = ?2 AND device = ?3 AND queued_at = ?4",
    )
    .and_then(|mut s| {
        s.exists(params![
            d.receiver,
            d.notification.rule,
            d.notification.device,
            d.queued_at.millis()
        ])
    })
    .map_err(db_err)
}

impl Alerts for SqliteStore {
    async fn alert_rules(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT name, rule FROM alert_rules ORDER BY name")
                .map_err(db_err)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_err)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(db_err)
        })
    }

    async fn put_alert_rule(&self, name: &str, json: &str) -> Result<(), StoreError> {
        let (name, json) = (name.to_owned(), json.to_owned());
        self.writing(move |w| {
            write_with(w, |tx, _, _| {
                tx.execute(
                    "INSERT OR REPLACE INTO alert_rules (name, rule) VALUES (?1, ?2)",
                    params![name, json],
                )
                .map(|_| ())
                .map_err(db_err)
            })
        })
        .await
    }

    async fn delete_alert_rule(&self, name: &str) -> Result<bool, StoreError> {
        let name = name.to_owned();
        self.writing(move |w| {
            write_with(w, |tx, _, _| {
                tx.execute("DELETE FROM alert_rules WHERE name = ?1", params![name])
                    .map(|n| n > 0)
                    .map_err(db_err)
            })
        })
        .await
    }

    async fn alert_states(&self) -> Result<States, StoreError> {
        self.read(states)
    }

    async fn save_alert_states(
        &self,
        changed: &[(SeriesKey, Option<SeriesState>)],
    ) -> Result<(), StoreError> {
        let changed = changed.to_vec();
        self.writing(move |w| write_with(w, |tx, _, _| save(tx, &changed)))
            .await
    }

    async fn queue_deliveries(&self, queued: &[Delivery]) -> Result<(), StoreError> {
        let queued = queued.to_vec();
        self.writing(move |w| {
            write_with(w, |tx, _, _| {
                queued.iter().try_for_each(|d| put_delivery(tx, d))
            })
        })
        .await
    }

    async fn deliveries(&self) -> Result<Vec<Delivery>, StoreError> {
        self.read(deliveries)
    }

    async fn delivered(&self, d: &Delivery) -> Result<(), StoreError> {
        let d = d.clone();
        self.writing(move |w| {
            write_with(w, |tx, _, _| {
                tx.execute(
                    "DELETE FROM alert_deliveries
                     WHERE receiver = ?1 AND rule = ?2 AND device = ?3 AND queued_at = ?4",
                    params![
                        d.receiver,
                        d.notification.rule,
                        d.notification.device,
                        d.queued_at.millis()
                    ],
                )
                .map(|_| ())
                .map_err(db_err)
            })
        })
        .await
    }

    async fn delivery_failed(&self, d: &Delivery) -> Result<(), StoreError> {
        let d = d.clone();
        self.writing(move |w| {
            write_with(w, |tx, _, _| {
                if still_queued(tx, &d)? {
                    put_delivery(tx, &d)?;
                }
                Ok(())
            })
        })
        .await
    }
}
