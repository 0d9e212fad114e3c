//! The PostgreSQL store, on a real server (`ACP_INJECT_POSTGRES_URL`, which `cargo xtask test`
//! sets after starting one; without it these tests say so and pass nothing). Each test gets a
//! database of its own.
//!
//! What they prove: the store keeps what SQLite keeps (sessions, history, pending injects in
//! order, remembered ids) across processes; hosts mint ids that never collide; a session is
//! served by one host at a time; a host paused past its lease can no longer commit anything
//! for the session (fencing), so nothing it held is delivered twice; a host that lets a session
//! go hands it over at once; a cut-off turn's pending injects open the next turn on the host
//! that takes the session over.

mod common;

use acp_inject_core::wire::{MessageId, SessionId};
use std::time::Duration;

use acp_inject_core::agent::{Agent, BreakPoint, Lanes, RuntimeEvent, StoreError, DEFAULT_REMEMBER_IDS, SESSION_HELD_ELSEWHERE};
use acp_inject_store::postgres::{lane_of, PgOptions, PgStore, SCHEMA_VERSION};
use common::*;
use serde_json::json;

/// A fresh database named after the test, on the server of `ACP_INJECT_POSTGRES_URL`.
fn database(name: &str) -> Option<String> {
    let Ok(url) = std::env::var("ACP_INJECT_POSTGRES_URL") else {
        eprintln!("skipped: ACP_INJECT_POSTGRES_URL is not set (cargo xtask test sets it)");
        return None;
    };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect to ACP_INJECT_POSTGRES_URL");
    let db = format!("acp_store_{name}");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
    Some(format!("{base}/{db}"))
}

fn host(url: &str, name: &str, lease_ms: u64) -> Agent {
    let options = PgOptions::new(name).lease(Duration::from_millis(lease_ms)).remember_ids(DEFAULT_REMEMBER_IDS);
    let store = PgStore::connect(url, options).expect("connect");
    let mut agent = Agent::with_store(config(DEFAULT_REMEMBER_IDS), Box::new(store)).expect("agent");
    initialize(&mut agent, "c1");
    agent
}

fn inject(a: &mut Agent, id: u64, session: &str, mode: &str, t: &str) -> String {
    let out = call(a, "c1", id, "session/inject", json!({ "sessionId": session, "mode": mode, "content": text(t) }));
    answer(&out)["result"]["messageId"].as_str().unwrap_or_else(|| panic!("inject: {out:?}")).to_owned()
}

fn resume(a: &mut Agent, id: u64, session: &str) -> Vec<serde_json::Value> {
    call(a, "c1", id, "session/resume", json!({ "sessionId": session, "cwd": "/work", "replayFrom": { "type": "start" } }))
}

