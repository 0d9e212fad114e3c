//! What a UI reads of a session ([`MirrorSnapshot`] and its parts) and what the client refuses
//! without sending ([`CallRejected`]): the values the mirror and the connection hand out.

use acp_inject_wire::{ContentBlock, MessageId, PendingInject, StopReason, Usage};
use serde::{Deserialize, Serialize};

use super::item::PendingItem;

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
    /// (C-HELD-3).
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
