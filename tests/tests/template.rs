//! `template.yaml` agrees with the code: the table it declares is the table
//! `DynamoStore::create_table` makes (checked on moto, which keeps stream and
//! TTL settings), and its HTTP routes are the router's routes.

use integration_tests::handle;
use integration_tests::{answer, api_event, app, client, dynalite, fresh_store, moto, template};
use serde_yaml_ng::Value as Yaml;
use shared::api::{RouteSet, ROUTES};
use std::collections::BTreeSet;

fn s(v: &Yaml) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v:?}"))
        .to_owned()
}

#[tokio::test]
async fn the_template_table_is_the_table_the_code_creates() {
    for room_time in [false, true] {
        for (box_search, all_devices) in integration_tests::INDEX_COMBINATIONS {
            let indexes = shared::store::Indexes {
                room_time,
                box_search,
                all_devices,
            };
            let t = integration_tests::resolve_template(
                &template(),
                &integration_tests::template_conditions(indexes),
            )
            .unwrap();
            same_table(&t, indexes).await;
        }
    }
}

async fn same_table(t: &Yaml, indexes: shared::store::Indexes) {
    let props = &t["Resources"]["ReadingsTable"]["Properties"];
    let store =
        shared::store::DynamoStore::new(client(&moto()), integration_tests::table_name("template"))
            .with_indexes(indexes);
    store.create_table().await.unwrap();
    let ddb = client(&moto());
    let described = ddb
        .describe_table()
        .table_name(store.table())
        .send()
        .await
        .unwrap();
    let table = described.table().unwrap();

    let keys = |schema: &[aws_sdk_dynamodb::types::KeySchemaElement]| -> Vec<(String, String)> {
        schema
            .iter()
            .map(|k| {
                (
                    k.attribute_name().to_owned(),
                    k.key_type().as_str().to_owned(),
                )
            })
            .collect()
    };
    let yaml_keys = |schema: &Yaml| -> Vec<(String, String)> {
        schema
            .as_sequence()
            .unwrap()
            .iter()
            .map(|k| (s(&k["AttributeName"]), s(&k["KeyType"])))
            .collect()
    };
    assert_eq!(keys(table.key_schema()), yaml_keys(&props["KeySchema"]));

    let attrs: BTreeSet<(String, String)> = table
        .attribute_definitions()
        .iter()
        .map(|a| {
            (
                a.attribute_name().to_owned(),
                a.attribute_type().as_str().to_owned(),
            )
        })
        .collect();
    let yaml_attrs: BTreeSet<(String, String)> = props["AttributeDefinitions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| (s(&a["AttributeName"]), s(&a["AttributeType"])))
        .collect();
    assert_eq!(attrs, yaml_attrs);

    let yaml_gsis = props["GlobalSecondaryIndexes"].as_sequence().unwrap();
    assert_eq!(
        table.global_secondary_indexes().len(),
        yaml_gsis.len(),
        "{indexes:?}"
    );
    // The optional indexes, as the parameters say.
    assert_eq!(
        yaml_gsis.len(),
        usize::from(indexes.room_time)
            + 2 * usize::from(indexes.box_search)
            + usize::from(indexes.all_devices)
    );
    for yaml_gsi in yaml_gsis {
        let gsi = table
            .global_secondary_indexes()
            .iter()
            .find(|g| g.index_name() == Some(s(&yaml_gsi["IndexName"]).as_str()))
            .unwrap_or_else(|| panic!("the code creates no index {:?}", yaml_gsi["IndexName"]));
        assert_eq!(keys(gsi.key_schema()), yaml_keys(&yaml_gsi["KeySchema"]));
        let projection = gsi.projection().unwrap();
        assert_eq!(
            projection.projection_type().unwrap().as_str(),
            s(&yaml_gsi["Projection"]["ProjectionType"])
        );
        let include: Vec<String> = yaml_gsi["Projection"]["NonKeyAttributes"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(s)
            .collect();
        assert_eq!(projection.non_key_attributes(), include.as_slice());
    }

    let stream = table.stream_specification().unwrap();
    assert!(stream.stream_enabled());
    assert_eq!(
        stream.stream_view_type().unwrap().as_str(),
        s(&props["StreamSpecification"]["StreamViewType"])
    );
    assert_eq!(
        table
            .billing_mode_summary()
            .and_then(|b| b.billing_mode())
            .map(|b| b.as_str()),
        Some(s(&props["BillingMode"]).as_str())
    );
    let ttl = ddb
        .describe_time_to_live()
        .table_name(store.table())
        .send()
        .await
        .unwrap();
    let ttl = ttl.time_to_live_description().unwrap();
    assert_eq!(
        ttl.attribute_name().unwrap(),
        s(&props["TimeToLiveSpecification"]["AttributeName"])
    );
}

#[tokio::test]
async fn the_template_routes_are_the_router_routes() {
    let t = template();
    let mut declared = BTreeSet::new();
    // (function, method, path) of each route the template sends to a function.
    let mut routed = BTreeSet::new();
    for (name, resource) in t["Resources"].as_mapping().unwrap() {
        if let Some(events) = resource["Properties"]["Events"].as_mapping() {
            for (_, e) in events {
                if e["Type"].as_str() == Some("HttpApi") {
                    let route = (s(&e["Properties"]["Method"]), s(&e["Properties"]["Path"]));
                    routed.insert((s(name), route.0.clone(), route.1.clone()));
                    declared.insert(route);
                }
            }
        }
    }
    let served: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(declared, served);

    // And the router serves each of them: no 405, no unknown-route 404.
    let all = app(
        fresh_store(&dynalite(), "routes").await,
        None,
        RouteSet::All,
    )
    .await;
    for (method, path) in ROUTES {
        let path = path.replace("{id}", "x1");
        let (status, body) =
            answer(&handle(&all, api_event(method, &path, &[], Some("[]"), &[])).await);
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert_ne!(status, 405, "{method} {path}: {body}");
        assert!(
            !(status == 404 && message.starts_with("no route")),
            "{method} {path}: {body}"
        );
    }

    // Each HTTP function serves exactly the routes the template sends it.
    let store = fresh_store(&dynalite(), "routes-by-function").await;
    for (function, set) in [
        ("IngestFunction", RouteSet::Ingest),
        ("QueryFunction", RouteSet::Query),
        ("DashboardFunction", RouteSet::Dashboard),
    ] {
        let served_by = app(store.clone(), None, set).await;
        for (method, path) in ROUTES {
            let sent_here =
                routed.contains(&(function.to_owned(), method.to_owned(), path.to_owned()));
            let path = path.replace("{id}", "x1");
            let (status, body) =
                answer(&handle(&served_by, api_event(method, &path, &[], Some("[]"), &[])).await);
            let message = body["error"]["message"].as_str().unwrap_or("");
            let served = !(status == 404 && message.starts_with("no route"));
            assert_eq!(served, sent_here, "{function}: {method} {path}: {body}");
        }
    }
}

/// A statement as `(effect, actions, resources, condition)`, with CloudFormation
/// tags written out (`!GetAtt ReadingsTable.Arn`) and lists sorted.
fn statements(t: &Yaml, function: &str) -> Vec<(String, Vec<String>, Vec<String>, String)> {
    fn text(v: &Yaml) -> String {
        match v {
            Yaml::String(s) => s.clone(),
            Yaml::Tagged(t) => format!("{} {}", t.tag, text(&t.value)),
            other => serde_yaml_ng::to_string(other).unwrap().trim().to_owned(),
        }
    }
    fn list(v: &Yaml) -> Vec<String> {
        let mut out: Vec<String> = match v.as_sequence() {
            Some(items) => items.iter().map(text).collect(),
            None => vec![text(v)],
        };
        out.sort();
        out
    }
    let policies = t["Resources"][function]["Properties"]["Policies"]
        .as_sequence()
        .expect("inline policies only");
    let mut out = Vec::new();
    for policy in policies {
        let stmts = policy["Statement"].as_sequence().unwrap_or_else(|| {
            panic!("{function}: only inline Statement policies, no policy templates")
        });
        for s in stmts {
            // `!If [HasToken, statement, !Ref AWS::NoValue]`: the statement as deployed with a token.
            let s = match s {
                Yaml::Tagged(t) if t.tag == "!If" => &t.value[1],
                s => s,
            };
            let condition = if s["Condition"].is_null() {
                String::new()
            } else {
                serde_json::to_string(
                    &serde_yaml_ng::from_value::<serde_json::Value>(s["Condition"].clone())
                        .unwrap(),
                )
                .unwrap()
            };
            out.push((
                text(&s["Effect"]),
                list(&s["Action"]),
                list(&s["Resource"]),
                condition,
            ));
        }
    }
    out.sort();
    out
}

fn stmt(
    actions: &[&str],
    resources: &[&str],
    condition: &str,
) -> (String, Vec<String>, Vec<String>, String) {
    let mut a: Vec<String> = actions.iter().map(|s| s.to_string()).collect();
    a.sort();
    let mut r: Vec<String> = resources.iter().map(|s| s.to_string()).collect();
    r.sort();
    ("Allow".into(), a, r, condition.into())
}

#[test]
fn each_function_has_exactly_its_least_privileges() {
    let t = template();
    let table = "!GetAtt ReadingsTable.Arn";
    let registry_only =
        r#"{"ForAllValues:StringEquals":{"dynamodb:LeadingKeys":["DEVICE","ROOM"]}}"#;
    let readings_only =
        r#"{"ForAllValues:StringNotEquals":{"dynamodb:LeadingKeys":["DEVICE","ROOM"]}}"#;
    let token = stmt(
        &["ssm:GetParameter"],
        &["!Sub arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${IngestTokenParameter}"],
        "",
    );
    // BatchBlocks (on by default): a batch's hours as blocks and rollups, as
    // the rollups function writes them, and the presence items it then keeps.
    let batch_blocks = [
        stmt(
            &[
                "dynamodb:Query",
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "dynamodb:DeleteItem",
            ],
            &[table],
            readings_only,
        ),
        stmt(
            &["dynamodb:PutItem"],
            &[table],
            r#"{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["ROOM#*"]}}"#,
        ),
    ];
    let mut expected = vec![
        token.clone(),
        batch_blocks[0].clone(),
        batch_blocks[1].clone(),
        // Writes readings, never registry items; reads and names the registry only.
        stmt(&["dynamodb:BatchWriteItem"], &[table], readings_only),
        stmt(
            &["dynamodb:Query", "dynamodb:GetItem", "dynamodb:UpdateItem"],
            &[table],
            registry_only,
        ),
        // Alert rules only (PUT/DELETE /alerts/rules/{name}).
        stmt(
            &["dynamodb:PutItem", "dynamodb:DeleteItem"],
            &[table],
            r#"{"ForAllValues:StringEquals":{"dynamodb:LeadingKeys":["ALERT#RULE"]}}"#,
        ),
        // What waits for the alert receivers, read by GET /health.
        stmt(
            &["dynamodb:Query"],
            &[table],
            r#"{"ForAllValues:StringEquals":{"dynamodb:LeadingKeys":["ALERT#DELIVERY"]}}"#,
        ),
    ];
    expected.sort();
    assert_eq!(statements(&t, "IngestFunction"), expected, "ingest");

    // Only reads, of the table and its index (and the token).
    let mut expected = vec![
        token,
        stmt(
            &["dynamodb:Query", "dynamodb:GetItem"],
            &[
                table,
                "!Sub ${ReadingsTable.Arn}/index/room-time",
                "!Sub ${ReadingsTable.Arn}/index/room-z",
                "!Sub ${ReadingsTable.Arn}/index/device-z",
                "!Sub ${ReadingsTable.Arn}/index/all-time",
            ],
            "",
        ),
    ];
    expected.sort();
    assert_eq!(statements(&t, "QueryFunction"), expected, "query");
    // The dashboard reads what the query function reads.
    assert_eq!(statements(&t, "DashboardFunction"), expected, "dashboard");

    let mut expected = vec![
        stmt(&["dynamodb:UpdateItem"], &[table], registry_only),
        // Presence items only (`ROOM#<room>`; ids cannot hold `#`).
        stmt(
            &["dynamodb:PutItem"],
            &[table],
            r#"{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["ROOM#*"]}}"#,
        ),
        stmt(
            &[
                "dynamodb:DescribeStream",
                "dynamodb:GetRecords",
                "dynamodb:GetShardIterator",
            ],
            &["!GetAtt ReadingsTable.StreamArn"],
            "",
        ),
        stmt(&["dynamodb:ListStreams"], &["*"], ""),
        stmt(&["sqs:SendMessage"], &["!GetAtt RegistryFailures.Arn"], ""),
    ];
    expected.sort();
    assert_eq!(statements(&t, "RegistryFunction"), expected, "registry");

    // Reads readings and rollups, writes rollups: device partitions only, no index.
    let mut expected = vec![
        stmt(
            &[
                "dynamodb:Query",
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "dynamodb:DeleteItem",
            ],
            &[table],
            readings_only,
        ),
        stmt(
            &[
                "dynamodb:DescribeStream",
                "dynamodb:GetRecords",
                "dynamodb:GetShardIterator",
            ],
            &["!GetAtt ReadingsTable.StreamArn"],
            "",
        ),
        stmt(&["dynamodb:ListStreams"], &["*"], ""),
        stmt(&["sqs:SendMessage"], &["!GetAtt RollupFailures.Arn"], ""),
    ];
    expected.sort();
    assert_eq!(statements(&t, "RollupsFunction"), expected, "rollups");

    // Writes readings, reads the registry, keeps what failed (issue 26);
    // with BatchBlocks, also blocks, rollups and the registry's updates.
    let mut expected = vec![
        batch_blocks[0].clone(),
        batch_blocks[1].clone(),
        stmt(&["dynamodb:UpdateItem"], &[table], registry_only),
        stmt(&["dynamodb:BatchWriteItem"], &[table], readings_only),
        stmt(
            &["dynamodb:Query", "dynamodb:GetItem"],
            &[table],
            registry_only,
        ),
        stmt(&["sqs:SendMessage"], &["!GetAtt MqttFailures.Arn"], ""),
    ];
    expected.sort();
    assert_eq!(statements(&t, "MqttFunction"), expected, "mqtt");
    // Only the rule may invoke it; the rule's error role may only send to the queue.
    let permission = &t["Resources"]["MqttRulePermission"]["Properties"];
    assert_eq!(s(&permission["Principal"]), "iot.amazonaws.com");
    let source = format!("{:?}", permission["SourceArn"]);
    assert!(
        source.contains("MqttRule.Arn"),
        "scoped to the rule: {source}"
    );

    // The batching path's reader (docs/batches.md): its stream's shards and
    // records, readings as items, blocks and rollups (its stream positions,
    // `STREAM#<stream>`, among them: ids cannot hold `#`), the registry;
    // no queue (a failed run is read again by the next).
    let mut expected = vec![
        stmt(
            &[
                "kinesis:ListShards",
                "kinesis:GetShardIterator",
                "kinesis:GetRecords",
            ],
            &["!GetAtt MqttStream.Arn"],
            "",
        ),
        stmt(&["dynamodb:BatchWriteItem"], &[table], readings_only),
        batch_blocks[0].clone(),
        stmt(
            &["dynamodb:Query", "dynamodb:GetItem", "dynamodb:UpdateItem"],
            &[table],
            registry_only,
        ),
    ];
    expected.sort();
    assert_eq!(
        statements(&t, "MqttStreamFunction"),
        expected,
        "mqtt-stream"
    );
    // Its rule's role may put records on the stream alone.
    let role = &t["Resources"]["MqttIngestRuleRole"]["Properties"]["Policies"][0]["PolicyDocument"]
        ["Statement"];
    assert_eq!(role.as_sequence().unwrap().len(), 1);
    assert_eq!(s(&role[0]["Action"]), "kinesis:PutRecord");
    assert!(format!("{:?}", role[0]["Resource"]).contains("MqttStream.Arn"));

    // Alerts: reads the table, writes series states and waiting
    // notifications only, publishes to its topic, keeps failed runs.
    let mut expected = vec![
        stmt(&["dynamodb:Query", "dynamodb:GetItem"], &[table], ""),
        stmt(
            &["dynamodb:PutItem", "dynamodb:DeleteItem"],
            &[table],
            r#"{"ForAllValues:StringEquals":{"dynamodb:LeadingKeys":["ALERT#STATE","ALERT#DELIVERY"]}}"#,
        ),
        stmt(&["sns:Publish"], &["!Ref AlertTopic"], ""),
        stmt(&["sqs:SendMessage"], &["!GetAtt AlertFailures.Arn"], ""),
    ];
    expected.sort();
    assert_eq!(statements(&t, "AlertsFunction"), expected, "alerts");
    let alerts = &t["Resources"]["AlertsFunction"]["Properties"];
    assert_eq!(s(&alerts["Events"]["Every"]["Type"]), "Schedule");
    assert_eq!(
        alerts["Timeout"].as_u64(),
        Some(50),
        "done within its minute"
    );

    // No wildcard action anywhere, and no function without a role of its own.
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    assert!(
        !text.contains("dynamodb:*")
            && !text.contains("Action: \"*\"")
            && !text.contains("Action: '*'")
    );
    for (name, resource) in t["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() == Some("AWS::Serverless::Function") {
            assert!(
                resource["Properties"]["Policies"].is_sequence(),
                "{name:?} has its own policies"
            );
        }
    }
}

/// The dashboard function's price settings come from the template's
/// parameters, and their defaults set no price (the dashboard shows no
/// cost); a price a deployer gives is one `Config` takes. No other function
/// shows a cost.
#[test]
fn the_price_parameters_reach_the_dashboard_function_and_default_to_none() {
    use serde_yaml_ng::value::Tag;
    let t = template();
    let env = &t["Resources"]["DashboardFunction"]["Properties"]["Environment"]["Variables"];
    for other in ["IngestFunction", "QueryFunction"] {
        let vars = &t["Resources"][other]["Properties"]["Environment"]["Variables"];
        assert!(vars["PRICE_PER_KWH"].is_null(), "{other}");
    }
    let parameter_of = |name: &str| match &env[name] {
        Yaml::Tagged(tagged) if tagged.tag == Tag::new("Ref") => s(&tagged.value),
        other => panic!("{name}: {other:?}"),
    };
    let default_of = |name: &str| -> String {
        let p = &t["Parameters"][parameter_of(name).as_str()]["Default"];
        p.as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{p:?}"))
    };
    const PRICES: [&str; 6] = [
        "PRICE_PER_KWH",
        "PRICE_PER_KWH_T1",
        "PRICE_PER_KWH_T2",
        "PRICE_PER_M3_GAS",
        "PRICE_PER_M3_WATER",
        "CURRENCY",
    ];
    // The template's defaults, but for `given`.
    let config = |given: &[(&str, &str)]| {
        let values: Vec<(String, String)> = PRICES
            .iter()
            .map(|name| {
                let value = given
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or_else(|| default_of(name), |(_, v)| (*v).to_owned());
                ((*name).to_owned(), value)
            })
            .collect();
        shared::config::Config::from_lookup(move |k: &str| match k {
            "TABLE_NAME" => Some("t".to_owned()),
            k => values.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
        })
        .unwrap()
    };
    assert_eq!(config(&[]).tariff, None);
    let tariff = config(&[("PRICE_PER_KWH", "0.31")]).tariff.unwrap();
    assert_eq!((tariff.per_kwh(), tariff.currency()), (Some(0.31), "EUR"));
    // Gas and water prices of their own, and each tariff's (issue 79).
    let tariff = config(&[("PRICE_PER_M3_GAS", "1.20"), ("PRICE_PER_M3_WATER", "4.5")])
        .tariff
        .unwrap();
    use shared::domain::aggregate::counter::Counter;
    assert_eq!(tariff.per_kwh(), None);
    assert_eq!(tariff.price_of(Counter::Gas), Some(1.2));
    assert_eq!(tariff.price_of(Counter::Water), Some(4.5));
    let tariff = config(&[
        ("PRICE_PER_KWH", "0.30"),
        ("PRICE_PER_KWH_T1", "0.22"),
        ("PRICE_PER_KWH_T2", "0.41"),
    ])
    .tariff
    .unwrap();
    assert_eq!(tariff.price_of(Counter::BoughtT1), Some(0.22));
    assert_eq!(tariff.price_of(Counter::BoughtT2), Some(0.41));
    assert_eq!(tariff.price_of(Counter::Bought), Some(0.30));
}

/// The code's defaults are the template's: a function started with
/// `TABLE_NAME` alone is configured as one given every parameter's default
/// through the template's environment (and `ingester-local serve` as that,
/// a unit test of `local/src/main.rs`).
#[test]
fn the_code_s_defaults_are_the_template_s() {
    use serde_yaml_ng::value::Tag;
    let t = template();
    let mut variables: Vec<(String, String)> = Vec::new();
    let mut environments = vec![&t["Globals"]["Function"]["Environment"]["Variables"]];
    if let Some(resources) = t["Resources"].as_mapping() {
        for resource in resources.values() {
            environments.push(&resource["Properties"]["Environment"]["Variables"]);
        }
    }
    for env in environments {
        let Some(env) = env.as_mapping() else {
            continue;
        };
        for (name, value) in env {
            let Yaml::Tagged(tagged) = value else {
                continue;
            };
            if tagged.tag != Tag::new("Ref") {
                continue;
            }
            let parameter = &t["Parameters"][s(&tagged.value).as_str()];
            let Some(default) = parameter.get("Default") else {
                continue;
            };
            let default = match default {
                Yaml::String(text) => text.clone(),
                other => serde_yaml_ng::to_string(other).unwrap().trim().to_owned(),
            };
            variables.push((s(name), default));
        }
    }
    let names: BTreeSet<&str> = variables.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "RAW_READING_DAYS",
        "ROOM_INDEX",
        "BOX_SEARCH",
        "ALL_DEVICES_FEED",
        "RETENTION_DAYS",
        "ALL_DEVICES_SHARDS",
        "REGISTRY_LATEST_SECONDS",
        "REGISTRY_CACHE_TTL_SECONDS",
    ] {
        assert!(
            names.contains(expected),
            "{expected} is not set from a parameter"
        );
    }
    let with_defaults = shared::config::Config::from_lookup(|k| {
        if k == "TABLE_NAME" {
            return Some("t".into());
        }
        variables
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    })
    .unwrap();
    let alone =
        shared::config::Config::from_lookup(|k| (k == "TABLE_NAME").then(|| "t".into())).unwrap();
    assert_eq!(format!("{alone:?}"), format!("{with_defaults:?}"));
    // And what that is, so that neither side drifts unseen.
    assert_eq!(alone.indexes, shared::config::DEFAULT_INDEXES);
    assert!(!alone.indexes.room_time && !alone.indexes.box_search && !alone.indexes.all_devices);
    assert_eq!(alone.raw_window, shared::store::Retention::days(35));
}

