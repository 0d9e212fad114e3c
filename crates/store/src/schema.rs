//! The database layout, its version, and what `open` accepts, migrates or refuses.
//!
//! The schema version lives in the `meta` table (`schema_version`), and the file carries
//! [`APPLICATION_ID`] in its SQLite header, so a database of another application is told
//! apart from an empty one. See the crate README for the migration policy.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use acp_inject_core::agent::StoreError;
use rusqlite::{Connection, OptionalExtension};

use crate::db_error;

/// The schema this build writes and reads (and the newest it opens; older ones are migrated).
pub const SCHEMA_VERSION: i64 = 4;

/// `PRAGMA application_id` of an acp-inject store ("ACPI").
pub const APPLICATION_ID: i32 = 0x4143_5049;

/// Schema version 1, the first; a new file starts from it and takes every migration after it.
/// `STRICT` tables, so a value of the wrong type is an error, not a silent conversion.
const SCHEMA_V1: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- One row per session the agent ever created (closed ones included), with its live turn.
CREATE TABLE sessions (
    session_id             TEXT PRIMARY KEY,
    ordinal                INTEGER NOT NULL,
    cwd                    TEXT NOT NULL,
    additional_directories TEXT NOT NULL,  -- JSON array of strings
    mcp_servers            TEXT NOT NULL,  -- JSON array of McpServer
    title                  TEXT,
    updated_at             TEXT,
    closed                 INTEGER NOT NULL CHECK (closed IN (0, 1)),
    turn                   TEXT NOT NULL,  -- JSON Turn
    settled                INTEGER NOT NULL DEFAULT 0  -- ids settled so far (orders `injects.settled`)
) STRICT;
CREATE INDEX sessions_by_ordinal ON sessions (ordinal);
CREATE INDEX sessions_by_cwd ON sessions (cwd, ordinal);
CREATE INDEX live_sessions ON sessions (ordinal) WHERE closed = 0;

-- The replayable history of each session, append only; `id` orders it.
CREATE TABLE history (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    entry      TEXT NOT NULL  -- JSON HistoryEntry
) STRICT;
CREATE INDEX history_by_session ON history (session_id);

-- User message ids of live sessions: pending injects (in arrival order, `id`) and the ids
-- that left the queue (revoked or delivered), numbered per session in the order they left
-- (`settled`) and pruned to the remembered bound.
CREATE TABLE injects (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    mode       TEXT CHECK (mode IN ('steer', 'queue')),  -- NULL: delivered without waiting
    content    TEXT,                                     -- JSON content while pending
    owner      TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('pending', 'revoked', 'delivered')),
    settled    INTEGER,
    UNIQUE (session_id, message_id),
    CHECK ((status = 'pending') = (settled IS NULL)),
    CHECK (status != 'pending' OR (mode IS NOT NULL AND content IS NOT NULL))
) STRICT;
CREATE INDEX injects_by_settled ON injects (session_id, settled);
";

/// Version 1 to 2: a store several processes on one machine share. Each session row carries
/// its lease; each process (a host) has a row with its epoch and its id counters.
const V1_TO_V2: &str = "
-- The process serving the session (NULL: nobody), the fencing token (one more at every
-- take-over), and when the lease runs out (milliseconds since the Unix epoch).
ALTER TABLE sessions ADD COLUMN holder TEXT;
ALTER TABLE sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN expires_at INTEGER;

-- One row per host name: its epoch (grows each time a process opens the store under the
-- name; counter writes are fenced by it) and the counters its ids are minted from. A store
-- one process holds alone keeps its counters in `meta`.
CREATE TABLE hosts (
    host         TEXT PRIMARY KEY,
    epoch        INTEGER NOT NULL,
    next_session INTEGER NOT NULL DEFAULT 1,
    next_message INTEGER NOT NULL DEFAULT 1,
    next_request INTEGER NOT NULL DEFAULT 1
) STRICT, WITHOUT ROWID;
";

/// Version 2 to 3: idempotency keys (R-IDEM-1). A key names the message its prompt or inject
/// submitted for as long as the session is kept: unlike the remembered ids of `injects`, keys
/// are never pruned.
const V2_TO_V3: &str = "
CREATE TABLE idempotency_keys (
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    message_id TEXT NOT NULL,
    PRIMARY KEY (session_id, key)
) STRICT, WITHOUT ROWID;
";

/// Version 3 to 4: tenants (R-TENANT-1). The principal that created a session (NULL: none);
/// a connection lists its own principal's sessions only.
const V3_TO_V4: &str = "
ALTER TABLE sessions ADD COLUMN principal TEXT;
CREATE INDEX sessions_by_principal ON sessions (principal, ordinal);
";

