//! An agent that answered `initialize` with protocol version 1
//! (C-V1-1 …
//! C-V1-3).
//!
//! The client asks for version 2; a v1 agent answers 1 (upstream v1: "the latest protocol
//! version supported by the agent"). From then on the connection translates at its edge, so
//! the mirror, the events and every language's session API stay the v2 ones:
//!
//! - **Out:** `session/resume` with replay is v1's `session/load`; a stdio MCP server is
//!   written without `type`; a prompt goes out only when the session is free (v1 has no held
//!   prompts), and this client answers its call then, with an id of its own
//!   ([`held`](super::held)).
//! - **In:** the prompt's answer ends the turn: the mirror gets the `idle` update a v2 agent
//!   would send, with the stop reason (an error answer: `error`, with the error). Chunks
//!   without `messageId` get stable ids of this client's; `tool_call` is the v2
//!   `tool_call_update` upsert and `plan` a `plan_update`; a permission request's `toolCall`
//!   becomes the v2 request's `title` and `subject`.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::*;
use crate::client::view::MessageRole;
use acp_inject_wire::SessionUpdate;

/// A v2 request's params as a v1 request's: stdio MCP servers without `type` (v1 tells them
/// by having no `type`), no `replayFrom` (v1 replays on `session/load`).
fn v1_params<P: Serialize>(params: &P) -> Map<String, Value> {
    let mut members = match serde_json::to_value(params) {
        Ok(Value::Object(o)) => o,
        _ => Map::new(),
    };
    members.remove("replayFrom");
    if let Some(Value::Array(servers)) = members.get_mut("mcpServers") {
        for server in servers.iter_mut().filter_map(Value::as_object_mut) {
            if server.get("type").and_then(Value::as_str) == Some("stdio") {
                server.remove("type");
            }
        }
    }
    members
}

/// `session/new` to a v1 agent.
pub(super) fn new_session_line(id: &RequestId, params: &NewSessionRequest) -> String {
    jsonrpc::request_line_for(id, acp_inject_wire::methods::SESSION_NEW, &v1_params(params))
}

/// `session/resume` to a v1 agent: `session/load` when it asks for replay (the agent replays
/// the conversation, then answers), else v1's `session/resume`.
pub(super) fn resume_line(id: &RequestId, params: &ResumeSessionRequest) -> String {
    let method = match params.replay_from {
        Some(_) => acp_inject_wire::v1::methods::SESSION_LOAD,
        None => acp_inject_wire::methods::SESSION_RESUME,
    };
    jsonrpc::request_line_for(id, method, &v1_params(params))
}

/// A v1 `initialize` answer as the v2 one the connection reports: the version, the agent's
/// identity (empty when it gives none), and no `session.inject`, which v1 cannot carry.
/// v1's name of `auth/login`.
pub(super) const AUTHENTICATE: &str = "authenticate";

pub(super) fn initialize_response(raw: &RawValue) -> Result<InitializeResponse, String> {
    let r: acp_inject_wire::v1::InitializeResponse =
        jsonrpc::decode(raw.get()).map_err(|e| format!("the agent's version 1 result for Initialize does not decode: {e}"))?;
    let info = r.agent_info.map_or_else(
        || Implementation::new(String::new(), String::new()),
        |i| Implementation::new(i.name, i.version).title(i.title).meta(i.meta),
    );
    let session = acp_inject_wire::SessionCapabilities::new();
    let auth_methods: Vec<acp_inject_wire::AuthMethod> =
        r.auth_methods.unwrap_or_default().into_iter().filter_map(auth_method).collect();
    Ok(InitializeResponse::new(ProtocolVersion(1), info)
        .capabilities(acp_inject_wire::AgentCapabilities::new().session(session))
        .auth_methods((!auth_methods.is_empty()).then_some(auth_methods))
        .meta(r.meta))
}

/// A v1 auth method as v2's: `id` is `methodId`, no `type` is `agent`, a terminal method's
/// `env` map is a list of `{name, value}`. One that does not read is left out.
fn auth_method(mut method: Map<String, Value>) -> Option<acp_inject_wire::AuthMethod> {
    if let Some(id) = method.remove("id") {
        method.insert("methodId".into(), id);
    }
    method.entry("type").or_insert_with(|| Value::from("agent"));
    if let Some(Value::Object(env)) = method.remove("env") {
        let text = |v: Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
        let list: Vec<acp_inject_wire::EnvVariable> =
            env.into_iter().map(|(name, value)| acp_inject_wire::EnvVariable::new(name, text(value))).collect();
        method.insert("env".into(), serde_json::to_value(list).unwrap_or_default());
    }
    serde_json::from_value(Value::Object(method)).ok()
}

