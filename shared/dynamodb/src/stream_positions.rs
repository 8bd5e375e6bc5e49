//! Where the mqtt function has read IoT Core's Kinesis stream to
//! (`store::StreamPositions`): an item a shard in `pk=STREAM#<stream>`,
//! `sk=<shard id>`, its position in `pos` (`after:<sequence number>`, or
//! `end`). The partition is no device's and the `sk` no reading's, so the
//! stream functions and `reindex` pass them by.

use super::calls;
use super::DynamoStore;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use storage::keys::stream_positions_pk;
use storage::{ShardPosition, StoreError, StreamPositions};

#[derive(Serialize, Deserialize)]
struct PositionItem {
    pk: String,
    sk: String,
    pos: String,
}

const ENDED: &str = "end";
const AFTER: &str = "after:";

impl StreamPositions for DynamoStore {
    async fn stream_positions(
        &self,
        stream: &str,
    ) -> Result<BTreeMap<String, ShardPosition>, StoreError> {
        calls::operation(&self.policy, async {
            let items: Vec<PositionItem> = self.partition(&stream_positions_pk(stream)).await?;
            items
                .into_iter()
                .map(|item| {
                    let position = match item.pos.strip_prefix(AFTER) {
                        Some(sequence) => ShardPosition::After(sequence.to_owned()),
                        None if item.pos == ENDED => ShardPosition::Ended,
                        None => {
                            return Err(StoreError::Corrupt(format!(
                                "shard {}: position {:?}",
                                item.sk, item.pos
                            )))
                        }
                    };
                    Ok((item.sk, position))
                })
                .collect()
        })
        .await
    }

    async fn save_stream_position(
        &self,
        stream: &str,
        shard: &str,
        position: &ShardPosition,
    ) -> Result<(), StoreError> {
        let pos = match position {
            ShardPosition::After(sequence) => format!("{AFTER}{sequence}"),
            ShardPosition::Ended => ENDED.to_owned(),
        };
        let item = PositionItem {
            pk: stream_positions_pk(stream),
            sk: shard.to_owned(),
            pos,
        };
        calls::operation(&self.policy, self.put_item_of(&item)).await
    }
}
