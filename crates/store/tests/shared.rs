//! One SQLite file shared by several agent processes on one machine (each a store of its own
//! here, under its own host name, as separate processes would open it).
//!
//! What they prove: two stores serve different sessions at once, each refusing the other's;
//! a session one lets go the other resumes at once; a store that stopped renewing (paused)
//! loses its sessions after the lease and can commit nothing of them (fencing), so nothing it
//! held is delivered twice; a store that is gone (its process died) lets its sessions go at
//! once; a store of the single-process schema is upgraded in place; a store held by one
//! process alone and a shared one exclude each other.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use acp_inject_core::agent::{Agent, HistoryEntry, RuntimeEvent, Store, StoreError, DEFAULT_REMEMBER_IDS, SESSION_HELD_ELSEWHERE};
use acp_inject_core::wire::{SessionId, StopReason};
use acp_inject_store::{SqliteOptions, SqliteStore, APPLICATION_ID, SCHEMA_VERSION};
use common::*;
use serde_json::{json, Value};

fn options(name: &str, lease_ms: u64) -> SqliteOptions {
    SqliteOptions::default().host(name).lease(Duration::from_millis(lease_ms))
}

/// An agent on the shared store at `path` under host name `name`, its connection `c1` initialized.
fn host(path: &Path, name: &str, lease_ms: u64) -> Agent {
    let store = SqliteStore::open_shared(path, options(name, lease_ms)).expect("open shared");
    let mut agent = Agent::with_store(config(DEFAULT_REMEMBER_IDS), Box::new(store)).expect("agent");
    initialize(&mut agent, "c1");
    agent
}

fn new_session(a: &mut Agent, id: u64) -> String {
    let out = call(a, "c1", id, "session/new", json!({ "cwd": "/work" }));
    answer(&out)["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("session/new: {out:?}")).to_owned()
}

fn inject(a: &mut Agent, id: u64, session: &str, mode: &str, t: &str) -> String {
    let out = call(a, "c1", id, "session/inject", json!({ "sessionId": session, "mode": mode, "content": text(t) }));
    answer(&out)["result"]["messageId"].as_str().unwrap_or_else(|| panic!("inject: {out:?}")).to_owned()
}

fn resume(a: &mut Agent, id: u64, session: &str) -> Vec<Value> {
    call(a, "c1", id, "session/resume", json!({ "sessionId": session, "cwd": "/work", "replayFrom": { "type": "start" } }))
}

/// Resumes until the session is taken (a `-32030` answer waits its `retryAfterMs`), within
/// `within`; returns the resume's lines and how many times it was refused.
fn resume_when_free(a: &mut Agent, session: &str, within: Duration) -> (Vec<Value>, u32) {
    let deadline = Instant::now() + within;
    for (refused, id) in (1000..).enumerate() {
        let out = resume(a, id, session);
        let error = &answer(&out)["error"];
        if error.is_null() {
            return (out, u32::try_from(refused).unwrap_or(u32::MAX));
        }
        assert_eq!(error["code"], SESSION_HELD_ELSEWHERE, "{out:?}");
        assert!(Instant::now() < deadline, "the session was not free within {within:?}: {out:?}");
        let wait = error["data"]["retryAfterMs"].as_u64().unwrap_or(0).clamp(10, 200);
        std::thread::sleep(Duration::from_millis(wait));
    }
    unreachable!()
}

fn user_messages(lines: &[Value]) -> Vec<String> {
    updates(lines).into_iter().filter(|(k, _)| k == "user_message").map(|(_, id)| id).collect()
}

fn stored_user_messages(path: &Path, session: &str) -> Vec<String> {
    let reader = SqliteStore::open_shared(path, SqliteOptions::default()).unwrap();
    reader
        .history(&SessionId(session.to_owned()))
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            HistoryEntry::User { message_id, .. } => Some(message_id.0),
            HistoryEntry::Update { .. } => None,
        })
        .collect()
}

fn turn_ended() -> RuntimeEvent {
    RuntimeEvent::TurnEnded { stop_reason: StopReason::EndTurn, usage: None, error: None }
}

