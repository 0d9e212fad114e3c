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
use super::item::{IllegalTransition, Item, ItemMode, ItemStatus, Lifecycle, PendingItem};
use super::view::{Affordances, CallRejected, MessageRole, MirrorSnapshot, TranscriptEntry, TurnState, Violation};

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
    items: Vec<Item>,
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
    /// The agent takes no injects but advertises the steering extension: steers go out as
    /// `_session/steering` (C-STEERING-1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    steering: bool,
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
        m.by_message = m.items.iter().enumerate().filter_map(|(i, it)| it.life.message_id().map(|id| (id.0.clone(), i))).collect();
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
            None => Affordances { steer: self.steering, edit_pending: true, revoke: true },
        }
    }

    /// Whether the agent advertises the steering extension (C-STEERING-1); the connection
    /// sets it when it opens the session.
    pub(crate) fn set_steering(&mut self, steering: bool) {
        self.steering = steering;
    }

    /// A steer the agent took through the steering extension (C-STEERING-2): delivered now,
    /// where it went in, under the id the agent named or one this client mints (no echo
    /// follows). The turn's state is left as it is: an agent that opened a turn with it
    /// reports that turn as it reports any. Returns the id.
    pub(crate) fn steered(&mut self, i: usize, given: Option<MessageId>) -> (MessageId, Vec<SessionEvent>) {
        let id = given.unwrap_or_else(|| self.mint());
        self.by_message.insert(id.0.clone(), i);
        self.stream = None;
        let content = self.items.get(i).map(|item| item.content.clone()).unwrap_or_default();
        let opening = self.opening;
        let events = self.apply(SessionUpdate::UserMessage(Box::new(UserMessage::new(id.clone()).content(content))));
        self.opening = opening;
        (id, events)
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
        !self.closed && !self.opening && self.state() == TurnState::Idle && !self.items.iter().any(|i| i.life.awaits_agent())
    }

    /// Holds a new item (C-HELD-1): a queued message is `pending` under an id of this
    /// client's; a prompt stays `sending`, without id, until it goes out. With `front` it goes
    /// ahead of the queued messages (a steer resent after a cancel, C-HELD-3), behind earlier
    /// such steers.
    pub(crate) fn hold(&mut self, mode: ItemMode, content: Vec<ContentBlock>, front: bool) -> (usize, SessionEvent) {
        let life = match mode {
            ItemMode::Prompt => Lifecycle::HeldPrompt,
            ItemMode::Queue | ItemMode::Steer => Lifecycle::HeldMessage { id: self.mint() },
        };
        let i = self.items.len();
        if let Some(id) = life.message_id() {
            self.by_message.insert(id.0.clone(), i);
        }
        self.items.push(Item::new(mode, life, content));
        let at =
            if front { self.held.iter().take_while(|&&h| self.items[h].mode == ItemMode::Steer).count() } else { self.held.len() };
        self.held.insert(at, i);
        (i, SessionEvent::Item(self.items[i].view()))
    }

    /// This client holds something for the session (C-HELD-1).
    pub(crate) fn holds_any(&self) -> bool {
        !self.held.is_empty()
    }

    /// One of the items this client holds, still pending, by id (for a revoke or a replace).
    pub(crate) fn check_held(&self, message_id: &MessageId) -> Result<usize, CallRejected> {
        let i = self.own_pending(message_id)?;
        if self.items[i].life.is_held() {
            Ok(i)
        } else {
            Err(CallRejected::UnknownMessageId)
        }
    }

    /// A held item is revoked: it never goes out.
    pub(crate) fn revoke_held(&mut self, i: usize) -> Vec<SessionEvent> {
        self.held.retain(|&h| h != i);
        self.revoked(i)
    }

    /// The next held item to send, when the session is free, taken off the held queue; it
    /// stays held until [`SessionMirror::sent_to_agent`] or [`SessionMirror::v1_prompt_sent`]
    /// sends it.
    pub(crate) fn next_held(&mut self) -> Option<usize> {
        if self.held.is_empty() || !self.free() {
            return None;
        }
        self.held.pop_front()
    }

    /// A held item went out as a v2 `session/prompt`: it is `sending` again, and the agent's
    /// receipt (or `user_message`) gives it the agent's id; its own id still finds it.
    pub(crate) fn sent_to_agent(&mut self, i: usize) -> Vec<SessionEvent> {
        self.step(i, Lifecycle::send)
    }

    /// Takes a step of item `i`'s lifecycle: its event when it applied, nothing when it did
    /// not (an answer or update about an item that moved on meanwhile changes nothing).
    fn step(&mut self, i: usize, f: impl FnOnce(Lifecycle) -> Result<Lifecycle, IllegalTransition>) -> Vec<SessionEvent> {
        match self.items.get_mut(i).map(|item| item.step(f)) {
            Some(Ok(())) => vec![SessionEvent::Item(self.items[i].view())],
            Some(Err(_)) | None => Vec::new(),
        }
    }

    /// The held prompts, dropped (a cancel, C-V1-2, or a close): they fail, and their indices
    /// are returned so their calls can be answered.
    pub(crate) fn drop_held_prompts(&mut self) -> (Vec<usize>, Vec<SessionEvent>) {
        let prompts: Vec<usize> = self.held.iter().copied().filter(|&h| self.items[h].mode == ItemMode::Prompt).collect();
        self.held.retain(|h| !prompts.contains(h));
        let events = prompts.iter().flat_map(|&i| self.step(i, Lifecycle::fail)).collect();
        (prompts, events)
    }

    /// A prompt went out to a version 1 agent (C-V1-2): v1 has no receipt and no echo, so it
    /// is delivered now, under an id of this client's, and the turn runs. Returns that id.
    pub(crate) fn v1_prompt_sent(&mut self, i: usize) -> (MessageId, Vec<SessionEvent>) {
        let id = match self.items.get(i).and_then(|item| item.life.message_id().cloned()) {
            Some(id) => id,
            None => {
                let id = self.mint();
                self.by_message.insert(id.0.clone(), i);
                id
            }
        };
        // Sending, without an event: the echo below delivers it under `id` at once.
        if let Some(item) = self.items.get_mut(i) {
            let _ = item.step(Lifecycle::send);
        }
        self.stream = None;
        let content = self.items.get(i).map(|item| item.content.clone()).unwrap_or_default();
        let echo = SessionUpdate::UserMessage(Box::new(UserMessage::new(id.clone()).content(content)));
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

    pub(crate) fn check_revoke(&self, message_id: &MessageId) -> Result<usize, CallRejected> {
        if self.caps.is_none() {
            return Err(CallRejected::ModeNotSupported);
        }
        self.own_pending(message_id)
    }

    pub(crate) fn check_replace(&self, message_id: &MessageId) -> Result<usize, CallRejected> {
        if !self.affordances().edit_pending {
            return Err(CallRejected::ReplaceNotSupported);
        }
        self.own_pending(message_id)
    }

    fn own_pending(&self, message_id: &MessageId) -> Result<usize, CallRejected> {
        match self.by_message.get(&message_id.0) {
            Some(&i) if self.items[i].life.check_editable().is_ok() => Ok(i),
            _ => Err(CallRejected::UnknownMessageId),
        }
    }

    /// Adds an item being sent; returns its index.
    pub(crate) fn sending(&mut self, mode: ItemMode, content: Vec<ContentBlock>) -> (usize, SessionEvent) {
        self.items.push(Item::new(mode, Lifecycle::Sending, content));
        let i = self.items.len() - 1;
        (i, SessionEvent::Item(self.items[i].view()))
    }

    /// An accept answer: the item is pending with its id (or already delivered, when the
    /// `user_message` overtook the answer).
    pub(crate) fn accepted(&mut self, i: usize, message_id: Option<MessageId>) -> Vec<SessionEvent> {
        // The insertion receipt and the update may arrive in either order.
        let inserted = message_id.as_ref().is_some_and(|id| self.entries.get(MessageRole::User, &id.0).is_some());
        let Some(item) = self.items.get_mut(i) else { return Vec::new() };
        let step = item.step(|life| {
            let pending = life.accept(message_id.clone())?;
            match &message_id {
                Some(id) if inserted => pending.deliver(id.clone()),
                _ => Ok(pending),
            }
        });
        if step.is_err() {
            return Vec::new();
        }
        if let Some(id) = message_id {
            self.by_message.insert(id.0, i);
        }
        vec![SessionEvent::Item(self.items[i].view())]
    }

    /// An error answer to an accept: the item failed.
    pub(crate) fn refused(&mut self, i: usize) -> Vec<SessionEvent> {
        self.step(i, Lifecycle::refuse)
    }

    /// A revoke answered with success. (C-PEND-4: `already_delivered` keeps the item pending
    /// until its `user_message`.)
    pub(crate) fn revoked(&mut self, i: usize) -> Vec<SessionEvent> {
        self.step(i, Lifecycle::revoke)
    }

    /// A replace answered with success: the content is the new one.
    pub(crate) fn replaced(&mut self, i: usize, content: Vec<ContentBlock>) -> Vec<SessionEvent> {
        match self.items.get_mut(i) {
            Some(item) if item.life.check_editable().is_ok() => {
                let old = std::mem::replace(&mut item.content, content);
                item.superseded.push(old);
                vec![SessionEvent::Item(item.view())]
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
        for item in &mut self.items {
            // What is still sending waits for its answer.
            if item.step(Lifecycle::fail).is_ok() {
                events.push(SessionEvent::Item(item.view()));
            }
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
                // (What this client still holds was never sent: it cannot be this message.)
                let found = self.items.iter().position(|it| {
                    matches!(it.life, Lifecycle::Sending | Lifecycle::Pending { id: None })
                        && content.is_some_and(|c| c == &it.content)
                });
                if let Some(i) = found {
                    self.by_message.insert(id.0.clone(), i);
                }
                found
            }
            None => None,
        };
        let Some(i) = idx else { return };
        let item = &mut self.items[i];
        if item.step(|life| life.deliver(id.clone())).is_ok() {
            if let Some(c) = content {
                if c != &item.content && item.superseded.iter().any(|old| old == c) {
                    let v = Violation { rule: "R-REPLACE-2".into(), message_id: id.clone() };
                    self.violations.push(v.clone());
                    events.push(SessionEvent::Violation(v));
                }
            }
            events.push(SessionEvent::Item(self.items[i].view()));
        }
    }

    /// One of this client's items, by its index.
    pub(crate) fn item(&self, i: usize) -> Option<PendingItem> {
        self.items.get(i).map(Item::view)
    }

    /// The content of one of this client's items, by its index.
    pub(crate) fn item_content(&self, i: usize) -> Option<&[ContentBlock]> {
        self.items.get(i).map(|item| item.content.as_slice())
    }

    /// The status of one of this client's items, by `messageId`.
    pub fn item_status(&self, message_id: &MessageId) -> Option<ItemStatus> {
        self.lifecycle(message_id).map(Lifecycle::status)
    }

    /// Where one of this client's items is, by `messageId` (an id this client minted for an
    /// item it held finds it too).
    pub fn lifecycle(&self, message_id: &MessageId) -> Option<&Lifecycle> {
        self.by_message.get(&message_id.0).map(|&i| &self.items[i].life)
    }

    /// The turn state.
    pub fn state(&self) -> TurnState {
        self.state.unwrap_or(TurnState::Idle)
    }

    /// The transcript.
    pub fn transcript(&self) -> &[TranscriptEntry] {
        &self.transcript
    }

    /// The client's own items still `sending` or `pending` (held ones included), in the order
    /// they were sent.
    pub fn pending(&self) -> impl Iterator<Item = PendingItem> + '_ {
        self.items.iter().filter(|i| i.life.is_open()).map(Item::view)
    }

    /// Everything a UI renders, in one value.
    pub fn snapshot(&self) -> MirrorSnapshot {
        MirrorSnapshot {
            state: self.state(),
            stop_reason: self.stop_reason.clone(),
            usage: self.usage.clone(),
            pending: self.pending().collect(),
            transcript: self.transcript.clone(),
            violations: self.violations.clone(),
            affordances: self.affordances(),
            agent_pending: self.agent_pending.clone(),
            closed: self.closed,
            tolerated: self.tolerated,
        }
    }
}

