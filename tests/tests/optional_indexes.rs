//! The optional indexes (issue 16), in every combination of the template's
//! `BoxSearch` and `AllDevicesFeed`, on dynalite: the table has exactly the
//! enabled indexes, readings carry the keys of those only (and so enter no
//! other), the routes that need a disabled one answer a clear 404 naming the
//! setting, and every other route answers as before.

use integration_tests::{
    answer, api_event, app, client, climate, dynalite, handle, power, table_name, RawItems,
};
use serde_json::{json, Value};
use shared::api::RouteSet;
use shared::store::{DynamoStore, Indexes};
use std::collections::BTreeSet;

#[tokio::test]
async fn every_combination_of_the_optional_indexes() {
    for (box_search, all_devices) in integration_tests::INDEX_COMBINATIONS {
        let indexes = Indexes {
            room_time: true,
            box_search,
            all_devices,
        };
        let store =
            DynamoStore::new(client(&dynalite()), table_name("indexes")).with_indexes(indexes);
        store.create_table().await.unwrap();
        let described = client(&dynalite())
            .describe_table()
            .table_name(store.table())
            .send()
            .await
            .unwrap();
        let names: BTreeSet<&str> = described
            .table()
            .unwrap()
            .global_secondary_indexes()
            .iter()
            .filter_map(|g| g.index_name())
            .collect();
        let mut expected = BTreeSet::from(["room-time"]);
        if box_search {
            expected.extend(["room-z", "device-z"]);
        }
        if all_devices {
            expected.insert("all-time");
        }
        assert_eq!(names, expected, "{indexes:?}");

        let app = app(store.clone(), None, RouteSet::All).await;
        let body = json!([
            climate("s-bed", "bedroom", "2026-11-21T01:00:00Z", 21.5, 45.0),
            power("meter-1", "2026-11-21T01:00:00Z", 100.0, 2.0, 300.0),
        ])
        .to_string();
        let (status, _) =
            answer(&handle(&app, api_event("POST", "/readings", &[], Some(&body), &[])).await);
        assert_eq!(status, 200);

        // Each reading carries the keys of the enabled indexes only.
        for pk in ["s-bed", "meter-1"] {
            let item: Value = serde_json::to_value(
                store
                    .raw_item(pk, "TS#2026-11-21T01:00:00.000Z")
                    .await
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(
                item.get("shard").is_some(),
                all_devices,
                "{pk} {indexes:?}: {item}"
            );
            assert_eq!(item.get("ats").is_some(), all_devices, "{pk} {indexes:?}");
            let z_expected = box_search && pk == "s-bed";
            assert_eq!(item.get("z").is_some(), z_expected, "{pk} {indexes:?}");
        }

        let get = |path: &'static str, query: Vec<(&'static str, &'static str)>| {
            let app = &app;
            async move { answer(&handle(app, api_event("GET", path, &query, None, &[])).await) }
        };
        let range = vec![
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-21T02:00:00Z"),
        ];
        let (status, body) = get("/rooms/bedroom/search", range.clone()).await;
        if box_search {
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["readings"].as_array().unwrap().len(), 1);
        } else {
            assert_eq!(status, 404, "{body}");
            assert_eq!(body["error"]["code"], "index_disabled");
            assert!(body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("BoxSearch=enabled"));
        }
        let (status, body) = get("/devices/s-bed/search", range.clone()).await;
        assert_eq!(status, if box_search { 200 } else { 404 }, "{body}");
        let (status, body) = get("/readings", range.clone()).await;
        if all_devices {
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["readings"].as_array().unwrap().len(), 2);
        } else {
            assert_eq!(status, 404, "{body}");
            assert_eq!(body["error"]["code"], "index_disabled");
            assert!(body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("AllDevicesFeed=enabled"));
        }
        // The rest needs no optional index.
        let (status, body) = get("/rooms/bedroom/readings", range.clone()).await;
        assert_eq!(
            (status, body["readings"].as_array().map(Vec::len)),
            (200, Some(1))
        );
        let (status, body) = get("/devices/meter-1/readings", range.clone()).await;
        assert_eq!(
            (status, body["readings"].as_array().map(Vec::len)),
            (200, Some(1))
        );
        let (status, _) = get("/devices/s-bed/stats", range.clone()).await;
        assert_eq!(status, 200);
    }
}
