//! The input half of [`ClientConnection`]: what the agent writes, framed into lines, each
//! answer routed by its id to the request that asked, each update by its `sessionId` to that
//! session's mirror, and the agent's own requests surfaced or answered.

use super::*;

impl ClientConnection {
    /// Feeds bytes the agent wrote, in any chunking (partial lines, several lines, CRLF).
    pub fn receive_bytes(&mut self, chunk: &[u8]) {
        let mut framer = std::mem::replace(&mut self.framer, LineFramer::new(0));
        framer.push(chunk, |framed| self.framed(framed));
        self.framer = framer;
    }

    /// The agent's output ended: a last line without a newline is still read.
    pub fn finish(&mut self) {
        let mut framer = std::mem::replace(&mut self.framer, LineFramer::new(0));
        framer.finish(|framed| self.framed(framed));
        self.framer = framer;
    }

    fn framed(&mut self, framed: Framed<'_>) {
        match framed {
            Framed::Line(bytes) => match std::str::from_utf8(bytes) {
                Ok(line) => self.receive_line(line),
                Err(e) => self.ignore(format!("a line that is not UTF-8: {e}")),
            },
            Framed::Oversized { len } => {
                let limit = self.max_line_bytes;
                self.ignore(format!("a line of more than {limit} bytes ({len} seen)"));
            }
        }
    }

    pub(super) fn ignore(&mut self, detail: String) {
        self.ignored += 1;
        self.events.push_back(Event::Ignored { detail });
    }

    /// Applies one line from the agent: a message, or a JSON-RPC batch of them (R-WIRE-5), each
    /// entry applied as a line of its own, in order.
    pub fn receive_line(&mut self, line: &str) {
        if line.len() > self.max_line_bytes {
            return self.ignore(format!("a line of {} bytes, over the limit", line.len()));
        }
        if jsonrpc::is_batch(line) {
            return match jsonrpc::parse_batch(line) {
                Ok(entries) => {
                    for entry in entries {
                        if jsonrpc::is_batch(entry.get()) || !entry.get().starts_with('{') {
                            self.ignore("a batch entry that is not a message object".into());
                        } else {
                            self.receive_message_line(entry.get());
                        }
                    }
                }
                Err(e) => self.ignore(e.to_string()),
            };
        }
        self.receive_message_line(line);
    }

    /// Applies one message from the agent.
    fn receive_message_line(&mut self, line: &str) {
        if self.v1() {
            return self.receive_v1_line(line);
        }
        let (parsed, tolerated) = collect_tolerated(|| jsonrpc::parse_agent_line(line));
        match parsed {
            Ok(AgentLine::Update(n)) => self.update(n, tolerated),
            Ok(AgentLine::Other(m)) => self.message(m),
            Err(e) => self.ignore(e.to_string()),
        }
    }

    pub(super) fn update(&mut self, n: UpdateSessionNotification, tolerated: Vec<String>) {
        let session = n.session_id;
        let Some(mirror) = self.sessions.get_mut(&session) else {
            return self.ignore(format!("an update for session {:?}, which is not open on this connection", session.0));
        };
        let tolerated_count = tolerated.len();
        mirror.count_tolerated(tolerated_count);
        let events = mirror.apply(n.update);
        // A turn end may free the session for what this client holds (C-HELD-2); most
        // sessions hold nothing, and the update path does not look the session up again.
        let holds = mirror.holds_any();
        for e in events {
            self.session_event(&session, e);
        }
        if tolerated_count > 0 {
            self.session_event(&session, SessionEvent::Tolerated(tolerated));
        }
        if holds {
            self.drain_held(&session);
        }
    }

    /// The agent asks for permission (its request decoded, or why not).
    pub(super) fn permission(&mut self, id: RequestId, request: Result<RequestPermissionRequest, String>) {
        match request {
            Ok(p) => {
                self.permissions.insert(id.clone(), p.session_id.0.clone());
                self.events.push_back(Event::PermissionRequested { request: id, params: Box::new(p) });
            }
            Err(e) => {
                self.outbox.push_back(jsonrpc::error_line(&id, &ErrorObject::invalid_params(&e)));
                self.ignore(format!("a session/request_permission that does not decode: {e}"));
            }
        }
    }

