//! The mirror of one session (C-… rules): the client's own prompts and injects apart from
//! history, the transcript with upsert/chunk/clear semantics, turn state, violations.
//!
//! A [`SessionMirror`] sends nothing and owns no request ids: [`super::ClientConnection`]
//! routes to it the answers to its requests and the session's updates, so two sessions on one
//! connection cannot take each other's answers.

use std::collections::{HashMap, VecDeque};

use acp_inject_wire::{
    ContentBlock, InjectCapabilities, InjectMode, MessageId, Patch, PendingInject, SessionUpdate, StateUpdate, StopReason, Usage,
    UserMessage,
};
use serde::{Deserialize, Serialize};

use super::event::SessionEvent;

/// What one of the client's own prompts or injects is (C-PEND-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Sent, no answer yet.
    Sending,
    /// Accepted (has a `messageId`, or awaits correlation), not yet delivered.
    Pending,
    /// Its `user_message` arrived; it is in the transcript.
    Delivered,
    /// Revoked successfully.
    Revoked,
    /// The agent refused it.
    Failed,
}

impl ItemStatus {
    /// The vectors' name.
    pub fn as_str(&self) -> &'static str {
        match self {
            ItemStatus::Sending => "sending",
            ItemStatus::Pending => "pending",
            ItemStatus::Delivered => "delivered",
            ItemStatus::Revoked => "revoked",
            ItemStatus::Failed => "failed",
        }
    }
}

/// How an item was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemMode {
    /// `session/prompt`.
    Prompt,
    /// `session/inject` mode `queue`.
    Queue,
    /// `session/inject` mode `steer`.
    Steer,
}

impl From<InjectMode> for ItemMode {
    fn from(m: InjectMode) -> Self {
        match m {
            InjectMode::Queue => ItemMode::Queue,
            InjectMode::Steer => ItemMode::Steer,
        }
    }
}

/// One of the client's own prompts or injects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingItem {
    /// Its id, once the agent answered (or a `user_message` bound it).
    pub message_id: Option<MessageId>,
    /// How it was sent.
    pub mode: ItemMode,
    /// Where it is.
    pub status: ItemStatus,
    /// The content the agent last accepted.
    pub content: Vec<ContentBlock>,
    /// Content a successful replace superseded (to detect R-REPLACE-2 violations).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<Vec<ContentBlock>>,
    /// Held by this client, not yet sent ([C-HELD-1](../../../../spec/rules.md#c-held-1)): a
    /// queued message for an agent that takes no injects, or a prompt made during a version 1
    /// agent's turn. It goes out as a `session/prompt` when the session is free.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

/// Who a transcript entry is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// `user_message*`.
    User,
    /// `agent_message*`.
    Agent,
    /// `agent_thought*`.
    Thought,
}

/// A message of the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptEntry {
    /// Whose.
    pub role: MessageRole,
    /// Its id.
    pub message_id: MessageId,
    /// Its current content.
    pub content: Vec<ContentBlock>,
}

/// A protocol violation the mirror detected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// The rule broken (e.g. `R-REPLACE-2`).
    pub rule: String,
    /// The message concerned.
    pub message_id: MessageId,
}

/// What the UI may offer (C-PEND-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Affordances {
    /// Steer is advertised.
    pub steer: bool,
    /// Replace is advertised.
    pub edit_pending: bool,
    /// Inject (hence revoke) is advertised.
    pub revoke: bool,
}

/// The turn state as the client knows it (C-STATE-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    /// No turn in progress.
    Idle,
    /// A turn is running.
    Running,
    /// The turn waits on the user.
    RequiresAction,
    /// The agent cannot currently tell (upstream's unstable `unknown` state): what was known
    /// before is no longer confirmed, and the stop reason and usage stay as last known. A later
    /// state replaces it (C-STATE-1).
    Unknown,
}

