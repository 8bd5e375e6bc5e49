//! Alert rules and series states in the embedded store (`store::Alerts`):
//! the tables `alert_rules` and `alert_states` (`schema::ALERTS`).

use super::{db_err, write_with, SqliteStore};
use crate::domain::alerts::{Phase, SeriesKey, SeriesState, States};
use crate::model::{DeviceId, Timestamp};
use crate::store::{Alerts, StoreError};
use rusqlite::{params, Connection};

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
}
