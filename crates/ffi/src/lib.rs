//! The UniFFI layer: small wrappers that expose `acp-inject-core` to Swift, Kotlin and Python.
//!
//! The surface is coarse on purpose (a crossing costs microseconds, see TOOLCHAINS.md): one
//! call per incoming JSON-RPC line or batch of lines, returning every output it caused at
//! once; all the work happens in Rust. Objects are `Send + Sync` (a `Mutex` inside) and every
//! exported call runs inside `catch_unwind`, so a Rust panic becomes [`AcpError::Internal`]
//! instead of crossing the boundary.
//!
//! This crate owns only conversions; the semantics live in the core and are proven there and
//! by the conformance vectors every language replays.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};

use acp_inject_core::agent::{self, Agent, AgentConfig, Output, Recipient};
use acp_inject_core::client;
use acp_inject_core::wire;

uniffi::setup_scaffolding!();

// ----- errors -----

/// Every error the bindings raise.
#[derive(Debug, Clone, PartialEq, uniffi::Error)]
pub enum AcpError {
    /// The caller's input is not valid (malformed JSON, wrong shape, unknown value).
    InvalidInput { reason: String },
    /// The agent answered one of this client's requests with a JSON-RPC error.
    Protocol { code: i64, message: String, reason: Option<String>, message_id: Option<String> },
    /// The client mirror refused a call without sending anything (C-PEND-3): `reason` is
    /// `mode_not_supported`, `replace_not_supported` or `unknown_message_id`.
    Rejected { reason: String },
    /// A runtime event the agent core cannot apply (`no_turn_in_progress`, `session_closed`, …).
    Host { kind: String, message: String },
    /// A bug: a panic inside the library, caught at the boundary.
    Internal { message: String },
}

impl std::fmt::Display for AcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcpError::InvalidInput { reason } => write!(f, "invalid input: {reason}"),
            AcpError::Protocol { code, message, reason, message_id } => {
                write!(f, "{message} ({code})")?;
                if let Some(r) = reason {
                    write!(f, " reason={r}")?;
                }
                if let Some(m) = message_id {
                    write!(f, " messageId={m}")?;
                }
                Ok(())
            }
            AcpError::Rejected { reason } => write!(f, "rejected locally: {reason}"),
            AcpError::Host { kind, message } => write!(f, "{kind}: {message}"),
            AcpError::Internal { message } => write!(f, "internal error (a bug): {message}"),
        }
    }
}

impl std::error::Error for AcpError {}

fn invalid(e: impl std::fmt::Display) -> AcpError {
    AcpError::InvalidInput { reason: e.to_string() }
}

/// Runs `f`, turning a panic into [`AcpError::Internal`].
fn guard<T>(f: impl FnOnce() -> Result<T, AcpError>) -> Result<T, AcpError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let message = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "panic".into());
        Err(AcpError::Internal { message })
    })
}

/// A poisoned lock means a panic was caught mid-call; the state is still memory-safe, and the
/// panic itself was already reported as `Internal`.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ----- content -----

/// A content block. The common kinds are typed; anything else (and any member this view does
/// not show, such as annotations) travels in `Other` / the raw JSON kept beside it.
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum ContentBlock {
    Text { text: String },
    Image { data: String, mime_type: String },
    Audio { data: String, mime_type: String },
    ResourceLink { name: String, uri: String },
    /// An embedded resource with text or base64 `blob` contents.
    Resource { uri: String, mime_type: Option<String>, text: Option<String>, blob: Option<String> },
    /// Any other block, as its JSON object.
    Other { json: String },
}

