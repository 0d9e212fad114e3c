//! One transaction per batch: a burst of input drained once is one commit, a batch is all or
//! nothing, and a batch the store cannot hold poisons the agent without releasing anything.

mod common;

use acp_inject_core::agent::{Agent, Change, SessionRecord, Store, StoreError, Turn, DEFAULT_REMEMBER_IDS};
use acp_inject_core::wire::SessionId;
use acp_inject_store::SqliteStore;
use common::*;
use serde_json::json;

fn record(id: &str, ordinal: u64) -> SessionRecord {
    SessionRecord {
        session_id: id.into(),
        ordinal,
        cwd: "/work".into(),
        additional_directories: vec![],
        mcp_servers: vec![],
        title: None,
        updated_at: None,
        closed: false,
        principal: None,
    }
}

#[test]
fn a_burst_of_injects_drained_once_is_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let store = SqliteStore::open(&path).unwrap();
    let stats = store.stats();
    let mut a = Agent::with_store(config(DEFAULT_REMEMBER_IDS), Box::new(store)).unwrap();
    initialize(&mut a, "c1");
    call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
    call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": "sess_1", "prompt": text("go") }));

    let before = stats.commits();
    for i in 0..50 {
        let params =
            json!({ "sessionId": "sess_1", "mode": if i % 3 == 0 { "steer" } else { "queue" }, "content": text(&format!("i{i}")) });
        a.handle_line(&"c1".into(), &request(100 + i, "session/inject", params));
    }
    let answers = lines_to("c1", a.drain().unwrap());
    assert_eq!(answers.iter().filter(|l| l["result"]["messageId"].is_string()).count(), 50);
    assert_eq!(stats.commits(), before + 1, "50 injects handled before one drain are one transaction");

    // Nothing recorded, nothing committed: an empty drain and read-only requests.
    a.drain().unwrap();
    call(&mut a, "c1", 3, "session/status", json!({ "sessionId": "sess_1" }));
    call(&mut a, "c1", 4, "session/list", json!({}));
    assert_eq!(stats.commits(), before + 1);

    // One accept per drain is one commit each.
    for i in 0..5 {
        call(&mut a, "c1", 200 + i, "session/inject", json!({ "sessionId": "sess_1", "mode": "queue", "content": text("x") }));
    }
    assert_eq!(stats.commits(), before + 6);
    drop(a);
    let a = acp_inject_store::open_agent(&path, config(DEFAULT_REMEMBER_IDS)).unwrap();
    assert_eq!(a.pending(&SessionId("sess_1".into())).len(), 55, "the whole burst is durable");
}

#[test]
fn a_batch_the_store_cannot_hold_poisons_and_releases_nothing() {
    // An agent restored from a snapshot holds a session this (empty) store never saw: a
    // change to it cannot be stored, so its batch must fail as a whole.
    let mut mem = Agent::new(config(DEFAULT_REMEMBER_IDS)).unwrap();
    assert!(mem.create_session(&SessionId("ghost".into()), "/work").is_ok());
    initialize(&mut mem, "c1");
    call(&mut mem, "c1", 1, "session/prompt", json!({ "sessionId": "ghost", "prompt": text("go") }));
    let snapshot = mem.snapshot();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let mut a = Agent::restore(config(DEFAULT_REMEMBER_IDS), &snapshot, Box::new(SqliteStore::open(&path).unwrap())).unwrap();
    let out = call(&mut a, "c1", 2, "session/new", json!({ "cwd": "/work" }));
    assert_eq!(answer(&out)["result"]["sessionId"], "sess_2");

    a.handle_line(&"c1".into(), &request(3, "session/new", json!({ "cwd": "/lost" })));
    a.handle_line(&"c1".into(), &request(4, "session/inject", json!({ "sessionId": "ghost", "mode": "queue", "content": text("x") })));
    match a.drain() {
        Err(StoreError::Backend(e)) => assert!(e.contains("FOREIGN KEY"), "{e}"),
        other => panic!("expected the batch to fail, got {other:?}"),
    }
    assert_eq!(a.drain(), Err(StoreError::Poisoned), "the agent stays stopped");
    drop(a);

    let store = SqliteStore::open(&path).unwrap();
    let page = store.list(None, None, None, 10).unwrap();
    let ids: Vec<&str> = page.sessions.iter().map(|r| r.session_id.as_str()).collect();
    assert_eq!(ids, ["sess_2"], "the failed batch's new session was rolled back with it");
}

