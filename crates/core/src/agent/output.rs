//! What the agent core asks of its host: lines for connections and actions for the runtime,
//! and the typed builders of every line the core writes.

use acp_inject_wire::jsonrpc;
use acp_inject_wire::{
    ContentBlock, IdleStateUpdate, McpServer, MessageId, PendingInject, PendingInjectsUpdate, RequestId, RequestPermissionOutcome,
    RequiresActionStateUpdate, RunningStateUpdate, SessionClosedUpdate, SessionId, SessionUpdate, StateUpdate, StopReason,
    TurnFailure, UpdateSessionNotification, Usage, UserMessage,
};
use serde::{Deserialize, Serialize};

use super::ConnId;

/// A message handed to the runtime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInput {
    /// Its id (the `user_message`'s `messageId`).
    pub message_id: MessageId,
    /// Its content.
    pub content: Vec<ContentBlock>,
}

/// The parameters of `session/new` or `session/resume`, for the runtime to set the session
/// up: its working directory, extra roots and MCP servers to connect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSetup {
    /// The working directory.
    pub cwd: String,
    /// Additional workspace roots.
    pub additional_directories: Vec<String>,
    /// MCP servers to connect.
    pub mcp_servers: Vec<McpServer>,
}

/// What the runtime must do.
#[derive(Clone, Debug, PartialEq)]
pub enum RuntimeAction {
    /// A client created the session (`session/new`): set it up.
    SessionOpened(SessionSetup),
    /// A client resumed the session (`session/resume`): set it up again (reconnect MCP
    /// servers); its history was replayed by the core if asked.
    SessionResumed(SessionSetup),
    /// Begin a new turn whose opening input is these messages.
    StartTurn(Vec<UserInput>),
    /// Feed these user messages to the model now (at a break-point).
    Deliver(Vec<UserInput>),
    /// Cut the current model stream (`steerInStream: interrupt`); report a `model_step`
    /// break-point after cutting.
    InterruptStream,
    /// Stop the turn, then report `turn_ended` (the core reports `cancelled`).
    CancelTurn,
    /// The answer to the runtime's permission request with this id (R-PERM-2): the option the
    /// user chose, or `cancelled` (the turn was cancelled or ended, the session closed, the
    /// client went away or answered with an error, or the host withdrew the request).
    PermissionAnswered {
        /// The request's id, as [`Agent::request_permission`](super::Agent::request_permission)
        /// returned it.
        request_id: RequestId,
        /// What the user decided.
        outcome: RequestPermissionOutcome,
    },
    /// The session was closed: stop any work for it and free its resources. `dropped` holds
    /// the injects that were pending, in delivery order (R-CLOSE-1); the core has already
    /// ended a running turn as `cancelled`. On a store several hosts share, also when an idle
    /// session with nobody attached leaves this host's memory (`dropped` empty): it stays live
    /// in the store, for the host a client resumes it on next.
    Closed {
        /// Pending injects handed back (never delivered).
        dropped: Vec<PendingInject>,
        /// A turn was in progress when the session closed.
        turn_cancelled: bool,
    },
}

/// One output of the core.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A JSON-RPC line for these connections (a response goes to the connection that asked;
    /// a session's notifications to the connections attached to it).
    Line {
        /// The recipients; empty when no connection is attached (the line is then dropped).
        to: Vec<ConnId>,
        /// The line, without its newline.
        line: String,
    },
    /// An instruction for the runtime of one session.
    Action {
        /// The session.
        session: SessionId,
        /// What to do.
        action: RuntimeAction,
    },
    /// A request for the host itself, from a connection: answer it with
    /// [`super::Agent::answer_call`] and this `id` (a notification wants no answer).
    Call {
        /// The call's id, for the answer.
        id: u64,
        /// The connection that asked.
        connection: ConnId,
        /// What it asks.
        call: HostCall,
    },
}

