//! What a client connection reports: answers to its requests, each session's activity, the
//! agent's requests, and what it could not use.

use acp_inject_wire::{
    ErrorReason, InitializeResponse, MessageId, RequestId, RequestPermissionRequest, SessionId, SessionInfo, SessionStatus,
    SessionUpdate, StateUpdate,
};
use serde::{Deserialize, Serialize};

use super::item::PendingItem;
use super::view::Violation;

/// An error the agent answered to one of this client's requests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{message} ({code}){}{}", reason.as_ref().map(|r| format!(" reason={}", r.as_str())).unwrap_or_default(), message_id.as_ref().map(|m| format!(" messageId={m}")).unwrap_or_default())]
pub struct ProtocolError {
    /// The JSON-RPC code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// `data.reason`, for session and inject errors.
    pub reason: Option<ErrorReason>,
    /// `data.messageId`, when the request named a message.
    pub message_id: Option<MessageId>,
    /// `data.detail`, for a person.
    pub detail: Option<String>,
}

impl ProtocolError {
    /// An error this client settles a call with itself, nothing sent: the code's standard
    /// message, and why.
    pub(crate) fn local(code: i64, detail: &str) -> ProtocolError {
        let message = acp_inject_wire::errors::message_for(code).to_owned();
        ProtocolError { code, message, reason: None, message_id: None, detail: Some(detail.to_owned()) }
    }

    pub(crate) fn from_error(e: &acp_inject_wire::ErrorObject) -> ProtocolError {
        let data = e.error_data();
        ProtocolError {
            code: e.code,
            message: e.message.clone(),
            reason: data.as_ref().and_then(|d| d.reason.clone()),
            message_id: data.as_ref().and_then(|d| d.message_id.clone()),
            detail: data.and_then(|d| d.detail),
        }
    }
}

/// What the request was, for the answer it got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// `initialize`.
    Initialize,
    /// `session/new`.
    NewSession,
    /// `session/list`.
    ListSessions,
    /// `session/resume`.
    Resume,
    /// `session/prompt`.
    Prompt,
    /// `session/inject`.
    Inject,
    /// `session/revoke_inject`.
    Revoke,
    /// `session/replace_inject`.
    Replace,
    /// `session/close`.
    Close,
    /// `session/status`.
    Status,
    /// `auth/login` (`authenticate` to a version 1 agent).
    Authenticate,
    /// `auth/logout`.
    Logout,
    /// An extension method (`_…`) of the app's.
    Extension,
}

/// The answer to a request, typed by what was asked.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The agent answered with an error (or a result that did not decode).
    Failed(ProtocolError),
    /// `initialize`: the agent's version, identity and capabilities.
    Initialized(Box<InitializeResponse>),
    /// `session/new`: the new session (now open on this connection).
    SessionCreated {
        /// Its id.
        session_id: SessionId,
    },
    /// `session/list`: one page.
    Sessions {
        /// Newest first.
        sessions: Vec<SessionInfo>,
        /// Pass as `cursor` for the next page; `None` at the end.
        next_cursor: Option<String>,
    },
    /// `session/resume`: the session is open on this connection (any replay came first).
    Resumed,
    /// `session/prompt` or `session/inject`: the message's id (an agent that answers `{}` to
    /// a prompt gives none; the item is then bound by its `user_message`).
    Accepted {
        /// The id its `user_message` carries.
        message_id: Option<MessageId>,
    },
    /// `session/revoke_inject`.
    Revoked,
    /// `session/replace_inject`.
    Replaced,
    /// `session/close`.
    Closed,
    /// `session/status` (C-STATUS-1).
    Status {
        /// `open` (in the agent's memory) or `saved` (resumable); a value this client does not
        /// know reads as `saved`.
        status: SessionStatus,
        /// The session's foreground state when the agent reported it (a snapshot: an `idle`
        /// here is not a turn end).
        state: Option<StateUpdate>,
    },
    /// `auth/login`: the agent accepted the method; the session methods it refused with
    /// -32000 may be called now.
    Authenticated,
    /// `auth/logout`.
    LoggedOut,
    /// An extension request of the app's (`_…`): the agent's result, as it came.
    Extension {
        /// The result.
        result: serde_json::Value,
    },
}

/// Something that happened in one session.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionEvent {
    /// A `session/update` of the session, already applied to its mirror.
    Update(SessionUpdate),
    /// One of this client's own prompts or injects changed (sent, accepted, delivered,
    /// revoked, replaced, failed).
    Item(PendingItem),
    /// A protocol violation the mirror detected (e.g. R-REPLACE-2).
    Violation(Violation),
    /// The session was closed (the answer to this client's `session/close`, or the agent's
    /// notice); pending items will not be delivered.
    Closed,
    /// Tolerant decoding dropped these values from the session's last update (a member that
    /// did not decode took its default, or array items were skipped).
    Tolerated(Vec<String>),
}

/// One thing a connection reports, in the order it happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A request of this client was answered.
    Answered {
        /// The request's id.
        request: RequestId,
        /// What was asked.
        kind: RequestKind,
        /// The session it concerned, when it concerned one.
        session_id: Option<SessionId>,
        /// The result, or the agent's error ([`Answer::Failed`]).
        outcome: Answer,
    },
    /// Activity in a session open on this connection.
    Session {
        /// The session.
        session_id: SessionId,
        /// What happened.
        event: SessionEvent,
    },
    /// The agent asks the user for permission; answer with
    /// [`super::ClientConnection::answer_permission`].
    PermissionRequested {
        /// The agent's request id, to answer.
        request: RequestId,
        /// The request.
        params: Box<RequestPermissionRequest>,
    },
    /// A notification of the agent's that this library does not handle itself: an extension's
    /// (`_auth/status_update`, …) or a method this version does not know, for the app.
    Notification {
        /// Its method.
        method: String,
        /// Its params, as they came.
        params: Option<serde_json::Value>,
    },
    /// A line or message this client could not use (malformed, an update for a session not
    /// open here, an answer to no request, an agent request it does not serve and answered
    /// with -32601), for logs.
    Ignored {
        /// What and why.
        detail: String,
    },
}
