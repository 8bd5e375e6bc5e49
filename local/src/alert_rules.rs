//! Alert rules from a file (`alerts replay --rules`, docs/alerts.md): YAML
//! or JSON with `rules:` mapping each name to a rule, as the HTTP API takes
//! one; and an event as the JSON line `alerts replay` prints.

use shared::domain::alerts::{Event, Rule, Transition};
use std::path::Path;

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

/// The file's rules with their JSON (`serve --alert-rules`).
pub fn load_with_json(path: &Path) -> Result<Vec<(Rule, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_with_json(&text).map_err(|e| format!("{}: {e}", path.display()))
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
}
