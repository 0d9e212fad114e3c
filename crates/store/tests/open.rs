//! What `open` refuses, and how: files of the earlier snapshot store, newer schemas, other
//! applications' databases, anything else, and a store another process holds.

use acp_inject_core::agent::{Store, StoreError};
use acp_inject_store::{open_agent, SqliteStore, APPLICATION_ID, SCHEMA_VERSION};

fn corrupt(r: Result<SqliteStore, StoreError>) -> String {
    match r {
        Err(StoreError::Corrupt(m)) => m,
        Err(other) => panic!("expected Corrupt, got {other:?}"),
        Ok(_) => panic!("expected a refusal, the store opened"),
    }
}

#[test]
fn the_earlier_json_snapshot_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.json");
    // The shape the snapshot-file store wrote (snapshot format version 1).
    let old = r#"{"version":1,"config":{"inject":null},"nextSession":3,"sessions":{},"connections":{}}"#;
    std::fs::write(&path, old).unwrap();
    let m = corrupt(SqliteStore::open(&path));
    assert!(m.contains("JSON agent snapshot") && m.contains("version 1"), "{m}");
    assert!(m.contains("snapshot-file store") && m.contains("new path"), "says what to do: {m}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), old, "the file is left untouched");

    // Also through open_agent, and for a JSON file that does not parse.
    std::fs::write(&path, "  {\"version\": 1, \"config\": ").unwrap();
    match open_agent(&path, Default::default()) {
        Err(acp_inject_core::agent::OpenError::Store(StoreError::Corrupt(m))) => assert!(m.contains("JSON"), "{m}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_store_of_a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    drop(SqliteStore::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [SCHEMA_VERSION + 1]).unwrap();
    }
    let m = corrupt(SqliteStore::open(&path));
    assert!(m.contains("newer release") && m.contains(&format!("version {}", SCHEMA_VERSION + 1)), "{m}");
}

#[test]
fn other_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();

    let other_app = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other_app).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT)").unwrap();
    }
    let m = corrupt(SqliteStore::open(&other_app));
    assert!(m.contains("another application"), "{m}");

    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, b"\x00\x01not a database at all").unwrap();
    let m = corrupt(SqliteStore::open(&garbage));
    assert!(m.contains("neither a SQLite database"), "{m}");
    assert_eq!(std::fs::read(&garbage).unwrap(), b"\x00\x01not a database at all");

    // A store whose header says acp-inject but whose schema version is gone.
    let damaged = dir.path().join("damaged.sqlite3");
    drop(SqliteStore::open(&damaged).unwrap());
    {
        let conn = rusqlite::Connection::open(&damaged).unwrap();
        let id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0)).unwrap();
        assert_eq!(id, APPLICATION_ID);
        conn.execute("DELETE FROM meta WHERE key = 'schema_version'", []).unwrap();
    }
    let m = corrupt(SqliteStore::open(&damaged));
    assert!(m.contains("no schema version"), "{m}");
}

#[test]
fn an_empty_file_becomes_a_store_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    std::fs::write(&path, b"").unwrap();
    let mut s = SqliteStore::open(&path).unwrap();
    assert!(s.load().unwrap().is_some_and(|state| state.sessions.is_empty() && state.counters == Default::default()));
    drop(s);
    SqliteStore::open(&path).unwrap();
}

#[test]
fn a_store_serves_one_process_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let first = SqliteStore::open(&path).unwrap();
    match SqliteStore::open(&path) {
        Err(StoreError::Backend(m)) => assert!(m.contains("in use"), "{m}"),
        other => panic!("expected the second open to be refused, got {other:?}"),
    }
    drop(first);
    SqliteStore::open(&path).unwrap();
}
