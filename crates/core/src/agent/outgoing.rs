//! The agent's own requests to the client (R-PERM-1, R-PERM-2): the core mints their ids,
//! sends them to the session's controllers, routes the answers back by id, and ends every one
//! of them exactly once, answered or withdrawn.
//!
//! Today the only such request is `session/request_permission`. A runtime asks with
//! [`Agent::request_permission`] (or [`RuntimeEvent::RequestPermission`](super::RuntimeEvent))
//! and gets the request's id; the answer comes back as
//! [`RuntimeAction::PermissionAnswered`] with that id. A request the client can no longer
//! answer is answered `cancelled` by the core: the turn was cancelled or ended, the session
//! closed, every connection it was sent to went away, or the host withdrew it (its own
//! timeout, [`RuntimeEvent::WithdrawPermission`](super::RuntimeEvent)). An answer to an id
//! the core no longer waits for, or from a connection it was not sent to, is ignored.

use std::collections::{BTreeMap, BTreeSet};

use acp_inject_wire::jsonrpc::{self, DecodeError};
use acp_inject_wire::{
    ErrorObject, RequestId, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SessionId,
};

use super::output::{self, Output, RuntimeAction};
use super::runtime::{HostError, PermissionAsk};
use super::snapshot::OpenRequest;
use super::store::Change;
use super::turn::Announce;
use super::{Agent, ConnId, ConnectionRole, Turn};

/// The agent's open requests, by id (the id counter is one of the agent's
/// [`Counters`](super::Counters)).
#[derive(Clone, Debug, Default)]
pub(super) struct Outgoing {
    open: BTreeMap<RequestId, OpenRequest>,
}

impl Outgoing {
    pub(super) fn from_open(open: Vec<OpenRequest>) -> Outgoing {
        Outgoing { open: open.into_iter().map(|r| (r.id.clone(), r)).collect() }
    }

    /// Any open request belongs to `session`.
    pub(super) fn has_open_for(&self, session: &SessionId) -> bool {
        self.open.values().any(|r| r.session == *session)
    }

    pub(super) fn open(&self) -> Vec<OpenRequest> {
        self.open.values().cloned().collect()
    }

    fn of_session(&self, session: &SessionId) -> Vec<RequestId> {
        self.open.values().filter(|r| r.session == *session).map(|r| r.id.clone()).collect()
    }
}

/// How the core reads a client's answer to a permission request: an error response, or a
/// result that does not decode, counts as `cancelled` (the user granted nothing).
fn outcome_of(answer: Result<&serde_json::value::RawValue, ErrorObject>) -> Result<RequestPermissionOutcome, String> {
    match answer {
        Ok(raw) => jsonrpc::decode::<RequestPermissionResponse>(raw.get())
            .map(|r| r.outcome)
            .map_err(|e: DecodeError| format!("the answer does not decode: {e}")),
        Err(error) => Err(format!("the client answered with error {}: {}", error.code, error.message)),
    }
}

/// The `cancelled` outcome.
pub fn cancelled_outcome() -> RequestPermissionOutcome {
    RequestPermissionOutcome::Cancelled(Box::default())
}

impl Agent {
    /// Asks the session's controllers for permission (`session/request_permission`, R-PERM-1):
    /// the turn becomes `requires_action` (at the first open request), the request goes to
    /// every controller attached to the session, and the id is returned. The answer comes
    /// back as [`RuntimeAction::PermissionAnswered`] with this id, exactly once. With no
    /// controller attached, nobody can answer: it is answered `cancelled` at once.
    pub fn request_permission(&mut self, session: &SessionId, ask: PermissionAsk) -> Result<RequestId, HostError> {
        self.ask_permission(session, ask)
    }

    pub(super) fn ask_permission(&mut self, session: &SessionId, ask: PermissionAsk) -> Result<RequestId, HostError> {
        if ask.options.is_empty() {
            return Err(HostError::NoPermissionOptions);
        }
        let s = self.sessions.get(session).ok_or(HostError::SessionClosed)?;
        if !s.turn.in_progress() {
            return Err(HostError::NoTurnInProgress);
        }
        self.permission_transition(session, Turn::permission_requested);
        let id = RequestId::Str(format!("permission-{}{}", self.scope, self.counters.next_request));
        self.counters.next_request += 1;
        self.record_counters();
        let to: BTreeSet<ConnId> =
            self.attached_to(session).into_iter().filter(|c| self.role(c) == ConnectionRole::Controller).collect();
        let params =
            RequestPermissionRequest::new(session.clone(), ask.title, ask.options).description(ask.description).subject(ask.subject);
        let line = jsonrpc::request_line(&id, &params);
        if to.is_empty() {
            self.outgoing.open.insert(id.clone(), OpenRequest { id: id.clone(), session: session.to_owned(), to, line });
            self.end_request(&id, cancelled_outcome());
            return Ok(id);
        }
        self.out.push_back(Output::Line { to: to.iter().cloned().collect(), line: line.clone() });
        self.outgoing.open.insert(id.clone(), OpenRequest { id: id.clone(), session: session.to_owned(), to, line });
        Ok(id)
    }

