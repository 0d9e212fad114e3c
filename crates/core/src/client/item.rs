//! One of this client's own prompts or injects: where it is ([`Lifecycle`], C-PEND-1: each
//! transition consumes the state and returns the next), how a UI shows it ([`PendingItem`]),
//! and the item a session's mirror keeps ([`Item`]).

use acp_inject_wire::{ContentBlock, InjectMode, MessageId};
use serde::{Deserialize, Serialize};

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

/// Where one of the client's own prompts or injects is, with the id it has there
/// (C-PEND-1): the state the mirror keeps, from which
/// [`PendingItem`]'s `status`, `message_id` and `held` are read off.
///
/// ```text
/// HeldPrompt ──send──▶ Sending ──accept──▶ Pending{id?} ──deliver──▶ Delivered{id}
/// HeldMessage{id} ─send─┘   │ └─deliver──────────────────────────────▲
///   │  └────revoke───┐      └─refuse─▶ Failed          Pending{id} ──revoke──▶ Revoked{id}
///   └─fail─▶ Failed  └──▶ Revoked{id}                  Pending ──fail──▶ Failed
/// ```
///
/// Each transition consumes the state and returns the next one, or [`IllegalTransition`]
/// (which gives the state back unchanged) when the step does not apply to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// A prompt this client holds, not yet sent (C-HELD-1);
    /// it gets its id when it goes out.
    HeldPrompt,
    /// A queued message this client holds, not yet sent (C-HELD-1), under an id this client
    /// minted (`local_<n>`); revocable and editable until it goes out.
    HeldMessage {
        /// The id this client gave it.
        id: MessageId,
    },
    /// Sent, no answer yet.
    Sending,
    /// Accepted, not yet delivered.
    Pending {
        /// The id the agent answered with; `None` for an agent that answered `{}` (the item
        /// then awaits correlation with its `user_message` by content, C-PEND-5).
        id: Option<MessageId>,
    },
    /// Its `user_message` arrived; it is in the transcript.
    Delivered {
        /// The id its `user_message` carries.
        id: MessageId,
    },
    /// Revoked successfully (or dropped by this client before it went out).
    Revoked {
        /// The id it was revoked by.
        id: MessageId,
    },
    /// The agent refused it, or it will never be delivered (the session closed, a held
    /// prompt dropped by a cancel).
    Failed {
        /// The id it had when it failed, if any.
        id: Option<MessageId>,
    },
}

/// A lifecycle step (see [`Lifecycle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A held item goes out as `session/prompt` ([`Lifecycle::send`]).
    Send,
    /// The agent accepted it ([`Lifecycle::accept`]).
    Accept,
    /// The agent refused it ([`Lifecycle::refuse`]).
    Refuse,
    /// Its `user_message` arrived ([`Lifecycle::deliver`]).
    Deliver,
    /// A revoke succeeded ([`Lifecycle::revoke`]).
    Revoke,
    /// Its content may change ([`Lifecycle::check_editable`]).
    Replace,
    /// It will never be delivered ([`Lifecycle::fail`]).
    Fail,
}

/// A [`Step`] that does not apply to the item's [`Lifecycle`]; the state is given back
/// unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{step:?} does not apply to an item in state {state:?}")]
pub struct IllegalTransition {
    /// The step refused.
    pub step: Step,
    /// The state, unchanged.
    pub state: Lifecycle,
}

impl Lifecycle {
    fn refuse_step(self, step: Step) -> IllegalTransition {
        IllegalTransition { step, state: self }
    }

    /// The status a UI shows ([`PendingItem::status`]).
    pub fn status(&self) -> ItemStatus {
        match self {
            Lifecycle::HeldPrompt | Lifecycle::Sending => ItemStatus::Sending,
            Lifecycle::HeldMessage { .. } | Lifecycle::Pending { .. } => ItemStatus::Pending,
            Lifecycle::Delivered { .. } => ItemStatus::Delivered,
            Lifecycle::Revoked { .. } => ItemStatus::Revoked,
            Lifecycle::Failed { .. } => ItemStatus::Failed,
        }
    }

