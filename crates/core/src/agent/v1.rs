//! ACP v1 on the agent side (R-V1-1 …
//! R-V1-4).
//!
//! The core speaks v2. A connection whose `initialize` asks for protocol version 1 is answered
//! in v1's shape, and from then on its messages are translated at the core's edge, both ways,
//! so the runtime (the author's turn code) is the same for both versions and every host (the
//! Rust transport, the Python and Kotlin runtimes, the reference agent) gets v1 from the core:
//!
//! - **In:** `session/load` is `session/resume` with replay from the start, answered `{}`
//!   after the replay; a `session/prompt` is remembered so its answer can wait for its turn's
//!   end; a stdio MCP server written v1's way (no `type`) gets `"type": "stdio"`; the v2-only
//!   methods (`session/inject`, `session/revoke_inject`, `session/replace_inject`,
//!   `session/status`) are -32601, as for any method v1 does not have.
//! - **Out:** a prompt's insertion receipt is not sent; its answer is `{stopReason}` when the
//!   `idle` state update that ends its turn would go out (a turn that failed: the failure as
//!   the JSON-RPC error). State updates are not sent (v1 has none). Message upserts become
//!   chunks, one per content block, except the echo of a prompt the connection sent itself.
//!   A tool call's first update is v1's `tool_call`, later ones `tool_call_update`; tool-call
//!   content chunks, non-list plans, message clears and this toolkit's extension updates have
//!   no v1 form and are not sent. A permission request carries v1's `toolCall`.
//!
//! v1 has no `protocolVersion` below 1 and no v1 message names a version again, so the
//! negotiated version is the connection's for its lifetime (a new `initialize` renegotiates).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use acp_inject_wire::jsonrpc::{self, AgentLine, Incoming};
use acp_inject_wire::v1;
use acp_inject_wire::{
    methods as m, ContentBlock, ErrorObject, Patch, PlanUpdateContent, RequestId, RequestPermissionRequest, SessionUpdate,
    StateUpdate, StopReason, UpdateSessionNotification,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The protocol versions this agent speaks, lowest first.
pub const PROTOCOL_VERSIONS: [u16; 2] = acp_inject_wire::errors::SUPPORTED_PROTOCOL_VERSIONS;

/// What the core keeps for one v1 connection (part of the agent's live state).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct V1Connection {
    /// Prompt requests not yet answered, by the JSON text of their id: their session.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    prompts: BTreeMap<String, String>,
    /// Per session, the prompt requests that were inserted and await their turn's end, in
    /// insertion order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    turns: BTreeMap<String, VecDeque<RequestId>>,
    /// Messages this connection sent whose `user_message` echo it does not get.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    own_messages: BTreeSet<String>,
    /// `session/load` requests not yet answered, by the JSON text of their id.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    loads: BTreeSet<String>,
    /// Tool calls announced with `tool_call` (`session\ntoolCallId`), with the title they were
    /// last announced with. A snapshot of an earlier version lists only their keys.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "tool_calls")]
    tool_calls: BTreeMap<String, String>,
}

/// The announced tool calls of a snapshot: a map of titles, or (an earlier version) a list of
/// keys, each then titled with its tool call's id.
fn tool_calls<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Announced {
        Titled(BTreeMap<String, String>),
        Keys(BTreeSet<String>),
    }
    Ok(match Announced::deserialize(deserializer)? {
        Announced::Titled(map) => map,
        Announced::Keys(keys) => keys
            .into_iter()
            .map(|k| {
                let id = k.split_once('\n').map_or(k.as_str(), |(_, id)| id).to_owned();
                (k, id)
            })
            .collect(),
    })
}

/// A v1 request, as the core should see it.
pub(super) enum Inbound {
    /// Handled as sent.
    AsIs,
    /// Handled as this v2 method with these params.
    Rewritten { method: &'static str, params: Box<RawValue> },
    /// Answered with this error at once.
    Refused(ErrorObject),
}

fn key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

fn raw<T: Serialize>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|e| unreachable!("wire types always serialise: {e}"))
}