/// A call the client API refused without sending anything.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallRejected {
    /// Inject (or this mode) is not advertised.
    #[error("mode_not_supported: the agent does not advertise this inject mode")]
    ModeNotSupported,
    /// `pending.replace` is not advertised.
    #[error("replace_not_supported: the agent does not advertise pending.replace")]
    ReplaceNotSupported,
    /// Not one of this client's pending items.
    #[error("unknown_message_id: not one of this client's pending items")]
    UnknownMessageId,
    /// The session is not open on this connection.
    #[error("unknown_session: the session is not open on this connection")]
    UnknownSession,
    /// The call's arguments are not valid (empty content, a relative path, …).
    #[error("invalid_arguments: {0}")]
    InvalidArguments(String),
    /// A steer for an agent that takes no injects, with no fallback chosen
    /// ([C-HELD-3](../../../../spec/rules.md#c-held-3)).
    #[error("steer_not_supported: this agent cannot take input mid-turn (choose a steer fallback to queue it, or to cancel the turn and resend)")]
    SteerNotSupported,
}

impl CallRejected {
    /// The vectors' name of the rejection.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallRejected::ModeNotSupported => "mode_not_supported",
            CallRejected::ReplaceNotSupported => "replace_not_supported",
            CallRejected::UnknownMessageId => "unknown_message_id",
            CallRejected::UnknownSession => "unknown_session",
            CallRejected::InvalidArguments(_) => "invalid_arguments",
            CallRejected::SteerNotSupported => "steer_not_supported",
        }
    }
}

/// Everything a client UI renders for one session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MirrorSnapshot {
    /// Turn state.
    pub state: TurnState,
    /// The last turn's stop reason.
    pub stop_reason: Option<StopReason>,
    /// The last turn's usage.
    pub usage: Option<Usage>,
    /// The client's own items still sending or pending, in the order sent.
    pub pending: Vec<PendingItem>,
    /// Messages in notification order.
    pub transcript: Vec<TranscriptEntry>,
    /// Protocol violations detected.
    pub violations: Vec<Violation>,
    /// What the UI may offer.
    pub affordances: Affordances,
    /// The agent's pending list (every client's injects), when the agent sends it.
    pub agent_pending: Option<Vec<PendingInject>>,
    /// The session was closed.
    pub closed: bool,
    /// Values dropped by tolerant decoding of this session's updates, counted.
    pub tolerated: u64,
}

/// Where each message is in the transcript, one map per role, looked up by `&str` (an update
/// builds no key to find its message).
#[derive(Clone, Debug, Default, PartialEq)]
struct Entries([HashMap<String, usize>; 3]);

impl Entries {
    fn get(&self, role: MessageRole, id: &str) -> Option<usize> {
        self.0[role as usize].get(id).copied()
    }

    fn insert(&mut self, role: MessageRole, id: String, i: usize) {
        self.0[role as usize].insert(id, i);
    }
}