    /// The item's id, where it has one ([`PendingItem::message_id`]).
    pub fn message_id(&self) -> Option<&MessageId> {
        match self {
            Lifecycle::HeldPrompt | Lifecycle::Sending => None,
            Lifecycle::HeldMessage { id } | Lifecycle::Delivered { id } | Lifecycle::Revoked { id } => Some(id),
            Lifecycle::Pending { id } | Lifecycle::Failed { id } => id.as_ref(),
        }
    }

    /// This client holds it, not yet sent ([`PendingItem::held`]).
    pub fn is_held(&self) -> bool {
        matches!(self, Lifecycle::HeldPrompt | Lifecycle::HeldMessage { .. })
    }

    /// Still to be delivered: held, sending or pending (what [`SessionMirror::pending`](super::SessionMirror::pending) lists).
    pub fn is_open(&self) -> bool {
        matches!(self.status(), ItemStatus::Sending | ItemStatus::Pending)
    }

    /// Sent and not yet answered or inserted: the session is not free for a held prompt
    /// (C-HELD-2).
    pub fn awaits_agent(&self) -> bool {
        matches!(self, Lifecycle::Sending | Lifecycle::Pending { .. })
    }

    /// `HeldPrompt | HeldMessage → Sending`: a held item went out as `session/prompt`.
    pub fn send(self) -> Result<Lifecycle, IllegalTransition> {
        match self {
            Lifecycle::HeldPrompt | Lifecycle::HeldMessage { .. } => Ok(Lifecycle::Sending),
            other => Err(other.refuse_step(Step::Send)),
        }
    }

    /// `Sending → Pending{id}`: the agent accepted it, with its id or (`{}`) without.
    pub fn accept(self, id: Option<MessageId>) -> Result<Lifecycle, IllegalTransition> {
        match self {
            Lifecycle::Sending => Ok(Lifecycle::Pending { id }),
            other => Err(other.refuse_step(Step::Accept)),
        }
    }

    /// `Sending → Failed`: the agent refused it.
    pub fn refuse(self) -> Result<Lifecycle, IllegalTransition> {
        match self {
            Lifecycle::Sending => Ok(Lifecycle::Failed { id: None }),
            other => Err(other.refuse_step(Step::Refuse)),
        }
    }

    /// `Sending | Pending → Delivered{id}`: its `user_message` arrived, carrying `id` (an item
    /// that has its id keeps it).
    pub fn deliver(self, id: MessageId) -> Result<Lifecycle, IllegalTransition> {
        match self {
            Lifecycle::Sending | Lifecycle::Pending { id: None } => Ok(Lifecycle::Delivered { id }),
            Lifecycle::Pending { id: Some(own) } => Ok(Lifecycle::Delivered { id: own }),
            other => Err(other.refuse_step(Step::Deliver)),
        }
    }

    /// `Pending{id} | HeldMessage{id} → Revoked{id}`: a revoke succeeded (an item is revoked
    /// by its id, so one without cannot be).
    pub fn revoke(self) -> Result<Lifecycle, IllegalTransition> {
        match self {
            Lifecycle::Pending { id: Some(id) } | Lifecycle::HeldMessage { id } => Ok(Lifecycle::Revoked { id }),
            other => Err(other.refuse_step(Step::Revoke)),
        }
    }

    /// Its content may be replaced: pending, or a message this client holds.
    pub fn check_editable(&self) -> Result<(), IllegalTransition> {
        match self {
            Lifecycle::Pending { .. } | Lifecycle::HeldMessage { .. } => Ok(()),
            other => Err(other.clone().refuse_step(Step::Replace)),
        }
    }

