//! Every integration test, in one binary (issue 80's CI time): each file
//! of this folder is a module, as its own binary it was. One crate
//! instantiates the store's, the Router's and the SDK's generics once, and
//! is linked once, where 44 binaries did each (3 min 43 s of a build).
//! Run one file's tests by its name: `cargo test -p integration-tests
//! mqtt_stream::`.

mod alerts_cost;
mod alerts_notify;
mod alerts_replay;
mod alerts_store;
mod batch_blocks;
mod blocks_dynamodb;
mod code_shape;
mod contract_aggregates;
mod contract_all_devices;
mod contract_api;
mod contract_influxql;
mod contract_line_protocol;
mod contract_retention;
mod contract_search;
mod contract_store;
mod cost;
mod dashboard;
mod deadlines;
mod end_to_end_moto;
mod events_replay;
mod export;
mod faults;
mod faults_real_table;
mod fleet_lists;
mod fleet_size;
mod full_disk_embedded;
mod grafana_dashboard;
mod http_layers;
mod influxql_differential;
mod layers;
mod limits;
mod mqtt_rule;
mod mqtt_stream;
mod openapi;
mod optional_indexes;
mod properties;
mod read_units;
mod rollups;
mod room_without_index;
mod route_table;
mod secrets_in_logs;
mod ssm_token;
mod template;
mod upgrade_embedded;
