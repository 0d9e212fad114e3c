//! A client connection and an agent server, in one process over a pipe: two sessions on one
//! connection, driven concurrently, never take each other's answers or updates.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_inject_core::agent::{AgentConfig, BreakPoint, UserInput};
use acp_inject_core::client::{ItemStatus, MessageRole, SessionEvent, TurnState};
use acp_inject_core::wire::{
    ContentBlock, ErrorReason, InjectMode, SessionStatus, SessionUpdate, StateUpdate, StopReason, TextContent,
};
use acp_inject_transport::{
    serve, AgentRuntime, ConnectOptions, Connection, ServeOptions, Session, SessionActivity, TransportError, TurnContext, TurnEnd,
};
use tokio::sync::Notify;

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(Box::new(TextContent::new(t)))]
}

fn text_of(c: &[ContentBlock]) -> String {
    c.iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.clone(),
            _ => String::new(),
        })
        .collect()
}

/// A runtime whose turns stream one chunk, then wait for the test to release them, then reach
/// a tool-result break-point (where steers are delivered) and end.
#[derive(Default)]
struct Gated {
    gates: Mutex<HashMap<String, Arc<Notify>>>,
    heard: Mutex<Vec<(String, String)>>,
}

impl Gated {
    fn gate(&self, session: &str) -> Arc<Notify> {
        Arc::clone(self.gates.lock().unwrap().entry(session.to_owned()).or_default())
    }
}

#[async_trait::async_trait]
impl AgentRuntime for Gated {
    async fn run_turn(&self, turn: TurnContext, input: Vec<UserInput>) -> TurnEnd {
        let session = turn.session_id().to_string();
        for i in &input {
            self.heard.lock().unwrap().push((session.clone(), text_of(&i.content)));
        }
        let id = turn.new_message_id();
        turn.send_text(&id, &format!("working in {session}")).unwrap();
        let gate = self.gate(&session);
        tokio::select! {
            () = gate.notified() => {}
            () = turn.cancelled() => return TurnEnd::cancelled(),
        }
        for steer in turn.break_point(BreakPoint::ToolResult).unwrap() {
            self.heard.lock().unwrap().push((session.clone(), text_of(&steer.content)));
        }
        turn.send_text(&id, " done").unwrap();
        TurnEnd::end_turn()
    }
}

fn config() -> AgentConfig {
    let inject = serde_json::from_value(serde_json::json!({
        "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": ["finish"]
    }))
    .unwrap();
    AgentConfig { inject: Some(inject), ..Default::default() }
}

async fn pair<R: AgentRuntime + 'static>(runtime: Arc<R>) -> Connection {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move { serve(runtime, ServeOptions { config: config(), store: None }, sr, sw).await });
    let (cr, cw) = tokio::io::split(client_io);
    Connection::over(cr, cw, ConnectOptions::default()).await.unwrap()
}