/// The table can be restored to any second of its recovery period (35 days
/// unless the deployer shortens it), DynamoDB refuses to delete it unless
/// told to, and the stack keeps it when the stack goes (docs/backup.md).
#[test]
fn the_table_is_recoverable_and_protected_from_deletion() {
    use serde_yaml_ng::value::Tag;
    let t = template();
    let table = &t["Resources"]["ReadingsTable"];
    assert_eq!(s(&table["DeletionPolicy"]), "Retain");
    assert_eq!(s(&table["UpdateReplacePolicy"]), "Retain");
    let pitr = &table["Properties"]["PointInTimeRecoverySpecification"];
    assert_eq!(pitr["PointInTimeRecoveryEnabled"], Yaml::Bool(true));
    let period = match &pitr["RecoveryPeriodInDays"] {
        Yaml::Tagged(tagged) if tagged.tag == Tag::new("Ref") => s(&tagged.value),
        other => panic!("RecoveryPeriodInDays: {other:?}"),
    };
    let parameter = &t["Parameters"][period.as_str()];
    assert_eq!(parameter["Default"].as_u64(), Some(35));
    assert_eq!(parameter["MaxValue"].as_u64(), Some(35));
    assert_eq!(parameter["MinValue"].as_u64(), Some(1));
    // Deletion protection: on by default, through a condition on its parameter.
    let protection = &t["Parameters"]["TableDeletionProtection"];
    assert_eq!(s(&protection["Default"]), "enabled");
    let property = format!("{:?}", table["Properties"]["DeletionProtectionEnabled"]);
    assert!(property.contains("HasDeletionProtection"), "{property}");
    let condition = format!("{:?}", t["Conditions"]["HasDeletionProtection"]);
    assert!(
        condition.contains("TableDeletionProtection") && condition.contains("enabled"),
        "{condition}"
    );
}

