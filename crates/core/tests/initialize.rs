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

/// The inject capability in ACP PR #2043's shapes (open mode and steerInStream lists, optional
/// `pending.replace`, nullable `steerInStream`) does not fail `initialize`: what this version
/// does not know is left out, the rest is read.
#[test]
fn an_agent_advertising_the_open_inject_shapes_is_accepted() {
    let answer = json!({
        "protocolVersion": 2,
        "info": { "name": "agent", "version": "1" },
        "capabilities": { "session": { "inject": {
            "modes": ["queue", "_acme_later", "steer"],
            "pending": {},
            "steerInStream": ["_acme_rewind", "finish"],
        } } },
    });
    let Answer::Initialized(init) = initialize_answered(answer) else { panic!("the open shapes were refused") };
    let inject = init.capabilities.and_then(|c| c.session).and_then(|s| s.inject).expect("inject is advertised");
    let modes: Vec<String> = inject.modes.iter().map(|m| serde_json::to_value(m).unwrap().as_str().unwrap().to_owned()).collect();
    assert_eq!(modes, ["queue", "steer"]);
    assert!(!inject.pending.expect("pending is read").replace, "an omitted replace is no replace");
    let steer: Vec<String> =
        inject.steer_in_stream.iter().flatten().map(|s| serde_json::to_value(s).unwrap().as_str().unwrap().to_owned()).collect();
    assert_eq!(steer, ["finish"]);

    let null_steer = json!({
        "protocolVersion": 2,
        "info": { "name": "agent", "version": "1" },
        "capabilities": { "session": { "inject": { "modes": ["queue", "steer"], "steerInStream": null } } },
    });
    assert!(matches!(initialize_answered(null_steer), Answer::Initialized(_)), "a null steerInStream is not said, not wrong");
}