/// A typed v2 value as the untyped object a v1 type carries it in (their shapes agree).
fn object<T: Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(o)) => o,
        _ => Map::new(),
    }
}

/// An open string enum of v2 as the string a v1 type carries it in.
fn text<T: Serialize>(value: Option<&T>) -> Option<String> {
    value.and_then(|v| serde_json::to_value(v).ok()).and_then(|v| v.as_str().map(str::to_owned))
}

impl V1Connection {
    /// Reads a request from the connection: what the core should handle instead, if anything.
    pub(super) fn inbound(&mut self, id: &RequestId, method: &str, params: Option<&RawValue>) -> Inbound {
        let members = || -> Option<Map<String, Value>> { serde_json::from_str(params?.get()).ok() };
        let rewrite = |method: &'static str, params: Map<String, Value>| Inbound::Rewritten { method, params: raw(&params) };
        match method {
            m::SESSION_INJECT | m::SESSION_REVOKE_INJECT | m::SESSION_REPLACE_INJECT | m::SESSION_STATUS => {
                Inbound::Refused(ErrorObject::method_not_found())
            }
            // v1's `authenticate` is v2's `auth/login`, params and answer alike (R-AUTH-2).
            AUTHENTICATE => match params {
                Some(p) => Inbound::Rewritten { method: m::AUTH_LOGIN, params: p.to_owned() },
                None => Inbound::AsIs,
            },
            m::SESSION_PROMPT => {
                let session = members().and_then(|p| p.get("sessionId")?.as_str().map(str::to_owned));
                self.prompts.insert(key(id), session.unwrap_or_default());
                Inbound::AsIs
            }
            v1::methods::SESSION_LOAD => {
                let Some(mut p) = members() else { return Inbound::AsIs };
                stdio_tags(&mut p);
                p.insert("replayFrom".into(), Value::Object(Map::from_iter([("type".to_owned(), Value::from("start"))])));
                self.loads.insert(key(id));
                rewrite(m::SESSION_RESUME, p)
            }
            m::SESSION_NEW | m::SESSION_RESUME => {
                let Some(mut p) = members() else { return Inbound::AsIs };
                match (stdio_tags(&mut p), method == m::SESSION_NEW) {
                    (false, _) => Inbound::AsIs,
                    (true, true) => rewrite(m::SESSION_NEW, p),
                    (true, false) => rewrite(m::SESSION_RESUME, p),
                }
            }
            _ => Inbound::AsIs,
        }
    }

    /// Notes a message this connection sent itself (a steer), whose echo it does not get.
    pub(super) fn own_message(&mut self, id: &acp_inject_wire::MessageId) {
        self.own_messages.insert(id.0.clone());
    }

    /// Notes a prompt's insertion receipt ahead of time: a held prompt's `user_message` goes
    /// out just before its receipt, in the same batch of outputs, and must not be echoed.
    pub(super) fn note_receipt(&mut self, line: &str) {
        let Ok(AgentLine::Other(Incoming::Response { id, outcome: Ok(result) })) = jsonrpc::parse_agent_line(line) else { return };
        if self.prompts.contains_key(&key(&id)) {
            if let Ok(receipt) = serde_json::from_str::<acp_inject_wire::PromptResponse>(result.get()) {
                self.own_messages.insert(receipt.message_id.0);
            }
        }
    }

    /// The lines a v2 line of the core becomes for this connection (none, one or several).
    pub(super) fn outbound(&mut self, line: &str) -> Vec<String> {
        match jsonrpc::parse_agent_line(line) {
            Ok(AgentLine::Update(update)) => self.update(update),
            Ok(AgentLine::Other(Incoming::Response { id, outcome })) => self.response(line, &id, outcome.is_ok()),
            Ok(AgentLine::Other(Incoming::Request { id, method, params })) if method == m::SESSION_REQUEST_PERMISSION => {
                match params.and_then(|p| serde_json::from_str::<RequestPermissionRequest>(p.get()).ok()) {
                    Some(request) => vec![permission_request(&request, &id, &mut self.tool_calls)],
                    None => vec![line.to_owned()],
                }
            }
            _ => vec![line.to_owned()],
        }
    }

