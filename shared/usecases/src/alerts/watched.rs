//! The registry entries an alert run needs (issue 76): the devices its
//! rules' scopes name, read scope by scope (a device by its key, a room's
//! devices from the room's list, a type's as the filtered device list),
//! and the devices of the series pending or firing (their notifications
//! name the room). A run over a fleet of 100,000 devices whose rules watch
//! one room reads that room, not the fleet; docs/cost.md gives the units.

use domain::alerts::{Rule, Scope, States};
use domain::model::DeviceId;
use domain::registry::RegistrySnapshot;
use std::collections::BTreeSet;
use storage::{DeviceFilter, DeviceListRequest, Store, StoreError};

/// Devices a page of a scope's list holds: the most a store answers at once.
const PAGE: usize = 1000;

/// The registry records of every device `rules` watch and of every series
/// in `states`. Rooms are not read: no rule needs a room's record.
pub async fn watched<S: Store>(
    store: &S,
    rules: &[Rule],
    states: &States,
) -> Result<RegistrySnapshot, StoreError> {
    let mut snapshot = RegistrySnapshot::default();
    let mut named: BTreeSet<DeviceId> = states.0.keys().map(|(_, d)| d.clone()).collect();
    let mut listed = BTreeSet::new();
    for rule in rules {
        let filter = match &rule.scope {
            Scope::Device(d) => {
                named.insert(d.clone());
                continue;
            }
            Scope::Room(r) => DeviceFilter {
                room: Some(r.clone()),
                ..DeviceFilter::default()
            },
            Scope::Type(k) => DeviceFilter {
                kind: Some(*k),
                ..DeviceFilter::default()
            },
        };
        // Two rules of one scope read it once.
        if listed.insert(filter.canonical()) {
            all_of(store, filter, &mut snapshot).await?;
        }
    }
    for id in named {
        if snapshot.devices.contains_key(&id) {
            continue;
        }
        if let Some(record) = store.device(&id).await? {
            snapshot.devices.insert(id, record);
        }
    }
    Ok(snapshot)
}

/// Every device `filter` admits, page by page, into `snapshot`.
async fn all_of<S: Store>(
    store: &S,
    filter: DeviceFilter,
    snapshot: &mut RegistrySnapshot,
) -> Result<(), StoreError> {
    let mut request = DeviceListRequest {
        filter,
        after: None,
        limit: PAGE,
    };
    loop {
        let page = store.device_page(&request).await?;
        for record in page.items {
            snapshot.devices.insert(record.device_id.clone(), record);
        }
        match page.next {
            Some(next) => request.after = Some(next),
            None => return Ok(()),
        }
    }
}