/// A v1 `session/update`'s params, the update still to be read.
#[derive(Deserialize)]
struct V1Notification {
    #[serde(rename = "sessionId")]
    session_id: SessionId,
    update: Value,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
}

/// A value of one version as the type of the other where their shapes agree (content blocks,
/// tool kinds and statuses, tool-call content, plan entries, usage, session info).
fn via<T: Serialize, U: DeserializeOwned>(value: T) -> Result<U, String> {
    serde_json::to_value(value).and_then(serde_json::from_value).map_err(|e| e.to_string())
}

/// A v1 update as the v2 update the mirror applies (C-V1-3). The kinds v1 types are
/// translated; any other (`available_commands_update`, `current_mode_update`, …) is read as
/// v2 reads it, which keeps a kind it does not know whole.
fn v2_update(mirror: &mut SessionMirror, update: Value) -> Result<SessionUpdate, String> {
    use acp_inject_wire::v1::SessionUpdate as V1;
    use acp_inject_wire::{
        AgentMessageChunk, AgentThoughtChunk, PlanItems, PlanUpdate, PlanUpdateContent, ToolCallUpdate, UserMessageChunk,
    };
    let Ok(v1) = serde_json::from_value::<V1>(update.clone()) else {
        mirror.v1_end_stream();
        return serde_json::from_value(update).map_err(|e| e.to_string());
    };
    let id = |mirror: &mut SessionMirror, role, given: Option<acp_inject_wire::v1::MessageId>| {
        mirror.v1_chunk_id(role, given.map(|m| MessageId(m.0)))
    };
    // A v1 tool call as the v2 upsert: the same members, its kind and status as v2's.
    let tool_call = |t: acp_inject_wire::v1::ToolCallUpdate| {
        Ok::<_, String>(SessionUpdate::ToolCallUpdate(Box::new(
            ToolCallUpdate::new(acp_inject_wire::ToolCallId(t.tool_call_id.0))
                .title(t.title)
                .name(t.name)
                .kind(t.kind.map(via).transpose()?)
                .status(t.status.map(via).transpose()?)
                .content(t.content.map(via).transpose()?)
                .locations(t.locations)
                .raw_input(t.raw_input)
                .raw_output(t.raw_output)
                .meta(t.meta),
        )))
    };
    match v1 {
        V1::UserMessageChunk(c) => Ok(SessionUpdate::UserMessageChunk(Box::new(
            UserMessageChunk::new(id(mirror, MessageRole::User, c.message_id), via::<_, ContentBlock>(c.content)?).meta(c.meta),
        ))),
        V1::AgentMessageChunk(c) => Ok(SessionUpdate::AgentMessageChunk(Box::new(
            AgentMessageChunk::new(id(mirror, MessageRole::Agent, c.message_id), via::<_, ContentBlock>(c.content)?).meta(c.meta),
        ))),
        V1::AgentThoughtChunk(c) => Ok(SessionUpdate::AgentThoughtChunk(Box::new(
            AgentThoughtChunk::new(id(mirror, MessageRole::Thought, c.message_id), via::<_, ContentBlock>(c.content)?).meta(c.meta),
        ))),
        other => {
            mirror.v1_end_stream();
            match other {
                // v1's `tool_call` is its `tool_call_update` with the title required.
                V1::ToolCall(t) => tool_call(via(t)?),
                V1::ToolCallUpdate(t) => tool_call(*t),
                // v1 has one plan per session, which each `plan` replaces.
                V1::Plan(p) => Ok(SessionUpdate::PlanUpdate(Box::new(
                    PlanUpdate::new(PlanUpdateContent::Items(Box::new(PlanItems::new(
                        V1_PLAN_ID,
                        via::<_, Vec<acp_inject_wire::PlanEntry>>(p.entries)?,
                    ))))
                    .meta(p.meta),
                ))),
                other => via(other),
            }
        }
    }
}

/// The `planId` of a v1 agent's plan.
const V1_PLAN_ID: &str = "plan";

/// The stop reason of a v1 prompt answer, read as v2's (an open enum: v1's values are v2's).
#[derive(Deserialize)]
struct StopOnly {
    #[serde(rename = "stopReason")]
    stop_reason: acp_inject_wire::StopReason,
}