    /// `Pending | HeldPrompt | HeldMessage → Failed`: it will never be delivered (the session
    /// closed; a held prompt dropped). An item still sending waits for its answer.
    pub fn fail(self) -> Result<Lifecycle, IllegalTransition> {
        match self {
            Lifecycle::Pending { id } => Ok(Lifecycle::Failed { id }),
            Lifecycle::HeldPrompt => Ok(Lifecycle::Failed { id: None }),
            Lifecycle::HeldMessage { id } => Ok(Lifecycle::Failed { id: Some(id) }),
            other => Err(other.refuse_step(Step::Fail)),
        }
    }
}

/// One of the client's own prompts or injects, as a UI shows it: read off the item's
/// [`Lifecycle`] (`status`, `message_id` and `held` together name one of its states).
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
    /// Held by this client, not yet sent (C-HELD-1): a
    /// queued message for an agent that takes no injects, or a prompt made during a version 1
    /// agent's turn. It goes out as a `session/prompt` when the session is free.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

/// One of the client's own items as the mirror keeps it: its [`Lifecycle`] and its content.
/// It is stored (in [`SessionMirror::to_json`]) as the [`PendingItem`] it shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PendingItem", into = "PendingItem")]
pub(super) struct Item {
    pub(super) mode: ItemMode,
    pub(super) life: Lifecycle,
    pub(super) content: Vec<ContentBlock>,
    pub(super) superseded: Vec<Vec<ContentBlock>>,
}

impl Item {
    pub(super) fn new(mode: ItemMode, life: Lifecycle, content: Vec<ContentBlock>) -> Item {
        Item { mode, life, content, superseded: Vec::new() }
    }

    /// The item as a UI shows it.
    pub(super) fn view(&self) -> PendingItem {
        PendingItem {
            message_id: self.life.message_id().cloned(),
            mode: self.mode,
            status: self.life.status(),
            content: self.content.clone(),
            superseded: self.superseded.clone(),
            held: self.life.is_held(),
        }
    }

    /// Takes one step of the lifecycle; on [`IllegalTransition`] the state stays as it was.
    pub(super) fn step(&mut self, f: impl FnOnce(Lifecycle) -> Result<Lifecycle, IllegalTransition>) -> Result<(), IllegalTransition> {
        let life = std::mem::replace(&mut self.life, Lifecycle::Sending);
        match f(life) {
            Ok(next) => {
                self.life = next;
                Ok(())
            }
            Err(e) => {
                self.life = e.state.clone();
                Err(e)
            }
        }
    }
}

/// A stored item whose `status`, `messageId` and `held` name no [`Lifecycle`].
#[derive(Debug, thiserror::Error)]
#[error("a stored item names no lifecycle: status {status:?}, held {held}, messageId {message_id:?}")]
pub(super) struct NoLifecycle {
    status: ItemStatus,
    held: bool,
    message_id: Option<MessageId>,
}

impl TryFrom<PendingItem> for Item {
    type Error = NoLifecycle;

    fn try_from(p: PendingItem) -> Result<Item, NoLifecycle> {
        let life = match (p.status, p.held, p.message_id) {
            (ItemStatus::Sending, true, None) => Lifecycle::HeldPrompt,
            (ItemStatus::Pending, true, Some(id)) => Lifecycle::HeldMessage { id },
            (ItemStatus::Sending, false, None) => Lifecycle::Sending,
            (ItemStatus::Pending, false, id) => Lifecycle::Pending { id },
            (ItemStatus::Delivered, false, Some(id)) => Lifecycle::Delivered { id },
            (ItemStatus::Revoked, false, Some(id)) => Lifecycle::Revoked { id },
            (ItemStatus::Failed, false, id) => Lifecycle::Failed { id },
            (status, held, message_id) => return Err(NoLifecycle { status, held, message_id }),
        };
        Ok(Item { mode: p.mode, life, content: p.content, superseded: p.superseded })
    }
}

impl From<Item> for PendingItem {
    fn from(item: Item) -> PendingItem {
        PendingItem {
            message_id: item.life.message_id().cloned(),
            mode: item.mode,
            status: item.life.status(),
            held: item.life.is_held(),
            content: item.content,
            superseded: item.superseded,
        }
    }
}