/// `MIGRATIONS[i]` takes a store from version `i + 1` to `i + 2`.
const MIGRATIONS: [&str; 3] = [V1_TO_V2, V2_TO_V3, V3_TO_V4];

/// The first bytes of every SQLite 3 database file.
const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

/// Refuses, before SQLite touches it, a file that is not a SQLite database: the JSON snapshot
/// of the earlier file store gets a message saying what it is and what to do.
pub(crate) fn refuse_foreign_file(path: &Path) -> Result<(), StoreError> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::Backend(format!("cannot read {}: {e}", path.display()))),
    };
    let mut head = [0u8; 16];
    let n = read_up_to(&mut file, &mut head).map_err(|e| StoreError::Backend(format!("cannot read {}: {e}", path.display())))?;
    let head = &head[..n];
    if n == 0 || head == SQLITE_HEADER {
        return Ok(());
    }
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return Err(StoreError::Corrupt(json_snapshot_message(path, snapshot_version(path))));
    }
    Err(StoreError::Corrupt(format!(
        "{} is neither a SQLite database nor an agent snapshot; refusing to open or overwrite it",
        path.display()
    )))
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The `version` of a JSON snapshot, when the file parses (snapshots are small; a file too
/// large to be one is not read whole).
fn snapshot_version(path: &Path) -> Option<u64> {
    const MAX: u64 = 64 << 20;
    if std::fs::metadata(path).ok()?.len() > MAX {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Versioned {
        version: Option<u64>,
    }
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<Versioned>(&text).ok()?.version
}

fn json_snapshot_message(path: &Path, version: Option<u64>) -> String {
    let what = match version {
        Some(v) => format!("a JSON agent snapshot (snapshot format version {v})"),
        None => "a JSON file (the agent snapshot format of earlier releases)".to_owned(),
    };
    format!(
        "{} is {what}, as written by the earlier snapshot-file store, not a SQLite store. This \
         release keeps sessions in SQLite and does not convert snapshots. Finish or drain the \
         sessions it holds with the release that wrote it, or move the file aside; then open a \
         new path (or this one once it is gone) to start a SQLite store. The file was left \
         untouched.",
        path.display()
    )
}

/// Creates the schema in an empty database, or checks and migrates an existing one. Runs
/// inside the caller's write transaction, so a failed migration leaves the file as it was.
pub(crate) fn prepare(conn: &Connection, name: &str) -> Result<(), StoreError> {
    let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0)).map_err(db_error)?;
    let objects: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'", [], |r| r.get(0)).map_err(db_error)?;
    if app_id == 0 && objects == 0 {
        conn.execute_batch(SCHEMA_V1).map_err(db_error)?;
        conn.pragma_update(None, "application_id", APPLICATION_ID).map_err(db_error)?;
        conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', 1), ('next_session', 1), ('next_message', 1)", [])
            .map_err(db_error)?;
        return migrate(conn, name, 1);
    }
    if app_id != APPLICATION_ID {
        return Err(StoreError::Corrupt(format!(
            "{name} is a SQLite database of another application (application_id {app_id:#x}, {objects} schema objects), \
             not an acp-inject store; refusing to use it"
        )));
    }
    let version: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
        .optional()
        .map_err(|e| StoreError::Corrupt(format!("{name}: the acp-inject store has no readable schema version: {e}")))?;
    match version {
        Some(SCHEMA_VERSION) => Ok(()),
        Some(v) if v > SCHEMA_VERSION => Err(StoreError::Corrupt(format!(
            "{name} was written by a newer release (store schema version {v}; this build reads version {SCHEMA_VERSION}); \
             open it with that release or a later one"
        ))),
        Some(v) if v >= 1 => migrate(conn, name, v),
        Some(v) => Err(StoreError::Corrupt(format!(
            "{name} has store schema version {v}, which no release wrote (this build reads version {SCHEMA_VERSION})"
        ))),
        None => Err(StoreError::Corrupt(format!("{name}: the acp-inject store has no schema version"))),
    }
}

/// Runs the migrations from version `from` to [`SCHEMA_VERSION`], one step per version.
fn migrate(conn: &Connection, name: &str, from: i64) -> Result<(), StoreError> {
    for version in from..SCHEMA_VERSION {
        let step = usize::try_from(version - 1)
            .ok()
            .and_then(|i| MIGRATIONS.get(i))
            .ok_or_else(|| StoreError::Corrupt(format!("{name}: no migration from store schema version {version}")))?;
        conn.execute_batch(step)
            .map_err(|e| StoreError::Corrupt(format!("{name}: migrating from store schema version {version} failed: {e}")))?;
        conn.execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [version + 1]).map_err(db_error)?;
    }
    Ok(())
}