#[test]
fn two_stores_serve_different_sessions_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let mut a = host(&path, "a", 60_000);
    let mut b = host(&path, "b", 60_000);

    let sa = new_session(&mut a, 1);
    let sb = new_session(&mut b, 1);
    assert_eq!((sa.as_str(), sb.as_str()), ("sess_a-1", "sess_b-1"), "ids carry the host's name");
    let pa = call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": sa, "prompt": text("on a") }));
    let pb = call(&mut b, "c1", 2, "session/prompt", json!({ "sessionId": sb, "prompt": text("on b") }));
    assert_eq!(
        (answer(&pa)["result"]["messageId"].as_str(), answer(&pb)["result"]["messageId"].as_str()),
        (Some("msg_a-1"), Some("msg_b-1"))
    );
    // Interleaved batches, each committed by its own store.
    for i in 0..5u64 {
        inject(&mut a, 10 + i, &sa, "queue", &format!("a{i}"));
        inject(&mut b, 10 + i, &sb, "steer", &format!("b{i}"));
    }
    assert_eq!(a.pending(&SessionId(sa.clone())).len(), 5);
    assert_eq!(b.pending(&SessionId(sb.clone())).len(), 5);

    // Each refuses the other's session, naming its holder.
    let out = resume(&mut a, 20, &sb);
    assert_eq!(answer(&out)["error"]["code"], SESSION_HELD_ELSEWHERE, "{out:?}");
    assert_eq!(answer(&out)["error"]["data"]["holder"], "b");
    let out = resume(&mut b, 20, &sa);
    assert_eq!(answer(&out)["error"]["data"]["holder"], "a", "{out:?}");

    // Both list every session, newest first.
    let out = call(&mut a, "c1", 21, "session/list", json!({}));
    let ids: Vec<&str> =
        answer(&out)["result"]["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
    assert_eq!(ids, [sb.as_str(), sa.as_str()]);

    // A burst drained once is still one commit on a shared store.
    let store = SqliteStore::open_shared(&path, options("c", 60_000)).unwrap();
    let stats = store.stats();
    let mut c = Agent::with_store(config(DEFAULT_REMEMBER_IDS), Box::new(store)).unwrap();
    initialize(&mut c, "c1");
    let sc = new_session(&mut c, 1);
    call(&mut c, "c1", 2, "session/prompt", json!({ "sessionId": sc, "prompt": text("go") }));
    let before = stats.commits();
    for i in 0..20 {
        let params = json!({ "sessionId": sc, "mode": "queue", "content": text("x") });
        c.handle_line(&"c1".into(), &request(100 + i, "session/inject", params));
    }
    c.drain().unwrap();
    assert_eq!(stats.commits(), before + 1, "20 injects handled before one drain are one transaction");
}

#[test]
fn each_resumes_a_session_the_other_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    // Leases far longer than the test: every hand-over here is a release, not an expiry.
    let mut a = host(&path, "a", 60_000);
    let mut b = host(&path, "b", 60_000);
    let sa = new_session(&mut a, 1);
    let sb = new_session(&mut b, 1);
    call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": sa, "prompt": text("first on a") }));
    call(&mut b, "c1", 2, "session/prompt", json!({ "sessionId": sb, "prompt": text("first on b") }));
    // Each turn ends with its client gone: each store lets its session go.
    for (agent, session) in [(&mut a, &sa), (&mut b, &sb)] {
        agent.detach(&"c1".into());
        agent.drain().unwrap();
        event(agent, session, turn_ended());
        assert!(agent.turn(&SessionId(session.clone())).is_none(), "let go of {session}");
        initialize(agent, "c1");
    }

    let taken = Instant::now();
    let out = resume(&mut a, 3, &sb);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    assert_eq!(user_messages(&out), ["msg_b-1"], "B's history replayed on A");
    let out = resume(&mut b, 3, &sa);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    assert_eq!(user_messages(&out), ["msg_a-1"]);
    assert!(taken.elapsed() < Duration::from_secs(30), "taken at once, not after the lease");

    // Each goes on in the other's session, minting in its own scope.
    let out = call(&mut a, "c1", 4, "session/prompt", json!({ "sessionId": sb, "prompt": text("second, on a") }));
    assert_eq!(answer(&out)["result"]["messageId"], "msg_a-2");
    let out = call(&mut b, "c1", 4, "session/prompt", json!({ "sessionId": sa, "prompt": text("second, on b") }));
    assert_eq!(answer(&out)["result"]["messageId"], "msg_b-2");
    assert_eq!(stored_user_messages(&path, &sb), ["msg_b-1", "msg_a-2"]);
    assert_eq!(stored_user_messages(&path, &sa), ["msg_a-1", "msg_b-2"]);

    // A closed session is nobody's: the other reopens it at once.
    let out = call(&mut a, "c1", 5, "session/close", json!({ "sessionId": sb }));
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    let out = call(&mut b, "c1", 5, "session/resume", json!({ "sessionId": sb, "cwd": "/work" }));
    assert_eq!(reason(answer(&out)), None, "{out:?}");
}