    /// The host gives up on one of its open requests (its own timeout): it is answered
    /// `cancelled` now, and a later answer from the client is ignored.
    pub fn withdraw_request(&mut self, session: &SessionId, id: &RequestId) -> Result<(), HostError> {
        self.withdraw(session, id)
    }

    pub(super) fn withdraw(&mut self, session: &SessionId, id: &RequestId) -> Result<(), HostError> {
        match self.outgoing.open.get(id) {
            Some(r) if r.session == *session => {
                self.end_request(id, cancelled_outcome());
                Ok(())
            }
            _ => Err(HostError::UnknownRequest),
        }
    }

    /// The requests the agent still waits on, in id order.
    pub fn open_requests(&self) -> Vec<OpenRequest> {
        self.outgoing.open()
    }

    /// A response from `conn`: the answer to one of the core's requests, or ignored (counted).
    pub(super) fn response(&mut self, conn: &ConnId, id: &RequestId, answer: Result<&serde_json::value::RawValue, ErrorObject>) {
        if !self.outgoing.open.get(id).is_some_and(|r| r.to.contains(conn)) {
            self.ignored += 1;
            return;
        }
        let outcome = outcome_of(answer).unwrap_or_else(|_| cancelled_outcome());
        self.end_request(id, outcome);
    }

    /// Ends every open request of a session as `cancelled` (its turn was cancelled or ended).
    pub(super) fn end_session_requests(&mut self, session: &SessionId) {
        for id in self.outgoing.of_session(session) {
            self.end_request(&id, cancelled_outcome());
        }
    }

    /// Drops a session's open requests without touching its turn (the session is closing:
    /// the runtime is told each was cancelled).
    pub(super) fn drop_session_requests(&mut self, session: &SessionId) {
        for id in self.outgoing.of_session(session) {
            self.outgoing.open.remove(&id);
            self.out.push_back(Output::action(
                session,
                RuntimeAction::PermissionAnswered { request_id: id, outcome: cancelled_outcome() },
            ));
        }
    }

    /// A controller resumed the session (R-PERM-2): the requests still open are sent to it too,
    /// in id order, and its answer counts like any recipient's.
    pub(super) fn resend_open_requests(&mut self, session: &SessionId, conn: &ConnId) -> Vec<Output> {
        if self.role(conn) != ConnectionRole::Controller {
            return Vec::new();
        }
        let mut lines = Vec::new();
        for r in self.outgoing.open.values_mut().filter(|r| r.session == *session && !r.line.is_empty()) {
            if r.to.insert(conn.to_owned()) {
                lines.push(Output::Line { to: vec![conn.to_owned()], line: r.line.clone() });
            }
        }
        lines
    }

    /// A connection went away: requests only it could answer are answered `cancelled`.
    pub(super) fn connection_gone(&mut self, conn: &ConnId) {
        let mut orphaned = Vec::new();
        for r in self.outgoing.open.values_mut() {
            if r.to.remove(conn) && r.to.is_empty() {
                orphaned.push(r.id.clone());
            }
        }
        for id in orphaned {
            self.end_request(&id, cancelled_outcome());
        }
    }

    /// Moves the session's turn on a permission request opening or closing (R-PERM-1): the
    /// store records the new turn, and attached connections get the state it announces.
    fn permission_transition(&mut self, session: &SessionId, step: impl FnOnce(&mut Turn) -> Option<Announce>) {
        let Some(s) = self.sessions.get_mut(session) else { return };
        let before = s.turn;
        let announce = step(&mut s.turn);
        let turn = s.turn;
        if turn != before {
            self.store.record(Change::Turn { session, turn: &turn });
        }
        let update = match announce {
            Some(Announce::RequiresAction) => output::requires_action(),
            Some(Announce::Running) => output::running(),
            None => return,
        };
        let line = self.broadcast(session, update);
        self.out.push_back(line);
    }

    /// Ends one open request: the runtime gets the outcome, and the turn is `running` again
    /// when it was the last one open.
    fn end_request(&mut self, id: &RequestId, outcome: RequestPermissionOutcome) {
        let Some(request) = self.outgoing.open.remove(id) else { return };
        let session = &request.session;
        self.permission_transition(session, |t| t.permission_resolved().ok().flatten());
        self.out.push_back(Output::action(session, RuntimeAction::PermissionAnswered { request_id: request.id, outcome }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_inject_wire::CancelledPermissionOutcome;

    #[test]
    fn an_error_answer_or_a_bad_result_counts_as_cancelled() {
        let raw = serde_json::value::RawValue::from_string(r#"{"outcome":{"outcome":"selected","optionId":"ok"}}"#.into()).unwrap();
        assert_eq!(outcome_of(Ok(&raw)).unwrap().tag(), "selected");
        let bad = serde_json::value::RawValue::from_string(r#"{"outcome":7}"#.into()).unwrap();
        assert!(outcome_of(Ok(&bad)).unwrap_err().contains("does not decode"));
        assert!(outcome_of(Err(ErrorObject::invalid_request("boom"))).unwrap_err().contains("error"));
        assert_eq!(cancelled_outcome(), RequestPermissionOutcome::Cancelled(Box::new(CancelledPermissionOutcome::new())));
    }
}
