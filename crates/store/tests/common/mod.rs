//! Helpers shared by the store's integration tests: an agent configuration, JSON-RPC lines,
//! and reading the outputs back.
#![allow(dead_code)] // each test binary uses a different part

use acp_inject_core::agent::{Agent, AgentConfig, Output, PermissionAsk, Policy, RuntimeAction, RuntimeEvent};
use acp_inject_core::wire::{PermissionOption, RequestId, SessionUpdate};
use serde_json::{json, Value};

/// Queue and steer injects with replace, steers finishing their stream; session ids without
/// their random part, so the tests can name them (`sess_1`, `sess_a-1`).
pub fn config(remember_ids: u64) -> AgentConfig {
    let inject = serde_json::from_value(json!({
        "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": ["finish"]
    }))
    .unwrap();
    AgentConfig {
        inject: Some(inject),
        policy: Policy { remember_ids, sequential_session_ids: true, ..Policy::default() },
        ..Default::default()
    }
}

pub fn text(t: &str) -> Value {
    json!([{ "type": "text", "text": t }])
}

/// One JSON-RPC request line.
pub fn request(id: u64, method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// `conn`'s `initialize` (R-INIT-2: nothing else is served before it), its answer drained.
pub fn initialize(agent: &mut Agent, conn: &str) {
    let line = request(0, "initialize", json!({ "protocolVersion": 2, "info": { "name": "store-test", "version": "0" } }));
    agent.handle_line(&conn.into(), &line);
    let out = lines_to(conn, agent.drain().expect("drain"));
    assert!(out.len() == 1 && out[0].get("result").is_some(), "initialize: {out:?}");
}

/// Sends one request line and drains: the parsed lines addressed to `conn`, in order.
pub fn call(agent: &mut Agent, conn: &str, id: u64, method: &str, params: Value) -> Vec<Value> {
    agent.handle_line(&conn.into(), &request(id, method, params));
    lines_to(conn, agent.drain().expect("drain"))
}

/// The answer (the line with an `id`) among `lines`.
pub fn answer(lines: &[Value]) -> &Value {
    lines.iter().find(|l| l.get("id").is_some()).unwrap_or_else(|| panic!("no answer in {lines:?}"))
}

pub fn lines_to(conn: &str, outputs: Vec<Output>) -> Vec<Value> {
    outputs
        .into_iter()
        .filter_map(|o| match o {
            Output::Line { to, line } if to.iter().any(|c| c == conn) => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        })
        .collect()
}

/// The `sessionUpdate` kind and message id of each `session/update` line.
pub fn updates(lines: &[Value]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter(|l| l["method"] == "session/update")
        .map(|l| {
            let u = &l["params"]["update"];
            let kind = u["sessionUpdate"].as_str().unwrap_or_default().to_owned();
            let detail = u["messageId"].as_str().or_else(|| u["state"].as_str()).unwrap_or_default().to_owned();
            (kind, detail)
        })
        .collect()
}

/// The error reason of an answer, or `None` for a result.
pub fn reason(answer: &Value) -> Option<&str> {
    answer.get("error").map(|e| e["data"]["reason"].as_str().unwrap_or("?"))
}

/// Applies a runtime event and drains.
pub fn event(agent: &mut Agent, session: &str, ev: RuntimeEvent) -> Vec<Output> {
    agent.runtime_event(&acp_inject_core::wire::SessionId(session.to_owned()), ev).expect("runtime event");
    agent.drain().expect("drain")
}

/// An agent message chunk from the runtime.
pub fn chunk(id: &str, t: &str) -> RuntimeEvent {
    let update: SessionUpdate = serde_json::from_value(json!({
        "sessionUpdate": "agent_message_chunk", "messageId": id, "content": { "type": "text", "text": t }
    }))
    .unwrap();
    RuntimeEvent::Update(update)
}

/// The user messages handed to the runtime (start or deliver), as (id, first text).
pub fn handed(outputs: &[Output]) -> Vec<(String, String)> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Action { action: RuntimeAction::StartTurn(inputs) | RuntimeAction::Deliver(inputs), .. } => Some(inputs),
            _ => None,
        })
        .flatten()
        .map(|i| {
            let content = serde_json::to_value(&i.content).unwrap();
            (i.message_id.0.clone(), content[0]["text"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// A permission request with two options.
pub fn ask() -> PermissionAsk {
    let option = |id: &str, kind: &str| -> PermissionOption {
        serde_json::from_value(serde_json::json!({ "optionId": id, "name": id, "kind": kind })).unwrap()
    };
    PermissionAsk {
        title: "run the tests?".into(),
        description: None,
        options: vec![option("allow", "allow_once"), option("reject", "reject_once")],
        subject: None,
    }
}

/// A client's answer to one of the agent's permission requests: the option chosen.
pub fn permission_answer(id: &RequestId, option: &str) -> String {
    serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": { "outcome": { "outcome": "selected", "optionId": option } } })
        .to_string()
}