/// Provisioned capacity as an option (issue 78, docs/cost.md): on demand by
/// default; with `TableCapacity=provisioned` the table is billed by the
/// capacity it buys, from the minimum parameters, and auto scaling tracks
/// 70 % utilisation of writes and of reads up to the maximum; a rule keeps
/// the optional indexes off (their capacity would not scale); the table's
/// throttles raise alarms either way.
#[test]
fn provisioned_capacity_is_an_option_that_scales_with_the_traffic() {
    let t = template();
    assert_eq!(s(&t["Parameters"]["TableCapacity"]["Default"]), "on-demand");
    let decided = |provisioned: bool| {
        let mut conditions = integration_tests::template_conditions(shared::store::Indexes {
            room_time: false,
            box_search: false,
            all_devices: false,
        });
        for (name, on) in conditions.iter_mut() {
            if *name == "IsProvisioned" {
                *on = provisioned;
            }
        }
        integration_tests::resolve_template(&t, &conditions).unwrap()
    };
    let on_demand = decided(false);
    let table = &on_demand["Resources"]["ReadingsTable"]["Properties"];
    assert_eq!(s(&table["BillingMode"]), "PAY_PER_REQUEST");
    assert!(table.get("ProvisionedThroughput").is_none());
    let provisioned = decided(true);
    let table = &provisioned["Resources"]["ReadingsTable"]["Properties"];
    assert_eq!(s(&table["BillingMode"]), "PROVISIONED");
    let throughput = format!("{:?}", table["ProvisionedThroughput"]);
    assert!(
        throughput.contains("ProvisionedReadUnits") && throughput.contains("ProvisionedWriteUnits"),
        "{throughput}"
    );
    let condition = format!("{:?}", t["Conditions"]["IsProvisioned"]);
    assert!(condition.contains("TableCapacity") && condition.contains("provisioned"));
    // A scalable target and a target-tracking policy for each dimension.
    let resources = t["Resources"].as_mapping().unwrap();
    for (dimension, metric, min, max) in [
        (
            "WriteCapacityUnits",
            "DynamoDBWriteCapacityUtilization",
            "ProvisionedWriteUnits",
            "ProvisionedWriteUnitsMax",
        ),
        (
            "ReadCapacityUnits",
            "DynamoDBReadCapacityUtilization",
            "ProvisionedReadUnits",
            "ProvisionedReadUnitsMax",
        ),
    ] {
        let (name, target) = resources
            .iter()
            .find(|(_, r)| {
                r["Type"].as_str() == Some("AWS::ApplicationAutoScaling::ScalableTarget")
                    && r["Properties"]["ScalableDimension"].as_str()
                        == Some(&format!("dynamodb:table:{dimension}"))
            })
            .unwrap_or_else(|| panic!("no scalable target for {dimension}"));
        assert_eq!(s(&target["Condition"]), "IsProvisioned");
        let p = format!("{:?}", target["Properties"]);
        assert!(
            p.contains("ReadingsTable") && p.contains(min) && p.contains(max),
            "{p}"
        );
        let name = s(name);
        let policy = resources
            .values()
            .find(|r| {
                r["Type"].as_str() == Some("AWS::ApplicationAutoScaling::ScalingPolicy")
                    && format!("{:?}", r["Properties"]["ScalingTargetId"]).contains(&name)
            })
            .unwrap_or_else(|| panic!("no scaling policy for {name}"));
        assert_eq!(s(&policy["Condition"]), "IsProvisioned");
        let tracking = &policy["Properties"]["TargetTrackingScalingPolicyConfiguration"];
        assert_eq!(tracking["TargetValue"].as_u64(), Some(70));
        assert_eq!(
            s(&tracking["PredefinedMetricSpecification"]["PredefinedMetricType"]),
            metric
        );
    }
    // Provisioned only without the optional indexes.
    let rule = format!("{:?}", t["Rules"]["ProvisionedWithoutIndexes"]);
    for index in ["RoomIndex", "BoxSearch", "AllDevicesFeed", "TableCapacity"] {
        assert!(
            rule.contains(index),
            "the rule does not name {index}: {rule}"
        );
    }
    // Throttled reads and writes of the table raise alarms.
    for metric in ["WriteThrottleEvents", "ReadThrottleEvents"] {
        assert!(
            resources
                .values()
                .any(|r| r["Type"].as_str() == Some("AWS::CloudWatch::Alarm")
                    && r["Properties"]["MetricName"].as_str() == Some(metric)
                    && format!("{:?}", r["Properties"]["Dimensions"]).contains("ReadingsTable")),
            "no alarm on {metric}"
        );
    }
}