#[test]
fn a_failed_batch_rolls_back_whole_and_the_next_one_commits() {
    let mut s = SqliteStore::open_in_memory().unwrap();
    s.record(Change::SessionCreated(&record("a", 1)));
    s.record(Change::Turn { session: &"nope".into(), turn: &Turn::started() });
    s.record(Change::SessionCreated(&record("b", 2)));
    match s.commit() {
        Err(StoreError::Corrupt(e)) => assert!(e.contains("nope"), "{e}"),
        other => panic!("expected the latched error, got {other:?}"),
    }
    assert_eq!(s.session(&"a".into()).unwrap(), None);
    assert_eq!(s.session(&"b".into()).unwrap(), None);
    s.record(Change::SessionCreated(&record("a", 1)));
    s.commit().unwrap();
    assert_eq!(s.session(&"a".into()).unwrap(), Some(record("a", 1)));
    s.commit().unwrap();
}

#[test]
fn a_batch_never_committed_is_gone_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    {
        let mut s = SqliteStore::open(&path).unwrap();
        s.record(Change::SessionCreated(&record("kept", 1)));
        s.commit().unwrap();
        s.record(Change::SessionCreated(&record("lost", 2)));
        // Reads inside the batch see it (the core checks ids this way)...
        assert!(s.session(&"lost".into()).unwrap().is_some());
    } // ...but the process ends before the commit.
    let s = SqliteStore::open(&path).unwrap();
    assert!(s.session(&"kept".into()).unwrap().is_some());
    assert_eq!(s.session(&"lost".into()).unwrap(), None);
}

/// R-TENANT-1: a principal lists its own sessions; `None` lists those created without one.
#[test]
fn list_keeps_principals_apart() {
    let mut s = SqliteStore::open_in_memory().unwrap();
    for (n, principal) in [(1, Some("alice")), (2, Some("bob")), (3, None), (4, Some("alice"))] {
        let mut r = record(&format!("s{n}"), n);
        r.principal = principal.map(str::to_owned);
        s.record(Change::SessionCreated(&r));
    }
    s.commit().unwrap();
    let ids = |p: acp_inject_core::agent::SessionPage| p.sessions.into_iter().map(|r| r.session_id.0).collect::<Vec<_>>();
    assert_eq!(ids(s.list(None, Some("alice"), None, 10).unwrap()), ["s4", "s1"]);
    assert_eq!(ids(s.list(None, Some("bob"), None, 10).unwrap()), ["s2"]);
    assert_eq!(ids(s.list(None, None, None, 10).unwrap()), ["s3"]);
    assert_eq!(ids(s.list(Some("/work"), Some("alice"), Some(4), 10).unwrap()), ["s1"]);
    assert_eq!(ids(s.list(None, Some("carol"), None, 10).unwrap()), Vec::<String>::new());
    assert_eq!(s.session(&"s2".into()).unwrap().unwrap().principal.as_deref(), Some("bob"), "kept with the record");
}

#[test]
fn list_pages_newest_first_with_cwd_and_cursor() {
    let mut s = SqliteStore::open_in_memory().unwrap();
    for n in 1..=5u64 {
        let mut r = record(&format!("s{n}"), n);
        if n % 2 == 0 {
            r.cwd = "/even".into();
        }
        s.record(Change::SessionCreated(&r));
    }
    s.commit().unwrap();
    let ids = |p: acp_inject_core::agent::SessionPage| (p.sessions.into_iter().map(|r| r.session_id).collect::<Vec<_>>(), p.more);
    assert_eq!(ids(s.list(None, None, None, 2).unwrap()), (vec!["s5".into(), "s4".into()], true));
    assert_eq!(ids(s.list(None, None, Some(4), 2).unwrap()), (vec!["s3".into(), "s2".into()], true));
    assert_eq!(ids(s.list(None, None, Some(2), 2).unwrap()), (vec!["s1".into()], false));
    assert_eq!(ids(s.list(Some("/even"), None, None, 5).unwrap()), (vec!["s4".into(), "s2".into()], false));
    assert_eq!(ids(s.list(Some("/even"), None, Some(4), 1).unwrap()), (vec!["s2".into()], false));
    assert_eq!(ids(s.list(Some("/none"), None, None, 5).unwrap()), (vec![], false));
    assert_eq!(ids(s.list(None, None, Some(u64::MAX), 0).unwrap()), (vec![], true));
    s.record(Change::SessionForgotten(&"s5".into()));
    s.commit().unwrap();
    assert_eq!(ids(s.list(None, None, None, 1).unwrap()), (vec!["s4".into()], true));
    assert_eq!(s.history(&SessionId("s5".into())).unwrap(), vec![]);
}