#[cfg(test)]
mod tests {
    use acp_inject_wire::TextContent;

    use super::super::item::Step;
    use super::*;

    fn id(s: &str) -> MessageId {
        MessageId(s.into())
    }

    fn text(s: &str) -> Vec<ContentBlock> {
        vec![ContentBlock::Text(Box::new(TextContent::new(s)))]
    }

    #[test]
    fn transitions_consume_and_refusals_give_the_state_back() {
        let pending = Lifecycle::Sending.accept(Some(id("m1"))).unwrap();
        assert_eq!(pending, Lifecycle::Pending { id: Some(id("m1")) });
        assert_eq!(pending.clone().deliver(id("other")), Ok(Lifecycle::Delivered { id: id("m1") }));
        assert_eq!(pending.clone().revoke(), Ok(Lifecycle::Revoked { id: id("m1") }));
        let refused = Lifecycle::Delivered { id: id("m1") }.revoke().unwrap_err();
        assert_eq!(refused, IllegalTransition { step: Step::Revoke, state: Lifecycle::Delivered { id: id("m1") } });
        // An item without an id cannot be revoked; it is delivered under its message's id.
        let unbound = Lifecycle::Sending.accept(None).unwrap();
        assert!(unbound.clone().revoke().is_err());
        assert_eq!(unbound.deliver(id("m2")), Ok(Lifecycle::Delivered { id: id("m2") }));
        assert_eq!(Lifecycle::HeldPrompt.send(), Ok(Lifecycle::Sending));
        assert_eq!(Lifecycle::HeldMessage { id: id("local_1") }.fail(), Ok(Lifecycle::Failed { id: Some(id("local_1")) }));
        assert!(Lifecycle::Sending.fail().is_err(), "an item still sending waits for its answer");
        assert!(Lifecycle::Revoked { id: id("m1") }.accept(None).is_err());
    }