/// Collects a session's activity until `done` holds for its snapshot.
async fn until(session: &Session, done: impl Fn(&acp_inject_core::client::MirrorSnapshot) -> bool) -> Vec<SessionActivity> {
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            // What already arrived first: the state may have got there before this looks.
            seen.extend(session.take_events());
            if session.snapshot().as_ref().is_some_and(&done) {
                // And what arrived between that take and the snapshot (the event of the
                // update that made it done, among others).
                seen.extend(session.take_events());
                return;
            }
            seen.extend(session.next_events().await.unwrap());
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; snapshot {:?}", session.snapshot()));
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_on_one_connection_are_never_misrouted() {
    let runtime = Arc::new(Gated::default());
    let conn = pair(Arc::clone(&runtime)).await;
    let s1 = conn.new_session("/home/dev/a", vec![], vec![]).await.unwrap();
    let s2 = conn.new_session("/home/dev/b", vec![], vec![]).await.unwrap();
    assert_ne!(s1.id(), s2.id());

    // The repro: a prompt on s1, a steer on idle s2. s2's refusal must reach s2's caller, and
    // s2 must not take s1's answer.
    let m1 = s1.prompt(text("fix the bug")).await.unwrap().unwrap();
    let refused = s2.inject(InjectMode::Steer, text("too early")).await;
    match refused {
        Err(TransportError::Protocol(e)) => assert_eq!(e.reason, Some(ErrorReason::NoRunningTurn)),
        other => panic!("expected no_running_turn, got {other:?}"),
    }
    assert!(s2.snapshot().unwrap().pending.is_empty(), "no phantom pending item on s2");

    // Both sessions running; requests interleave on the one connection.
    s2.prompt(text("write docs")).await.unwrap();
    let (steer, queued) =
        tokio::join!(s1.inject(InjectMode::Steer, text("use auth_v2")), s2.inject(InjectMode::Queue, text("then lint")));
    let (steer, queued) = (steer.unwrap(), queued.unwrap());
    let (replaced, extra) =
        tokio::join!(s2.replace(&queued, text("then lint twice")), s1.inject(InjectMode::Queue, text("revoke me")));
    replaced.unwrap();
    let extra = extra.unwrap();
    s1.revoke(&extra).await.unwrap();
    assert_eq!(s1.snapshot().unwrap().pending.len(), 1, "s1 holds its steer only: {:?}", s1.snapshot());
    assert_eq!(s2.snapshot().unwrap().pending.len(), 1, "s2 holds its queued inject only: {:?}", s2.snapshot());

    runtime.gate(s1.id()).notify_one();
    runtime.gate(s2.id()).notify_one();
    until(&s1, |s| s.state == TurnState::Idle && s.pending.is_empty() && s.transcript.len() >= 3).await;
    // s2's queued inject opens its next turn; release that one too.
    let a2 = until(&s2, |s| s.pending.is_empty() && s.transcript.iter().filter(|e| e.role == MessageRole::User).count() == 2).await;
    runtime.gate(s2.id()).notify_one();
    until(&s2, |s| s.state == TurnState::Idle && s.transcript.len() >= 4).await;

    let t1 = s1.snapshot().unwrap().transcript;
    let users1: Vec<String> = t1.iter().filter(|e| e.role == MessageRole::User).map(|e| text_of(&e.content)).collect();
    assert_eq!(users1, ["fix the bug", "use auth_v2"]);
    assert_eq!(t1[0].message_id, m1);
    assert!(t1.iter().any(|e| e.message_id == steer));
    let t2 = s2.snapshot().unwrap().transcript;
    let users2: Vec<String> = t2.iter().filter(|e| e.role == MessageRole::User).map(|e| text_of(&e.content)).collect();
    assert_eq!(users2, ["write docs", "then lint twice"], "the replaced content is delivered");
    // Every event of a session's stream is about that session.
    for a in &a2 {
        if let SessionActivity::Event(SessionEvent::Item(item)) = a {
            assert_ne!(item.message_id.as_ref(), Some(&steer), "s1's item on s2's stream");
        }
    }
    let heard = runtime.heard.lock().unwrap().clone();
    assert!(heard.contains(&(s1.id().0.clone(), "use auth_v2".to_owned())), "{heard:?}");
    assert!(!heard.iter().any(|(_, t)| t == "revoke me"), "a revoked inject never reaches the model");
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_close_list_and_resume() {
    let runtime = Arc::new(Gated::default());
    let conn = pair(Arc::clone(&runtime)).await;
    let s1 = conn.new_session("/home/dev/a", vec![], vec![]).await.unwrap();
    s1.prompt(text("long job")).await.unwrap();
    let q = s1.inject(InjectMode::Queue, text("after")).await.unwrap();
    s1.cancel().unwrap();
    // The turn ends cancelled, and the queued inject opens the next turn (R-CANCEL-1).
    let seen = until(&s1, |s| s.pending.is_empty() && s.transcript.iter().any(|e| e.message_id == q)).await;
    let idle_cancelled = seen.iter().any(|a| {
        matches!(a, SessionActivity::Event(SessionEvent::Update(SessionUpdate::StateUpdate(st)))
            if matches!(st.as_ref(), StateUpdate::Idle(i) if i.stop_reason == Some(StopReason::Cancelled)))
    });
    assert!(idle_cancelled, "{seen:?}");

    // Close during that turn: answered, then nothing more for the session.
    s1.close().await.unwrap();
    let snap = s1.snapshot().unwrap();
    assert!(snap.closed && snap.state == TurnState::Idle);
    let status = s1.status().await.unwrap();
    assert_eq!((status.status, status.state), (SessionStatus::Saved, None), "closed: resumable, not in memory");

    let (listed, next) = conn.list_sessions(None, None).await.unwrap();
    assert_eq!((listed.len(), next), (1, None));
    assert_eq!(&listed[0].session_id, s1.id());

    // Resume with replay: the user messages come back with their ids.
    let resumed = conn.resume(s1.id(), "/home/dev/a", true).await.unwrap();
    let snap = resumed.snapshot().unwrap();
    assert!(!snap.closed);
    let users: Vec<String> = snap.transcript.iter().filter(|e| e.role == MessageRole::User).map(|e| text_of(&e.content)).collect();
    assert_eq!(users, ["long job", "after"]);
    let status = resumed.status().await.unwrap();
    assert_eq!(status.status, SessionStatus::Open);
    assert!(matches!(status.state, Some(StateUpdate::Idle(_))), "{status:?}");
    assert_eq!(s1.snapshot().unwrap().pending.iter().filter(|p| p.status == ItemStatus::Pending).count(), 0);
    conn.close().await;
}

/// A runtime whose turn waits on a gate without watching for cancellation, then looks.
#[derive(Default)]
struct LooksLater {
    gate: Notify,
    saw_cancel: Mutex<Option<bool>>,
}

#[async_trait::async_trait]
impl AgentRuntime for LooksLater {
    async fn run_turn(&self, turn: TurnContext, _input: Vec<UserInput>) -> TurnEnd {
        self.gate.notified().await;
        *self.saw_cancel.lock().unwrap() = Some(turn.is_cancelled());
        if turn.is_cancelled() {
            TurnEnd::cancelled()
        } else {
            TurnEnd::end_turn()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_before_the_turn_first_looks_is_not_lost() {
    let runtime = Arc::new(LooksLater::default());
    let conn = pair(Arc::clone(&runtime)).await;
    let s1 = conn.new_session("/home/dev/a", vec![], vec![]).await.unwrap();
    s1.prompt(text("long job")).await.unwrap();
    s1.cancel().unwrap();
    // The agent handles lines in order: once status is answered, the cancel was applied, while
    // the turn has not yet looked at its cancellation.
    assert_eq!(s1.status().await.unwrap().status, SessionStatus::Open);
    runtime.gate.notify_one();
    // The turn may end before `until` first looks: the stop reason is read off the session's
    // state, not off the events `until` happened to see.
    until(&s1, |s| s.state == TurnState::Idle).await;
    let snap = s1.snapshot().unwrap();
    assert_eq!(snap.stop_reason, Some(StopReason::Cancelled), "{snap:?}");
    assert_eq!(*runtime.saw_cancel.lock().unwrap(), Some(true), "the turn saw the cancel");
    conn.close().await;
}

/// A runtime whose turn, once cancelled, takes a while to wind down (a model call being
/// abandoned, say), and records that it finished.
#[derive(Default)]
struct SlowToStop {
    finished: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl AgentRuntime for SlowToStop {
    async fn run_turn(&self, turn: TurnContext, _input: Vec<UserInput>) -> TurnEnd {
        turn.cancelled().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.finished.store(true, std::sync::atomic::Ordering::SeqCst);
        TurnEnd::cancelled()
    }
}

/// When the client goes away mid-turn, the server cancels the turn and returns only once the
/// runtime has ended it: no runtime future outlives `serve` (a foreign runtime's event loop,
/// Python's say, is closed right after it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_returns_only_after_the_runtime_ended_its_turns() {
    let runtime = Arc::new(SlowToStop::default());
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(server_io);
    let rt = Arc::clone(&runtime);
    let served = tokio::spawn(async move { serve(rt, ServeOptions { config: config(), store: None }, sr, sw).await });
    let (cr, cw) = tokio::io::split(client_io);
    let conn = Connection::over(cr, cw, ConnectOptions::default()).await.unwrap();
    let s1 = conn.new_session("/home/dev/a", vec![], vec![]).await.unwrap();
    s1.prompt(text("long job")).await.unwrap();
    until(&s1, |s| s.state == TurnState::Running).await;
    conn.close().await;
    let result = tokio::time::timeout(Duration::from_secs(10), served).await.expect("serve returns").unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert!(runtime.finished.load(std::sync::atomic::Ordering::SeqCst), "serve returned while the turn was still running");
}

/// A runtime whose turn panics after its first chunk.
struct Panics;

#[async_trait::async_trait]
impl AgentRuntime for Panics {
    async fn run_turn(&self, turn: TurnContext, _input: Vec<UserInput>) -> TurnEnd {
        let id = turn.new_message_id();
        turn.send_text(&id, "about to fail").unwrap();
        panic!("the model provider is down");
    }
}

/// A turn whose code panics ends with upstream's `error` stop reason and an internal error
/// (R-TURNEND-1); the session lives on and takes the next prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_turn_ends_with_the_error_stop_reason() {
    let conn = pair(Arc::new(Panics)).await;
    let s = conn.new_session("/home/dev/a", vec![], vec![]).await.unwrap();
    for (n, attempt) in ["first", "second"].into_iter().enumerate() {
        s.prompt(text(attempt)).await.unwrap();
        let users =
            |snap: &acp_inject_core::client::MirrorSnapshot| snap.transcript.iter().filter(|e| e.role == MessageRole::User).count();
        let seen = until(&s, |snap| snap.state == TurnState::Idle && users(snap) == n + 1).await;
        assert_eq!(s.snapshot().unwrap().stop_reason, Some(StopReason::Error), "{attempt}");
        let failure = seen.iter().find_map(|a| match a {
            SessionActivity::Event(SessionEvent::Update(SessionUpdate::StateUpdate(st))) => match st.as_ref() {
                StateUpdate::Idle(i) => i.error.clone(),
                _ => None,
            },
            _ => None,
        });
        let failure = failure.expect("the idle update carries the failure");
        assert_eq!((failure.code, failure.message.as_str()), (-32603, "Internal error"));
        assert_eq!(failure.data.unwrap()["detail"], "the agent's turn panicked");
    }
}