impl ClientConnection {
    /// One line from a version 1 agent.
    pub(super) fn receive_v1_line(&mut self, line: &str) {
        match jsonrpc::parse_line(line) {
            Ok(Incoming::Notification { method, params }) if method == acp_inject_wire::methods::SESSION_UPDATE => {
                self.v1_update(params)
            }
            Ok(Incoming::Request { id, method, params }) if method == acp_inject_wire::methods::SESSION_REQUEST_PERMISSION => {
                let request = params.ok_or_else(|| "no params".to_owned()).and_then(permission_request);
                self.permission(id, request);
            }
            Ok(message) => self.message(message),
            Err(e) => self.ignore(e.to_string()),
        }
    }

    /// A v1 `session/update`, translated for the mirror (C-V1-3).
    fn v1_update(&mut self, params: Option<&RawValue>) {
        let notification = params
            .ok_or_else(|| "no params".to_owned())
            .and_then(|p| serde_json::from_str::<V1Notification>(p.get()).map_err(|e| e.to_string()));
        let n = match notification {
            Ok(n) => n,
            Err(e) => return self.ignore(format!("a session/update that does not decode: {e}")),
        };
        let session = n.session_id;
        let Some(mirror) = self.sessions.get_mut(&session) else {
            return self.ignore(format!("an update for session {:?}, which is not open on this connection", session.0));
        };
        let (update, tolerated) = collect_tolerated(|| v2_update(mirror, n.update));
        match update {
            Ok(update) => {
                let n = UpdateSessionNotification::new(session, update).meta(n.meta);
                self.update(n, tolerated)
            }
            Err(e) => self.ignore(format!("a session/update that does not decode: {e}")),
        }
    }

    /// The answer to a prompt sent to a v1 agent: the turn ended (C-V1-2). The mirror gets the
    /// `idle` update a v2 agent would have sent; a held item may go out next.
    pub(super) fn v1_turn_ended(&mut self, session_id: &SessionId, outcome: Result<&RawValue, ErrorObject>) {
        use acp_inject_wire::{IdleStateUpdate, SessionUpdate, StateUpdate, StopReason, TurnFailure};
        let failed = |code: i64, message: String, data: Option<Value>| {
            // A code outside i32 is no JSON-RPC code; it reads as an internal error.
            let code = i32::try_from(code).unwrap_or(-32603);
            (StopReason::Error, Some(TurnFailure::new(code, message).data(data)))
        };
        let (stop_reason, error) = match outcome {
            Ok(raw) => match jsonrpc::decode::<StopOnly>(raw.get()) {
                Ok(r) => (r.stop_reason, None),
                Err(e) => failed(acp_inject_wire::errors::INTERNAL_ERROR, "Invalid result".into(), Some(Value::from(e.to_string()))),
            },
            // Some v1 agents answer a cancelled prompt -32800 rather than `cancelled`.
            Err(e) if e.code == acp_inject_wire::errors::REQUEST_CANCELLED => (StopReason::Cancelled, None),
            Err(e) => failed(e.code, e.message, e.data),
        };
        let idle = IdleStateUpdate::new().stop_reason(stop_reason).error(error);
        let Some(mirror) = self.sessions.get_mut(session_id) else { return };
        mirror.v1_end_stream();
        for e in mirror.apply(SessionUpdate::StateUpdate(Box::new(StateUpdate::Idle(Box::new(idle))))) {
            self.session_event(session_id, e);
        }
        self.drain_held(session_id);
    }
}

/// A v1 `session/request_permission`'s params as v2's: the tool call's title (else its id) as
/// the `title`, the tool call as a `tool_call` subject (the shape the agent side reads,
/// `agent/v1.rs`).
fn permission_request(params: &RawValue) -> Result<RequestPermissionRequest, String> {
    let r: acp_inject_wire::v1::RequestPermissionRequest = jsonrpc::decode(params.get()).map_err(|e| e.to_string())?;
    let text = |key: &str| r.tool_call.get(key).and_then(Value::as_str).map(str::to_owned);
    let title = text("title").or_else(|| text("toolCallId")).unwrap_or_else(|| "Permission requested".into());
    let subject =
        Map::from_iter([("type".to_owned(), Value::from("tool_call")), ("toolCall".to_owned(), Value::Object(r.tool_call.clone()))]);
    Ok(RequestPermissionRequest::new(SessionId(r.session_id.0), title, via::<_, Vec<acp_inject_wire::PermissionOption>>(r.options)?)
        .subject(subject)
        .meta(r.meta))
}
