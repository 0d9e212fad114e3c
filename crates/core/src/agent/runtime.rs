//! Runtime events and delivery: break-points, streams, permissions, pauses, turn ends, close,
//! and the runtime's own updates (R-STEER-*, R-PERM-1, R-PAUSE-1, R-TURNEND-1, R-CLOSE-1).

use acp_inject_wire::{
    AgentMessage, AgentMessageClear, MessageId, Patch, PermissionOption, RequestId, SessionId, SessionUpdate, StopReason,
    ToolCallUpdate, TurnFailure, Usage,
};
use serde::{Deserialize, Serialize};

use super::config::{ClearStyle, QueueDrain};
use super::output::{self, Output, RuntimeAction, UserInput};
use super::store::Change;
use super::turn::Stream;
use super::{Agent, ConnId, Turn};

/// A safe break-point of the agent loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakPoint {
    /// A tool call completed.
    ToolResult,
    /// Between model calls.
    ModelStep,
}

/// What the agent runtime reports.
#[derive(Clone, Debug, PartialEq)]
pub enum RuntimeEvent {
    /// The agent loop reached a safe break-point: pending steers are delivered here.
    BreakPoint(BreakPoint),
    /// A model stream with no tool call pending began.
    StreamStarted,
    /// That stream ended.
    StreamFinished,
    /// Ask the session's controllers for permission: the core sends
    /// `session/request_permission` and answers with
    /// [`RuntimeAction::PermissionAnswered`]. Hosts that need the request's id before the
    /// answer call [`Agent::request_permission`], which returns it.
    RequestPermission(PermissionAsk),
    /// Give up on an open permission request (the host's own timeout): it is answered
    /// `cancelled` now.
    WithdrawPermission {
        /// The request's id.
        request_id: RequestId,
    },
    /// The model process paused (rate limit, usage cap).
    Paused,
    /// The pause cleared.
    Resumed,
    /// The runtime started a turn on its own, with no user message.
    TurnStarted,
    /// The turn ended (R-TURNEND-1).
    TurnEnded {
        /// Why (the core reports `cancelled` after a `session/cancel`).
        stop_reason: StopReason,
        /// Token usage, passed through to the idle update.
        usage: Option<Usage>,
        /// With [`StopReason::Error`]: the failure, passed through to the idle update.
        error: Option<TurnFailure>,
    },
    /// The agent closes the session itself.
    Close,
    /// The runtime's own output (agent message chunks, tool calls, plans, session info, …),
    /// sent to every attached connection. User messages, state updates and this toolkit's
    /// extension updates are the core's and are refused.
    Update(SessionUpdate),
    /// Clear the content streamed so far for an agent message (C-MSG-2).
    ClearAgentMessage {
        /// The message to clear.
        message_id: MessageId,
    },
}

/// What a runtime asks the user (the body of `session/request_permission`; the core adds the
/// session and the id).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionAsk {
    /// What is being asked, for a person.
    pub title: String,
    /// Why permission is needed, for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices offered (at least one).
    pub options: Vec<PermissionOption>,
    /// What the request is about, carried through unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<serde_json::Map<String, serde_json::Value>>,
}

impl PermissionAsk {
    /// The subject of a request about a tool call (`{"type": "tool_call", "toolCall": …}`):
    /// clients apply the tool call like a `tool_call_update` before showing the prompt, and an
    /// ACP v1 client gets it as the request's `toolCall` (R-V1-4).
    pub fn tool_call_subject(tool_call: &ToolCallUpdate) -> serde_json::Map<String, serde_json::Value> {
        let call = serde_json::to_value(tool_call).unwrap_or_else(|e| unreachable!("a tool call always serialises: {e}"));
        serde_json::Map::from_iter([("type".to_owned(), serde_json::Value::from("tool_call")), ("toolCall".to_owned(), call)])
    }
}

/// A runtime event the core cannot apply. Nothing was emitted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// A turn event while no turn is in progress.
    #[error("no turn is in progress")]
    NoTurnInProgress,
    /// `turn_started` while a turn is in progress.
    #[error("a turn is already in progress")]
    TurnInProgress,
    /// A permission request with no option to choose from.
    #[error("a permission request needs at least one option")]
    NoPermissionOptions,
    /// `withdraw_permission` for a request that is not open in this session.
    #[error("no such permission request is open in this session")]
    UnknownRequest,
    /// The session was closed (or never existed).
    #[error("the session is closed or does not exist")]
    SessionClosed,
    /// The runtime tried to emit an update only the core may emit (`user_message`,
    /// `user_message_chunk`, `state_update`, the extension updates): delivery and turn state
    /// would no longer follow the rules.
    #[error("user messages, state updates and the toolkit's extension updates are emitted by the core only")]
    ReservedUpdate,
    /// The runtime used a message id of the core's `msg_N` form, which only user messages
    /// carry: ids would collide.
    #[error("message id {0:?} has the form of a user message id the core mints (msg_N)")]
    ReservedMessageId(String),
}