    pub(super) fn message(&mut self, message: Incoming<'_>) {
        match message {
            Incoming::Response { id, outcome } => self.answered(id, outcome),
            Incoming::Notification { method, params } if method == acp_inject_wire::methods::SESSION_UPDATE => {
                let (decoded, tolerated) = collect_tolerated(|| jsonrpc::decode_params::<UpdateSessionNotification>(params));
                match decoded {
                    Ok(n) => self.update(n, tolerated),
                    Err(e) => self.ignore(format!("a session/update that does not decode: {e}")),
                }
            }
            // The agent withdraws a permission request: answered `cancelled` (C-PERM-1), and
            // the app hears of it below, to close its dialog.
            Incoming::Notification { method, params } if method == acp_inject_wire::methods::CANCEL_REQUEST => {
                let request = params
                    .and_then(|p| serde_json::from_str::<acp_inject_wire::CancelRequestNotification>(p.get()).ok())
                    .map(|n| n.request_id);
                if request.as_ref().is_some_and(|id| self.settle_permission(id)) {
                    let params = params.and_then(|p| serde_json::from_str(p.get()).ok());
                    self.events.push_back(Event::Notification { method: method.into_owned(), params });
                } else {
                    // Answered already, or a request this client never had: nothing to do.
                    self.ignore("a $/cancel_request for no open request of the agent's".into());
                }
            }
            // Not the library's to handle: the app's (an extension's, or a newer method).
            Incoming::Notification { method, params } => {
                let params = params.and_then(|p| serde_json::from_str(p.get()).ok());
                self.events.push_back(Event::Notification { method: method.into_owned(), params });
            }
            Incoming::Request { id, method, params } if method == acp_inject_wire::methods::SESSION_REQUEST_PERMISSION => {
                let request = jsonrpc::decode_params::<RequestPermissionRequest>(params).map_err(|e| e.to_string());
                self.permission(id, request);
            }
            Incoming::Request { id, method, .. } => {
                self.outbox.push_back(jsonrpc::error_line(&id, &ErrorObject::method_not_found()));
                self.ignore(format!("an agent request {method:?} this client does not serve (answered -32601)"));
            }
        }
    }

    fn answered(&mut self, id: RequestId, outcome: Result<&RawValue, ErrorObject>) {
        let Some(f) = self.in_flight.remove(&id) else {
            return self.ignore(format!("an answer to request {id}, which this connection did not send or already saw answered"));
        };
        let session = f.session.clone().unwrap_or_else(no_session);
        match f.flight {
            Flight::V1Turn => return self.v1_turn_ended(&session, outcome),
            Flight::HeldPrompt(item) => return self.held_prompt_answered(&session, item, outcome),
            _ => {}
        }
        let outcome = match outcome {
            Ok(raw) => match self.success(&f, raw) {
                Ok(answer) => answer,
                // A result that does not decode counts as a refusal.
                Err(e) => {
                    self.failure(&f);
                    Answer::Failed(e)
                }
            },
            // C-CLOSE-2: the session was not live on the agent: closed all the same.
            Err(error) if matches!(f.flight, Flight::Close) && error.code == acp_inject_wire::errors::RESOURCE_NOT_FOUND => {
                self.closed(&f.session.clone().unwrap_or_else(no_session));
                Answer::Closed
            }
            Err(error) => {
                self.failure(&f);
                Answer::Failed(ProtocolError::from_error(&error))
            }
        };
        self.events.push_back(Event::Answered { request: id, kind: f.flight.kind(), session_id: f.session, outcome });
        // A refused prompt may free the session for what this client holds (C-HELD-2).
        self.drain_held(&session);
    }