#[test]
fn a_paused_store_loses_its_lease_and_nothing_of_its_batch_lands() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let mut a = host(&path, "a", 300);
    let mut b = host(&path, "b", 300);
    let session = new_session(&mut a, 1);
    let prompt = call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": session, "prompt": text("go") }));
    let prompt = answer(&prompt)["result"]["messageId"].as_str().unwrap().to_owned();
    let queued = inject(&mut a, 3, &session, "queue", "later");
    let steered = inject(&mut a, 4, &session, "steer", "now");

    // A is paused (it renews nothing, but its process runs): B waits for the lease.
    let out = resume(&mut b, 1, &session);
    let error = &answer(&out)["error"];
    assert_eq!(error["code"], SESSION_HELD_ELSEWHERE, "{out:?}");
    assert!(error["data"]["retryAfterMs"].as_u64().unwrap() <= 300, "{out:?}");
    let (out, refused) = resume_when_free(&mut b, &session, Duration::from_secs(10));
    assert!(refused >= 1, "held until the lease ran out");
    let delivered = b.drain().unwrap();
    let on_b = user_messages(&out);
    assert_eq!(on_b, [prompt.clone(), steered.clone(), queued.clone()], "replayed, then what A left pending: {out:?} {delivered:?}");

    // A wakes up: its turn ends (which would deliver the queued inject again) and it accepts
    // another inject, in one batch. The commit is refused, nothing is released, A stops.
    let before = stored_user_messages(&path, &session);
    a.runtime_event(&SessionId(session.clone()), turn_ended()).unwrap();
    let params = json!({ "sessionId": session, "mode": "queue", "content": text("too late") });
    a.handle_line(&"c1".into(), &request(5, "session/inject", params));
    match a.drain() {
        Err(StoreError::LeaseLost { session: lost }) => assert_eq!(lost, session.as_str()),
        other => panic!("a store that lost its lease must not commit, got {other:?}"),
    }
    assert_eq!(a.drain().unwrap_err(), StoreError::Poisoned);
    assert!(a.renew_leases().is_err());
    assert_eq!(stored_user_messages(&path, &session), before, "nothing of A's batch landed");
    // The inject A would have accepted is unknown to the session; B goes on.
    let out = call(&mut b, "c1", 6, "session/revoke_inject", json!({ "sessionId": session, "messageId": "msg_a-4" }));
    assert_eq!(reason(answer(&out)), Some("unknown_message_id"), "{out:?}");
    assert_eq!(inject(&mut b, 7, &session, "queue", "more"), "msg_b-1");
    let history = stored_user_messages(&path, &session);
    assert_eq!(history.iter().filter(|id| **id == queued).count(), 1, "delivered exactly once: {history:?}");
}

#[test]
fn renewing_keeps_a_session_and_a_lost_lease_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let mut a = host(&path, "a", 300);
    let mut b = host(&path, "b", 300);
    assert_eq!(a.renew_every(), Some(Duration::from_millis(75)));
    let session = new_session(&mut a, 1);
    let renewed_until = Instant::now() + Duration::from_millis(700);
    while Instant::now() < renewed_until {
        std::thread::sleep(Duration::from_millis(50));
        a.renew_leases().expect("renew");
    }
    let out = resume(&mut b, 1, &session);
    assert_eq!(answer(&out)["error"]["code"], SESSION_HELD_ELSEWHERE, "renewed past its first lease: {out:?}");
    let _ = resume_when_free(&mut b, &session, Duration::from_secs(10));
    assert_eq!(a.renew_leases(), Err(StoreError::LeaseLost { session: session.as_str().into() }));
}

/// A session taken over from a host that left its turn running reports `unknown` (R-RESUME-2:
/// the work was cut off where this host cannot observe it), in the resume's state and in
/// `session/status`, until a turn starts here; then the states are the usual ones.
#[test]
fn a_turn_cut_off_on_another_host_is_reported_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let mut a = host(&path, "a", 60_000);
    let session = new_session(&mut a, 1);
    call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": session, "prompt": text("go") }));
    drop(a); // its process died mid-turn, nothing pending

    let mut b = host(&path, "b", 60_000);
    let out = resume(&mut b, 1, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    let states: Vec<String> = updates(&out).into_iter().filter(|(k, _)| k == "state_update").map(|(_, s)| s).collect();
    assert_eq!(states, ["unknown"], "{out:?}");
    let status = |b: &mut Agent, id| answer(&call(b, "c1", id, "session/status", json!({ "sessionId": session }))).clone();
    assert_eq!(status(&mut b, 2)["result"]["state"]["state"], "unknown");
    let out = call(&mut b, "c1", 3, "session/prompt", json!({ "sessionId": session, "prompt": text("again") }));
    assert!(updates(&out).contains(&("state_update".to_owned(), "running".to_owned())), "{out:?}");
    event(&mut b, &session, turn_ended());
    assert_eq!(status(&mut b, 4)["result"]["state"]["state"], "idle", "a turn here replaced the unknown state");
}

