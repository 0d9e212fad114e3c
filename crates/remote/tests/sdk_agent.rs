//! Our client over the network against an agent served by the official TypeScript SDK's
//! `AcpServer` (`interop/typescript-sdk/sdk-agent.mjs --listen`), over WebSocket and over
//! Streamable HTTP: initialize, a session, a prompt whose turn asks permission (answered), a
//! prompt sent during the turn (the SDK's agent holds it and inserts it when the turn ends),
//! close. The SDK's own validators check every message on the agent's side.
//!
//! Run by the interop stage of `cargo xtask test`, which starts the SDK's server, sets
//! `ACP_INJECT_SDK_REMOTE_URL` to its endpoint and checks its validators' report afterwards;
//! skipped without it.

use std::time::Duration;

use acp_inject_core::client::{MessageRole, TurnState};
use acp_inject_core::wire::{ContentBlock, RequestPermissionOutcome, SelectedPermissionOutcome, TextContent};
use acp_inject_remote::Endpoint;
use acp_inject_transport::{ConnectOptions, Session, SessionActivity};

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(Box::new(TextContent::new(t)))]
}

/// Answers every permission request with the first option (those in `early`, already taken
/// from the session, first) until the session is idle with `users` user messages in its
/// transcript.
async fn until_idle(session: &Session, early: Vec<SessionActivity>, users: usize) -> usize {
    let mut answered = 0;
    let mut batch = early;
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            for activity in std::mem::take(&mut batch) {
                if let SessionActivity::PermissionRequested { request, params } = activity {
                    let option_id = params.options[0].option_id.clone();
                    let outcome = RequestPermissionOutcome::Selected(Box::new(SelectedPermissionOutcome::new(option_id)));
                    session.answer_permission(&request, outcome).unwrap();
                    answered += 1;
                }
            }
            let snap = session.snapshot().unwrap();
            let seen = snap.transcript.iter().filter(|e| e.role == MessageRole::User).count();
            if snap.state == TurnState::Idle && seen >= users {
                assert!(snap.violations.is_empty(), "{:?}", snap.violations);
                return;
            }
            batch = session.next_events().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; snapshot {:#?}", session.snapshot()));
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_drives_the_sdk_server_over_both_profiles() {
    let Ok(url) = std::env::var("ACP_INJECT_SDK_REMOTE_URL") else {
        eprintln!("skipped: ACP_INJECT_SDK_REMOTE_URL is not set (the interop stage sets it)");
        return;
    };
    for url in [url.replacen("http", "ws", 1), url.clone()] {
        let conn = Endpoint::new(&url).connect(ConnectOptions::default()).await.unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(conn.agent().protocol_version.0, 2, "{url}");
        let session = conn.new_session("/tmp", vec![], vec![]).await.unwrap();
        let first = session.prompt(text("first, over the network")).await.unwrap();
        // A second prompt during the turn, inserted after it (the SDK's agent takes no injects).
        // Events taken while waiting are kept: one read can carry the turn's start and its
        // permission request together, and a request dropped here would never be answered.
        let mut early = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while session.snapshot().unwrap().state != TurnState::Running && tokio::time::Instant::now() < deadline {
            if let Ok(events) = tokio::time::timeout(Duration::from_millis(200), session.next_events()).await {
                early.extend(events.unwrap());
            }
        }
        // Sent while the permission request is answered: the call returns once it is inserted.
        let (second, answered) =
            tokio::join!(session.prompt(text("second, held until the turn ends")), until_idle(&session, early, 2));
        let second = second.unwrap();
        assert!(answered >= 1, "{url}: the agent asked permission in its turns and got answers");
        let snap = session.snapshot().unwrap();
        let users: Vec<_> =
            snap.transcript.iter().filter(|e| e.role == MessageRole::User).map(|e| Some(e.message_id.clone())).collect();
        assert_eq!(users, [first, second], "{url}: both prompts inserted, in order");
        assert!(snap.transcript.iter().any(|e| e.role == MessageRole::Agent), "{url}: the agent answered");
        session.close().await.unwrap();
        conn.close().await;
        eprintln!("ok: {url}: initialize, session/new, a prompt with permission answered, a held prompt, close");
    }
}
