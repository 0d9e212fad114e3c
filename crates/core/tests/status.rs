//! C-STATUS-1: how the client reads a `session/status` answer (what the vectors cannot see: the
//! answer's own value).

use acp_inject_core::client::{Answer, ClientConnection, Event};
use acp_inject_core::wire::{RequestId, SessionId, SessionStatus, StateUpdate};
use serde_json::json;

fn answer_to(result: serde_json::Value) -> Answer {
    let mut c = ClientConnection::new(1 << 20);
    c.assume_capabilities(None);
    let s1 = SessionId("s1".into());
    c.open_session(&s1, None);
    let id = c.status(&s1);
    let id = match &id {
        RequestId::Number(n) => json!(n),
        RequestId::Str(s) => json!(s),
        RequestId::Null => json!(null),
    };
    c.receive_line(&json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string());
    let events = c.take_events();
    match events.into_iter().find_map(|e| match e {
        Event::Answered { outcome, .. } => Some(outcome),
        _ => None,
    }) {
        Some(a) => a,
        None => panic!("no answer"),
    }
}

#[test]
fn open_with_its_state() {
    let Answer::Status { status, state } = answer_to(json!({ "status": "open", "state": { "state": "running" } })) else { panic!() };
    assert_eq!(status, SessionStatus::Open);
    assert!(matches!(state, Some(StateUpdate::Running(_))));
}

#[test]
fn an_unknown_status_reads_as_saved_and_a_malformed_state_as_not_reported() {
    let Answer::Status { status, state } = answer_to(json!({ "status": "_vendor/hibernating", "state": { "state": 7 } })) else {
        panic!()
    };
    assert_eq!(status, SessionStatus::Saved);
    assert_eq!(state, None);
    let Answer::Status { status, state } = answer_to(json!({ "status": "saved" })) else { panic!() };
    assert_eq!((status, state), (SessionStatus::Saved, None));
}