#[test]
fn sessions_history_and_pending_injects_outlive_the_host() {
    let Some(url) = database("outlive") else { return };
    let session;
    {
        let mut a = host(&url, "a", 10_000);
        let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
        session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
        assert_eq!(session, "sess_a-1", "ids carry the host's scope");
        let prompt = call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": session, "prompt": text("hello") }));
        assert_eq!(answer(&prompt)["result"]["messageId"], "msg_a-1");
        event(&mut a, &session, chunk("agent_1", "hi"));
        assert_eq!(inject(&mut a, 3, &session, "queue", "q1"), "msg_a-2");
        assert_eq!(inject(&mut a, 4, &session, "steer", "s1"), "msg_a-3");
        assert_eq!(inject(&mut a, 5, &session, "queue", "q2"), "msg_a-4");
        let out = call(&mut a, "c1", 6, "session/revoke_inject", json!({ "sessionId": session, "messageId": "msg_a-4" }));
        assert_eq!(answer(&out)["result"], json!({}));
    } // the host is gone without letting go: the same host name takes it back at once

    let mut a = host(&url, "a", 10_000);
    let out = resume(&mut a, 7, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    let kinds = updates(&out);
    assert!(kinds.contains(&("user_message".into(), "msg_a-1".into())), "history replayed: {kinds:?}");
    assert!(kinds.contains(&("agent_message".into(), "agent_1".into())), "{kinds:?}");
    // The cut-off turn ends here, and what it left pending opens the next one: the steer
    // first, then the queued inject (the revoked one never).
    let delivered: Vec<_> = kinds.iter().filter(|(k, _)| k == "user_message").map(|(_, id)| id.as_str()).collect();
    assert_eq!(delivered, ["msg_a-1", "msg_a-3", "msg_a-2"], "{kinds:?}");
    // The revoked id is remembered (revoking it again is a no-op), an unknown one is not.
    let out = call(&mut a, "c1", 8, "session/revoke_inject", json!({ "sessionId": session, "messageId": "msg_a-4" }));
    assert_eq!(answer(&out)["result"], json!({}), "{out:?}");
    let out = call(&mut a, "c1", 8, "session/revoke_inject", json!({ "sessionId": session, "messageId": "msg_a-99" }));
    assert_eq!(reason(answer(&out)), Some("unknown_message_id"), "{out:?}");
    // Counters continue: no id is minted twice.
    let new = call(&mut a, "c1", 9, "session/new", json!({ "cwd": "/work" }));
    assert_eq!(answer(&new)["result"]["sessionId"], "sess_a-2");
    let list = call(&mut a, "c1", 10, "session/list", json!({}));
    let ids: Vec<_> = answer(&list)["result"]["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].clone()).collect();
    assert_eq!(ids, [json!("sess_a-2"), json!("sess_a-1")], "newest first");
}

#[test]
fn a_session_is_served_by_one_host_and_a_stale_host_cannot_commit() {
    let Some(url) = database("fencing") else { return };
    let mut a = host(&url, "a", 400);
    let mut b = host(&url, "b", 400);
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": session, "prompt": text("go") }));
    let queued = inject(&mut a, 3, &session, "queue", "later");

    // While A holds it, B refuses it, naming A.
    let out = resume(&mut b, 1, &session);
    let error = &answer(&out)["error"];
    assert_eq!(error["code"], SESSION_HELD_ELSEWHERE, "{out:?}");
    assert_eq!(error["data"]["holder"], "a");
    assert!(error["data"]["retryAfterMs"].as_u64().unwrap() <= 400);

    // A is paused past its lease (it renews nothing); B takes the session over.
    std::thread::sleep(Duration::from_millis(600));
    let out = resume(&mut b, 2, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    let started = handed(&b.drain().unwrap());
    let on_b: Vec<_> = updates(&out).into_iter().filter(|(k, _)| k == "user_message").map(|(_, id)| id).collect();
    assert!(on_b.contains(&queued), "B delivers what A left pending: {on_b:?} {started:?}");

    // A wakes up and ends its turn, which would deliver the queued inject again: the commit is
    // refused, nothing is released, and A stays stopped.
    a.runtime_event(
        &SessionId(session.clone()),
        RuntimeEvent::TurnEnded { stop_reason: acp_inject_core::wire::StopReason::EndTurn, usage: None, error: None },
    )
    .unwrap();
    match a.drain() {
        Err(StoreError::LeaseLost { session: lost }) => assert_eq!(lost, session.as_str()),
        other => panic!("a stale host's commit must be refused, got {other:?}"),
    }
    assert_eq!(a.drain().unwrap_err(), StoreError::Poisoned);
    assert!(a.renew_leases().is_err());

    // B goes on: its writes commit, and the history has the queued inject exactly once.
    inject(&mut b, 3, &session, "queue", "more");
    let c = host(&url, "c", 400);
    let history = c.history(&SessionId(session.clone())).unwrap();
    let user: Vec<String> = history
        .iter()
        .filter_map(|e| match e {
            acp_inject_core::agent::HistoryEntry::User { message_id, .. } => Some(message_id.0.clone()),
            acp_inject_core::agent::HistoryEntry::Update { .. } => None,
        })
        .collect();
    assert_eq!(user.iter().filter(|id| **id == queued).count(), 1, "delivered exactly once: {user:?}");
}

#[test]
fn renewing_keeps_a_session_and_a_lost_lease_is_reported() {
    let Some(url) = database("renew") else { return };
    let mut a = host(&url, "a", 300);
    let mut b = host(&url, "b", 300);
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(100));
        a.renew_leases().expect("renew");
    }
    let out = resume(&mut b, 1, &session);
    assert_eq!(answer(&out)["error"]["code"], SESSION_HELD_ELSEWHERE, "renewed past its first lease: {out:?}");
    std::thread::sleep(Duration::from_millis(400));
    let out = resume(&mut b, 2, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    assert_eq!(a.renew_leases(), Err(StoreError::LeaseLost { session: session.as_str().into() }));
}

#[test]
fn a_session_nobody_uses_is_handed_over_at_once() {
    let Some(url) = database("handover") else { return };
    let mut a = host(&url, "a", 60_000);
    let mut b = host(&url, "b", 60_000);
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    let prompt = call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": session, "prompt": text("go") }));
    assert_eq!(reason(answer(&prompt)), None);
    // A turn is running: A keeps the session though its client left.
    a.detach(&"c1".into());
    a.drain().unwrap();
    let out = resume(&mut b, 1, &session);
    assert_eq!(answer(&out)["error"]["code"], SESSION_HELD_ELSEWHERE, "{out:?}");
    // The turn ends with nobody attached: A lets the session go, and B has it at once.
    let out = event(
        &mut a,
        &session,
        RuntimeEvent::TurnEnded { stop_reason: acp_inject_core::wire::StopReason::EndTurn, usage: None, error: None },
    );
    assert!(
        out.iter().any(|o| matches!(
            o,
            acp_inject_core::agent::Output::Action { action: acp_inject_core::agent::RuntimeAction::Closed { .. }, .. }
        )),
        "the runtime frees the session: {out:?}"
    );
    assert!(a.turn(&SessionId(session.clone())).is_none(), "A no longer holds it in memory");
    let out = resume(&mut b, 2, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    let kinds = updates(&out);
    assert!(kinds.contains(&("user_message".into(), "msg_a-1".into())), "{kinds:?}");
    // B mints in its own scope, in the same session.
    assert_eq!(inject(&mut b, 3, &session, "queue", "from b"), "msg_b-1");
    // Closing on B lets it go too; A reopens it at once.
    let out = call(&mut b, "c1", 4, "session/close", json!({ "sessionId": session }));
    assert_eq!(reason(answer(&out)), None);
    initialize(&mut a, "c2");
    let out = call(&mut a, "c2", 5, "session/resume", json!({ "sessionId": session, "cwd": "/work" }));
    assert_eq!(reason(answer(&out)), None, "{out:?}");
}

#[test]
fn steers_survive_a_takeover_mid_turn() {
    let Some(url) = database("steers") else { return };
    let mut a = host(&url, "a", 300);
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": session, "prompt": text("go") }));
    let steer = inject(&mut a, 3, &session, "steer", "now");
    let out = event(&mut a, &session, RuntimeEvent::BreakPoint(BreakPoint::ToolResult));
    assert_eq!(handed(&out), [(steer.clone(), "now".to_owned())], "delivered on A");
    let queued = inject(&mut a, 4, &session, "queue", "later");
    drop(a); // killed mid-turn

    std::thread::sleep(Duration::from_millis(400));
    let mut b = host(&url, "b", 300);
    let out = resume(&mut b, 1, &session);
    let delivered: Vec<_> = updates(&out).into_iter().filter(|(k, _)| k == "user_message").map(|(_, id)| id).collect();
    // Replayed: the prompt and the steer (once each); then the queued inject, delivered now.
    assert_eq!(delivered, ["msg_a-1".to_owned(), steer, queued], "{out:?}");
}

#[test]
fn two_processes_under_one_host_name_cannot_both_commit() {
    let Some(url) = database("samehost") else { return };
    let mut first = host(&url, "a", 10_000);
    call(&mut first, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let _second = host(&url, "a", 10_000);
    // The first process's answer is never released: its counters' commit is refused.
    first.handle_line(&"c1".into(), &request(2, "session/new", json!({ "cwd": "/work" })));
    let err = first.drain().expect_err("the older process is fenced");
    assert!(err.to_string().contains("another process started as host"), "{err}");
}

#[test]
fn migrations_run_once_and_a_newer_schema_is_refused() {
    let Some(url) = database("schema") else { return };
    PgStore::connect(&url, PgOptions::new("a")).unwrap();
    PgStore::connect(&url, PgOptions::new("a")).unwrap();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let versions: Vec<i64> =
        admin.query("SELECT version FROM acp_schema ORDER BY version", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    admin.execute("INSERT INTO acp_schema (version) VALUES ($1)", &[&(SCHEMA_VERSION + 1)]).unwrap();
    let err = PgStore::connect(&url, PgOptions::new("a")).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt(ref m) if m.contains("newer release")), "{err}");
}

#[test]
fn bad_urls_and_host_names_are_clear_errors() {
    let err = PgStore::connect("postgres://nobody:secret@127.0.0.1:1/none", PgOptions::new("a")).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cannot connect") && !text.contains("secret"), "{text}");
    let err = PgStore::connect("not a url at all", PgOptions::new("a")).unwrap_err();
    assert!(matches!(err, StoreError::Backend(_)), "{err}");
    let err = PgStore::connect("postgres://x@127.0.0.1:1/none", PgOptions::new("no spaces")).unwrap_err();
    assert!(err.to_string().contains("host name"), "{err}");
}

#[test]
fn closing_twice_or_a_refused_reopen_leaves_nothing_held() {
    let Some(url) = database("letgo") else { return };
    let mut a = host(&url, "a", 60_000);
    let mut b = host(&url, "b", 60_000);
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    for id in [2, 3] {
        let out = call(&mut a, "c1", id, "session/close", json!({ "sessionId": session }));
        assert_eq!(reason(answer(&out)), None, "{out:?}");
    }
    // A resume A refuses (another working directory) takes nothing either.
    let out = call(&mut a, "c1", 4, "session/resume", json!({ "sessionId": session, "cwd": "/elsewhere" }));
    assert!(answer(&out).get("error").is_some(), "{out:?}");
    a.renew_leases().unwrap();
    // B reopens it at once: A holds nothing (a 60 s lease would otherwise refuse B).
    let out = resume(&mut b, 1, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
}

#[test]
fn a_take_over_blocked_by_a_stalled_transaction_answers_busy_instead_of_waiting() {
    let Some(url) = database("stalled") else { return };
    let mut a = host(&url, "a", 400);
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    drop(a);
    std::thread::sleep(Duration::from_millis(500));
    // A stalled host's transaction holds the session's row (its lease ran out meanwhile).
    let mut stalled = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut tx = stalled.transaction().unwrap();
    tx.query("SELECT 1 FROM acp_sessions WHERE session_id = $1 FOR UPDATE", &[&session]).unwrap();
    let mut b = host(&url, "b", 400);
    let asked = std::time::Instant::now();
    let out = resume(&mut b, 1, &session);
    assert_eq!(answer(&out)["error"]["code"], SESSION_HELD_ELSEWHERE, "{out:?}");
    assert!(asked.elapsed() < Duration::from_secs(2), "bounded by the lock timeout: {:?}", asked.elapsed());
    // The host is fine, and once the stalled transaction is gone B takes the session.
    tx.rollback().unwrap();
    let out = resume(&mut b, 2, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
}

/// Idempotency keys (R-IDEM-1) hold across hosts: a prompt retried on the host that took the
/// session over is answered with the original id and inserts nothing.
#[test]
fn idempotency_keys_hold_across_hosts() {
    let Some(url) = database("idempotency") else { return };
    let session;
    {
        let mut a = host(&url, "a", 10_000);
        let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
        session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
        let params = json!({ "sessionId": session, "prompt": text("hello"), "idempotencyKey": "p-1" });
        let out = call(&mut a, "c1", 2, "session/prompt", params);
        assert!(answer(&out)["result"]["messageId"].is_string(), "{out:?}");
        let out = event(
            &mut a,
            &session,
            RuntimeEvent::TurnEnded { stop_reason: acp_inject_core::wire::StopReason::EndTurn, usage: None, error: None },
        );
        drop(out);
        a.detach(&acp_inject_core::agent::ConnId::from("c1"));
        a.drain().unwrap();
    }
    let mut b = host(&url, "b", 10_000);
    let replayed = resume(&mut b, 1, &session);
    let first = updates(&replayed).into_iter().find(|(k, _)| k == "user_message").map(|(_, id)| id).expect("the prompt was inserted");
    let params = json!({ "sessionId": session, "prompt": text("hello"), "idempotencyKey": "p-1" });
    let out = call(&mut b, "c1", 2, "session/prompt", params);
    assert_eq!(answer(&out)["result"]["messageId"].as_str(), Some(first.as_str()), "{out:?}");
    assert!(updates(&out).is_empty(), "a retry inserts nothing: {out:?}");
    let history = b.history(&SessionId(session.clone())).unwrap();
    assert_eq!(history.iter().filter(|e| matches!(e, acp_inject_core::agent::HistoryEntry::User { .. })).count(), 1);
}

/// R-TENANT-1 across hosts: a session keeps the principal that created it in the shared
/// database; on another host, that principal lists and resumes it, and another principal
/// lists nothing and gets `session_not_found`, as for a session never had.
#[test]
fn principals_hold_across_hosts() {
    let Some(url) = database("principals") else { return };
    let tenant = |a: &mut Agent, conn: &str, principal: &str| {
        let c = acp_inject_core::agent::ConnId::from(conn);
        a.attach_as(&c, acp_inject_core::agent::ConnectionRole::Controller, Some(principal.to_owned()));
        initialize(a, conn);
    };
    let session;
    {
        let mut a = host(&url, "a", 10_000);
        tenant(&mut a, "alice", "alice");
        let new = call(&mut a, "alice", 1, "session/new", json!({ "cwd": "/work" }));
        session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
        a.detach(&acp_inject_core::agent::ConnId::from("alice"));
        a.drain().unwrap();
    }
    let mut b = host(&url, "b", 10_000);
    tenant(&mut b, "bob", "bob");
    tenant(&mut b, "alice", "alice");
    let listed = |b: &mut Agent, conn: &str, id: u64| {
        let out = call(b, conn, id, "session/list", json!({}));
        answer(&out)["result"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(&mut b, "bob", 1), Vec::<String>::new());
    let out = call(&mut b, "bob", 2, "session/resume", json!({ "sessionId": session, "cwd": "/work" }));
    assert_eq!(answer(&out)["error"]["code"], json!(-32002), "{out:?}");
    assert_eq!(listed(&mut b, "alice", 1), std::slice::from_ref(&session));
    let out = call(&mut b, "alice", 2, "session/resume", json!({ "sessionId": session, "cwd": "/work" }));
    assert!(answer(&out)["result"].is_object(), "{out:?}");
}

/// The backend process serving host `name` (its `application_name` is `acp-inject NAME`).
fn backend_pid(url: &str, name: &str) -> i32 {
    let mut admin = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let row = admin
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
            &[&format!("acp-inject {name}")],
        )
        .expect("the host's backend is listed under its name");
    row.get(0)
}

fn signal(pid: i32, sig: &str) {
    let ok = std::process::Command::new("kill").args([sig, &pid.to_string()]).status().expect("kill").success();
    assert!(ok, "kill {sig} {pid}");
}

#[test]
fn a_connection_closed_between_batches_is_made_again() {
    let Some(url) = database("reconnect") else { return };
    let mut a = host(&url, "a", 10_000);
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    let old = backend_pid(&url, "a");
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let ended: bool = admin.query_one("SELECT pg_terminate_backend($1)", &[&old]).unwrap().get(0);
    assert!(ended, "the backend was ended");
    std::thread::sleep(Duration::from_millis(200));
    // The next batch connects again and commits; nothing of the session was lost.
    let prompt = call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": session, "prompt": text("hello") }));
    assert_eq!(answer(&prompt)["result"]["messageId"], "msg_a-1", "{prompt:?}");
    assert_ne!(backend_pid(&url, "a"), old, "a new backend serves the host");
    drop(a);
    let mut again = host(&url, "a", 10_000);
    let kinds = updates(&resume(&mut again, 3, &session));
    assert!(kinds.contains(&("user_message".into(), "msg_a-1".into())), "the prompt after the reconnect was committed: {kinds:?}");
}

#[test]
fn a_stalled_database_is_a_clear_error_within_the_timeout() {
    let Some(url) = database("stopped_backend") else { return };
    let options = PgOptions::new("a").timeout(Duration::from_millis(1000));
    let store = PgStore::connect(&url, options).expect("connect");
    let mut a = Agent::with_store(config(DEFAULT_REMEMBER_IDS), Box::new(store)).expect("agent");
    initialize(&mut a, "c1");
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    let session = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    let pid = backend_pid(&url, "a");
    signal(pid, "-STOP");
    let started = std::time::Instant::now();
    a.handle_line(&"c1".into(), &request(2, "session/prompt", json!({ "sessionId": session, "prompt": text("hello") })));
    let drained = a.drain();
    let waited = started.elapsed();
    signal(pid, "-CONT");
    let err = drained.expect_err("a commit the stalled database never answered fails");
    assert!(err.to_string().contains("did not answer within 1000 ms"), "{err}");
    assert!(waited < Duration::from_secs(3), "the error came after {waited:?}, not at the 1 s timeout");
    // The agent stops serving (what the server did with the commit is unknown); a new host
    // starts from what was committed.
    assert_eq!(a.drain().expect_err("poisoned"), StoreError::Poisoned);
}

/// Hands the batch over ([`Agent::drain_submit`]): its outputs, their lanes, and a channel
/// told when it is durable.
fn submit(a: &mut Agent) -> (Vec<serde_json::Value>, Lanes, std::sync::mpsc::Receiver<Result<(), StoreError>>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let (outputs, lanes) = a.drain_submit(Box::new(move |r| drop(tx.send(r)))).expect("handed over");
    (lines_to("c1", outputs), lanes, rx)
}

#[test]
fn a_stopped_lane_holds_back_only_the_sessions_on_it() {
    let Some(url) = database("lanes") else { return };
    let options = PgOptions::new("l").timeout(Duration::from_secs(20)).lanes(4);
    let store = PgStore::connect(&url, options).expect("connect");
    let mut a = Agent::with_store(config(DEFAULT_REMEMBER_IDS), Box::new(store)).expect("agent");
    initialize(&mut a, "c1");
    let (stalled, going) = two_lanes(&mut a);
    let sessions = [stalled.clone(), going.clone()];
    let pid = backend_pid(&url, &format!("l lane {}", lane_of(&SessionId(stalled.clone()), 4)));
    signal(pid, "-STOP");
    // The stalled session's prompt is handed over; its commit does not come back.
    let prompt =
        |s: &str, id: u64, t: &str| request(id, "session/prompt", json!({ "sessionId": s, "prompt": text(t), "idempotencyKey": t }));
    a.handle_line(&"c1".into(), &prompt(&stalled, 100, "held"));
    let (held, held_lanes, held_done) = submit(&mut a);
    assert!(answer(&held)["result"]["messageId"].is_string(), "{held:?}");
    // The other session's prompt, and its whole turn, commit meanwhile, on lanes of their own.
    a.handle_line(&"c1".into(), &prompt(&going, 101, "goes"));
    let (_, going_lanes, going_done) = submit(&mut a);
    assert!(!going_lanes.meets(held_lanes), "{going_lanes:?} and {held_lanes:?}");
    going_done.recv_timeout(Duration::from_secs(5)).expect("committed while the other lane is stopped").expect("committed");
    for (i, ev) in [
        chunk("m1", "working"),
        RuntimeEvent::TurnEnded { stop_reason: acp_inject_core::wire::StopReason::EndTurn, usage: None, error: None },
    ]
    .into_iter()
    .enumerate()
    {
        a.runtime_event(&SessionId(going.clone()), ev).unwrap_or_else(|e| panic!("event {i}: {e:?}"));
        let (_, lanes, done) = submit(&mut a);
        assert!(!lanes.meets(held_lanes));
        done.recv_timeout(Duration::from_secs(5)).expect("the turn's step committed").expect("committed");
    }
    // The same key again on the stalled session is answered from memory (no read waits).
    a.handle_line(&"c1".into(), &prompt(&stalled, 102, "held"));
    let (again, again_lanes, _) = submit(&mut a);
    assert_eq!(answer(&again)["result"]["messageId"], answer(&held)["result"]["messageId"], "{again:?}");
    assert!(again_lanes.meets(held_lanes), "an answer about the stalled session waits for its commit");
    assert!(held_done.try_recv().is_err(), "the stopped lane committed nothing");
    // A replay of the stalled session needs its commit: after a short wait (the core waits
    // with it) the resume is answered with an error saying so, not held until the timeout.
    let started = std::time::Instant::now();
    let replay = json!({ "sessionId": stalled, "cwd": "/work", "replayFrom": { "type": "start" } });
    a.handle_line(&"c1".into(), &request(103, "session/resume", replay));
    let waited = started.elapsed();
    let (refused, _, _) = submit(&mut a);
    let error = &answer(&refused)["error"];
    assert!(error["data"].to_string().contains("try again") || error.to_string().contains("try again"), "{refused:?}");
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(5), "answered after {waited:?}");
    signal(pid, "-CONT");
    held_done.recv_timeout(Duration::from_secs(10)).expect("committed once the backend runs").expect("committed");
    drop(a);
    // Everything is stored: a new process under the name sees both prompts, and mints ids
    // past every lane's counters.
    let mut b = host(&url, "l", 10_000);
    for (id, s, said) in [(1, &stalled, "held"), (2, &going, "goes")] {
        let kinds = updates(&resume(&mut b, id, s));
        assert!(kinds.iter().any(|(k, _)| k == "user_message"), "{s} kept its prompt {said:?}: {kinds:?}");
    }
    let new = call(&mut b, "c1", 3, "session/new", json!({ "cwd": "/work" }));
    let fresh = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
    assert!(!sessions.contains(&fresh), "{fresh}");
}

/// Two sessions of `a` on different lanes (of 4), created and committed.
fn two_lanes(a: &mut Agent) -> (String, String) {
    let mut sessions: Vec<String> = Vec::new();
    for id in 1.. {
        let new = call(a, "c1", id, "session/new", json!({ "cwd": "/work" }));
        let s = answer(&new)["result"]["sessionId"].as_str().unwrap().to_owned();
        if sessions.iter().all(|t| lane_of(&SessionId(t.clone()), 4) != lane_of(&SessionId(s.clone()), 4)) {
            sessions.push(s);
        }
        if sessions.len() == 2 {
            return (sessions[0].clone(), sessions[1].clone());
        }
    }
    unreachable!()
}

#[test]
fn a_failed_lane_commit_stops_every_later_batch_and_ids_stay_unique() {
    let Some(url) = database("lane_failed") else { return };
    let options = PgOptions::new("f").timeout(Duration::from_millis(1000)).lanes(4);
    let mut a = Agent::with_store(config(DEFAULT_REMEMBER_IDS), Box::new(PgStore::connect(&url, options).unwrap())).unwrap();
    initialize(&mut a, "c1");
    let (doomed, fine) = two_lanes(&mut a);
    let prompt = |s: &str, id: u64| request(id, "session/prompt", json!({ "sessionId": s, "prompt": text("go") }));
    a.handle_line(&"c1".into(), &prompt(&fine, 10));
    let (_, _, done) = submit(&mut a);
    done.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();

    let pid = backend_pid(&url, &format!("f lane {}", lane_of(&SessionId(doomed.clone()), 4)));
    signal(pid, "-STOP");
    // An id minted between batches; the next batch (on the stopped lane) records the counters.
    let minted = a.mint_agent_message_id();
    a.handle_line(&"c1".into(), &prompt(&doomed, 11));
    let (_, _, doomed_done) = submit(&mut a);
    // A later batch uses the id, on a lane that runs: it commits with the counters too.
    a.runtime_event(&SessionId(fine.clone()), chunk(&minted.0, "uses the id")).unwrap();
    let (_, _, fine_done) = submit(&mut a);
    fine_done.recv_timeout(Duration::from_secs(5)).unwrap().expect("the running lane commits");
    let err = doomed_done.recv_timeout(Duration::from_secs(5)).expect("told").expect_err("the stopped lane's commit times out");
    assert!(err.to_string().contains("did not answer within 1000 ms"), "{err}");
    // From then on no batch is handed over, on any lane.
    a.runtime_event(&SessionId(fine.clone()), chunk(&minted.0, "after the failure")).unwrap();
    let refused = a.drain_submit(Box::new(|_| panic!("nothing is handed over after a failed commit")));
    assert!(refused.is_err(), "a batch after a failed commit is refused");
    assert_eq!(a.drain().expect_err("poisoned"), StoreError::Poisoned);
    signal(pid, "-CONT");
    drop(a);
    // A new process under the name mints past the id the committed batch used.
    let mut b = host(&url, "f", 10_000);
    let next = b.mint_agent_message_id();
    let n = |id: &MessageId| id.0.rsplit('-').next().unwrap().parse::<u64>().unwrap();
    assert!(n(&next) > n(&minted), "{next:?} after {minted:?}");
    let replay = serde_json::to_string(&resume(&mut b, 1, &fine)).unwrap();
    assert!(replay.contains("uses the id") && !replay.contains("after the failure"), "only what committed is stored: {replay}");
}

#[test]
fn sslmode_require_speaks_tls_and_verifies_the_server() {
    let Some(url) = database("tls") else { return };
    let Ok(ca) = std::env::var("ACP_INJECT_POSTGRES_CA") else {
        eprintln!("skipped: ACP_INJECT_POSTGRES_CA is not set (the server of cargo xtask test serves TLS)");
        return;
    };
    // Verified against the server's own certificate, for the address the URL names.
    let (driver_url, options) = PgOptions::from_url(&format!("{url}?sslmode=require&acp_ssl_root_cert={ca}")).unwrap();
    let store = PgStore::connect(&driver_url, PgOptions { host: "tls".into(), ..options }).expect("a TLS connection");
    let mut a = Agent::with_store(config(DEFAULT_REMEMBER_IDS), Box::new(store)).expect("agent");
    initialize(&mut a, "c1");
    let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    assert!(answer(&new)["result"]["sessionId"].is_string(), "{new:?}");
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let ssl: bool = admin
        .query_one(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = 'acp-inject tls' AND a.datname = current_database()",
            &[],
        )
        .expect("the host's backend")
        .get(0);
    assert!(ssl, "the store's connection is encrypted");
    // Without the server's certificate among the roots it is refused, clearly.
    let (driver_url, options) = PgOptions::from_url(&format!("{url}?sslmode=require")).unwrap();
    let err = PgStore::connect(&driver_url, options).map(drop).expect_err("an unverified server is refused");
    assert!(err.to_string().contains("cannot connect") && err.to_string().to_lowercase().contains("certificate"), "{err}");
    // A root file that is not one is a clear error too.
    let (driver_url, options) = PgOptions::from_url(&format!("{url}?sslmode=require&acp_ssl_root_cert=/nonexistent.pem")).unwrap();
    let err = PgStore::connect(&driver_url, options).map(drop).expect_err("a missing root file");
    assert!(err.to_string().contains("acp_ssl_root_cert=/nonexistent.pem"), "{err}");
}
