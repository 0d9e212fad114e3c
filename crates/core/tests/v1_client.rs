//! C-V1-1 … C-V1-3 where the vectors cannot look: the events an app reads from a version 1
//! agent (the prompt call answered when it goes out, a v1 permission request read as v2's) and
//! the permission answer on the wire.

use acp_inject_core::client::{Answer, ClientConnection, Event, RequestKind, SessionEvent, TurnState};
use acp_inject_core::wire::{ContentBlock, RequestPermissionOutcome, SelectedPermissionOutcome, SessionId, TextContent};
use serde_json::{json, Value};

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(Box::new(TextContent::new(t)))]
}

fn v1_client() -> ClientConnection {
    let mut c = ClientConnection::new(1 << 20);
    c.assume_agent(1, None);
    c.open_session(&SessionId("s1".into()), None);
    c
}

#[test]
fn a_prompt_call_is_answered_when_it_goes_out_and_the_turn_ends_with_the_answer() {
    let mut c = v1_client();
    let request = c.prompt(&SessionId("s1".into()), text("hi")).expect("accepted");
    let sent: Value = serde_json::from_str(&c.take_outgoing()[0]).unwrap();
    assert_eq!(sent["method"], "session/prompt");
    assert_eq!(serde_json::to_value(&request).unwrap(), sent["id"], "the call's id is the request's");
    let events = c.take_events();
    let answered = events.iter().find_map(|e| match e {
        Event::Answered { request: r, kind: RequestKind::Prompt, outcome: Answer::Accepted { message_id }, .. } if *r == request => {
            message_id.clone()
        }
        _ => None,
    });
    let id = answered.expect("the call is answered at once, with the client's id");
    assert!(events.iter().any(
        |e| matches!(e, Event::Session { event: SessionEvent::Update(acp_inject_core::wire::SessionUpdate::UserMessage(m)), .. } if m.message_id == id)
    ));
    assert_eq!(c.mirror(&SessionId("s1".into())).unwrap().state(), TurnState::Running);
    c.receive_line(&json!({ "jsonrpc": "2.0", "id": sent["id"], "result": { "stopReason": "refusal" } }).to_string());
    assert!(c.take_events().iter().all(|e| !matches!(e, Event::Answered { .. })), "the prompt's call was answered once");
    let snapshot = c.mirror(&SessionId("s1".into())).unwrap().snapshot();
    assert_eq!(snapshot.state, TurnState::Idle);
    assert_eq!(serde_json::to_value(&snapshot.stop_reason).unwrap(), "refusal");
}

#[test]
fn a_v1_permission_request_reads_as_v2_and_is_answered_in_the_shape_both_share() {
    let mut c = v1_client();
    let line = json!({ "jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": {
        "sessionId": "s1",
        "toolCall": { "toolCallId": "t1", "title": "Write main.rs", "kind": "edit" },
        "options": [{ "optionId": "allow", "name": "Allow", "kind": "allow_once" }] } });
    c.receive_line(&line.to_string());
    let events = c.take_events();
    let (request, params) = events
        .into_iter()
        .find_map(|e| match e {
            Event::PermissionRequested { request, params } => Some((request, params)),
            _ => None,
        })
        .expect("the request is surfaced");
    assert_eq!(params.title, "Write main.rs");
    let subject = serde_json::to_value(&params.subject).unwrap();
    assert_eq!(subject["type"], "tool_call");
    assert_eq!(subject["toolCall"]["toolCallId"], "t1");
    let outcome = RequestPermissionOutcome::Selected(Box::new(SelectedPermissionOutcome::new(String::from("allow"))));
    c.answer_permission(&request, outcome).expect("open");
    let answer: Value = serde_json::from_str(&c.take_outgoing()[0]).unwrap();
    assert_eq!(answer, json!({ "jsonrpc": "2.0", "id": 7, "result": { "outcome": { "outcome": "selected", "optionId": "allow" } } }));

    // Without a tool call there is nothing to show: refused as invalid params, not surfaced.
    c.receive_line(
        &json!({ "jsonrpc": "2.0", "id": 8, "method": "session/request_permission", "params": { "sessionId": "s1", "options": [] } })
            .to_string(),
    );
    let refused: Value = serde_json::from_str(&c.take_outgoing()[0]).unwrap();
    assert_eq!(refused["error"]["code"], -32602);
}

#[test]
fn permission_requests_settled_by_the_client_take_the_apps_late_answer_and_send_nothing() {
    // C-PERM-1 where the vectors cannot look: the app's answer after the client settled the
    // request, and the notification the app gets for a withdrawn one.
    let mut c = v1_client();
    for id in [7, 8] {
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": "session/request_permission", "params": {
            "sessionId": "s1",
            "toolCall": { "toolCallId": format!("t{id}"), "title": "Write main.rs", "kind": "edit" },
            "options": [{ "optionId": "allow", "name": "Allow", "kind": "allow_once" }] } });
        c.receive_line(&line.to_string());
    }
    let _ = c.take_events();
    let allow = || RequestPermissionOutcome::Selected(Box::new(SelectedPermissionOutcome::new(String::from("allow"))));
    c.receive_line(&json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": 8 } }).to_string());
    let events = c.take_events();
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Notification { method, params: Some(p) } if method == "$/cancel_request" && p["requestId"] == 8)
        ),
        "the app hears of the withdrawal: {events:?}"
    );
    let answer: Value = serde_json::from_str(&c.take_outgoing()[0]).unwrap();
    assert_eq!(answer, json!({ "jsonrpc": "2.0", "id": 8, "result": { "outcome": { "outcome": "cancelled" } } }));
    c.cancel(&SessionId("s1".into()));
    let sent: Vec<Value> = c.take_outgoing().iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(sent[0]["method"], "session/cancel");
    assert_eq!(sent[1], json!({ "jsonrpc": "2.0", "id": 7, "result": { "outcome": { "outcome": "cancelled" } } }));
    assert_eq!(sent.len(), 2);
    let late = |id: i64| serde_json::from_value(json!(id)).unwrap();
    c.answer_permission(&late(7), allow()).expect("settled: the late answer is taken");
    c.answer_permission(&late(8), allow()).expect("settled: the late answer is taken");
    assert!(c.take_outgoing().is_empty(), "a settled request is answered once");
    assert!(c.answer_permission(&late(9), allow()).is_err(), "a request never received is still refused");
}