/// What a connection asks of the host itself rather than of a session's runtime.
#[derive(Clone, Debug, PartialEq)]
pub enum HostCall {
    /// `auth/login` (v1 `authenticate`) with one of the advertised `agent` methods: check the
    /// credentials the method stands for; a success logs the connection in (R-AUTH-2).
    Authenticate {
        /// The method.
        method_id: String,
    },
    /// A request of an extension the host serves (`AgentConfig::extensions`): its result.
    Extension {
        /// The method.
        method: String,
        /// Its params, as they came.
        params: Option<serde_json::Value>,
    },
    /// A notification of an extension the host serves; no answer.
    ExtensionNotification {
        /// The method.
        method: String,
        /// Its params, as they came.
        params: Option<serde_json::Value>,
    },
}

impl Output {
    pub(crate) fn action(session: &SessionId, action: RuntimeAction) -> Output {
        Output::Action { session: session.to_owned(), action }
    }
}

/// A `session/update` line.
pub(crate) fn update_line(session: &SessionId, update: SessionUpdate) -> String {
    jsonrpc::notification_line(&UpdateSessionNotification::new(session.clone(), update))
}

/// The states a `session/status` answer reports (R-STATUS-1): snapshots, an idle one without
/// `stopReason`.
pub(crate) fn running_state() -> StateUpdate {
    StateUpdate::Running(Box::new(RunningStateUpdate::new()))
}

pub(crate) fn requires_action_state() -> StateUpdate {
    StateUpdate::RequiresAction(Box::new(RequiresActionStateUpdate::new()))
}

/// The `idle` snapshot a resume and `session/status` report (R-RESUME-2): no `stopReason`, it
/// ends no turn.
pub(crate) fn idle_state() -> StateUpdate {
    StateUpdate::Idle(Box::new(IdleStateUpdate::new()))
}

/// What a session taken over with its turn cut off on another host reports (R-RESUME-2):
/// this host cannot observe that work.
pub(crate) fn unknown_state() -> StateUpdate {
    StateUpdate::Unknown(Box::new(acp_inject_wire::UnknownStateUpdate::new()))
}

pub(crate) fn running() -> SessionUpdate {
    running_state().into()
}

pub(crate) fn requires_action() -> SessionUpdate {
    requires_action_state().into()
}

/// The turn-end `idle` (R-TURNEND-1): always `stopReason`; `usage` as the runtime reported it,
/// or absent (never `null`).
pub(crate) fn idle_line(session: &SessionId, stop_reason: &StopReason, usage: Option<Usage>, error: Option<TurnFailure>) -> String {
    let idle = IdleStateUpdate::new().stop_reason(stop_reason.clone()).usage(usage).error(error);
    update_line(session, StateUpdate::Idle(Box::new(idle)).into())
}

/// The answers to a held prompt whose message was inserted (R-PROMPT-2): its receipt, to the
/// request and to each retry of it (R-IDEM-2).
pub(crate) fn prompt_receipt(held: &super::HeldPrompt, message_id: &MessageId) -> Vec<Output> {
    let result = acp_inject_wire::PromptResponse::new(message_id.clone());
    let raw = serde_json::value::to_raw_value(&result).unwrap_or_else(|e| unreachable!("results always serialise: {e}"));
    held.waiters()
        .map(|(conn, request)| Output::Line { to: vec![conn.clone()], line: jsonrpc::raw_result_line(request, &raw) })
        .collect()
}

/// The answers to a held prompt whose message will not be inserted (R-PROMPT-2): `-32800`, to
/// the request and to each retry of it.
pub(crate) fn prompt_cancelled(held: super::HeldPrompt) -> Vec<Output> {
    let error = acp_inject_wire::ErrorObject::new(acp_inject_wire::errors::REQUEST_CANCELLED);
    held.waiters().map(|(conn, request)| Output::Line { to: vec![conn.clone()], line: jsonrpc::error_line(request, &error) }).collect()
}

/// R-DELIV-1: delivery is exactly the emission of this `user_message`.
pub(crate) fn user_message(input: &UserInput) -> SessionUpdate {
    UserMessage::new(input.message_id.clone()).content(input.content.clone()).into()
}

pub(crate) fn pending_update(pending: Vec<PendingInject>) -> SessionUpdate {
    SessionUpdate::AcpInjectPending(Box::new(PendingInjectsUpdate::new(pending)))
}

pub(crate) fn session_closed() -> SessionUpdate {
    SessionUpdate::AcpInjectSessionClosed(Box::new(SessionClosedUpdate::new()))
}
