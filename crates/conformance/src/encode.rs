//! The vector-format encodings of the core's outputs (format: `spec/vectors/README.md`).

use acp_inject_core::agent::{HistoryEntry, RuntimeAction, UserInput};
use acp_inject_core::client::{MirrorSnapshot, ProtocolError};
use serde_json::{json, Value};

fn ids(inputs: &[UserInput]) -> Vec<&str> {
    inputs.iter().map(|m| m.message_id.0.as_str()).collect()
}

/// A host call as a vector's `expect` writes it: `{"hostCall": "authenticate", "callId",
/// "from", "methodId"}`, `{"hostCall": "extension", "callId", "from", "method", "params"}`,
/// `{"hostCall": "extension_notification", …}`.
pub fn host_call(id: u64, connection: &acp_inject_core::agent::ConnId, call: &acp_inject_core::agent::HostCall) -> Value {
    use acp_inject_core::agent::HostCall;
    let mut v = match call {
        HostCall::Authenticate { method_id } => json!({ "hostCall": "authenticate", "methodId": method_id }),
        HostCall::Extension { method, params } => json!({ "hostCall": "extension", "method": method, "params": params }),
        HostCall::ExtensionNotification { method, params } => {
            json!({ "hostCall": "extension_notification", "method": method, "params": params })
        }
    };
    if let Some(o) = v.as_object_mut() {
        o.insert("callId".into(), json!(id));
        o.insert("from".into(), json!(connection.as_str()));
        if o.get("params").is_some_and(Value::is_null) {
            o.remove("params");
        }
    }
    v
}

/// A runtime action as vectors write it.
pub fn action(action: &RuntimeAction) -> Value {
    match action {
        RuntimeAction::SessionOpened(s) => {
            json!({ "action": "session_opened", "cwd": s.cwd, "additionalDirectories": s.additional_directories, "mcpServers": s.mcp_servers })
        }
        RuntimeAction::SessionResumed(s) => {
            json!({ "action": "session_resumed", "cwd": s.cwd, "additionalDirectories": s.additional_directories, "mcpServers": s.mcp_servers })
        }
        RuntimeAction::StartTurn(m) => json!({ "action": "start_turn", "messageIds": ids(m) }),
        RuntimeAction::Deliver(m) => json!({
            "action": "deliver",
            "messageIds": ids(m),
            "content": m.iter().map(|m| &m.content).collect::<Vec<_>>(),
        }),
        RuntimeAction::InterruptStream => json!({ "action": "interrupt_stream" }),
        RuntimeAction::CancelTurn => json!({ "action": "cancel_turn" }),
        RuntimeAction::PermissionAnswered { request_id, outcome } => {
            json!({ "action": "permission_answered", "requestId": request_id, "outcome": outcome })
        }
        RuntimeAction::Closed { dropped, turn_cancelled } => {
            json!({ "action": "closed", "turnCancelled": turn_cancelled, "dropped": dropped })
        }
    }
}

/// The mirror's snapshot as vectors write it.
pub fn snapshot(s: &MirrorSnapshot) -> Value {
    let pending: Vec<Value> = s
        .pending
        .iter()
        .map(|p| {
            let mut item = json!({ "messageId": p.message_id, "mode": p.mode, "status": p.status, "content": p.content });
            if p.held {
                item["held"] = Value::Bool(true);
            }
            item
        })
        .collect();
    json!({
        "state": s.state,
        "stopReason": s.stop_reason,
        "usage": s.usage,
        "pending": pending,
        "transcript": s.transcript,
        "violations": s.violations,
        "affordances": s.affordances,
        "agentPending": s.agent_pending,
        "closed": s.closed,
        "tolerated": s.tolerated,
    })
}

/// An error the client surfaced, as `expectError` writes it.
pub fn error(e: &ProtocolError) -> Value {
    let mut v = json!({ "code": e.code, "reason": e.reason.as_ref().map(|r| r.as_str().to_owned()) });
    if let Some(m) = &e.message_id {
        v["messageId"] = Value::from(m.0.clone());
    }
    v
}

/// The delivered user messages of a history, as `expectHistory` writes them.
pub fn user_history(entries: &[HistoryEntry]) -> Value {
    Value::Array(
        entries
            .iter()
            .filter_map(|e| match e {
                HistoryEntry::User { message_id, content } => Some(json!({ "messageId": message_id, "content": content })),
                HistoryEntry::Update { .. } => None,
            })
            .collect(),
    )
}