impl ContentBlock {
    fn to_wire(&self) -> Result<wire::ContentBlock, AcpError> {
        use serde_json::json;
        let v = match self {
            ContentBlock::Text { text } => json!({ "type": "text", "text": text }),
            ContentBlock::Image { data, mime_type } => json!({ "type": "image", "data": data, "mimeType": mime_type }),
            ContentBlock::Audio { data, mime_type } => json!({ "type": "audio", "data": data, "mimeType": mime_type }),
            ContentBlock::ResourceLink { name, uri } => json!({ "type": "resource_link", "name": name, "uri": uri }),
            ContentBlock::Resource { uri, mime_type, text, blob } => {
                let mut r = json!({ "uri": uri });
                if let Some(m) = mime_type {
                    r["mimeType"] = json!(m);
                }
                match (text, blob) {
                    (Some(t), None) => r["text"] = json!(t),
                    (None, Some(b)) => r["blob"] = json!(b),
                    _ => return Err(invalid("a resource needs exactly one of `text` or `blob`")),
                }
                json!({ "type": "resource", "resource": r })
            }
            ContentBlock::Other { json } => serde_json::from_str(json).map_err(invalid)?,
        };
        wire::jsonrpc::decode(&v.to_string()).map_err(invalid)
    }

    fn from_wire(b: &wire::ContentBlock) -> ContentBlock {
        match b {
            wire::ContentBlock::Text(t) => ContentBlock::Text { text: t.text.clone() },
            wire::ContentBlock::Image(i) => ContentBlock::Image { data: i.data.clone(), mime_type: i.mime_type.clone() },
            wire::ContentBlock::Audio(a) => ContentBlock::Audio { data: a.data.clone(), mime_type: a.mime_type.clone() },
            wire::ContentBlock::ResourceLink(l) => ContentBlock::ResourceLink { name: l.name.clone(), uri: l.uri.clone() },
            wire::ContentBlock::Resource(r) => match &r.resource {
                wire::EmbeddedResourceResource::TextResourceContents(t) => ContentBlock::Resource {
                    uri: t.uri.clone(),
                    mime_type: t.mime_type.clone(),
                    text: Some(t.text.clone()),
                    blob: None,
                },
                wire::EmbeddedResourceResource::BlobResourceContents(b) => ContentBlock::Resource {
                    uri: b.uri.clone(),
                    mime_type: b.mime_type.clone(),
                    text: None,
                    blob: Some(b.blob.clone()),
                },
            },
            other => ContentBlock::Other { json: serde_json::to_string(other).unwrap_or_default() },
        }
    }
}

fn to_wire_content(content: &[ContentBlock]) -> Result<Vec<wire::ContentBlock>, AcpError> {
    content.iter().map(ContentBlock::to_wire).collect()
}

fn content_view(content: &[wire::ContentBlock]) -> (Vec<ContentBlock>, String) {
    (content.iter().map(ContentBlock::from_wire).collect(), serde_json::to_string(content).unwrap_or_default())
}

// ----- capabilities and policy -----

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum InjectMode {
    Queue,
    Steer,
}

impl From<InjectMode> for wire::InjectMode {
    fn from(m: InjectMode) -> Self {
        match m {
            InjectMode::Queue => wire::InjectMode::Queue,
            InjectMode::Steer => wire::InjectMode::Steer,
        }
    }
}

