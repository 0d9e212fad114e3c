//! R-INIT-1, the client's half: the version the agent answers is checked before the rest of the
//! answer is decoded, so a v1 agent fails `initialize` with -32022 and both versions named.

use acp_inject_core::client::{Answer, ClientConnection, Event};
use acp_inject_core::wire::{Implementation, RequestId};
use serde_json::{json, Value};

fn initialize_answered(result: Value) -> Answer {
    let mut c = ClientConnection::new(1 << 20);
    let info = Implementation { name: "test".into(), title: None, version: "1".into(), meta: None };
    let id = match c.initialize(info, false) {
        RequestId::Number(n) => json!(n),
        RequestId::Str(s) => json!(s),
        RequestId::Null => Value::Null,
    };
    c.receive_line(&json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string());
    c.take_events()
        .into_iter()
        .find_map(|e| match e {
            Event::Answered { outcome, .. } => Some(outcome),
            _ => None,
        })
        .expect("an answer")
}

#[test]
fn a_v1_agent_fails_initialize_naming_both_versions() {
    // What an ACP v1 agent answers: no `info`, v1 capabilities.
    let v1 = json!({ "protocolVersion": 1, "agentCapabilities": { "loadSession": true }, "authMethods": [] });
    let Answer::Failed(e) = initialize_answered(v1) else { panic!("a v1 answer was accepted") };
    assert_eq!(e.code, -32022);
    let detail = e.detail.unwrap_or_default();
    assert!(detail.contains("version 1") && detail.contains("version 2"), "{detail}");
}

#[test]
fn a_v2_agent_is_accepted() {
    let v2 = json!({ "protocolVersion": 2, "info": { "name": "agent", "version": "1" } });
    assert!(matches!(initialize_answered(v2), Answer::Initialized(_)));
}
