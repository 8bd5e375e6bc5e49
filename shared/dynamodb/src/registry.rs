//! The `DEVICE` and `ROOM` registry items on DynamoDB: the monotonic
//! conditional update that applies the domain's merge rule
//! (`domain::registry`) server-side, and the user-set attributes.

use super::calls::Request;
use super::item::SnapshotItem;
use super::{attr, is_condition_failed, metered_write, s, unavailable, DynamoStore};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity, ReturnValue};
use domain::model::{Name, Reading, RoomId, Timestamp};
use domain::registry::DeviceUpdate;
use storage::StoreError;

impl DynamoStore {
    /// The monotonic registry update shared by devices and rooms; `sets` gather
    /// members whatever the order of delivery.
    pub(super) async fn apply_registry_update(
        &self,
        update: RegistryWrite<'_>,
    ) -> Result<(), StoreError> {
        let last = update.latest.timestamp.to_string();
        let first = update.first_seen.to_string();
        let snapshot = serde_dynamo::to_attribute_value(SnapshotItem::from_reading(update.latest))
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        // `ADD #set0 :set0, #set1 :set1`: the sets grow whether or not the snapshot is newer.
        let add = (0..update.sets.len())
            .map(|i| format!("#set{i} :set{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let with_sets =
            |mut b: aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder| {
                for (i, (name, members)) in update.sets.iter().enumerate() {
                    b = b
                        .expression_attribute_names(format!("#set{i}"), *name)
                        .expression_attribute_values(
                            format!(":set{i}"),
                            AttributeValue::Ss(members.clone()),
                        );
                }
                b
            };

        let mut set = "SET #last_seen = :last, #latest = :snap, #first_seen = if_not_exists(#first_seen, :first)".to_owned();
        let mut main = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(update.pk))
            .key(attr::SK, s(update.sk))
            .expression_attribute_names("#last_seen", "last_seen")
            .expression_attribute_names("#latest", "latest")
            .expression_attribute_names("#first_seen", "first_seen")
            .expression_attribute_values(":last", s(&last))
            .expression_attribute_values(":snap", snapshot)
            .expression_attribute_values(":first", s(&first))
            // Newer, or as new and from the same or a greater device id (registry::newer_or_same).
            .condition_expression(
                "attribute_not_exists(#last_seen) OR #last_seen < :last \
                 OR (#last_seen = :last AND #latest.#device_id <= :device)",
            )
            .expression_attribute_names("#device_id", "device_id")
            .expression_attribute_values(":device", s(update.latest.device_id.as_str()))
            .return_values(ReturnValue::UpdatedOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if let Some(room) = update.room {
            set.push_str(", #in_room = :room");
            main = main
                .expression_attribute_names("#in_room", attr::DEVICE_ROOM)
                .expression_attribute_values(":room", s(room.as_str()));
        }
        if let Some(since) = update.presence_since {
            set.push_str(", #presence_since = if_not_exists(#presence_since, :presence_since)");
            main = main
                .expression_attribute_names("#presence_since", attr::PRESENCE_SINCE)
                .expression_attribute_values(":presence_since", s(&since.to_string()));
        }
        // An item from before `in_room` loses its `room`, and with it its
        // `room-time` index entry.
        let lower_first_seen = match with_sets(main)
            .expression_attribute_names("#legacy_room", attr::ROOM)
            .update_expression(format!("{set} REMOVE #legacy_room ADD {add}"))
            .retried(self)
            .await
        {
            // Newer than what is stored: done, unless this batch also holds an older first reading.
            Ok(out) => {
                metered_write(out.consumed_capacity());
                out.attributes()
                    .and_then(|a| a.get("first_seen"))
                    .and_then(|v| v.as_s().ok())
                    .is_some_and(|old| old.as_str() > first.as_str())
            }
            // Older than what is stored (out-of-order delivery): keep the newer
            // snapshot, still record the members and maybe an earlier first_seen.
            Err(err) if is_condition_failed(&err) => {
                // DynamoDB charges a failed condition a unit.
                storage::metering::add_write_units(1.0);
                let out = with_sets(
                    self.client
                        .update_item()
                        .table_name(&self.table)
                        .key(attr::PK, s(update.pk))
                        .key(attr::SK, s(update.sk)),
                )
                .update_expression(format!("ADD {add}"))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await
                .map_err(unavailable)?;
                metered_write(out.consumed_capacity());
                true
            }
            Err(err) => return Err(unavailable(err)),
        };
        if lower_first_seen {
            let res = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(attr::PK, s(update.pk))
                .key(attr::SK, s(update.sk))
                .update_expression("SET #first_seen = :first")
                .condition_expression("#first_seen > :first")
                .expression_attribute_names("#first_seen", "first_seen")
                .expression_attribute_values(":first", s(&first))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .retried(self)
                .await;
            match res {
                Ok(out) => {
                    metered_write(out.consumed_capacity());
                }
                Err(err) if is_condition_failed(&err) => {
                    storage::metering::add_write_units(1.0);
                }
                Err(err) => return Err(unavailable(err)),
            }
        }
        Ok(())
    }

    /// `SET`s or `REMOVE`s user-set attributes of a registry item.
    pub(super) async fn set_user_attributes(
        &self,
        pk: &str,
        sk: &str,
        name: Option<&Name>,
        room: Option<&RoomId>,
    ) -> Result<(), StoreError> {
        let mut set = Vec::new();
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(pk))
            .key(attr::SK, s(sk))
            .expression_attribute_names("#name", "name");
        if let Some(name) = name {
            set.push("#name = :name");
            update = update.expression_attribute_values(":name", s(name.as_str()));
        }
        if let Some(room) = room {
            set.push("#in_room = :room");
            update = update
                .expression_attribute_names("#in_room", attr::DEVICE_ROOM)
                .expression_attribute_values(":room", s(room.as_str()));
        }
        let mut expression = String::new();
        if !set.is_empty() {
            expression = format!("SET {}", set.join(", "));
        }
        let mut remove = Vec::new();
        if name.is_none() {
            remove.push("#name");
        }
        if room.is_some() {
            // Replaced by `in_room` (keys::attr::DEVICE_ROOM).
            remove.push("#legacy_room");
            update = update.expression_attribute_names("#legacy_room", attr::ROOM);
        }
        if !remove.is_empty() {
            expression.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        update
            .update_expression(expression.trim())
            .retried(self)
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}

pub(super) struct RegistryWrite<'a> {
    pub(super) pk: &'a str,
    pub(super) sk: &'a str,
    pub(super) first_seen: Timestamp,
    pub(super) latest: &'a Reading,
    /// Sets that gather members (`types` and `quantities` of a device, `devices` of a room).
    pub(super) sets: Vec<(&'static str, Vec<String>)>,
    pub(super) room: Option<&'a RoomId>,
    /// A ROOM item's: its presence is complete from this day on, unless it
    /// says an earlier one already.
    pub(super) presence_since: Option<Timestamp>,
}

/// The member sets a device update adds to: its `types` and its `quantities`.
pub(super) fn device_sets(update: &DeviceUpdate) -> Vec<(&'static str, Vec<String>)> {
    vec![
        (
            "types",
            update.types.iter().map(|t| t.as_str().to_owned()).collect(),
        ),
        (
            "quantities",
            update
                .quantities
                .iter()
                .map(|q| q.name().to_owned())
                .collect(),
        ),
    ]
}
