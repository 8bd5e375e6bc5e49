//! The alert series that are pending or firing now, oldest first: what
//! `GET /alerts` lists and the dashboard's pages show (docs/alerts.md).

use domain::alerts::Phase;
use domain::model::{DeviceId, Timestamp};
use storage::{Alerts, StoreError};

/// One series that is not inactive.
#[derive(Debug, Clone, PartialEq)]
pub struct Active {
    pub rule: String,
    pub device: DeviceId,
    pub firing: bool,
    /// When it became pending, or fired.
    pub since: Timestamp,
    pub value: Option<f64>,
}

/// Every pending and firing series, oldest first.
pub async fn active<S: Alerts>(store: &S) -> Result<Vec<Active>, StoreError> {
    let states = store.alert_states().await?;
    let mut out: Vec<Active> = states
        .0
        .into_iter()
        .filter_map(|((rule, device), s)| {
            let (firing, since) = match s.phase {
                Phase::Pending { since } => (false, since),
                Phase::Firing { since, .. } => (true, since),
                Phase::Inactive => return None,
            };
            Some(Active {
                rule,
                device,
                firing,
                since,
                value: s.value,
            })
        })
        .collect();
    out.sort_by_key(|a| a.since);
    Ok(out)
}
