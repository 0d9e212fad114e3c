//! R-INIT-1 and C-V1-1, the client's half: the version the agent answers is read before the rest
//! of the answer is decoded, so a v1 agent's answer is read as v1's, and an agent of a version
//! this client does not speak fails `initialize` with -32022, the versions named.

use acp_inject_core::client::{Answer, ClientConnection, Event, Phase};
use acp_inject_core::wire::{Implementation, RequestId};
use serde_json::{json, Value};

fn initialize_answered(result: Value) -> Answer {
    let mut c = ClientConnection::new(1 << 20);
    let info = Implementation::new("test", "1");
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
fn a_v1_agent_is_driven_at_version_1() {
    // What an ACP v1 agent answers: no `info`, v1 capabilities (C-V1-1).
    let v1 = json!({ "protocolVersion": 1, "agentCapabilities": { "loadSession": true }, "authMethods": [],
                     "agentInfo": { "name": "v1-agent", "version": "0.3" } });
    let Answer::Initialized(init) = initialize_answered(v1) else { panic!("a v1 answer was refused") };
    assert_eq!(init.protocol_version.0, 1);
    assert_eq!((init.info.name.as_str(), init.info.version.as_str()), ("v1-agent", "0.3"));
    let inject = init.capabilities.and_then(|c| c.session).and_then(|s| s.inject);
    assert!(inject.is_none(), "v1 cannot carry session.inject");
}

#[test]
fn an_agent_of_another_version_fails_initialize_naming_the_versions() {
    for version in [0, 3] {
        let answer = json!({ "protocolVersion": version, "info": { "name": "agent", "version": "1" } });
        let Answer::Failed(e) = initialize_answered(answer) else { panic!("version {version} was accepted") };
        assert_eq!(e.code, -32022);
        let detail = e.detail.unwrap_or_default();
        assert!(detail.contains(&format!("version {version}")) && detail.contains("1, 2"), "{detail}");
    }
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

#[test]
fn the_phase_says_which_wire_the_handshake_settled() {
    let answers = [
        (json!({ "protocolVersion": 1, "agentCapabilities": {}, "authMethods": [] }), 1),
        (json!({ "protocolVersion": 2, "info": { "name": "v2-agent", "version": "1" } }), 2),
    ];
    for (result, version) in answers {
        let mut c = ClientConnection::new(1 << 20);
        let RequestId::Number(id) = c.initialize(Implementation::new("test", "1"), false) else { panic!("a numeric id") };
        assert_eq!(c.phase(), &Phase::AwaitingAgent);
        c.receive_line(&json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string());
        match (c.phase(), version) {
            (Phase::V1(agent), 1) | (Phase::V2(agent), 2) => assert_eq!(agent.protocol_version.0, version),
            (other, _) => panic!("version {version} settled {other:?}"),
        }
        assert_eq!(c.protocol_version(), version);
    }
}
