//! Alert rules from a file (`alerts replay --rules`, `serve --alert-rules`,
//! docs/alerts.md): YAML or JSON with `rules:` mapping each name to a rule,
//! as the HTTP API takes one, and for `serve` where notifications go
//! (`receivers:`, name to receiver) and how often a firing alert is told
//! again (`repeat_interval:`); and an event as the JSON line `alerts
//! replay` prints.

use shared::alert_settings::{parse_repeat, AlertSettings};
use shared::domain::alerts::{Event, Rule, Transition};
use shared::notify::ReceiverSpec;
use std::path::Path;

/// What `serve --alert-rules` reads: the rules with their JSON, and the
/// receivers.
#[derive(Debug, Default)]
pub struct AlertFile {
    pub rules: Vec<(Rule, String)>,
    pub settings: AlertSettings,
}

/// The whole file, checked: the first mistake names its rule or receiver and field.
pub fn parse_file(text: &str) -> Result<AlertFile, String> {
    let rules = parse_with_json(text)?;
    let doc: serde_json::Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    let mut settings = AlertSettings::default();
    if let Some(v) = doc.get("repeat_interval") {
        let text = v.as_str().unwrap_or_default();
        settings.repeat_interval = parse_repeat(text).ok_or_else(|| {
            format!("repeat_interval: {v} is not a duration of at least a minute (30m, 4h, 1d)")
        })?;
    }
    if let Some(receivers) = doc.get("receivers") {
        let receivers = receivers
            .as_object()
            .ok_or("receivers: a mapping of names to receivers")?;
        for (name, spec) in receivers {
            let spec = ReceiverSpec::parse(name, spec).map_err(|e| e.to_string())?;
            settings.receivers.push((name.clone(), spec));
        }
    }
    Ok(AlertFile { rules, settings })
}

/// `serve --alert-rules FILE`.
pub fn load_file(path: &Path) -> Result<AlertFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every rule of the file, each checked; the first mistake names the rule and field.
pub fn load(path: &Path) -> Result<Vec<Rule>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(text: &str) -> Result<Vec<Rule>, String> {
    Ok(parse_with_json(text)?.into_iter().map(|(r, _)| r).collect())
}

/// Each rule with its JSON text, as the store keeps it.
pub fn parse_with_json(text: &str) -> Result<Vec<(Rule, String)>, String> {
    let doc: serde_json::Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    let rules = doc
        .get("rules")
        .and_then(|r| r.as_object())
        .ok_or("a `rules:` mapping of names to rules")?;
    rules
        .iter()
        .map(|(name, rule)| {
            Rule::parse(name, rule)
                .map(|parsed| (parsed, rule.to_string()))
                .map_err(|e| format!("rule {name}: {e}"))
        })
        .collect()
}

pub fn event_json(e: &Event) -> serde_json::Value {
    serde_json::json!({
        "at": e.at.to_string(),
        "rule": e.rule,
        "device": e.device.as_str(),
        "room": e.room.as_ref().map(|r| r.as_str()),
        "transition": match e.transition {
            Transition::Pending => "pending",
            Transition::Firing => "firing",
            Transition::Resolved => "resolved",
        },
        "value": e.value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yaml_file_of_rules_and_its_mistakes_named() {
        let rules = parse(
            "rules:\n  cold:\n    kind: threshold\n    scope: {room: bedroom}\n    quantity: temperature\n    below: 16\n    for: 10m\n  quiet:\n    kind: no_data\n    scope: {type: climate}\n    for: 30m\n",
        )
        .unwrap();
        let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["cold", "quiet"]);
        let e = parse("rules:\n  cold:\n    kind: threshold\n    scope: {room: bedroom}\n    quantity: temp\n    below: 16\n").unwrap_err();
        assert!(e.starts_with("rule cold: quantity"), "{e}");
        assert!(parse("cold: {}").unwrap_err().contains("rules:"));
    }

    #[test]
    fn receivers_and_the_repeat_interval_with_their_mistakes_named() {
        let rules = "rules:\n  quiet: {kind: no_data, scope: {type: climate}, for: 30m}\n";
        let file = parse_file(&format!(
            "{rules}repeat_interval: 1h\nreceivers:\n  phone: {{kind: ntfy, url: 'https://ntfy.sh/house', priority: 5}}\n  ha: {{kind: mqtt, topic: ingester/alerts}}\n"
        ))
        .unwrap();
        assert_eq!(
            file.settings.repeat_interval,
            std::time::Duration::from_secs(3600)
        );
        let names: Vec<&str> = file
            .settings
            .receivers
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(names, ["phone", "ha"], "in the file's order");
        let e = parse_file(&format!(
            "{rules}receivers:\n  am: {{kind: webhook, url: 'localhost:9093'}}\n"
        ))
        .unwrap_err();
        assert!(e.starts_with("receiver am: url"), "{e}");
        let e = parse_file(&format!("{rules}repeat_interval: 5s\n")).unwrap_err();
        assert!(e.starts_with("repeat_interval"), "{e}");
        assert!(parse_file(rules).unwrap().settings.receivers.is_empty());
    }
}