impl HostError {
    /// The vectors' name of this error.
    pub fn kind(&self) -> &'static str {
        match self {
            HostError::NoTurnInProgress => "no_turn_in_progress",
            HostError::TurnInProgress => "turn_in_progress",
            HostError::NoPermissionOptions => "no_permission_options",
            HostError::UnknownRequest => "unknown_request",
            HostError::SessionClosed => "session_closed",
            HostError::ReservedUpdate => "reserved_update",
            HostError::ReservedMessageId(_) => "reserved_message_id",
        }
    }
}

/// Whether `id` has the form of an id the core mints for user messages.
fn is_user_message_id(id: &str) -> bool {
    id.strip_prefix("msg_").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The message id an update carries, when it carries one.
fn message_id_of(update: &SessionUpdate) -> Option<&MessageId> {
    match update {
        SessionUpdate::AgentMessage(m) => Some(&m.message_id),
        SessionUpdate::AgentMessageChunk(m) => Some(&m.message_id),
        SessionUpdate::AgentThought(m) => Some(&m.message_id),
        SessionUpdate::AgentThoughtChunk(m) => Some(&m.message_id),
        SessionUpdate::AgentMessageClear(m) => m.message_id.as_ref(),
        _ => None,
    }
}

impl Agent {
    /// Applies one runtime event of a session.
    pub fn runtime_event(&mut self, session: &SessionId, event: RuntimeEvent) -> Result<(), HostError> {
        let Some(s) = self.sessions.get(session) else { return Err(HostError::SessionClosed) };
        let before = s.turn;
        let result = self.apply_event(session, event);
        if let Some(s) = self.sessions.get(session) {
            if s.turn != before {
                self.store.record(Change::Turn { session, turn: &s.turn });
            }
        }
        // A shared store's host lets go of a session whose turn ended with nobody attached.
        self.unload_if_unattended(session);
        result
    }

    fn apply_event(&mut self, session: &SessionId, event: RuntimeEvent) -> Result<(), HostError> {
        match event {
            RuntimeEvent::Close => {
                let (notices, action) = self.close(session);
                self.out.extend(notices.into_iter().chain(action));
                return Ok(());
            }
            RuntimeEvent::Update(update) => return self.runtime_update(session, update),
            RuntimeEvent::RequestPermission(ask) => return self.ask_permission(session, ask).map(drop),
            RuntimeEvent::WithdrawPermission { request_id } => return self.withdraw(session, &request_id),
            RuntimeEvent::ClearAgentMessage { message_id } => {
                let update = match self.config.policy.clear_style {
                    ClearStyle::Upsert => AgentMessage::new(message_id).content(Vec::new()).into(),
                    ClearStyle::AgentMessageClear => AgentMessageClear::new().message_id(message_id).into(),
                };
                return self.runtime_update(session, update);
            }
            RuntimeEvent::TurnStarted => {
                let s = self.sessions.get_mut(session).ok_or(HostError::SessionClosed)?;
                if s.turn.in_progress() {
                    return Err(HostError::TurnInProgress);
                }
                s.turn = Turn::started();
                s.unobserved = false;
                let line = self.broadcast(session, output::running());
                self.out.push_back(line);
                return Ok(());
            }
            _ => {}
        }
        let s = self.sessions.get_mut(session).ok_or(HostError::SessionClosed)?;
        if !s.turn.in_progress() {
            return Err(HostError::NoTurnInProgress);
        }
        match event {
            RuntimeEvent::BreakPoint(_) => {
                // R-PERM-1, R-PAUSE-1: nothing is delivered while requires_action or paused.
                if !s.turn.can_deliver() || !s.pending.has_steers() {
                    return Ok(());
                }
                let steers = s.pending.take_steers();
                // The stream (if any) was cut or ended at this break-point.
                s.turn.set_stream(Stream::Idle);
                let inputs: Vec<(UserInput, ConnId)> =
                    steers.into_iter().map(|p| (UserInput { message_id: p.message_id, content: p.content }, p.owner)).collect();
                let delivered = self.deliver(session, inputs);
                self.out.push_back(Output::action(session, RuntimeAction::Deliver(delivered)));
                self.out.extend(self.pending_notice(session));
            }
            RuntimeEvent::StreamStarted => s.turn.set_stream(Stream::Active),
            RuntimeEvent::StreamFinished => s.turn.set_stream(Stream::Idle),
            RuntimeEvent::Paused => s.turn.pause(),
            RuntimeEvent::Resumed => s.turn.resume(),
            RuntimeEvent::TurnEnded { stop_reason, usage, error } => {
                let cancelled = s.turn.activity().is_some_and(|a| a.cancel_requested);
                let stop_reason = if cancelled { StopReason::Cancelled } else { stop_reason };
                // The failure belongs to an `error` end only.
                let error = if stop_reason == StopReason::Error { error } else { None };
                s.turn = Turn::Idle;
                // R-PERM-2: nothing is left waiting on the client once the turn is over.
                self.drop_session_requests(session);
                self.out.push_back(Output::Line {
                    to: self.attached_to(session),
                    line: output::idle_line(session, &stop_reason, usage, error),
                });
                self.open_next_turn(session);
            }
            RuntimeEvent::TurnStarted
            | RuntimeEvent::Close
            | RuntimeEvent::Update(_)
            | RuntimeEvent::ClearAgentMessage { .. }
            | RuntimeEvent::RequestPermission(_)
            | RuntimeEvent::WithdrawPermission { .. } => {
                unreachable!("handled above")
            }
        }
        Ok(())
    }

    /// The runtime's own output: checked, recorded in the history when it is conversation,
    /// applied to the session record when it is session info, then broadcast.
    fn runtime_update(&mut self, session: &SessionId, update: SessionUpdate) -> Result<(), HostError> {
        match &update {
            SessionUpdate::UserMessage(_)
            | SessionUpdate::UserMessageChunk(_)
            | SessionUpdate::StateUpdate(_)
            | SessionUpdate::AcpInjectPending(_)
            | SessionUpdate::AcpInjectSessionClosed(_) => return Err(HostError::ReservedUpdate),
            _ => {}
        }
        if let Some(id) = message_id_of(&update).filter(|id| is_user_message_id(id)) {
            return Err(HostError::ReservedMessageId(id.0.clone()));
        }
        let s = self.sessions.get_mut(session).ok_or(HostError::SessionClosed)?;
        match &update {
            SessionUpdate::SessionInfoUpdate(info) => {
                let set = |field: &mut Option<String>, patch: &Patch<String>| match patch {
                    Patch::Absent => {}
                    Patch::Null => *field = None,
                    Patch::Value(v) => *field = Some(v.clone()),
                };
                set(&mut s.record.title, &info.title);
                set(&mut s.record.updated_at, &info.updated_at);
                self.store.record(Change::SessionUpdated(&s.record));
            }
            SessionUpdate::AgentMessage(_)
            | SessionUpdate::AgentMessageChunk(_)
            | SessionUpdate::AgentMessageClear(_)
            | SessionUpdate::AgentThought(_)
            | SessionUpdate::AgentThoughtChunk(_)
            | SessionUpdate::ToolCallUpdate(_)
            | SessionUpdate::ToolCallContentChunk(_)
            | SessionUpdate::PlanUpdate(_) => self.store.record(Change::History { session, update: &update }),
            _ => {}
        }
        let line = self.broadcast(session, update);
        self.out.push_back(line);
        Ok(())
    }

    /// R-DELIV-1: emits each `user_message` (delivery), remembers the ids as delivered and
    /// records them in the history. Returns what the runtime is handed.
    pub(super) fn deliver(&mut self, session: &SessionId, inputs: Vec<(UserInput, ConnId)>) -> Vec<UserInput> {
        let bound = self.config.policy.remember_bound();
        let to = self.attached_to(session);
        let mut delivered = Vec::with_capacity(inputs.len());
        for (input, owner) in inputs {
            self.out.push_back(Output::Line { to: to.clone(), line: output::update_line(session, output::user_message(&input)) });
            self.store.record(Change::Delivered { session, message_id: &input.message_id, content: &input.content, owner: &owner });
            if let Some(s) = self.sessions.get_mut(session) {
                s.pending.remember_delivered(&input.message_id, owner, bound);
                // R-PROMPT-2: a held prompt is answered with its receipt once inserted.
                if let Some(held) = s.held.remove(&input.message_id) {
                    self.out.extend(output::prompt_receipt(&held, &input.message_id));
                }
            }
            delivered.push(input);
        }
        delivered
    }

    /// A turn opens with these messages: `user_message`s, `running`, then `StartTurn`. Used
    /// on an idle session by an accept (returned, to follow the answer) and at a turn end.
    pub(super) fn start_turn(&mut self, session: &SessionId, inputs: Vec<(UserInput, ConnId)>) -> Vec<Output> {
        let mark = self.out.len();
        let delivered = self.deliver(session, inputs);
        if let Some(s) = self.sessions.get_mut(session) {
            s.turn = Turn::started();
            s.unobserved = false;
            self.store.record(Change::Turn { session, turn: &s.turn });
        }
        self.out.push_back(self.broadcast(session, output::running()));
        self.out.push_back(Output::action(session, RuntimeAction::StartTurn(delivered)));
        self.out.drain(mark..).collect()
    }

    /// At a turn end: all pending steers (R-STEER-4), then the queued injects the policy
    /// allows (R-QUEUE-1, R-QUEUE-3), each its own `user_message`, then `running`.
    pub(super) fn open_next_turn(&mut self, session: &SessionId) {
        let take = match self.config.policy.queue_drain {
            QueueDrain::Batch => usize::MAX,
            QueueDrain::OnePerTurn => 1,
        };
        let Some(s) = self.sessions.get_mut(session) else { return };
        let next = s.pending.take_for_turn(take);
        if next.is_empty() {
            return;
        }
        let inputs = next.into_iter().map(|p| (UserInput { message_id: p.message_id, content: p.content }, p.owner)).collect();
        let outputs = self.start_turn(session, inputs);
        self.out.extend(outputs);
        self.out.extend(self.pending_notice(session));
    }

    /// R-CANCEL-1: once per turn; nothing while idle. The session's held prompts are cancelled
    /// with it (R-PROMPT-2); its queued injects stay.
    pub(super) fn cancel(&mut self, session: &SessionId) {
        let held: Vec<MessageId> = self.sessions.get(session).map(|s| s.held.keys().cloned().collect()).unwrap_or_default();
        let mut withdrawn = false;
        for message_id in held {
            withdrawn |= self.withdraw_held(session, &message_id);
        }
        if withdrawn {
            let notice = self.pending_notice(session);
            self.out.extend(notice);
        }
        let Some(s) = self.sessions.get_mut(session) else { return };
        if s.turn.request_cancel().is_ok() {
            self.store.record(Change::Turn { session, turn: &s.turn });
            // R-PERM-2: the client answers its open permission requests `cancelled` after a
            // cancel; the runtime need not wait for that.
            self.end_session_requests(session);
            self.out.push_back(Output::action(session, RuntimeAction::CancelTurn));
        }
    }

    /// R-CLOSE-1: a running turn ends as cancelled, every attached connection is told the
    /// session closed, pending injects go back to the host (never delivered), and the session
    /// leaves memory (it stays listable and resumable). Returns the notices and the action.
    pub(super) fn close(&mut self, session: &SessionId) -> (Vec<Output>, Option<Output>) {
        let Some(mut s) = self.sessions.remove(session) else { return (Vec::new(), None) };
        let mark = self.out.len();
        self.drop_session_requests(session);
        let answered: Vec<Output> = self.out.drain(mark..).collect();
        let to: Vec<ConnId> = s.attached.iter().cloned().collect();
        let mut notices = Vec::new();
        let turn_cancelled = s.turn.in_progress();
        if turn_cancelled {
            notices.push(Output::Line { to: to.clone(), line: output::idle_line(session, &StopReason::Cancelled, None, None) });
        }
        let drained = s.pending.drain();
        if !drained.is_empty() {
            self.store.record(Change::InjectsDropped { session, dropped: &drained });
            // R-EXT-1: the pending list changed (it is empty now) for those who follow it.
            let opted: Vec<ConnId> =
                to.iter().filter(|c| self.connections.get(*c).is_some_and(|c| c.pending_updates)).cloned().collect();
            if !opted.is_empty() {
                notices.push(Output::Line { to: opted, line: output::update_line(session, output::pending_update(Vec::new())) });
            }
        }
        notices.push(Output::Line { to, line: output::update_line(session, output::session_closed()) });
        // Held prompts are not the host's injects: their requests are cancelled (R-PROMPT-2).
        let (held, dropped): (Vec<_>, Vec<_>) = drained.into_iter().partition(|p| s.held.contains_key(&p.message_id));
        notices.extend(held.iter().filter_map(|p| s.held.remove(&p.message_id)).flat_map(output::prompt_cancelled));
        s.turn = Turn::Idle;
        s.record.closed = true;
        self.store.record(Change::Turn { session, turn: &s.turn });
        self.store.record(Change::SessionUpdated(&s.record));
        // A shared store: a closed session is no host's until a client reopens it.
        self.store.release(session);
        notices.extend(answered);
        (notices, Some(Output::action(session, RuntimeAction::Closed { dropped, turn_cancelled })))
    }
}
