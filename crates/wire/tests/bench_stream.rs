//! The benchmarks' shared stream (`benches/stream.rs`, also the comparison with the official
//! crate in `bench/`) stays what its comment says: every `sessionUpdate` kind of the vendored
//! upstream draft occurs, each update is valid under the draft's `SessionUpdate`, and each line
//! decodes on our side and re-encodes to the same JSON.

use std::collections::BTreeSet;
use std::path::Path;

use acp_inject_wire::jsonrpc::{self, AgentLine};
use serde_json::Value;

#[allow(dead_code)]
#[path = "../benches/stream.rs"]
mod stream;

const LINES: usize = 20_000;

fn draft() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/upstream/v2/schema.unstable.json");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("the vendored draft")).expect("draft JSON")
}

/// The tags the draft's `SessionUpdate` names (its `const` branches; the last branch is open).
fn draft_kinds(draft: &Value) -> BTreeSet<String> {
    draft["$defs"]["SessionUpdate"]["anyOf"]
        .as_array()
        .expect("SessionUpdate is an anyOf")
        .iter()
        .filter_map(|b| b["properties"]["sessionUpdate"]["const"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_stream_covers_every_draft_update_kind_with_valid_updates_that_round_trip() {
    let draft = draft();
    let kinds = draft_kinds(&draft);
    assert!(kinds.len() >= 20, "{kinds:?}");
    // The draft's definitions with `SessionUpdate` as the root (the draft's own root is the
    // union of every message).
    let schema = serde_json::json!({ "$schema": draft["$schema"], "$ref": "#/$defs/SessionUpdate", "$defs": draft["$defs"] });
    let validator = jsonschema::draft202012::new(&schema).expect("the draft compiles");

    let mut seen = BTreeSet::new();
    for line in stream::stream(LINES) {
        let value: Value = serde_json::from_str(&line).unwrap();
        let update = &value["params"]["update"];
        let errors: Vec<String> = validator.iter_errors(update).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{line}: {errors:?}");
        seen.insert(update["sessionUpdate"].as_str().unwrap().to_owned());

        let n = match jsonrpc::parse_agent_line(&line) {
            Ok(AgentLine::Update(n)) => n,
            other => panic!("{line}: {other:?}"),
        };
        let again: Value = serde_json::from_str(&jsonrpc::notification_line(&n)).unwrap();
        assert_eq!(again, value, "round trip of {line}");
    }
    let missing: Vec<&String> = kinds.difference(&seen).collect();
    assert!(missing.is_empty(), "draft kinds the stream lacks: {missing:?}");
}