    fn response(&mut self, line: &str, id: &RequestId, ok: bool) -> Vec<String> {
        let k = key(id);
        if let Some(session) = self.prompts.remove(&k) {
            // The insertion receipt: the answer waits for the turn's end (R-V1-2).
            if ok {
                self.turns.entry(session).or_default().push_back(id.clone());
                return Vec::new();
            }
        } else if self.loads.remove(&k) && ok {
            return vec![jsonrpc::raw_result_line(id, &raw(&v1::LoadSessionResponse::new()))];
        }
        vec![line.to_owned()]
    }

    fn update(&mut self, notification: UpdateSessionNotification) -> Vec<String> {
        let session = notification.session_id.0;
        let notify = |update: v1::SessionUpdate| {
            let params = v1::SessionNotification::new(v1::SessionId(session.clone()), update);
            jsonrpc::notification_line_for(v1::methods::SESSION_UPDATE, &params)
        };
        let chunks =
            |message: String, content: &Patch<Vec<ContentBlock>>, make: fn(Map<String, Value>, String) -> v1::SessionUpdate| {
                let blocks = content.as_value().map(Vec::as_slice).unwrap_or_default();
                blocks.iter().map(|b| notify(make(object(b), message.clone()))).collect::<Vec<_>>()
            };
        let user = |content, message_id: String| {
            v1::SessionUpdate::UserMessageChunk(Box::new(v1::UserMessageChunk::new(content).message_id(v1::MessageId(message_id))))
        };
        let agent = |content, message_id: String| {
            v1::SessionUpdate::AgentMessageChunk(Box::new(v1::AgentMessageChunk::new(content).message_id(v1::MessageId(message_id))))
        };
        let thought = |content, message_id: String| {
            v1::SessionUpdate::AgentThoughtChunk(Box::new(v1::AgentThoughtChunk::new(content).message_id(v1::MessageId(message_id))))
        };
        match notification.update {
            SessionUpdate::StateUpdate(state) => self.turn_end(&session, &state).into_iter().collect(),
            SessionUpdate::UserMessage(u) => {
                if self.own_messages.remove(&u.message_id.0) {
                    return Vec::new();
                }
                chunks(u.message_id.0, &u.content, user)
            }
            SessionUpdate::AgentMessage(u) => chunks(u.message_id.0, &u.content, agent),
            SessionUpdate::AgentThought(u) => chunks(u.message_id.0, &u.content, thought),
            SessionUpdate::UserMessageChunk(c) => vec![notify(user(object(&c.content), c.message_id.0))],
            SessionUpdate::AgentMessageChunk(c) => vec![notify(agent(object(&c.content), c.message_id.0))],
            SessionUpdate::AgentThoughtChunk(c) => vec![notify(thought(object(&c.content), c.message_id.0))],
            SessionUpdate::ToolCallUpdate(t) => {
                let update = v1::ToolCallUpdate::new(v1::ToolCallId(t.tool_call_id.0.clone()))
                    .title(t.title.clone())
                    .name(t.name.clone())
                    .kind(text(t.kind.as_ref()))
                    .status(text(t.status.as_ref()))
                    .content(t.content.as_ref().map(|c| c.iter().map(object).collect()))
                    .locations(t.locations.clone())
                    .raw_input(t.raw_input.clone())
                    .raw_output(t.raw_output.clone())
                    .meta(t.meta.clone());
                let key = format!("{session}\n{}", t.tool_call_id.0);
                if let Some(known) = self.tool_calls.get_mut(&key) {
                    if let Some(title) = &t.title {
                        title.clone_into(known);
                    }
                    return vec![notify(v1::SessionUpdate::ToolCallUpdate(Box::new(update)))];
                }
                // The first update of a tool call announces it: v1's `tool_call`, the same
                // members plus the `title` v1 requires (R-V1-3). A v1 `tool_call_update` with a
                // title always reads as a `tool_call`; were it ever not to, the update still goes
                // out as an update.
                let title = t.title.clone().or_else(|| t.name.clone()).unwrap_or_else(|| t.tool_call_id.0.clone());
                self.tool_calls.insert(key, title.clone());
                let mut members = object(&update);
                members.insert("title".into(), Value::from(title));
                match serde_json::from_value::<v1::ToolCall>(Value::Object(members)) {
                    Ok(call) => vec![notify(v1::SessionUpdate::ToolCall(Box::new(call)))],
                    Err(_) => vec![notify(v1::SessionUpdate::ToolCallUpdate(Box::new(update)))],
                }
            }
            SessionUpdate::PlanUpdate(p) => match &p.plan {
                PlanUpdateContent::Items(items) => vec![notify(v1::SessionUpdate::Plan(Box::new(
                    v1::Plan::new(items.entries.iter().map(object).collect::<Vec<_>>()).meta(p.meta.clone()),
                )))],
                PlanUpdateContent::Other(_) => Vec::new(),
            },
            SessionUpdate::UsageUpdate(u) => vec![notify(v1::SessionUpdate::UsageUpdate(Box::new(
                v1::UsageUpdate::new(u.used, u.size).cost(u.cost.as_ref().map(object)).meta(u.meta.clone()),
            )))],
            SessionUpdate::SessionInfoUpdate(i) => {
                vec![notify(v1::SessionUpdate::SessionInfoUpdate(Box::new(
                    v1::SessionInfoUpdate::new()
                        .title(i.title.as_value().cloned())
                        .updated_at(i.updated_at.as_value().cloned())
                        .meta(i.meta.clone()),
                )))]
            }
            // No v1 form (R-V1-3).
            _ => Vec::new(),
        }
    }