/// Both stream functions are invoked for reading items written or
/// rewritten alone (issue 78): the items they write themselves (hours,
/// days, markers, `DEVICE`, `ROOM`, presence) and TTL's deletions are
/// filtered out before Lambda, where the handlers would only ignore them.
/// The filter's prefix is the reading key's, and each stream source has it.
#[test]
fn the_stream_functions_see_reading_items_alone() {
    let t = template();
    let mut sources = 0;
    for (name, resource) in t["Resources"].as_mapping().unwrap() {
        let Some(events) = resource["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for event in events
            .values()
            .filter(|e| e["Type"].as_str() == Some("DynamoDB"))
        {
            sources += 1;
            let filters = event["Properties"]["FilterCriteria"]["Filters"]
                .as_sequence()
                .unwrap_or_else(|| panic!("{name:?}: no FilterCriteria"));
            assert_eq!(filters.len(), 1, "{name:?}");
            let pattern: serde_json::Value =
                serde_json::from_str(filters[0]["Pattern"].as_str().unwrap()).unwrap();
            assert_eq!(
                pattern["eventName"],
                serde_json::json!(["INSERT", "MODIFY"]),
                "{name:?}"
            );
            assert_eq!(
                pattern["dynamodb"]["Keys"]["sk"]["S"][0]["prefix"].as_str(),
                Some(shared::keys::READING_PREFIX),
                "{name:?}"
            );
        }
    }
    assert_eq!(sources, 2, "the registry and rollups functions");
}

/// The stack tells its operators when something breaks and keeps logs for a
/// while, not forever (issue 43, docs/operations.md): every function has a
/// log group with the `LogRetentionDays` retention (30 days by default); an
/// alarm watches every failure queue, every function's errors and
/// throttles, the stream functions' iterator age, the table's throttled
/// reads and writes and the API's 5xx rate; each alarm tells the stack's
/// topic, which an e-mail may subscribe to.
#[test]
fn the_stack_watches_itself_and_its_logs_expire() {
    let t = template();
    let resources = t["Resources"].as_mapping().unwrap();
    let of_type = |ty: &str| -> Vec<String> {
        resources
            .iter()
            .filter(|(_, r)| r["Type"].as_str() == Some(ty))
            .map(|(n, _)| s(n))
            .collect()
    };
    let functions = of_type("AWS::Serverless::Function");
    assert_eq!(functions.len(), 8, "{functions:?}");
    let retention = &t["Parameters"]["LogRetentionDays"];
    assert_eq!(retention["Default"].as_u64(), Some(30));
    let groups = of_type("AWS::Logs::LogGroup");
    for f in &functions {
        let group = groups
            .iter()
            .map(|g| &t["Resources"][g.as_str()]["Properties"])
            .find(|p| format!("{:?}", p["LogGroupName"]).contains(&format!("/aws/lambda/${{{f}}}")))
            .unwrap_or_else(|| panic!("{f} has no log group"));
        assert!(format!("{:?}", group["RetentionInDays"]).contains("LogRetentionDays"));
    }

    // (namespace, metric, what it watches) of every alarm.
    let alarms: Vec<(String, String, String)> = of_type("AWS::CloudWatch::Alarm")
        .iter()
        .map(|a| {
            let p = &t["Resources"][a.as_str()]["Properties"];
            assert_eq!(
                format!("{:?}", p["AlarmActions"]),
                format!("{:?}", p["OKActions"]),
                "{a}"
            );
            assert!(
                format!("{:?}", p["AlarmActions"]).contains("OpsTopic"),
                "{a}"
            );
            let (ns, metric, dims) = if p["Metrics"].is_sequence() {
                let m = &p["Metrics"][0]["MetricStat"]["Metric"];
                (
                    s(&m["Namespace"]),
                    s(&m["MetricName"]),
                    format!("{:?}", m["Dimensions"]),
                )
            } else {
                (
                    s(&p["Namespace"]),
                    s(&p["MetricName"]),
                    format!("{:?}", p["Dimensions"]),
                )
            };
            (ns, metric, dims)
        })
        .collect();
    let watched = |ns: &str, metric: &str, what: &str| {
        alarms
            .iter()
            .any(|(n, m, d)| n == ns && m == metric && d.contains(what))
    };
    for q in of_type("AWS::SQS::Queue") {
        assert!(
            watched(
                "AWS/SQS",
                "ApproximateNumberOfMessagesVisible",
                &format!("{q}.QueueName")
            ),
            "no alarm on {q}"
        );
    }
    for f in &functions {
        for metric in ["Errors", "Throttles"] {
            assert!(watched("AWS/Lambda", metric, f), "no {metric} alarm on {f}");
        }
    }
    for f in ["RegistryFunction", "RollupsFunction"] {
        assert!(
            watched("AWS/Lambda", "IteratorAge", f),
            "no iterator age alarm on {f}"
        );
    }
    // The batching path's stream: its records waiting too long.
    assert!(watched(
        "AWS/Kinesis",
        "GetRecords.IteratorAgeMilliseconds",
        "MqttStream"
    ));
    for metric in ["ReadThrottleEvents", "WriteThrottleEvents"] {
        assert!(watched("AWS/DynamoDB", metric, "ReadingsTable"), "{metric}");
    }
    assert!(watched("AWS/ApiGateway", "5xx", "HttpApi"));

    // The topic, an e-mail subscription only when an address is given, its ARN an output.
    assert_eq!(s(&t["Resources"]["OpsTopic"]["Type"]), "AWS::SNS::Topic");
    let email = &t["Resources"]["OpsTopicEmail"];
    assert_eq!(s(&email["Condition"]), "HasAlarmEmail");
    assert_eq!(s(&email["Properties"]["Protocol"]), "email");
    assert_eq!(t["Parameters"]["AlarmEmail"]["Default"].as_str(), Some(""));
    assert!(t["Outputs"]["OpsTopicArn"].is_mapping());
}

/// IoT Core's batching path (issue 78; docs/batches.md) is there when
/// `MqttPath=batched` alone, and wired as the reader expects: the Basic
/// Ingest rule named by its parameter, with the per-message rule's SQL (the
/// same message on both paths), putting each message on the stream keyed
/// by its topic (a device's messages in order on one shard); the reader run
/// on the parameter's schedule, one at a time, never retried (the next run
/// reads again), with the stream's name and the registry's interval.
#[test]
fn the_batching_path_is_an_option_wired_as_the_reader_expects() {
    let t = template();
    let p = &t["Parameters"];
    assert_eq!(p["MqttPath"]["Default"].as_str(), Some("per-message"));
    assert_eq!(p["MqttStreamMinutes"]["Default"].as_u64(), Some(15));
    assert_eq!(p["MqttStreamShards"]["Default"].as_u64(), Some(1));
    let conditional = [
        "MqttStream",
        "MqttIngestRule",
        "MqttIngestRuleRole",
        "MqttStreamFunction",
        "MqttStreamErrorsAlarm",
        "MqttStreamThrottlesAlarm",
        "MqttStreamIteratorAgeAlarm",
        "MqttStreamLogs",
    ];
    for name in conditional {
        assert_eq!(
            s(&t["Resources"][name]["Condition"]),
            "IsMqttBatched",
            "{name}"
        );
    }
    let rule = &t["Resources"]["MqttIngestRule"]["Properties"];
    assert!(format!("{:?}", rule["RuleName"]).contains("MqttIngestRuleName"));
    let sql = |r: &str| {
        format!(
            "{:?}",
            t["Resources"][r]["Properties"]["TopicRulePayload"]["Sql"]
        )
    };
    assert_eq!(sql("MqttIngestRule"), sql("MqttRule"));
    let action = &rule["TopicRulePayload"]["Actions"][0]["Kinesis"];
    assert_eq!(s(&action["PartitionKey"]), "${topic()}");
    assert!(format!("{:?}", action["StreamName"]).contains("MqttStream"));
    assert!(format!("{:?}", rule["TopicRulePayload"]["ErrorAction"]).contains("MqttFailures"));

    let f = &t["Resources"]["MqttStreamFunction"]["Properties"];
    assert_eq!(s(&f["CodeUri"]), "functions/mqtt");
    assert_eq!(f["ReservedConcurrentExecutions"].as_u64(), Some(1));
    assert_eq!(
        f["EventInvokeConfig"]["MaximumRetryAttempts"].as_u64(),
        Some(0)
    );
    assert_eq!(f["Timeout"].as_u64(), Some(900));
    let schedule = format!("{:?}", f["Events"]["Every"]["Properties"]["Schedule"]);
    assert!(
        schedule.contains("rate(${MqttStreamMinutes} minutes)"),
        "{schedule}"
    );
    let env = &f["Environment"]["Variables"];
    assert!(format!("{:?}", env["MQTT_STREAM"]).contains("MqttStream"));
    assert!(format!("{:?}", env["REGISTRY_LATEST_SECONDS"]).contains("RegistryLatestSeconds"));
    // The per-message function takes the rule's messages: no stream named.
    assert!(
        t["Resources"]["MqttFunction"]["Properties"]["Environment"]["Variables"]["MQTT_STREAM"]
            .is_null()
    );
    // What the code reads is what the template sets.
    let config = shared::config::Config::from_lookup(|k| match k {
        "TABLE_NAME" => Some("t".into()),
        "MQTT_STREAM" => Some("readings-stream".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(config.mqtt_stream.as_deref(), Some("readings-stream"));
    let unset =
        shared::config::Config::from_lookup(|k| (k == "TABLE_NAME").then(|| "t".into())).unwrap();
    assert_eq!(unset.mqtt_stream, None);
}