impl From<wire::InjectMode> for InjectMode {
    fn from(m: wire::InjectMode) -> Self {
        match m {
            wire::InjectMode::Queue => InjectMode::Queue,
            wire::InjectMode::Steer => InjectMode::Steer,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum SteerInStream {
    Interrupt,
    Finish,
}

impl From<SteerInStream> for wire::SteerInStream {
    fn from(m: SteerInStream) -> Self {
        match m {
            SteerInStream::Interrupt => wire::SteerInStream::Interrupt,
            SteerInStream::Finish => wire::SteerInStream::Finish,
        }
    }
}

/// The agent's advertised `session.inject`.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct InjectCapabilities {
    pub modes: Vec<InjectMode>,
    pub replace: bool,
    pub steer_in_stream: Vec<SteerInStream>,
}

impl InjectCapabilities {
    fn to_wire(&self) -> Result<wire::InjectCapabilities, AcpError> {
        let caps = wire::InjectCapabilities {
            modes: self.modes.iter().map(|m| (*m).into()).collect(),
            pending: Some(wire::PendingCapabilities { replace: self.replace, meta: None }),
            steer_in_stream: self.steer_in_stream.iter().map(|m| (*m).into()).collect(),
            meta: None,
        };
        caps.check().map_err(invalid)?;
        Ok(caps)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum QueueDrain {
    Batch,
    OnePerTurn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum RevokeReplace {
    AnyController,
    CreatorOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum ClearStyle {
    Upsert,
    AgentMessageClear,
}

/// How the agent core behaves; `inject: None` means inject is not advertised.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct AgentOptions {
    pub inject: Option<InjectCapabilities>,
    pub queue_drain: QueueDrain,
    pub steer_in_stream: SteerInStream,
    pub revoke_replace: RevokeReplace,
    pub remember_ids: u32,
    pub clear_style: ClearStyle,
    pub agent_name: String,
    pub agent_version: String,
}

/// The defaults: both modes, replace, `finish`, batch drain, any controller, 4096 ids.
#[uniffi::export]
pub fn default_agent_options() -> AgentOptions {
    AgentOptions {
        inject: Some(InjectCapabilities {
            modes: vec![InjectMode::Queue, InjectMode::Steer],
            replace: true,
            steer_in_stream: vec![SteerInStream::Finish],
        }),
        queue_drain: QueueDrain::Batch,
        steer_in_stream: SteerInStream::Finish,
        revoke_replace: RevokeReplace::AnyController,
        remember_ids: agent::DEFAULT_REMEMBER_IDS as u32,
        clear_style: ClearStyle::Upsert,
        agent_name: "acp-inject".into(),
        agent_version: env!("CARGO_PKG_VERSION").into(),
    }
}

impl AgentOptions {
    fn to_config(&self) -> Result<AgentConfig, AcpError> {
        Ok(AgentConfig {
            inject: self.inject.as_ref().map(InjectCapabilities::to_wire).transpose()?,
            policy: agent::Policy {
                queue_drain: match self.queue_drain {
                    QueueDrain::Batch => agent::QueueDrain::Batch,
                    QueueDrain::OnePerTurn => agent::QueueDrain::OnePerTurn,
                },
                steer_in_stream: self.steer_in_stream.into(),
                revoke_replace: match self.revoke_replace {
                    RevokeReplace::AnyController => agent::RevokeReplace::AnyController,
                    RevokeReplace::CreatorOnly => agent::RevokeReplace::CreatorOnly,
                },
                remember_ids: self.remember_ids as usize,
                clear_style: match self.clear_style {
                    ClearStyle::Upsert => agent::ClearStyle::Upsert,
                    ClearStyle::AgentMessageClear => agent::ClearStyle::AgentMessageClear,
                },
                max_line_bytes: wire::jsonrpc::DEFAULT_MAX_LINE_BYTES,
            },
            info: agent::AgentInfo { name: self.agent_name.clone(), version: self.agent_version.clone() },
        })
    }
}

// ----- agent side -----

/// A user message handed to the runtime: typed content plus the exact JSON of it.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct UserInput {
    pub message_id: String,
    pub content: Vec<ContentBlock>,
    pub content_json: String,
}

impl From<&agent::UserInput> for UserInput {
    fn from(u: &agent::UserInput) -> Self {
        let (content, content_json) = content_view(&u.content);
        UserInput { message_id: u.message_id.0.clone(), content, content_json }
    }
}

/// A pending inject (handed back at close, or listed by `pending`).
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct PendingInject {
    pub message_id: String,
    pub mode: InjectMode,
    pub content: Vec<ContentBlock>,
    pub content_json: String,
}

impl From<&agent::DroppedInject> for PendingInject {
    fn from(d: &agent::DroppedInject) -> Self {
        let (content, content_json) = content_view(&d.content);
        PendingInject { message_id: d.message_id.0.clone(), mode: d.mode.into(), content, content_json }
    }
}

/// What the runtime must do (see the core's `RuntimeAction`).
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum RuntimeAction {
    StartTurn { messages: Vec<UserInput> },
    Deliver { messages: Vec<UserInput> },
    InterruptStream,
    CancelTurn,
    Dropped { injects: Vec<PendingInject> },
}

/// One output of the agent core, in order.
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum AgentOutput {
    /// A JSON-RPC line; `to` is the connection, or `None` for every attached connection.
    Line { to: Option<String>, line: String },
    /// An instruction for the runtime of `session`.
    Action { session: String, action: RuntimeAction },
}

fn convert_outputs(outputs: Vec<Output>) -> Vec<AgentOutput> {
    outputs
        .into_iter()
        .map(|o| match o {
            Output::Line { to, line } => AgentOutput::Line {
                to: match to {
                    Recipient::One(c) => Some(c),
                    Recipient::All => None,
                },
                line,
            },
            Output::Action { session, action } => AgentOutput::Action {
                session,
                action: match action {
                    agent::RuntimeAction::StartTurn(m) => RuntimeAction::StartTurn { messages: m.iter().map(Into::into).collect() },
                    agent::RuntimeAction::Deliver(m) => RuntimeAction::Deliver { messages: m.iter().map(Into::into).collect() },
                    agent::RuntimeAction::InterruptStream => RuntimeAction::InterruptStream,
                    agent::RuntimeAction::CancelTurn => RuntimeAction::CancelTurn,
                    agent::RuntimeAction::Dropped(d) => RuntimeAction::Dropped { injects: d.iter().map(Into::into).collect() },
                },
            },
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum BreakPoint {
    ToolResult,
    ModelStep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum Role {
    Controller,
    Observer,
}

/// What the agent runtime reports.
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum RuntimeEvent {
    BreakPoint { kind: BreakPoint },
    StreamStarted,
    StreamFinished,
    PermissionRequested,
    PermissionResolved,
    Paused,
    Resumed,
    /// `stop_reason` is the wire value (`end_turn`, `max_tokens`, …, or an extension);
    /// `usage_json` is passed through verbatim.
    TurnEnded { stop_reason: String, usage_json: Option<String> },
    Close,
    /// The runtime's own `session/update` payload (the `update` object), as JSON.
    Update { update_json: String },
    ClearAgentMessage { message_id: String },
}

impl RuntimeEvent {
    fn to_core(&self) -> Result<agent::RuntimeEvent, AcpError> {
        use agent::RuntimeEvent as E;
        Ok(match self {
            RuntimeEvent::BreakPoint { kind } => E::BreakPoint(match kind {
                BreakPoint::ToolResult => agent::BreakPoint::ToolResult,
                BreakPoint::ModelStep => agent::BreakPoint::ModelStep,
            }),
            RuntimeEvent::StreamStarted => E::StreamStarted,
            RuntimeEvent::StreamFinished => E::StreamFinished,
            RuntimeEvent::PermissionRequested => E::PermissionRequested,
            RuntimeEvent::PermissionResolved => E::PermissionResolved,
            RuntimeEvent::Paused => E::Paused,
            RuntimeEvent::Resumed => E::Resumed,
            RuntimeEvent::TurnEnded { stop_reason, usage_json } => E::TurnEnded {
                stop_reason: stop_reason.parse().map_err(invalid)?,
                usage: usage_json.as_deref().map(serde_json::from_str).transpose().map_err(invalid)?,
            },
            RuntimeEvent::Close => E::Close,
            RuntimeEvent::Update { update_json } => E::Update(wire::jsonrpc::decode(update_json).map_err(invalid)?),
            RuntimeEvent::ClearAgentMessage { message_id } => E::ClearAgentMessage { message_id: wire::MessageId(message_id.clone()) },
        })
    }
}

/// The agent-side core of one agent process (all its sessions).
#[derive(uniffi::Object)]
pub struct AgentCore {
    inner: Mutex<Agent>,
}

#[uniffi::export]
impl AgentCore {
    #[uniffi::constructor]
    pub fn new(options: AgentOptions) -> Result<Arc<Self>, AcpError> {
        guard(|| Ok(Arc::new(AgentCore { inner: Mutex::new(Agent::new(options.to_config()?)) })))
    }

    /// Restores an agent from [`AgentCore::snapshot`].
    #[uniffi::constructor]
    pub fn restore(snapshot: String) -> Result<Arc<Self>, AcpError> {
        guard(|| Ok(Arc::new(AgentCore { inner: Mutex::new(Agent::restore(&snapshot).map_err(invalid)?) })))
    }

    pub fn attach(&self, connection: String, role: Role) -> Result<(), AcpError> {
        guard(|| {
            let role = match role {
                Role::Controller => agent::Role::Controller,
                Role::Observer => agent::Role::Observer,
            };
            lock(&self.inner).attach(&connection, role);
            Ok(())
        })
    }

    /// Creates an idle session with a chosen id (hosts that mint their own ids).
    pub fn create_session(&self, session_id: String) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.inner).create_session(&session_id);
            Ok(())
        })
    }

    pub fn is_live(&self, session_id: String) -> Result<bool, AcpError> {
        guard(|| Ok(lock(&self.inner).is_live(&session_id)))
    }

    /// Applies one line from `connection`; returns every output it caused, in order.
    pub fn handle_line(&self, connection: String, line: String) -> Result<Vec<AgentOutput>, AcpError> {
        guard(|| {
            let mut a = lock(&self.inner);
            a.handle_line(&connection, &line);
            Ok(convert_outputs(a.drain()))
        })
    }

    /// Applies raw bytes holding one or more newline-separated lines (invalid UTF-8 in a line
    /// is answered with a parse error); returns every output, in order.
    pub fn handle_bytes(&self, connection: String, bytes: Vec<u8>) -> Result<Vec<AgentOutput>, AcpError> {
        guard(|| {
            let mut a = lock(&self.inner);
            for line in bytes.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)) {
                a.handle_bytes(&connection, line);
            }
            Ok(convert_outputs(a.drain()))
        })
    }

    /// Applies newline-separated lines given as one string (a string crosses the boundary as
    /// one copy; bytes are lifted one by one, so prefer this for bulk); returns every output.
    pub fn handle_text(&self, connection: String, lines: String) -> Result<Vec<AgentOutput>, AcpError> {
        guard(|| {
            let mut a = lock(&self.inner);
            for line in lines.split('\n').filter(|l| !l.trim().is_empty()) {
                a.handle_line(&connection, line);
            }
            Ok(convert_outputs(a.drain()))
        })
    }

    /// Applies a runtime event of `session_id`; returns every output it caused.
    pub fn runtime_event(&self, session_id: String, event: RuntimeEvent) -> Result<Vec<AgentOutput>, AcpError> {
        guard(|| {
            let event = event.to_core()?;
            let mut a = lock(&self.inner);
            a.runtime_event(&session_id, event)
                .map_err(|e| AcpError::Host { kind: e.kind().into(), message: e.to_string() })?;
            Ok(convert_outputs(a.drain()))
        })
    }

    /// Delivered user messages of a session, in delivery order (R-REPLAY-1).
    pub fn history(&self, session_id: String) -> Result<Vec<UserInput>, AcpError> {
        guard(|| Ok(lock(&self.inner).history(&session_id).unwrap_or(&[]).iter().map(Into::into).collect()))
    }

    /// Pending injects of a session, in delivery order.
    pub fn pending(&self, session_id: String) -> Result<Vec<PendingInject>, AcpError> {
        guard(|| Ok(lock(&self.inner).pending(&session_id).iter().map(Into::into).collect()))
    }

    /// The whole state as a versioned JSON document (drain outputs first).
    pub fn snapshot(&self) -> Result<String, AcpError> {
        guard(|| Ok(lock(&self.inner).snapshot()))
    }
}

// ----- client side -----

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum ItemStatus {
    Sending,
    Pending,
    Delivered,
    Revoked,
    Failed,
}

impl From<client::ItemStatus> for ItemStatus {
    fn from(s: client::ItemStatus) -> Self {
        match s {
            client::ItemStatus::Sending => ItemStatus::Sending,
            client::ItemStatus::Pending => ItemStatus::Pending,
            client::ItemStatus::Delivered => ItemStatus::Delivered,
            client::ItemStatus::Revoked => ItemStatus::Revoked,
            client::ItemStatus::Failed => ItemStatus::Failed,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum ItemMode {
    Prompt,
    Queue,
    Steer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum TurnState {
    Idle,
    Running,
    RequiresAction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum TranscriptRole {
    User,
    Agent,
    Thought,
}

#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct PendingItem {
    pub message_id: Option<String>,
    pub mode: ItemMode,
    pub status: ItemStatus,
    pub content: Vec<ContentBlock>,
}

#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct TranscriptEntry {
    pub role: TranscriptRole,
    pub message_id: String,
    pub content: Vec<ContentBlock>,
}

#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct Violation {
    pub rule: String,
    pub message_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Record)]
pub struct Affordances {
    pub steer: bool,
    pub edit_pending: bool,
    pub revoke: bool,
}

/// Everything a client UI renders, in one crossing.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct ClientSnapshot {
    pub state: TurnState,
    pub stop_reason: Option<String>,
    pub usage_json: Option<String>,
    pub pending: Vec<PendingItem>,
    pub transcript: Vec<TranscriptEntry>,
    pub violations: Vec<Violation>,
    pub affordances: Affordances,
}

/// An error the agent answered, as a record (bulk APIs return these instead of raising).
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct ProtocolError {
    pub code: i64,
    pub message: String,
    pub reason: Option<String>,
    pub message_id: Option<String>,
}

impl From<client::SurfacedError> for ProtocolError {
    fn from(e: client::SurfacedError) -> Self {
        ProtocolError {
            code: e.code,
            message: e.message,
            reason: e.reason.map(|r| r.as_str().to_owned()),
            message_id: e.message_id,
        }
    }
}

/// The client-side mirror of one session.
#[derive(uniffi::Object)]
pub struct ClientSession {
    inner: Mutex<client::ClientMirror>,
}

fn rejected(e: client::CallRejected) -> AcpError {
    match e {
        client::CallRejected::InvalidArguments(d) => AcpError::InvalidInput { reason: d },
        other => AcpError::Rejected { reason: other.as_str().to_owned() },
    }
}

#[uniffi::export]
impl ClientSession {
    /// A mirror of `session_id`; `inject` is the agent's advertised `session.inject`.
    #[uniffi::constructor]
    pub fn new(session_id: String, inject: Option<InjectCapabilities>) -> Result<Arc<Self>, AcpError> {
        guard(|| {
            let caps = inject.as_ref().map(InjectCapabilities::to_wire).transpose()?;
            Ok(Arc::new(ClientSession { inner: Mutex::new(client::ClientMirror::new(&session_id, caps)) }))
        })
    }

    /// A mirror whose capabilities are read from the agent's `initialize` result JSON.
    #[uniffi::constructor]
    pub fn from_initialize_result(session_id: String, initialize_result_json: String) -> Result<Arc<Self>, AcpError> {
        guard(|| {
            let r: wire::InitializeResponse = wire::jsonrpc::decode(&initialize_result_json).map_err(invalid)?;
            r.check().map_err(invalid)?;
            let caps = r.capabilities.and_then(|c| c.session).and_then(|s| s.inject);
            Ok(Arc::new(ClientSession { inner: Mutex::new(client::ClientMirror::new(&session_id, caps)) }))
        })
    }

    /// `session/prompt`: returns the line to send.
    pub fn prompt(&self, content: Vec<ContentBlock>) -> Result<String, AcpError> {
        guard(|| Ok(lock(&self.inner).prompt(to_wire_content(&content)?)))
    }

    /// `session/inject`: returns the line to send, or `Rejected` when the mode is not advertised.
    pub fn inject(&self, mode: InjectMode, content: Vec<ContentBlock>) -> Result<String, AcpError> {
        guard(|| lock(&self.inner).inject(mode.into(), to_wire_content(&content)?).map_err(rejected))
    }

    pub fn revoke(&self, message_id: String) -> Result<String, AcpError> {
        guard(|| lock(&self.inner).revoke(&message_id).map_err(rejected))
    }

    pub fn replace(&self, message_id: String, content: Vec<ContentBlock>) -> Result<String, AcpError> {
        guard(|| {
            let content = to_wire_content(&content)?;
            lock(&self.inner).replace(&message_id, content).map_err(rejected)
        })
    }

    pub fn cancel(&self) -> Result<String, AcpError> {
        guard(|| Ok(lock(&self.inner).cancel()))
    }

    pub fn status(&self) -> Result<String, AcpError> {
        guard(|| Ok(lock(&self.inner).status()))
    }

    /// Applies one line from the agent; raises `Protocol` when it was an error answer to one
    /// of this client's requests (the line is applied either way).
    pub fn receive(&self, line: String) -> Result<(), AcpError> {
        guard(|| match lock(&self.inner).receive(&line) {
            None => Ok(()),
            Some(e) => {
                let e = ProtocolError::from(e);
                Err(AcpError::Protocol { code: e.code, message: e.message, reason: e.reason, message_id: e.message_id })
            }
        })
    }

    /// Applies many newline-separated lines in one crossing; returns the error answers met.
    pub fn receive_bytes(&self, bytes: Vec<u8>) -> Result<Vec<ProtocolError>, AcpError> {
        guard(|| {
            let mut m = lock(&self.inner);
            let mut errors = Vec::new();
            for line in bytes.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)) {
                match std::str::from_utf8(line) {
                    Ok(text) => errors.extend(m.receive(text).map(ProtocolError::from)),
                    Err(_) => m.ignored_lines += 1,
                }
            }
            Ok(errors)
        })
    }

