//! The table itself: whether it exists, and creating it as `template.yaml`
//! defines it (for `--create-table` and the tests).

use super::calls::Request;
use super::{attr, unavailable, DynamoStore};
use aws_sdk_dynamodb::error::DisplayErrorContext;
use std::time::Duration;
use storage::keys::{ALL_TIME_INDEX, DEVICE_Z_INDEX, ROOM_TIME_INDEX, ROOM_Z_INDEX};
use storage::StoreError;

impl DynamoStore {
    /// Whether the table exists (DescribeTable).
    pub async fn table_exists(&self) -> Result<bool, StoreError> {
        match self
            .client
            .describe_table()
            .table_name(&self.table)
            .retried(self)
            .await
        {
            Ok(_) => Ok(true),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_not_found_exception()) =>
            {
                Ok(false)
            }
            Err(err) => Err(unavailable(err)),
        }
    }

    /// Creates the table as `template.yaml` defines it: `pk`/`sk` strings, the
    /// `room-time` index (INCLUDE temperature, humidity), a NEW_AND_OLD_IMAGES
    /// stream, on-demand billing, TTL on `expires_at` (where the engine has TTL).
    pub async fn create_table(&self) -> Result<(), StoreError> {
        use aws_sdk_dynamodb::types::{
            AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
            Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
            TimeToLiveSpecification,
        };
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .expect("complete")
        };
        let string_attr = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("complete")
        };
        // Every index holds climate readings only; they project what a reading needs.
        let index = |name: &str, part: &str, sort: &str, extra: &[&str]| {
            let mut projection = Projection::builder()
                .projection_type(ProjectionType::Include)
                .non_key_attributes("temperature")
                .non_key_attributes("humidity")
                .non_key_attributes("expires_at");
            for a in extra {
                projection = projection.non_key_attributes(*a);
            }
            GlobalSecondaryIndex::builder()
                .index_name(name)
                .key_schema(key(part, KeyType::Hash))
                .key_schema(key(sort, KeyType::Range))
                .projection(projection.build())
                .build()
                .expect("complete")
        };
        let mut create = self
            .client
            .create_table()
            .table_name(&self.table)
            .attribute_definitions(string_attr(attr::PK))
            .attribute_definitions(string_attr(attr::SK))
            .key_schema(key(attr::PK, KeyType::Hash))
            .key_schema(key(attr::SK, KeyType::Range));
        if self.indexes.room_time || self.indexes.box_search {
            create = create.attribute_definitions(string_attr(attr::ROOM));
        }
        if self.indexes.room_time {
            create =
                create.global_secondary_indexes(index(ROOM_TIME_INDEX, attr::ROOM, attr::SK, &[]));
        }
        if self.indexes.box_search {
            create = create
                .attribute_definitions(string_attr(attr::Z))
                .global_secondary_indexes(index(ROOM_Z_INDEX, attr::ROOM, attr::Z, &[]))
                .global_secondary_indexes(index(DEVICE_Z_INDEX, attr::PK, attr::Z, &[attr::ROOM]));
        }
        if self.indexes.all_devices {
            create = create
                .attribute_definitions(string_attr(attr::SHARD))
                .attribute_definitions(string_attr(attr::ATS))
                .global_secondary_indexes(index(
                    ALL_TIME_INDEX,
                    attr::SHARD,
                    attr::ATS,
                    &[
                        "type",
                        "cumulative_kwh_p",
                        "cumulative_kwh_n",
                        "current_w",
                        attr::ROOM,
                    ],
                ));
        }
        create
            .billing_mode(BillingMode::PayPerRequest)
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::NewAndOldImages)
                    .build()
                    .expect("complete"),
            )
            .retried(self)
            .await
            .map_err(unavailable)?;
        for _ in 0..100 {
            let out = self
                .client
                .describe_table()
                .table_name(&self.table)
                .retried(self)
                .await
                .map_err(unavailable)?;
            let status = out.table().and_then(|t| t.table_status().cloned());
            if status == Some(aws_sdk_dynamodb::types::TableStatus::Active) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ttl = self
            .client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name("expires_at")
                    .enabled(true)
                    .build()
                    .expect("complete"),
            )
            .retried(self)
            .await;
        if let Err(err) = ttl {
            // dynalite has no TTL API; the table works without it.
            tracing::warn!(error = %DisplayErrorContext(&err), "TTL not enabled");
        }
        Ok(())
    }
}
