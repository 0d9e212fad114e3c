//! What this client holds for an agent that takes no injects (a version 1 agent, or a v2
//! agent without `session.inject`), and when it goes out
//! (C-HELD-1 …
//! C-HELD-3).
//!
//! The same pending-item state machine serves both kinds of agent: a queued message is
//! `pending` here, under an id this client minted, revocable and editable until it goes out;
//! when the session is free (idle, no prompt of this client unanswered or uninserted), the
//! first held item is sent as `session/prompt`, one message per prompt, in order. The calls
//! that need no request (a held queue, a revoke or replace of a held message) are answered at
//! once, through the same [`Event::Answered`] as an agent's answer, so an app waits for every
//! call the same way.

use super::*;

impl ClientConnection {
    /// Answers a call this client settled itself, under a request id of its own (never sent).
    pub(super) fn answer_locally(&mut self, session_id: &SessionId, kind: RequestKind, outcome: Answer) -> RequestId {
        let request = self.next_id();
        self.events.push_back(Event::Answered { request: request.clone(), kind, session_id: Some(session_id.clone()), outcome });
        request
    }

    /// `inject` for an agent that takes no injects.
    pub(super) fn hold_inject(
        &mut self,
        session_id: &SessionId,
        mode: InjectMode,
        content: Vec<ContentBlock>,
    ) -> Result<RequestId, CallRejected> {
        let fallback = self.steer_fallback;
        let mirror = self.open(session_id)?;
        let (mode, front, cancel) = match (mode, fallback) {
            (InjectMode::Queue, _) | (InjectMode::Steer, Some(SteerFallback::Queue)) => (ItemMode::Queue, false, false),
            (InjectMode::Steer, None) => return Err(CallRejected::SteerNotSupported),
            (InjectMode::Steer, Some(SteerFallback::CancelAndResend)) => (ItemMode::Steer, true, !mirror.free()),
        };
        let (item, event) = mirror.hold(mode, content, front);
        let message_id = mirror.item(item).and_then(|i| i.message_id);
        self.session_event(session_id, event);
        let request = self.answer_locally(session_id, RequestKind::Inject, Answer::Accepted { message_id });
        if cancel {
            self.cancel(session_id);
        }
        self.drain_held(session_id);
        Ok(request)
    }

    /// `revoke` for an agent that takes no injects: a message this client still holds.
    pub(super) fn revoke_held(&mut self, session_id: &SessionId, message_id: &MessageId) -> Result<RequestId, CallRejected> {
        let mirror = self.open(session_id)?;
        let item = mirror.check_held(message_id)?;
        for e in mirror.revoke_held(item) {
            self.session_event(session_id, e);
        }
        Ok(self.answer_locally(session_id, RequestKind::Revoke, Answer::Revoked))
    }

    /// `replace` for an agent that takes no injects: a message this client still holds.
    pub(super) fn replace_held(
        &mut self,
        session_id: &SessionId,
        message_id: &MessageId,
        content: Vec<ContentBlock>,
    ) -> Result<RequestId, CallRejected> {
        let mirror = self.open(session_id)?;
        let item = mirror.check_held(message_id)?;
        for e in mirror.replaced(item, content) {
            self.session_event(session_id, e);
        }
        Ok(self.answer_locally(session_id, RequestKind::Replace, Answer::Replaced))
    }

    /// Sends the first held item of the session as `session/prompt` when the session is free
    /// (C-HELD-2). Called after anything that may free it.
    pub(super) fn drain_held(&mut self, session_id: &SessionId) {
        let Some(mirror) = self.sessions.get_mut(session_id) else { return };
        let Some(item) = mirror.next_held() else { return };
        let content = mirror.item_content(item).map(<[ContentBlock]>::to_vec).unwrap_or_default();
        let call = self.held_calls.remove(&(session_id.clone(), item));
        let id = call.clone().unwrap_or_else(|| self.next_id());
        let v1 = self.v1();
        // A version 1 agent knows no idempotency keys (C-IDEM-1 is for version 2).
        let params = PromptRequest::new(session_id.clone(), content).idempotency_key((!v1).then(super::fresh_key));
        self.outbox.push_back(jsonrpc::request_line(&id, &params));
        let session = Some(session_id.clone());
        let Some(mirror) = self.sessions.get_mut(session_id) else { return };
        if v1 {
            self.in_flight.insert(id, InFlight { session: session.clone(), flight: Flight::V1Turn });
            let (message_id, events) = mirror.v1_prompt_sent(item);
            if let Some(request) = call {
                let outcome = Answer::Accepted { message_id: Some(message_id) };
                self.events.push_back(Event::Answered { request, kind: RequestKind::Prompt, session_id: session, outcome });
            }
            for e in events {
                self.session_event(session_id, e);
            }
        } else {
            let flight = match call {
                Some(_) => Flight::Accept { item, prompt: true },
                None => Flight::HeldPrompt(item),
            };
            let events = mirror.sent_to_agent(item);
            self.in_flight.insert(id, InFlight { session, flight });
            for e in events {
                self.session_event(session_id, e);
            }
        }
    }

    /// The answer to a held item sent to a v2 agent: its receipt, or its refusal.
    pub(super) fn held_prompt_answered(&mut self, session_id: &SessionId, item: usize, outcome: Result<&RawValue, ErrorObject>) {
        let receipt = outcome.ok().and_then(|raw| jsonrpc::decode::<LenientPromptResponse>(raw.get()).ok());
        let Some(mirror) = self.sessions.get_mut(session_id) else { return };
        let events = match receipt {
            Some(r) => mirror.accepted(item, r.message_id),
            None => mirror.refused(item),
        };
        for e in events {
            self.session_event(session_id, e);
        }
        self.drain_held(session_id);
    }

    /// Answers the calls of held prompts that will not go out (a cancel, a close) with
    /// -32800.
    pub(super) fn fail_held_calls(&mut self, session_id: &SessionId, items: &[usize], why: &str) {
        for &item in items {
            let Some(request) = self.held_calls.remove(&(session_id.clone(), item)) else { continue };
            let outcome = Answer::Failed(ProtocolError::local(acp_inject_wire::errors::REQUEST_CANCELLED, why));
            self.events.push_back(Event::Answered {
                request,
                kind: RequestKind::Prompt,
                session_id: Some(session_id.clone()),
                outcome,
            });
        }
    }
}