    /// The answer to the prompt whose turn an `idle` update with a stop reason ends.
    fn turn_end(&mut self, session: &str, state: &StateUpdate) -> Option<String> {
        let StateUpdate::Idle(idle) = state else { return None };
        let stop = idle.stop_reason.as_ref()?;
        let turns = self.turns.get_mut(session)?;
        let id = turns.pop_front()?;
        if turns.is_empty() {
            self.turns.remove(session);
        }
        let stop_reason = match stop {
            StopReason::EndTurn => v1::StopReason::EndTurn,
            StopReason::MaxTokens => v1::StopReason::MaxTokens,
            StopReason::MaxTurnRequests => v1::StopReason::MaxTurnRequests,
            StopReason::Refusal => v1::StopReason::Refusal,
            StopReason::Cancelled => v1::StopReason::Cancelled,
            StopReason::Error => {
                let error = idle.error.as_ref().map_or_else(
                    || ErrorObject::with_detail(-32603, "the turn failed"),
                    |f| ErrorObject { code: i64::from(f.code), message: f.message.clone(), data: f.data.clone() },
                );
                return Some(jsonrpc::error_line(&id, &error));
            }
            // A stop reason v1 does not have (R-V1-2).
            StopReason::Other(_) => v1::StopReason::EndTurn,
        };
        Some(jsonrpc::raw_result_line(&id, &raw(&v1::PromptResponse::new(stop_reason))))
    }
}

/// v1 writes a stdio MCP server without `type`; v2 tags it. Returns whether it changed any.
fn stdio_tags(params: &mut Map<String, Value>) -> bool {
    let mut changed = false;
    if let Some(Value::Array(servers)) = params.get_mut("mcpServers") {
        for server in servers.iter_mut().filter_map(Value::as_object_mut) {
            if !server.contains_key("type") {
                server.insert("type".into(), Value::from("stdio"));
                changed = true;
            }
        }
    }
    changed
}