#[test]
fn a_store_that_is_gone_lets_its_sessions_go_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let mut a = host(&path, "a", 60_000);
    let session = new_session(&mut a, 1);
    call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": session, "prompt": text("go") }));
    let queued = inject(&mut a, 3, &session, "queue", "later");
    let mut b = host(&path, "b", 60_000);
    let out = resume(&mut b, 1, &session);
    assert_eq!(answer(&out)["error"]["code"], SESSION_HELD_ELSEWHERE, "A runs: {out:?}");
    drop(a); // its process died mid-turn: the OS lets go of its host lock

    let out = resume(&mut b, 2, &session);
    assert_eq!(reason(answer(&out)), None, "taken at once, though A's 60 s lease runs: {out:?}");
    let delivered = handed(&b.drain().unwrap());
    assert!(
        user_messages(&out).contains(&queued) || delivered.iter().any(|(id, _)| *id == queued),
        "the cut-off turn's pending inject opens the next turn: {out:?} {delivered:?}"
    );

    // A process under A's name takes A's sessions back at once, and continues its counters.
    drop(b);
    let mut a2 = host(&path, "a", 60_000);
    let out = resume(&mut a2, 1, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    assert_eq!(new_session(&mut a2, 2), "sess_a-2");
}

#[test]
fn a_single_process_store_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = |name: &str| {
        let path = dir.path().join(name);
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(include_str!("fixtures/store-v1.sql")).unwrap();
        conn.pragma_update(None, "application_id", APPLICATION_ID).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        path
    };
    let version = |path: &Path| -> i64 {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap()
    };

    // Shared: the sessions are there to take, with their history and pending injects.
    let shared = v1("shared.sqlite3");
    assert_eq!(version(&shared), 1);
    let mut a = host(&shared, "a", 60_000);
    assert_eq!(version(&shared), SCHEMA_VERSION, "upgraded at open");
    let out = resume(&mut a, 1, "sess_1");
    assert_eq!(reason(answer(&out)), None, "{out:?}");
    let delivered = handed(&a.drain().unwrap());
    assert_eq!(user_messages(&out)[..2], ["msg_1".to_owned(), "msg_3".to_owned()], "history replayed: {out:?}");
    assert!(
        user_messages(&out).contains(&"msg_2".to_owned()) || delivered.iter().any(|(id, _)| id == "msg_2"),
        "the pending inject continues: {out:?} {delivered:?}"
    );
    let out = call(&mut a, "c1", 2, "session/revoke_inject", json!({ "sessionId": "sess_1", "messageId": "msg_4" }));
    assert_eq!(answer(&out)["result"], json!({}), "the revoked id is remembered: {out:?}");
    assert_eq!(new_session(&mut a, 3), "sess_a-1");
    let out = call(&mut a, "c1", 4, "session/list", json!({}));
    let ids: Vec<&str> =
        answer(&out)["result"]["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["sess_a-1", "sess_2", "sess_1"], "new sessions list after the old ones");
    drop(a);
    let mut a = host(&shared, "a", 60_000);
    assert_eq!(new_session(&mut a, 1), "sess_a-2", "upgraded once; counters kept");

    // Held by one process alone: it loads every live session, as before.
    let alone = v1("alone.sqlite3");
    let mut agent = acp_inject_store::open_agent(&alone, config(DEFAULT_REMEMBER_IDS)).unwrap();
    assert_eq!(agent.session_ids(), [SessionId("sess_1".into())]);
    let pending: Vec<String> = agent.pending(&SessionId("sess_1".into())).into_iter().map(|p| p.message_id.0).collect();
    assert_eq!(pending, ["msg_2"]);
    initialize(&mut agent, "c1");
    assert_eq!(new_session(&mut agent, 1), "sess_3", "the old counters continue");
    drop(agent);
    assert_eq!(version(&alone), SCHEMA_VERSION);

    // A newer schema than this build's is still refused.
    rusqlite::Connection::open(&alone)
        .unwrap()
        .execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [SCHEMA_VERSION + 1])
        .unwrap();
    for r in [SqliteStore::open_shared(&alone, SqliteOptions::default()).map(drop), SqliteStore::open(&alone).map(drop)] {
        match r {
            Err(StoreError::Corrupt(m)) => assert!(m.contains("newer release"), "{m}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn a_store_held_alone_and_a_shared_one_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let shared = SqliteStore::open_shared(&path, SqliteOptions::default()).unwrap();
    match SqliteStore::open(&path) {
        Err(StoreError::Backend(m)) => assert!(m.contains("in use"), "{m}"),
        other => panic!("a store held alone must be refused while a process shares it: {other:?}"),
    }
    drop(shared);
    let alone = SqliteStore::open(&path).unwrap();
    match SqliteStore::open_shared(&path, SqliteOptions::default()) {
        Err(StoreError::Backend(m)) => assert!(m.contains("holds it alone"), "{m}"),
        other => panic!("a shared open must be refused while a process holds the store alone: {other:?}"),
    }
    drop(alone);
    SqliteStore::open_shared(&path, SqliteOptions::default()).unwrap();
}

#[test]
fn host_names_locations_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let first = SqliteStore::open_shared(&path, SqliteOptions::default()).unwrap();
    let second = SqliteStore::open_shared(&path, SqliteOptions::default()).unwrap();
    let (h1, h2) = (first.host().unwrap().to_owned(), second.host().unwrap().to_owned());
    assert!(h1 != h2 && h1.ends_with(".1") && h2.ends_with(".2"), "{h1} {h2}");
    assert_eq!(first.id_scope(), Some(h1.as_str()));
    drop(first);
    let third = SqliteStore::open_shared(&path, SqliteOptions::default()).unwrap();
    assert_eq!(third.host(), Some(h1.as_str()), "a name nobody runs under is reused");

    let named = SqliteStore::open_shared(&path, SqliteOptions::default().host("editor")).unwrap();
    match SqliteStore::open_shared(&path, SqliteOptions::default().host("editor")) {
        Err(StoreError::Backend(m)) => assert!(m.contains("in use by another running process"), "{m}"),
        other => panic!("a name a running process holds must be refused: {other:?}"),
    }
    drop(named);
    for bad in [SqliteOptions::default().host("no spaces"), SqliteOptions::default().lease(Duration::from_millis(10))] {
        assert!(SqliteStore::open_shared(&path, bad).is_err());
    }

    // Through `open`: a plain path is shared; a sqlite: location carries the options.
    let location = format!("sqlite:{}?acp_host=web.1&acp_lease_ms=1500", path.display());
    let store = acp_inject_store::open(&location, DEFAULT_REMEMBER_IDS).unwrap();
    assert_eq!((store.id_scope(), store.lease()), (Some("web.1"), Some(Duration::from_millis(1500))));
    let plain = acp_inject_store::open(path.to_str().unwrap(), DEFAULT_REMEMBER_IDS).unwrap();
    assert!(plain.id_scope().is_some_and(|h| h.ends_with(".3")), "the first free name: {:?}", plain.id_scope());
    drop((store, plain, second, third));
    let alone = acp_inject_store::open(&format!("sqlite:{}?acp_mode=exclusive", path.display()), DEFAULT_REMEMBER_IDS).unwrap();
    assert_eq!(alone.id_scope(), None);
    let err = acp_inject_store::open(&format!("sqlite:{}?acp_lease=5", path.display()), DEFAULT_REMEMBER_IDS).map(drop).unwrap_err();
    assert!(err.to_string().contains("acp_lease_ms"), "{err}");
}

#[test]
fn a_take_over_blocked_by_a_stalled_transaction_answers_busy_instead_of_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let mut a = host(&path, "a", 400);
    let session = new_session(&mut a, 1);
    drop(a);
    let mut b = host(&path, "b", 400);
    // Another process stalled in the middle of a transaction holds the file's write lock.
    let mut stalled = rusqlite::Connection::open(&path).unwrap();
    let tx = stalled.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).unwrap();
    let asked = Instant::now();
    let out = resume(&mut b, 1, &session);
    assert_eq!(answer(&out)["error"]["code"], SESSION_HELD_ELSEWHERE, "{out:?}");
    assert!(asked.elapsed() < Duration::from_secs(4), "bounded by a quarter lease (at least 1 s): {:?}", asked.elapsed());
    // The host is fine, and once the stalled transaction is gone it takes the session.
    tx.rollback().unwrap();
    let out = resume(&mut b, 2, &session);
    assert_eq!(reason(answer(&out)), None, "{out:?}");
}