    /// Applies newline-separated lines given as one string, in one crossing (the fastest bulk
    /// form: a string crosses as one copy); returns the error answers met.
    pub fn receive_text(&self, lines: String) -> Result<Vec<ProtocolError>, AcpError> {
        guard(|| {
            let mut m = lock(&self.inner);
            Ok(lines.split('\n').filter(|l| !l.trim().is_empty()).filter_map(|l| m.receive(l)).map(ProtocolError::from).collect())
        })
    }

    /// Applies many lines in one crossing; returns the error answers met.
    pub fn receive_lines(&self, lines: Vec<String>) -> Result<Vec<ProtocolError>, AcpError> {
        guard(|| {
            let mut m = lock(&self.inner);
            Ok(lines.iter().filter_map(|l| m.receive(l)).map(ProtocolError::from).collect())
        })
    }

    pub fn item_status(&self, message_id: String) -> Result<Option<ItemStatus>, AcpError> {
        guard(|| Ok(lock(&self.inner).item_status(&message_id).map(Into::into)))
    }

    /// Lines that were not usable (framing errors, stray responses), counted.
    pub fn ignored_lines(&self) -> Result<u64, AcpError> {
        guard(|| Ok(lock(&self.inner).ignored_lines))
    }

    pub fn snapshot(&self) -> Result<ClientSnapshot, AcpError> {
        guard(|| {
            let m = lock(&self.inner);
            let v = m.snapshot_json();
            let conv = |c: &[wire::ContentBlock]| c.iter().map(ContentBlock::from_wire).collect::<Vec<_>>();
            Ok(ClientSnapshot {
                state: match m.state() {
                    client::TurnState::Idle => TurnState::Idle,
                    client::TurnState::Running => TurnState::Running,
                    client::TurnState::RequiresAction => TurnState::RequiresAction,
                },
                stop_reason: v["stopReason"].as_str().map(str::to_owned),
                usage_json: (!v["usage"].is_null()).then(|| v["usage"].to_string()),
                pending: m
                    .pending()
                    .map(|p| PendingItem {
                        message_id: p.message_id.clone(),
                        mode: match p.mode {
                            client::ItemMode::Prompt => ItemMode::Prompt,
                            client::ItemMode::Queue => ItemMode::Queue,
                            client::ItemMode::Steer => ItemMode::Steer,
                        },
                        status: p.status.into(),
                        content: conv(&p.content),
                    })
                    .collect(),
                transcript: m
                    .transcript()
                    .iter()
                    .map(|e| TranscriptEntry {
                        role: match e.role {
                            client::Role::User => TranscriptRole::User,
                            client::Role::Agent => TranscriptRole::Agent,
                            client::Role::Thought => TranscriptRole::Thought,
                        },
                        message_id: e.message_id.clone(),
                        content: conv(&e.content),
                    })
                    .collect(),
                violations: m.violations().iter().map(|v| Violation { rule: v.rule.clone(), message_id: v.message_id.clone() }).collect(),
                affordances: {
                    let a = m.affordances();
                    Affordances { steer: a.steer, edit_pending: a.edit_pending, revoke: a.revoke }
                },
            })
        })
    }