    fn success(&mut self, f: &InFlight, raw: &RawValue) -> Result<Answer, ProtocolError> {
        let kind = f.flight.kind();
        let invalid = |detail: String| ProtocolError {
            code: acp_inject_wire::errors::INTERNAL_ERROR,
            message: "Invalid result".into(),
            reason: None,
            message_id: None,
            detail: Some(detail),
        };
        fn decode<T: DeserializeOwned>(kind: RequestKind, raw: &RawValue) -> Result<T, String> {
            jsonrpc::decode(raw.get()).map_err(|e| format!("the agent's result for {kind:?} does not decode: {e}"))
        }
        let session = f.session.clone().unwrap_or_else(no_session);
        let mut events = Vec::new();
        let answer = match &f.flight {
            Flight::Initialize => {
                // C-INIT-1: the answered version first: an agent of another version fails with
                // that, not with the member its answer lacks.
                let version = acp_inject_wire::errors::protocol_version_of(raw.get());
                let supported = acp_inject_wire::errors::SUPPORTED_PROTOCOL_VERSIONS;
                // C-V1-1: an agent of version 1 is driven through v1 from here on.
                if version == Some(1) {
                    let r = super::v1::initialize_response(raw).map_err(invalid)?;
                    self.phase = Phase::of(r.clone());
                    return Ok(Answer::Initialized(Box::new(r)));
                }
                if let Some(v) = version.filter(|v| !supported.iter().any(|s| u64::from(*s) == *v)) {
                    return Err(ProtocolError {
                        code: acp_inject_wire::errors::UNSUPPORTED_PROTOCOL_VERSION,
                        message: "Unsupported protocol version".into(),
                        reason: None,
                        message_id: None,
                        detail: Some(format!(
                            "the agent speaks ACP version {v}; this client speaks version {}",
                            supported.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
                        )),
                    });
                }
                // Read tolerantly (ACP PR #2043: open mode lists, an optional `replace`, a
                // nullable `steerInStream`): `InitializeResponse::check`, the rule this toolkit's
                // agents follow, is not applied to what another agent advertises.
                let r: InitializeResponse = decode(kind, raw).map_err(invalid)?;
                self.phase = Phase::of(r.clone());
                Answer::Initialized(Box::new(r))
            }
            Flight::NewSession => {
                let r: NewSessionResponse = decode(kind, raw).map_err(invalid)?;
                self.open_session(&r.session_id, None);
                Answer::SessionCreated { session_id: r.session_id }
            }
            Flight::ListSessions => {
                let r: ListSessionsResponse = decode(kind, raw).map_err(invalid)?;
                Answer::Sessions { sessions: r.sessions, next_cursor: r.next_cursor }
            }
            Flight::Resume { .. } => {
                if let Some(m) = self.sessions.get_mut(&session) {
                    m.reopen();
                }
                Answer::Resumed
            }
            Flight::Accept { item, prompt } => {
                let message_id = if *prompt {
                    decode::<LenientPromptResponse>(kind, raw).map_err(invalid)?.message_id
                } else {
                    Some(decode::<InjectResponse>(kind, raw).map_err(invalid)?.message_id)
                };
                if let Some(m) = self.sessions.get_mut(&session) {
                    events = m.accepted(*item, message_id.clone());
                }
                Answer::Accepted { message_id }
            }
            Flight::Revoke(i) => {
                if let Some(m) = self.sessions.get_mut(&session) {
                    events = m.revoked(*i);
                }
                Answer::Revoked
            }
            Flight::Replace(i, content) => {
                if let Some(m) = self.sessions.get_mut(&session) {
                    events = m.replaced(*i, content.clone());
                }
                Answer::Replaced
            }
            Flight::Close => {
                self.closed(&session);
                Answer::Closed
            }
            Flight::Status => {
                let r: SessionStatusResponse = decode(kind, raw).map_err(invalid)?;
                // C-STATUS-1: upstream says a value the client does not recognise is `saved`.
                let status = match r.status {
                    SessionStatus::Other(_) => SessionStatus::Saved,
                    known => known,
                };
                Answer::Status { status, state: r.state }
            }
            Flight::Steering(item) => {
                let r: SteeringResponse = decode(kind, raw).map_err(invalid)?;
                let given = r.meta.as_ref().and_then(|m| m.get(STEERING_MESSAGE_ID)).and_then(|v| v.as_str());
                let given = given.map(|id| MessageId(id.to_owned()));
                match r.outcome {
                    // C-STEERING-2: in the turn (or, from an agent that ignored the request's
                    // `promptRequired`, a turn of its own): delivered where it went in.
                    SteeringOutcome::Injected | SteeringOutcome::StartedNewTurn => {
                        let v1 = self.v1();
                        let Some(m) = self.sessions.get_mut(&session) else { return Ok(Answer::Accepted { message_id: given }) };
                        // A v2 agent that names the message echoes it: its `user_message`
                        // delivers the item, as for an inject.
                        let message_id = match given {
                            Some(id) if !v1 => {
                                events = m.accepted(*item, Some(id.clone()));
                                id
                            }
                            given => {
                                let (id, delivered) = m.steered(*item, given);
                                events = delivered;
                                id
                            }
                        };
                        Answer::Accepted { message_id: Some(message_id) }
                    }
                    // C-STEERING-3: as a steer on an idle v2 session.
                    SteeringOutcome::PromptRequired => {
                        let mut e = ProtocolError::from_error(&ErrorObject::reason(acp_inject_wire::ErrorReason::NoRunningTurn, None));
                        let why = r.reason.unwrap_or_else(|| "noRunningTurn".to_owned());
                        e.detail = Some(format!("the agent answered the steer `promptRequired` ({why}): no turn is running"));
                        return Err(e);
                    }
                    SteeringOutcome::Other(outcome) => {
                        return Err(invalid(format!(
                            "the agent answered the steer with an outcome this client does not know: {outcome:?}"
                        )))
                    }
                }
            }
            Flight::Authenticate => Answer::Authenticated,
            Flight::Logout => Answer::LoggedOut,
            Flight::Extension => Answer::Extension { result: serde_json::from_str(raw.get()).unwrap_or(serde_json::Value::Null) },
            // Answered before this (`answered`).
            Flight::HeldPrompt(_) | Flight::V1Turn => return Err(invalid("an answer routed twice".into())),
        };
        for e in events {
            self.session_event(&session, e);
        }
        Ok(answer)
    }

    /// The session is closed (C-CLOSE-1): its mirror says so.
    fn closed(&mut self, session: &SessionId) {
        let events = self.sessions.get_mut(session).map(|m| m.close()).unwrap_or_default();
        for e in events {
            self.session_event(session, e);
        }
        let held: Vec<usize> = self.held_calls.keys().filter(|(s, _)| s == session).map(|(_, i)| *i).collect();
        self.fail_held_calls(session, &held, "the prompt was held for the running turn, and the session closed");
    }

    fn failure(&mut self, f: &InFlight) {
        let session = f.session.clone().unwrap_or_else(no_session);
        match &f.flight {
            Flight::Accept { item, .. } | Flight::Steering(item) => {
                if let Some(m) = self.sessions.get_mut(&session) {
                    for e in m.refused(*item) {
                        self.session_event(&session, e);
                    }
                }
            }
            Flight::Resume { created: true } => {
                self.sessions.remove(&session);
            }
            _ => {}
        }
    }
}

/// The session of a request that concerned none (it then finds no mirror).
fn no_session() -> SessionId {
    SessionId(String::new())
}