    #[test]
    fn views_read_the_lifecycle_and_storage_refuses_what_names_none() {
        let item = Item::new(ItemMode::Queue, Lifecycle::HeldMessage { id: id("local_1") }, text("hi"));
        let view = item.view();
        assert_eq!((view.status, view.held, view.message_id.clone()), (ItemStatus::Pending, true, Some(id("local_1"))));
        assert_eq!(Item::try_from(view).unwrap(), item);
        let bad = PendingItem {
            message_id: None,
            mode: ItemMode::Prompt,
            status: ItemStatus::Delivered,
            content: text("hi"),
            superseded: Vec::new(),
            held: false,
        };
        assert!(Item::try_from(bad).is_err(), "delivered without an id");
    }

    #[test]
    fn a_held_prompt_is_not_bound_by_a_user_message_with_its_content() {
        let mut m = SessionMirror::new(None);
        let (held, _) = m.hold(ItemMode::Prompt, text("hi"), false);
        let (sent, _) = m.sending(ItemMode::Prompt, text("hi"));
        let echo = UserMessage::new(id("msg_1")).content(text("hi"));
        m.apply(SessionUpdate::UserMessage(Box::new(echo)));
        assert_eq!(m.items[held].life, Lifecycle::HeldPrompt);
        assert_eq!(m.items[sent].life, Lifecycle::Delivered { id: id("msg_1") });
        let restored = SessionMirror::from_json(&m.to_json()).unwrap();
        assert_eq!(restored.lifecycle(&id("msg_1")), Some(&Lifecycle::Delivered { id: id("msg_1") }));
        assert_eq!(restored.items[held].life, Lifecycle::HeldPrompt);
    }
}