    /// The snapshot in the conformance vectors' JSON shape.
    pub fn snapshot_json(&self) -> Result<String, AcpError> {
        guard(|| Ok(lock(&self.inner).snapshot_json().to_string()))
    }
}

// ----- conformance -----

#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct VectorFailure {
    pub name: String,
    pub file: String,
    pub mismatch: String,
}

#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct ConformanceReport {
    pub passed: u32,
    pub failed: u32,
    pub failures: Vec<VectorFailure>,
    /// `N passed, N failed` with each failure, as the Rust runner prints it.
    pub rendered: String,
}

/// Replays every vector file below `dirs` through the Rust runner.
#[uniffi::export]
pub fn run_conformance(dirs: Vec<String>) -> Result<ConformanceReport, AcpError> {
    guard(|| {
        let report = acp_inject_core::vectors::run_dirs(&dirs);
        Ok(ConformanceReport {
            passed: report.passed() as u32,
            failed: report.failed() as u32,
            failures: report
                .results
                .iter()
                .filter_map(|r| {
                    r.mismatch.as_ref().map(|m| VectorFailure { name: r.name.clone(), file: r.file.clone(), mismatch: m.clone() })
                })
                .collect(),
            rendered: report.render(),
        })
    })
}

/// The library's version, for checking that bindings and library match.
#[uniffi::export]
pub fn library_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<AgentCore>();
    is::<ClientSession>();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No input reaches a panic in the core (it returns typed errors; its `expect`s guard
    /// invariants the core itself maintains). The guard is the backstop: prove it turns a
    /// panic into a typed error and leaves the object usable.
    #[test]
    fn a_panic_becomes_a_typed_internal_error() {
        let r: Result<(), AcpError> = guard(|| panic!("boom"));
        assert_eq!(r, Err(AcpError::Internal { message: "boom".into() }));

        let core = AgentCore::new(default_agent_options()).unwrap();
        let poisoned = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let _g = core.inner.lock().unwrap();
            panic!("while holding the lock");
        }));
        assert!(poisoned.is_err());
        core.create_session("s1".into()).unwrap();
        assert!(core.is_live("s1".into()).unwrap(), "a poisoned lock does not make the object unusable");
    }

    #[test]
    fn content_round_trips_through_the_typed_view() {
        let blocks = vec![
            ContentBlock::Text { text: "hi".into() },
            ContentBlock::Image { data: "aGk=".into(), mime_type: "image/png".into() },
            ContentBlock::Resource { uri: "file:///a".into(), mime_type: None, text: Some("x".into()), blob: None },
            ContentBlock::Other { json: r#"{"type":"_x.dev/widget","size":3}"#.into() },
        ];
        let wire = to_wire_content(&blocks).unwrap();
        let (back, json) = content_view(&wire);
        assert_eq!(back[..3], blocks[..3]);
        let (ContentBlock::Other { json: a }, ContentBlock::Other { json: b }) = (&back[3], &blocks[3]) else { panic!("{back:?}") };
        let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        assert_eq!(parse(a), parse(b), "unknown blocks keep every member");
        assert!(json.contains("_x.dev/widget"));
        assert!(matches!(
            ContentBlock::Resource { uri: "u".into(), mime_type: None, text: None, blob: None }.to_wire(),
            Err(AcpError::InvalidInput { .. })
        ));
    }
}