/// The mirror of one session. See the module docs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMirror {
    caps: Option<InjectCapabilities>,
    items: Vec<PendingItem>,
    #[serde(skip)]
    by_message: HashMap<String, usize>,
    state: Option<TurnState>,
    stop_reason: Option<StopReason>,
    usage: Option<Usage>,
    transcript: Vec<TranscriptEntry>,
    #[serde(skip)]
    entries: Entries,
    violations: Vec<Violation>,
    agent_pending: Option<Vec<PendingInject>>,
    closed: bool,
    tolerated: u64,
    /// The items this client holds (C-HELD-1), in the order they go out.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    held: VecDeque<usize>,
    /// The last id this mirror minted (`local_<n>`).
    #[serde(default, skip_serializing_if = "is_zero")]
    minted: u64,
    /// A version 1 agent's message being streamed without ids: its role and the id the
    /// mirror gave it (C-V1-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream: Option<(MessageRole, MessageId)>,
    /// A user message arrived while idle and no state update followed yet: the agent is
    /// opening a turn with it (upstream v2 sends `user_message`, then `state_update running`),
    /// so the session is not free (C-HELD-2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    opening: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl SessionMirror {
    /// A mirror knowing the agent's advertised `session.inject`.
    pub fn new(caps: Option<InjectCapabilities>) -> Self {
        SessionMirror { caps, ..SessionMirror::default() }
    }

    /// Restores a mirror from its JSON (see [`SessionMirror::to_json`]).
    pub fn from_json(json: &str) -> Result<SessionMirror, serde_json::Error> {
        let mut m: SessionMirror = serde_json::from_str(json)?;
        m.by_message = m.items.iter().enumerate().filter_map(|(i, it)| it.message_id.as_ref().map(|id| (id.0.clone(), i))).collect();
        for (i, e) in m.transcript.iter().enumerate() {
            m.entries.insert(e.role, e.message_id.0.clone(), i);
        }
        Ok(m)
    }

    /// The whole mirror as JSON, for an app that restarts without resuming. Items still
    /// `sending` stay so; a later `user_message` with equal content binds them.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| unreachable!("the mirror always serialises: {e}"))
    }

    /// What the UI may offer (C-PEND-3). For an agent that takes no injects, what this client
    /// holds can be revoked and edited until it goes out (C-HELD-1); steering cannot be offered.
    pub fn affordances(&self) -> Affordances {
        match &self.caps {
            Some(c) => Affordances {
                steer: c.modes.contains(&InjectMode::Steer),
                edit_pending: c.pending.as_ref().is_some_and(|p| p.replace),
                revoke: true,
            },
            None => Affordances { steer: false, edit_pending: true, revoke: true },
        }
    }

    /// The agent takes no injects: this client holds queued messages itself (C-HELD-1).
    pub(crate) fn holds_injects(&self) -> bool {
        self.caps.is_none()
    }

    /// A fresh id of this client's own, `local_<n>`, for a message the agent gives no id.
    fn mint(&mut self) -> MessageId {
        self.minted += 1;
        MessageId(format!("local_{}", self.minted))
    }

    /// A prompt may go out now (C-HELD-2): the session is open and idle, and none of this
    /// client's prompts awaits its answer or its insertion.
    pub(crate) fn free(&self) -> bool {
        !self.closed
            && !self.opening
            && self.state() == TurnState::Idle
            && !self.items.iter().any(|i| !i.held && matches!(i.status, ItemStatus::Sending | ItemStatus::Pending))
    }

    /// Holds a new item (C-HELD-1): a queued message is `pending` under an id of this
    /// client's; a prompt stays `sending`, without id, until it goes out. With `front` it goes
    /// ahead of the queued messages (a steer resent after a cancel, C-HELD-3), behind earlier
    /// such steers.
    pub(crate) fn hold(&mut self, mode: ItemMode, content: Vec<ContentBlock>, front: bool) -> (usize, SessionEvent) {
        let (message_id, status) = match mode {
            ItemMode::Prompt => (None, ItemStatus::Sending),
            ItemMode::Queue | ItemMode::Steer => (Some(self.mint()), ItemStatus::Pending),
        };
        self.items.push(PendingItem { message_id: message_id.clone(), mode, status, content, superseded: Vec::new(), held: true });
        let i = self.items.len() - 1;
        if let Some(id) = message_id {
            self.by_message.insert(id.0, i);
        }
        let at =
            if front { self.held.iter().take_while(|&&h| self.items[h].mode == ItemMode::Steer).count() } else { self.held.len() };
        self.held.insert(at, i);
        (i, SessionEvent::Item(self.items[i].clone()))
    }

    /// This client holds something for the session (C-HELD-1).
    pub(crate) fn holds_any(&self) -> bool {
        !self.held.is_empty()
    }

    /// One of the items this client holds, still pending, by id (for a revoke or a replace).
    pub(crate) fn check_held(&self, message_id: &str) -> Result<usize, CallRejected> {
        let i = self.own_pending(message_id)?;
        if self.items[i].held {
            Ok(i)
        } else {
            Err(CallRejected::UnknownMessageId)
        }
    }

    /// A held item is revoked: it never goes out.
    pub(crate) fn revoke_held(&mut self, i: usize) -> Vec<SessionEvent> {
        self.held.retain(|&h| h != i);
        if let Some(item) = self.items.get_mut(i) {
            item.held = false;
        }
        self.revoked(i)
    }

    /// The next held item to send, when the session is free; it is no longer held.
    pub(crate) fn next_held(&mut self) -> Option<usize> {
        if self.held.is_empty() || !self.free() {
            return None;
        }
        let i = self.held.pop_front()?;
        self.items[i].held = false;
        Some(i)
    }

    /// A held item went out as a v2 `session/prompt`: it is `sending` again, and the agent's
    /// receipt (or `user_message`) gives it the agent's id; its own id still finds it.
    pub(crate) fn sent_to_agent(&mut self, i: usize) -> Vec<SessionEvent> {
        let Some(item) = self.items.get_mut(i) else { return Vec::new() };
        item.status = ItemStatus::Sending;
        item.message_id = None;
        vec![SessionEvent::Item(item.clone())]
    }

    /// The held prompts, dropped (a cancel, C-V1-2, or a close): they fail, and their indices
    /// are returned so their calls can be answered.
    pub(crate) fn drop_held_prompts(&mut self) -> (Vec<usize>, Vec<SessionEvent>) {
        let prompts: Vec<usize> = self.held.iter().copied().filter(|&h| self.items[h].mode == ItemMode::Prompt).collect();
        self.held.retain(|h| !prompts.contains(h));
        let mut events = Vec::new();
        for &i in &prompts {
            let item = &mut self.items[i];
            item.held = false;
            item.status = ItemStatus::Failed;
            events.push(SessionEvent::Item(item.clone()));
        }
        (prompts, events)
    }

    /// A prompt went out to a version 1 agent (C-V1-2): v1 has no receipt and no echo, so it
    /// is delivered now, under an id of this client's, and the turn runs. Returns that id.
    pub(crate) fn v1_prompt_sent(&mut self, i: usize) -> (MessageId, Vec<SessionEvent>) {
        let id = match self.items.get(i).and_then(|item| item.message_id.clone()) {
            Some(id) => id,
            None => {
                let id = self.mint();
                self.by_message.insert(id.0.clone(), i);
                if let Some(item) = self.items.get_mut(i) {
                    item.message_id = Some(id.clone());
                }
                id
            }
        };
        self.stream = None;
        let content = self.items.get(i).map(|item| item.content.clone()).unwrap_or_default();
        let echo =
            SessionUpdate::UserMessage(Box::new(UserMessage { message_id: id.clone(), content: Patch::Value(content), meta: None }));
        let running = SessionUpdate::StateUpdate(Box::new(StateUpdate::Running(Box::default())));
        let mut events = self.apply(echo);
        events.extend(self.apply(running));
        (id, events)
    }

    /// The id of a version 1 chunk (C-V1-3): its own `messageId` when it has one; else the
    /// message being streamed in the same role, or a new one.
    pub(crate) fn v1_chunk_id(&mut self, role: MessageRole, given: Option<MessageId>) -> MessageId {
        let id = match (given, &self.stream) {
            (Some(id), _) => id,
            (None, Some((r, id))) if *r == role => id.clone(),
            (None, _) => self.mint(),
        };
        self.stream = Some((role, id.clone()));
        id
    }

    /// A version 1 update that is not a chunk, a prompt or a turn end: the message being
    /// streamed is over (C-V1-3).
    pub(crate) fn v1_end_stream(&mut self) {
        self.stream = None;
    }

    pub(crate) fn check_inject(&self, mode: InjectMode) -> Result<(), CallRejected> {
        if self.caps.as_ref().is_some_and(|c| c.modes.contains(&mode)) {
            Ok(())
        } else {
            Err(CallRejected::ModeNotSupported)
        }
    }

    pub(crate) fn check_revoke(&self, message_id: &str) -> Result<usize, CallRejected> {
        if self.caps.is_none() {
            return Err(CallRejected::ModeNotSupported);
        }
        self.own_pending(message_id)
    }

    pub(crate) fn check_replace(&self, message_id: &str) -> Result<usize, CallRejected> {
        if !self.affordances().edit_pending {
            return Err(CallRejected::ReplaceNotSupported);
        }
        self.own_pending(message_id)
    }

    fn own_pending(&self, message_id: &str) -> Result<usize, CallRejected> {
        match self.by_message.get(message_id) {
            Some(&i) if self.items[i].status == ItemStatus::Pending => Ok(i),
            _ => Err(CallRejected::UnknownMessageId),
        }
    }

    /// Adds an item being sent; returns its index.
    pub(crate) fn sending(&mut self, mode: ItemMode, content: Vec<ContentBlock>) -> (usize, SessionEvent) {
        self.items.push(PendingItem {
            message_id: None,
            mode,
            status: ItemStatus::Sending,
            content,
            superseded: Vec::new(),
            held: false,
        });
        let i = self.items.len() - 1;
        (i, SessionEvent::Item(self.items[i].clone()))
    }

    /// An accept answer: the item is pending with its id (or already delivered, when the
    /// `user_message` overtook the answer).
    pub(crate) fn accepted(&mut self, i: usize, message_id: Option<MessageId>) -> Vec<SessionEvent> {
        let Some(item) = self.items.get_mut(i) else { return Vec::new() };
        if item.status != ItemStatus::Sending {
            return Vec::new();
        }
        item.status = ItemStatus::Pending;
        if let Some(id) = message_id {
            item.message_id = Some(id.clone());
            self.by_message.insert(id.0.clone(), i);
            // The insertion receipt and the update may arrive in either order.
            if self.entries.get(MessageRole::User, &id.0).is_some() {
                self.items[i].status = ItemStatus::Delivered;
            }
        }
        vec![SessionEvent::Item(self.items[i].clone())]
    }

    /// An error answer to an accept: the item failed.
    pub(crate) fn refused(&mut self, i: usize) -> Vec<SessionEvent> {
        match self.items.get_mut(i) {
            Some(item) if item.status == ItemStatus::Sending => {
                item.status = ItemStatus::Failed;
                vec![SessionEvent::Item(item.clone())]
            }
            _ => Vec::new(),
        }
    }

    /// A revoke answered with success. (C-PEND-4: `already_delivered` keeps the item pending
    /// until its `user_message`.)
    pub(crate) fn revoked(&mut self, i: usize) -> Vec<SessionEvent> {
        match self.items.get_mut(i) {
            Some(item) if item.status == ItemStatus::Pending => {
                item.status = ItemStatus::Revoked;
                vec![SessionEvent::Item(item.clone())]
            }
            _ => Vec::new(),
        }
    }

    /// A replace answered with success: the content is the new one.
    pub(crate) fn replaced(&mut self, i: usize, content: Vec<ContentBlock>) -> Vec<SessionEvent> {
        match self.items.get_mut(i) {
            Some(item) if item.status == ItemStatus::Pending => {
                let old = std::mem::replace(&mut item.content, content);
                item.superseded.push(old);
                vec![SessionEvent::Item(item.clone())]
            }
            _ => Vec::new(),
        }
    }

    /// The session was closed: items still pending will never be delivered.
    pub(crate) fn close(&mut self) -> Vec<SessionEvent> {
        self.closed = true;
        self.state = Some(TurnState::Idle);
        if self.agent_pending.is_some() {
            // Nothing stays pending in a closed session (R-CLOSE-1).
            self.agent_pending = Some(Vec::new());
        }
        let mut events = vec![SessionEvent::Closed];
        // What this client held never goes out (C-HELD-1).
        self.held.clear();
        self.stream = None;
        self.opening = false;
        for item in self.items.iter_mut().filter(|i| i.status == ItemStatus::Pending || i.held) {
            item.status = ItemStatus::Failed;
            item.held = false;
            events.push(SessionEvent::Item(item.clone()));
        }
        events
    }

    pub(crate) fn reopen(&mut self) {
        self.closed = false;
        // A replay's user messages open no turn.
        self.opening = false;
    }

    pub(crate) fn count_tolerated(&mut self, n: usize) {
        self.tolerated += n as u64;
    }

    fn entry(&mut self, role: MessageRole, id: &MessageId) -> usize {
        if let Some(i) = self.entries.get(role, &id.0) {
            return i;
        }
        self.transcript.push(TranscriptEntry { role, message_id: id.clone(), content: Vec::new() });
        let i = self.transcript.len() - 1;
        self.entries.insert(role, id.0.clone(), i);
        i
    }

    /// C-MSG-1: omitted content leaves it, `null` clears it, an array replaces it.
    fn upsert(&mut self, role: MessageRole, id: &MessageId, content: &Patch<Vec<ContentBlock>>) {
        let i = self.entry(role, id);
        match content {
            Patch::Absent => {}
            Patch::Null => self.transcript[i].content.clear(),
            Patch::Value(c) => self.transcript[i].content = c.clone(),
        }
    }

    fn append(&mut self, role: MessageRole, id: &MessageId, block: &ContentBlock) {
        let i = self.entry(role, id);
        self.transcript[i].content.push(block.clone());
    }

    /// Applies one update of this session; returns what changed, as events.
    pub(crate) fn apply(&mut self, update: SessionUpdate) -> Vec<SessionEvent> {
        let mut events = Vec::new();
        match &update {
            SessionUpdate::UserMessage(_) | SessionUpdate::UserMessageChunk(_) => self.opening = self.state() == TurnState::Idle,
            SessionUpdate::StateUpdate(s) if !matches!(s.as_ref(), StateUpdate::Other(_)) => self.opening = false,
            _ => {}
        }
        match &update {
            SessionUpdate::UserMessage(m) => {
                self.on_user_message(&m.message_id, m.content.as_value(), &mut events);
                self.upsert(MessageRole::User, &m.message_id, &m.content);
            }
            SessionUpdate::UserMessageChunk(m) => {
                // A chunked user message is a delivery too; its content is not known whole.
                self.on_user_message(&m.message_id, None, &mut events);
                self.append(MessageRole::User, &m.message_id, &m.content);
            }
            SessionUpdate::AgentMessage(m) => self.upsert(MessageRole::Agent, &m.message_id, &m.content),
            SessionUpdate::AgentMessageChunk(m) => self.append(MessageRole::Agent, &m.message_id, &m.content),
            SessionUpdate::AgentThought(m) => self.upsert(MessageRole::Thought, &m.message_id, &m.content),
            SessionUpdate::AgentThoughtChunk(m) => self.append(MessageRole::Thought, &m.message_id, &m.content),
            // C-MSG-2: the same operation as an `agent_message` upsert with `content: []`.
            SessionUpdate::AgentMessageClear(m) => {
                let target = match &m.message_id {
                    Some(id) => self.entries.get(MessageRole::Agent, &id.0),
                    None => self.transcript.iter().rposition(|e| e.role == MessageRole::Agent),
                };
                if let Some(i) = target {
                    self.transcript[i].content.clear();
                }
            }
            SessionUpdate::StateUpdate(s) => match s.as_ref() {
                StateUpdate::Running(_) => self.set_state(TurnState::Running, None, None),
                StateUpdate::RequiresAction(_) => self.set_state(TurnState::RequiresAction, None, None),
                StateUpdate::Idle(i) => self.set_state(TurnState::Idle, i.stop_reason.clone(), i.usage.clone()),
                StateUpdate::Unknown(_) => self.state = Some(TurnState::Unknown),
                // R-WIRE-3: a state this version does not know changes nothing it tracks.
                StateUpdate::Other(_) => {}
            },
            SessionUpdate::AcpInjectPending(p) => {
                let list = p.pending.clone();
                self.agent_pending = Some(list);
            }
            SessionUpdate::AcpInjectSessionClosed(_) => events.extend(self.close()),
            _ => {}
        }
        events.insert(0, SessionEvent::Update(update));
        events
    }

    fn set_state(&mut self, state: TurnState, stop_reason: Option<StopReason>, usage: Option<Usage>) {
        self.state = Some(state);
        self.stop_reason = stop_reason;
        self.usage = usage;
    }

    /// C-PEND-2 and C-PEND-5: a `user_message` moves the matching item into history.
    fn on_user_message(&mut self, id: &MessageId, content: Option<&Vec<ContentBlock>>, events: &mut Vec<SessionEvent>) {
        let idx = match self.by_message.get(&id.0) {
            Some(&i) => Some(i),
            // An item without an id yet (an agent that answers `{}`, or an answer still in
            // flight, or a mirror restored mid-send): bind the first with equal content.
            None if self.entries.get(MessageRole::User, &id.0).is_none() => {
                let found = self.items.iter().position(|it| {
                    matches!(it.status, ItemStatus::Pending | ItemStatus::Sending)
                        && it.message_id.is_none()
                        && content.is_some_and(|c| c == &it.content)
                });
                if let Some(i) = found {
                    self.items[i].message_id = Some(id.clone());
                    self.by_message.insert(id.0.clone(), i);
                }
                found
            }
            None => None,
        };
        let Some(i) = idx else { return };
        let item = &mut self.items[i];
        if matches!(item.status, ItemStatus::Pending | ItemStatus::Sending) {
            item.status = ItemStatus::Delivered;
            if let Some(c) = content {
                if c != &item.content && item.superseded.iter().any(|old| old == c) {
                    let v = Violation { rule: "R-REPLACE-2".into(), message_id: id.clone() };
                    self.violations.push(v.clone());
                    events.push(SessionEvent::Violation(v));
                }
            }
            events.push(SessionEvent::Item(self.items[i].clone()));
        }
    }

    /// One of this client's items, by its index.
    pub(crate) fn item(&self, i: usize) -> Option<&PendingItem> {
        self.items.get(i)
    }

    /// The status of one of this client's items, by `messageId`.
    pub fn item_status(&self, message_id: &str) -> Option<ItemStatus> {
        self.by_message.get(message_id).map(|&i| self.items[i].status)
    }

    /// The turn state.
    pub fn state(&self) -> TurnState {
        self.state.unwrap_or(TurnState::Idle)
    }

    /// The transcript.
    pub fn transcript(&self) -> &[TranscriptEntry] {
        &self.transcript
    }

    /// The client's own items still `sending` or `pending`, in the order they were sent.
    pub fn pending(&self) -> impl Iterator<Item = &PendingItem> {
        self.items.iter().filter(|i| matches!(i.status, ItemStatus::Sending | ItemStatus::Pending))
    }

    /// Everything a UI renders, in one value.
    pub fn snapshot(&self) -> MirrorSnapshot {
        MirrorSnapshot {
            state: self.state(),
            stop_reason: self.stop_reason.clone(),
            usage: self.usage.clone(),
            pending: self.pending().cloned().collect(),
            transcript: self.transcript.clone(),
            violations: self.violations.clone(),
            affordances: self.affordances(),
            agent_pending: self.agent_pending.clone(),
            closed: self.closed,
            tolerated: self.tolerated,
        }
    }
}
