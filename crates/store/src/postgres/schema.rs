//! The tables and their migrations: each version's script runs once, in order, in one
//! transaction, under an advisory lock, whichever host starts first; a database written by a
//! newer release is refused.

use acp_inject_core::agent::StoreError;

use super::conn::{Conn, Expect, Op};

/// The schema version this release writes (and the newest it reads).
pub const SCHEMA_VERSION: i64 = 4;

/// The advisory lock that serialises migrations ("ACPI" as an integer).
const MIGRATION_LOCK: i64 = 0x4143_5049;

/// Version N's script is `MIGRATIONS[N - 1]`.
const MIGRATIONS: [&str; 4] = [V1, V2, V3, V4];

/// Version 4: a host commits through several connections at once (lanes); each writes the
/// host's counters on a row of its own, so no two wait on one row. A host's counters are the
/// largest of its rows (and of `acp_hosts`, where earlier versions kept them).
const V4: &str = "
CREATE TABLE acp_host_lanes (
    host         text NOT NULL REFERENCES acp_hosts (host) ON DELETE CASCADE,
    lane         integer NOT NULL,
    next_session bigint NOT NULL,
    next_message bigint NOT NULL,
    next_request bigint NOT NULL,
    PRIMARY KEY (host, lane)
);
";

/// Version 3: tenants (R-TENANT-1). The principal that created a session (NULL: none); a
/// connection lists its own principal's sessions only.
const V3: &str = "
ALTER TABLE acp_sessions ADD COLUMN principal text;
CREATE INDEX acp_sessions_by_principal ON acp_sessions (principal, ordinal);
";

/// Version 2: idempotency keys (R-IDEM-1), scoped to their session and kept as long as it is
/// (never pruned with the remembered ids of `acp_injects`).
const V2: &str = "
CREATE TABLE acp_idempotency_keys (
    session_id text NOT NULL REFERENCES acp_sessions (session_id) ON DELETE CASCADE,
    key        text NOT NULL,
    message_id text NOT NULL,
    PRIMARY KEY (session_id, key)
);
";

const V1: &str = "
-- One row per agent host: its epoch (grows at every start; counter writes are fenced by it)
-- and the counters its ids are minted from.
CREATE TABLE acp_hosts (
    host         text PRIMARY KEY,
    epoch        bigint NOT NULL,
    next_session bigint NOT NULL DEFAULT 1,
    next_message bigint NOT NULL DEFAULT 1,
    next_request bigint NOT NULL DEFAULT 1
);

-- One row per session ever created (closed ones included), with its live turn and its lease.
CREATE TABLE acp_sessions (
    session_id             text PRIMARY KEY,
    ordinal                bigserial UNIQUE,  -- creation order across hosts (session/list)
    cwd                    text NOT NULL,
    additional_directories text NOT NULL,     -- JSON array of strings
    mcp_servers            text NOT NULL,     -- JSON array of McpServer
    title                  text,
    updated_at             text,
    closed                 boolean NOT NULL,
    turn                   text NOT NULL,     -- JSON Turn
    settled                bigint NOT NULL DEFAULT 0,  -- ids settled so far (orders acp_injects.settled)
    holder                 text,              -- the host serving it; NULL: nobody
    epoch                  bigint NOT NULL DEFAULT 0,  -- grows at every take-over (the fencing token)
    expires_at             timestamptz        -- the holder's lease, on the database's clock
);
CREATE INDEX acp_sessions_by_cwd ON acp_sessions (cwd, ordinal);

-- The replayable history of each session, append only; id orders it.
CREATE TABLE acp_history (
    id         bigserial PRIMARY KEY,
    session_id text NOT NULL REFERENCES acp_sessions (session_id) ON DELETE CASCADE,
    entry      text NOT NULL  -- JSON HistoryEntry
);
CREATE INDEX acp_history_by_session ON acp_history (session_id, id);

-- User message ids of live sessions: pending injects (arrival order, id) and the ids that
-- left the queue (revoked or delivered), numbered per session in the order they left.
CREATE TABLE acp_injects (
    id         bigserial PRIMARY KEY,
    session_id text NOT NULL REFERENCES acp_sessions (session_id) ON DELETE CASCADE,
    message_id text NOT NULL,
    mode       text CHECK (mode IN ('steer', 'queue')),  -- NULL: delivered without waiting
    content    text,                                     -- JSON content while pending
    owner      text NOT NULL,
    status     text NOT NULL CHECK (status IN ('pending', 'revoked', 'delivered')),
    settled    bigint,
    UNIQUE (session_id, message_id),
    CHECK ((status = 'pending') = (settled IS NULL)),
    CHECK (status != 'pending' OR (mode IS NOT NULL AND content IS NOT NULL))
);
CREATE INDEX acp_injects_by_settled ON acp_injects (session_id, settled);
";

/// Brings the database to [`SCHEMA_VERSION`].
pub(super) fn migrate(conn: &Conn) -> Result<(), StoreError> {
    let op = |sql: &'static str| Op { sql, params: Vec::new(), expect: Expect::Any };
    // One transaction: the lock, the version table, and every script still to run.
    conn.push(Op { sql: "SELECT pg_advisory_xact_lock($1)", params: vec![Box::new(MIGRATION_LOCK)], expect: Expect::Any });
    conn.push(op("CREATE TABLE IF NOT EXISTS acp_schema (version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"));
    let rows = conn.query("SELECT COALESCE(MAX(version), 0) FROM acp_schema", Vec::new())?;
    let found: i64 = rows.first().and_then(|r| r.try_get(0).ok()).unwrap_or(0);
    if found > SCHEMA_VERSION {
        conn.rollback();
        return Err(StoreError::Corrupt(format!(
            "the database has schema version {found}, written by a newer release (this one reads up to {SCHEMA_VERSION})"
        )));
    }
    for (i, script) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(usize::MAX)) {
        conn.simple(script)?;
        let version = i64::try_from(i + 1).unwrap_or(i64::MAX);
        conn.push(Op { sql: "INSERT INTO acp_schema (version) VALUES ($1)", params: vec![Box::new(version)], expect: Expect::Any });
    }
    conn.commit()
}