/// v2's `session/request_permission` in v1's shape: `toolCall` (required in v1) is the tool
/// call the subject names, as the runtime gave it, with the title it was last announced with
/// when it has none (a client applies it as an update: the request's question must not rename
/// the row), else one named after the request (R-V1-4). `known`: the titles of the tool calls
/// announced on this connection (`session\ntoolCallId`), which a subject's title updates as
/// the client's view of it.
fn permission_request(request: &RequestPermissionRequest, id: &RequestId, known: &mut BTreeMap<String, String>) -> String {
    let subject = request.subject.as_ref();
    let kind = subject.and_then(|s| s.get("type")).and_then(Value::as_str);
    let titled = |tool_call_id: Value| {
        Map::from_iter([("toolCallId".to_owned(), tool_call_id), ("title".to_owned(), Value::from(request.title.clone()))])
    };
    let with_known_title = |mut call: Map<String, Value>| {
        let key = call.get("toolCallId").and_then(Value::as_str).map(|t| format!("{}\n{t}", request.session_id.0));
        if let Some(key) = key {
            match call.get("title").and_then(Value::as_str) {
                Some(title) => {
                    known.insert(key, title.to_owned());
                }
                None => {
                    if let Some(title) = known.get(&key) {
                        call.insert("title".into(), Value::from(title.clone()));
                    }
                }
            }
        }
        call
    };
    let tool_call = match kind {
        Some("tool_call") => subject.and_then(|s| s.get("toolCall")).and_then(Value::as_object).cloned(),
        Some("command") => subject
            .and_then(|s| s.get("toolCallId"))
            .filter(|t| t.is_string())
            .cloned()
            .map(|id| Map::from_iter([("toolCallId".to_owned(), id)])),
        _ => None,
    }
    .map(with_known_title)
    .unwrap_or_else(|| titled(serde_json::to_value(id).unwrap_or(Value::Null)));
    let params = v1::RequestPermissionRequest::new(
        v1::SessionId(request.session_id.0.clone()),
        tool_call,
        request.options.iter().map(object).collect::<Vec<_>>(),
    );
    jsonrpc::request_line_for(id, v1::methods::SESSION_REQUEST_PERMISSION, &params)
}

/// v1's name of `auth/login`.
pub(super) const AUTHENTICATE: &str = "authenticate";

/// An auth method as v1 writes it: `id` for `methodId`, no `type` for an `agent` method, a
/// terminal method's `env` as a map.
fn v1_auth_method(method: &acp_inject_wire::AuthMethod) -> Option<Map<String, Value>> {
    let mut m = match serde_json::to_value(method).ok()? {
        Value::Object(m) => m,
        _ => return None,
    };
    if let Some(id) = m.remove("methodId") {
        m.insert("id".into(), id);
    }
    if m.get("type").and_then(Value::as_str) == Some("agent") {
        m.remove("type");
    }
    if let Some(Value::Array(env)) = m.remove("env") {
        let map: Map<String, Value> =
            env.into_iter().filter_map(|e| Some((e.get("name")?.as_str()?.to_owned(), e.get("value")?.clone()))).collect();
        m.insert("env".into(), Value::Object(map));
    }
    Some(m)
}

/// The answer to a v1 `initialize` (R-V1-1).
pub(super) fn initialize_result(config: &super::AgentConfig, offers_steering: bool) -> Box<RawValue> {
    let setup = config.setup;
    let no = Some(false);
    raw(&v1::InitializeResponse::new(v1::ProtocolVersion(1))
        .agent_capabilities(
            v1::AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(v1::PromptCapabilities::new().image(no).audio(no).embedded_context(no))
                .mcp_capabilities(v1::McpCapabilities::new().http(setup.mcp_http).sse(no))
                .session_capabilities(
                    v1::SessionCapabilities::new()
                        .list(v1::SessionListCapabilities::new())
                        .additional_directories(
                            setup.additional_directories.then_some(v1::SessionAdditionalDirectoriesCapabilities::new()),
                        )
                        .resume(v1::SessionResumeCapabilities::new())
                        .close(v1::SessionCloseCapabilities::new()),
                ),
        )
        .auth_methods(config.auth.methods.iter().filter_map(v1_auth_method).collect::<Vec<_>>())
        .agent_info(v1::Implementation::new(config.info.name.clone(), config.info.version.clone()))
        .meta(offers_steering.then(super::requests::steering_advertisement)))
}
