//! SQLite as the agent core's durable [`Store`]: sessions, history and pending injects in one
//! database file, one transaction per batch of input.
//!
//! The core records each durable change as it happens ([`Store::record`]); this store writes
//! it at once inside a transaction it opens at the first change of a batch, and
//! [`Agent::drain`] commits that transaction ([`Store::commit`]) before it releases a single
//! output. So a burst of injects handled before one drain costs one commit (one `fsync` of
//! the write-ahead log), and no accept answer leaves before its inject is durable.
//!
//! ```no_run
//! use acp_inject_core::agent::{AgentConfig, ConnId};
//!
//! let mut agent = acp_inject_store::open_agent("agent.sqlite3", AgentConfig::default())?;
//! agent.handle_line(&ConnId::from("c1"), r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work"}}"#);
//! let outputs = agent.drain()?; // committed, then released
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every change is an append or a keyed update (no rewrite of a session), so its cost does not
//! grow with the session's history. The README describes the tables, the durability contract,
//! the migration policy, and the PostgreSQL store several machines share.
//!
//! **One file, several processes.** [`SqliteStore::open`] (and [`open_agent`]) hold the file
//! for one agent process alone, which keeps every live session in memory.
//! [`SqliteStore::open_shared`] (and [`open`] with a path, the reference agent's `--store
//! FILE`) shares it with the other agent processes on the same machine under the PostgreSQL
//! store's rules: a session is served by one process at a time under a lease with a fencing
//! epoch, and each process mints ids in a scope of its own; a process that died lets its
//! sessions go at once (see [`shared`]). The file must be on a local disk of that one machine
//! (SQLite's WAL needs shared memory).

#![warn(missing_docs)]

mod schema;
pub mod shared;

#[cfg(feature = "postgres")]
pub mod postgres;

pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use shared::SqliteOptions;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use acp_inject_core::agent::{
    Acquired, Agent, AgentConfig, Change, Counters, Fate, HistoryEntry, LiveSession, LiveState, OpenError, Pending, PendingQueue,
    SessionPage, SessionRecord, Store, StoreError, Turn, DEFAULT_REMEMBER_IDS, LIVE_STATE_VERSION,
};
use acp_inject_core::wire::{ContentBlock, InjectMode, MessageId, SessionId, SessionUpdate};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, ErrorCode, OptionalExtension, Row};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// How long `open` waits for another process to release the database before it reports the
/// store as in use (a shared store waits longer once open: `shared::MIN_BUSY_WAIT`).
const LOCK_WAIT: Duration = Duration::from_secs(1);

/// A store in a SQLite database (or in memory, for tests). See the crate docs.
///
/// Opened with [`SqliteStore::open`], the connection holds the database exclusively
/// (`locking_mode=EXCLUSIVE`) for as long as the store lives: the agent keeps every live
/// session in memory, so a second process on the file would overwrite it, and its `open`
/// fails instead. Opened with [`SqliteStore::open_shared`], several agent processes on one
/// machine share the file, each serving the sessions it holds a lease on.
pub struct SqliteStore {
    conn: Connection,
    /// A transaction is open for the batch being handled.
    batch_open: bool,
    /// The first error of the batch, reported (and rolled back) by the next commit.
    failed: Option<StoreError>,
    /// The latest counters of the batch, written once at commit.
    counters: Option<Counters>,
    /// How many revoked or delivered ids each session keeps for `load`.
    remember_ids: u64,
    stats: StoreStats,
    /// The connection's `synchronous` level: FULL (true) or NORMAL (see [`SqliteStore::level_for`]).
    synced: bool,
    /// Shared with other processes ([`SqliteStore::open_shared`]): leases, host name, scope.
    shared: Option<Box<shared::Shared>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.conn.path())
            .field("batch_open", &self.batch_open)
            .field("failed", &self.failed)
            .field("remember_ids", &self.remember_ids)
            .field("host", &self.shared.as_ref().map(|s| s.host.as_str()))
            .finish()
    }
}

/// Counters a host can read while the store is boxed inside an [`Agent`] (cheap to clone,
/// shared with the store).
#[derive(Clone, Debug, Default)]
pub struct StoreStats {
    commits: Arc<AtomicU64>,
}

impl StoreStats {
    /// Commits on this store's connection, counted by SQLite's commit hook (so a statement
    /// run outside a batch's transaction would count too): one per non-empty batch, plus one
    /// when the store was opened (two when shared: the host name is registered), and, shared,
    /// one per lease renewal between batches.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }
}

/// A rusqlite error as a store error: a damaged file is `Corrupt`, anything else `Backend`.
pub(crate) fn db_error(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt(e.to_string()),
        _ => StoreError::Backend(e.to_string()),
    }
}

fn to_json<T: Serialize + ?Sized>(what: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("cannot encode {what}: {e}")))
}

fn from_json<T: DeserializeOwned>(what: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("a stored {what} does not decode: {e}")))
}

fn to_i64(what: &str, v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::Backend(format!("{what} {v} exceeds the store's integer range")))
}

fn to_u64(what: &str, v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("a stored {what} is negative ({v})")))
}

fn mode_name(mode: InjectMode) -> &'static str {
    match mode {
        InjectMode::Steer => "steer",
        InjectMode::Queue => "queue",
    }
}

/// A stored pending inject into its mode's list (both stores keep `mode` and `content` as text).
pub(crate) fn sort_pending(
    id: String,
    mode: Option<&str>,
    content: Option<&str>,
    owner: String,
    steers: &mut Vec<Pending>,
    queued: &mut Vec<Pending>,
) -> Result<(), StoreError> {
    let content: Vec<ContentBlock> = from_json("inject content", content.unwrap_or("null"))?;
    let pending = Pending { message_id: MessageId(id), content, owner: owner.into() };
    match mode {
        Some("steer") => steers.push(pending),
        Some("queue") => queued.push(pending),
        other => return Err(StoreError::Corrupt(format!("pending inject with mode {other:?}"))),
    }
    Ok(())
}

/// A stored settled id's fate.
pub(crate) fn settled_fate(id: &str, status: &str) -> Result<Fate, StoreError> {
    match status {
        "revoked" => Ok(Fate::Revoked),
        "delivered" => Ok(Fate::Delivered),
        other => Err(StoreError::Corrupt(format!("settled inject {id:?} with status {other:?}"))),
    }
}

/// A [`HistoryEntry`] by reference: the same JSON, without cloning the update to write it.
#[derive(Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
enum EntryRef<'a> {
    User {
        #[serde(rename = "messageId")]
        message_id: &'a MessageId,
        content: &'a [ContentBlock],
    },
    Update {
        update: &'a SessionUpdate,
    },
}

/// The columns of a [`SessionRecord`], in [`RawRecord::read`] order.
const RECORD_COLUMNS: &str = "session_id, ordinal, cwd, additional_directories, mcp_servers, title, updated_at, closed, principal";

/// A `sessions` row as SQLite returns it, before JSON decoding.
struct RawRecord {
    session_id: String,
    ordinal: i64,
    cwd: String,
    additional_directories: String,
    mcp_servers: String,
    title: Option<String>,
    updated_at: Option<String>,
    closed: bool,
    principal: Option<String>,
}

impl RawRecord {
    fn read(row: &Row<'_>) -> rusqlite::Result<RawRecord> {
        Ok(RawRecord {
            session_id: row.get(0)?,
            ordinal: row.get(1)?,
            cwd: row.get(2)?,
            additional_directories: row.get(3)?,
            mcp_servers: row.get(4)?,
            title: row.get(5)?,
            updated_at: row.get(6)?,
            closed: row.get(7)?,
            principal: row.get(8)?,
        })
    }

    fn decode(self) -> Result<SessionRecord, StoreError> {
        Ok(SessionRecord {
            ordinal: to_u64("session ordinal", self.ordinal)?,
            additional_directories: from_json("additional directory list", &self.additional_directories)?,
            mcp_servers: from_json("MCP server list", &self.mcp_servers)?,
            session_id: SessionId(self.session_id),
            cwd: self.cwd,
            title: self.title,
            updated_at: self.updated_at,
            closed: self.closed,
            principal: self.principal,
        })
    }
}

impl SqliteStore {
    /// Opens the store at `path`, creating it when the file does not exist (or is empty).
    ///
    /// Refused with [`StoreError::Corrupt`]: a file written by a newer release, the JSON
    /// snapshot of the earlier file store, a SQLite database of another application, or
    /// anything else that is not a store. A store held by another process is
    /// [`StoreError::Backend`].
    ///
    /// The store is this process's alone (see [`SqliteStore`]); an older store file is migrated
    /// to this release's schema.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        schema::refuse_foreign_file(path)?;
        let conn = Connection::open(path).map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        SqliteStore::setup(conn, &path.display().to_string(), true, None)
    }

    /// Opens the store at `path` (created when missing) shared with the other agent processes
    /// of this machine that open it so: each session is served by one process at a time,
    /// under a lease (see [`SqliteOptions`] and the crate docs). Refused like
    /// [`SqliteStore::open`], and also when a running process holds the host name
    /// `options.host`, or holds the file alone.
    ///
    /// Besides the file it keeps a lock file per host name in `<path>-hosts/`: the OS drops a
    /// process's lock when it dies, which tells the others its sessions are free.
    pub fn open_shared(path: impl AsRef<Path>, options: SqliteOptions) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        options.check()?;
        schema::refuse_foreign_file(path)?;
        // The name first: a process that holds a name is running, before it touches the file.
        let (host, lock) = shared::take_host_name(path, &options)?;
        let conn = Connection::open(path).map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        let state = shared::Shared {
            host,
            lease: options.lease,
            dir: shared::lock_dir(path),
            _lock: lock,
            host_epoch: 0,
            held: Default::default(),
            touched: Default::default(),
        };
        let mut store = SqliteStore::setup(conn, &path.display().to_string(), true, Some(Box::new(state)))?;
        store.register_host()?;
        Ok(store.with_remember_ids(options.remember_ids))
    }

    /// A store in memory (tests; nothing outlives it).
    pub fn open_in_memory() -> Result<SqliteStore, StoreError> {
        let conn = Connection::open_in_memory().map_err(db_error)?;
        SqliteStore::setup(conn, "the in-memory store", false, None)
    }

    /// A shared store's host name: the scope of the ids it mints (`None` for a store this
    /// process holds alone).
    pub fn host(&self) -> Option<&str> {
        self.shared.as_ref().map(|s| s.host.as_str())
    }

    /// How many revoked or delivered ids per live session [`Store::load`] gives back (and the
    /// store keeps). Use the agent's `policy.remember_ids` ([`open_agent`] does); the default
    /// is [`DEFAULT_REMEMBER_IDS`].
    pub fn with_remember_ids(mut self, remember_ids: u64) -> SqliteStore {
        self.remember_ids = remember_ids;
        self
    }

    /// The store's counters, shared: keep a clone before handing the store to an agent.
    pub fn stats(&self) -> StoreStats {
        self.stats.clone()
    }

    fn setup(mut conn: Connection, name: &str, file: bool, shared: Option<Box<shared::Shared>>) -> Result<SqliteStore, StoreError> {
        let alone = shared.is_none();
        let in_use = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) if alone => StoreError::Backend(format!(
                "{name} is in use by another process (a store opened for one process alone is refused while any other \
                 process has it open; agent processes that open it shared use it together)"
            )),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Backend(format!(
                "{name} is in use by another process that holds it alone (opened for one process, not shared), \
                 or whose transaction did not end within {LOCK_WAIT:?}"
            )),
            _ => db_error(e),
        };
        conn.busy_timeout(LOCK_WAIT).map_err(db_error)?;
        if alone {
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE").map_err(db_error)?;
        }
        if file {
            let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).map_err(in_use)?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Backend(format!("{name}: SQLite did not switch to WAL mode (journal mode {mode})")));
            }
        }
        // FULL, not NORMAL: in WAL mode NORMAL skips the fsync at commit, so a power loss could
        // undo a commit whose accept answer was already sent. FULL syncs the log at every
        // commit; batching (one commit per drain) keeps that to one fsync per burst of input.
        conn.pragma_update(None, "synchronous", "FULL").map_err(db_error)?;
        conn.pragma_update(None, "foreign_keys", true).map_err(db_error)?;
        conn.set_prepared_statement_cache_capacity(64);
        let stats = StoreStats::default();
        let commits = Arc::clone(&stats.commits);
        conn.commit_hook(Some(move || {
            commits.fetch_add(1, Ordering::Relaxed);
            false // let the commit proceed
        }))
        .map_err(db_error)?;
        // A write transaction from the start: the schema check, creation and migration are
        // atomic (and run once, whichever process opens the file first), and an exclusive
        // store's lock is taken now, so a second process is refused at open.
        conn.execute_batch("BEGIN IMMEDIATE").map_err(in_use)?;
        if let Err(e) = schema::prepare(&conn, name) {
            // Best effort: closing the connection rolls back as well.
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
        conn.execute_batch("COMMIT").map_err(db_error)?;
        if let Some(s) = &shared {
            // Open, a shared store's batches wait for the other processes' transactions up
            // to the busy timeout.
            conn.busy_timeout(s.lease.max(shared::MIN_BUSY_WAIT)).map_err(db_error)?;
        }
        Ok(SqliteStore {
            conn,
            batch_open: false,
            failed: None,
            counters: None,
            remember_ids: DEFAULT_REMEMBER_IDS,
            stats,
            synced: true,
            shared,
        })
    }

    /// Sets the durability of the transaction a change goes into. Conversation output (the
    /// runtime's updates, its turn's stream state: `sync` false) is what the client already
    /// saw; it commits without the fsync (WAL, `synchronous=NORMAL`), which survives the
    /// process being killed and loses it only to a power loss. Everything else is input the
    /// agent answers, or its fate, and commits with `synchronous=FULL`, so no accept answer is
    /// released before its input is on disk. SQLite fixes the level per transaction, so when
    /// such a change follows output in the same batch, the output commits first, on its own.
    fn level_for(&mut self, sync: bool) -> Result<(), StoreError> {
        if sync == self.synced || !sync && self.batch_open {
            return Ok(());
        }
        if self.batch_open {
            if self.conn.is_autocommit() {
                return Err(StoreError::Backend("SQLite rolled back the batch's transaction".into()));
            }
            // A shared store commits the output part only while it holds what it wrote.
            self.fence()?;
            self.conn.execute_batch("COMMIT").map_err(db_error)?;
            self.batch_open = false;
        }
        self.conn.pragma_update(None, "synchronous", if sync { "FULL" } else { "NORMAL" }).map_err(db_error)?;
        self.synced = sync;
        Ok(())
    }

    /// Opens the batch's transaction at its first change.
    fn begin(&mut self) -> Result<(), StoreError> {
        if !self.batch_open {
            self.conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| match &self.shared {
                Some(shared) if shared::is_busy(&e) => StoreError::Backend(format!(
                    "another process held the store's write lock longer than {:?} (paused or stuck while it \
                     committed); nothing of this batch was written",
                    shared.lease.max(shared::MIN_BUSY_WAIT)
                )),
                _ => db_error(e),
            })?;
            self.batch_open = true;
        } else if self.conn.is_autocommit() {
            // SQLite rolls a transaction back by itself on some errors (I/O, full disk); the
            // rest of the batch must not then run, and commit, statement by statement.
            return Err(StoreError::Backend("SQLite rolled back the batch's transaction".into()));
        }
        Ok(())
    }

    fn rollback(&mut self) {
        if !self.conn.is_autocommit() {
            // Ignored: if even ROLLBACK fails, the next BEGIN fails and reports it.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        self.batch_open = false;
        self.counters = None;
        if let Some(shared) = self.shared.as_deref_mut() {
            shared.touched.clear();
        }
    }

    /// Runs a keyed update that must hit exactly one row: zero means the store no longer
    /// matches the agent's memory, and the batch must not commit.
    fn update_one(&self, sql: &str, params: impl rusqlite::Params, what: impl FnOnce() -> String) -> Result<(), StoreError> {
        match self.conn.prepare_cached(sql).and_then(|mut s| s.execute(params)).map_err(db_error)? {
            1 => Ok(()),
            n => Err(StoreError::Corrupt(format!("{} ({n} rows matched, expected 1)", what()))),
        }
    }

    fn exec(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize, StoreError> {
        self.conn.prepare_cached(sql).and_then(|mut s| s.execute(params)).map_err(db_error)
    }

    fn append_history(&self, session: &str, entry: &EntryRef<'_>) -> Result<(), StoreError> {
        let entry = to_json("history entry", entry)?;
        self.exec("INSERT INTO history (session_id, entry) VALUES (?1, ?2)", params![session, entry])?;
        Ok(())
    }

    /// The next number in the session's order of settled ids, then prunes the ids beyond the
    /// remembered bound (normally one row, found through the index).
    fn settle_number(&self, session: &str) -> Result<i64, StoreError> {
        let n: i64 = self
            .conn
            .prepare_cached("UPDATE sessions SET settled = settled + 1 WHERE session_id = ?1 RETURNING settled")
            .and_then(|mut s| s.query_row([session], |r| r.get(0)))
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => StoreError::Corrupt(format!("session {session:?} is not in the store")),
                e => db_error(e),
            })?;
        let floor = n.saturating_sub(i64::try_from(self.remember_ids).unwrap_or(i64::MAX));
        if floor > 0 {
            self.exec("DELETE FROM injects WHERE session_id = ?1 AND settled <= ?2", params![session, floor])?;
        }
        Ok(n)
    }

    fn write_record(&mut self, r: &SessionRecord, created: bool) -> Result<(), StoreError> {
        let dirs = to_json("additional directory list", &r.additional_directories)?;
        let mcp = to_json("MCP server list", &r.mcp_servers)?;
        let ordinal = to_i64("session ordinal", r.ordinal)?;
        let values = params![r.session_id.as_str(), r.cwd, dirs, mcp, r.title, r.updated_at, r.closed];
        if created {
            let idle = to_json("turn", &Turn::Idle)?;
            if self.shared.is_some() {
                let values = [
                    Value::Text(r.session_id.0.clone()),
                    Value::Integer(ordinal),
                    Value::Text(r.cwd.clone()),
                    Value::Text(dirs),
                    Value::Text(mcp),
                    r.title.clone().map_or(Value::Null, Value::Text),
                    r.updated_at.clone().map_or(Value::Null, Value::Text),
                    Value::Integer(i64::from(r.closed)),
                    r.principal.clone().map_or(Value::Null, Value::Text),
                ];
                return self.insert_held(values, idle);
            }
            // The ordinal orders `session/list`: past every stored one (sessions other
            // processes created when the file was shared number from there), else the agent's.
            self.exec(
                "INSERT INTO sessions (session_id, ordinal, cwd, additional_directories, mcp_servers, title, updated_at, \
                 closed, turn, principal) VALUES (?1, MAX(?2, COALESCE((SELECT MAX(ordinal) FROM sessions), 0) + 1), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![r.session_id.as_str(), ordinal, r.cwd, dirs, mcp, r.title, r.updated_at, r.closed, idle, r.principal],
            )?;
            return Ok(());
        }
        // The ordinal is the store's from the insert on.
        self.update_one(
            "UPDATE sessions SET cwd = ?2, additional_directories = ?3, mcp_servers = ?4, title = ?5, \
             updated_at = ?6, closed = ?7 WHERE session_id = ?1",
            values,
            || format!("session {:?} is not in the store", r.session_id),
        )?;
        if r.closed {
            // A closed session leaves memory with its queue and remembered ids (a reopened one
            // starts with an empty queue), so its rows go too.
            self.exec("DELETE FROM injects WHERE session_id = ?1", [r.session_id.as_str()])?;
        }
        Ok(())
    }

    fn apply(&mut self, change: Change<'_>) -> Result<(), StoreError> {
        self.begin()?;
        if self.shared.is_some() {
            match change {
                Change::Counters { .. } | Change::SessionForgotten(_) => {}
                Change::SessionCreated(r) | Change::SessionUpdated(r) => self.touch(&r.session_id),
                Change::Turn { session, .. }
                | Change::InjectAccepted { session, .. }
                | Change::InjectReplaced { session, .. }
                | Change::InjectRevoked { session, .. }
                | Change::Delivered { session, .. }
                | Change::InjectsDropped { session, .. }
                | Change::KeyRecorded { session, .. }
                | Change::History { session, .. } => self.touch(session),
            }
        }
        match change {
            Change::Counters { next_session, next_message, next_request } => {
                self.counters = Some(Counters { next_session, next_message, next_request })
            }
            Change::SessionCreated(r) => self.write_record(r, true)?,
            Change::SessionUpdated(r) => self.write_record(r, false)?,
            // History and inject rows go with it (ON DELETE CASCADE).
            Change::SessionForgotten(id) if self.shared.is_some() => self.forget_shared(id)?,
            Change::SessionForgotten(id) => {
                self.exec("DELETE FROM sessions WHERE session_id = ?1", [id.as_str()])?;
            }
            Change::Turn { session, turn } => {
                let turn = to_json("turn", turn)?;
                self.update_one("UPDATE sessions SET turn = ?2 WHERE session_id = ?1", params![session.as_str(), turn], || {
                    format!("session {session:?} is not in the store")
                })?;
            }
            Change::InjectAccepted { session, mode, pending } => {
                let content = to_json("inject content", &pending.content)?;
                self.exec(
                    "INSERT INTO injects (session_id, message_id, mode, content, owner, status) \
                     VALUES (?1, ?2, ?3, ?4, ?5, 'pending')",
                    params![session.as_str(), pending.message_id.0, mode_name(mode), content, pending.owner.as_str()],
                )?;
            }
            Change::InjectReplaced { session, message_id, content } => {
                let content = to_json("inject content", content)?;
                self.update_one(
                    "UPDATE injects SET content = ?3 WHERE session_id = ?1 AND message_id = ?2 AND status = 'pending'",
                    params![session.as_str(), message_id.0, content],
                    || format!("no pending inject {:?} in session {session:?}", message_id.0),
                )?;
            }
            Change::InjectRevoked { session, message_id } => {
                let n = self.settle_number(session)?;
                self.update_one(
                    "UPDATE injects SET status = 'revoked', content = NULL, settled = ?3 \
                     WHERE session_id = ?1 AND message_id = ?2 AND status = 'pending'",
                    params![session.as_str(), message_id.0, n],
                    || format!("no pending inject {:?} in session {session:?}", message_id.0),
                )?;
            }
            Change::Delivered { session, message_id, content, owner } => {
                self.append_history(session, &EntryRef::User { message_id, content })?;
                let n = self.settle_number(session)?;
                // A pending inject settles; a prompt (or an inject into an idle session) was
                // never pending and gets its row now.
                self.exec(
                    "INSERT INTO injects (session_id, message_id, mode, content, owner, status, settled) \
                     VALUES (?1, ?2, NULL, NULL, ?3, 'delivered', ?4) \
                     ON CONFLICT (session_id, message_id) DO UPDATE SET status = 'delivered', content = NULL, settled = excluded.settled",
                    params![session.as_str(), message_id.0, owner.as_str(), n],
                )?;
            }
            Change::InjectsDropped { session, dropped } => {
                for p in dropped {
                    self.exec(
                        "DELETE FROM injects WHERE session_id = ?1 AND message_id = ?2 AND status = 'pending'",
                        params![session.as_str(), p.message_id.0],
                    )?;
                }
            }
            Change::KeyRecorded { session, key, message_id } => {
                self.exec(
                    "INSERT INTO idempotency_keys (session_id, key, message_id) VALUES (?1, ?2, ?3)",
                    params![session.as_str(), key, message_id.0],
                )?;
            }
            Change::History { session, update } => self.append_history(session, &EntryRef::Update { update })?,
        }
        Ok(())
    }

    fn write_counters(&mut self) -> Result<(), StoreError> {
        let Some(Counters { next_session, next_message, next_request }) = self.counters.take() else { return Ok(()) };
        let (s, m) = (to_i64("session counter", next_session)?, to_i64("message counter", next_message)?);
        let r = to_i64("request counter", next_request)?;
        if self.shared.is_some() {
            return self.write_host_counters(s, m, r);
        }
        self.exec("UPDATE meta SET value = ?1 WHERE key = 'next_session'", [s])?;
        self.exec("UPDATE meta SET value = ?1 WHERE key = 'next_message'", [m])?;
        // Stores written before the request counter existed have no row for it.
        self.exec("INSERT INTO meta (key, value) VALUES ('next_request', ?1) ON CONFLICT (key) DO UPDATE SET value = ?1", [r])?;
        Ok(())
    }

    fn read_counters(&self) -> Result<Counters, StoreError> {
        let read = |key: &str| -> Result<Option<u64>, StoreError> {
            let v: Option<i64> = self
                .conn
                .prepare_cached("SELECT value FROM meta WHERE key = ?1")
                .and_then(|mut s| s.query_row([key], |r| r.get(0)).optional())
                .map_err(|e| StoreError::Corrupt(format!("the store's {key} counter is unreadable: {e}")))?;
            v.map(|v| to_u64(key, v)).transpose()
        };
        let required = |key: &str| read(key)?.ok_or_else(|| StoreError::Corrupt(format!("the store has no {key} counter")));
        Ok(Counters {
            next_session: required("next_session")?,
            next_message: required("next_message")?,
            // Absent in stores written before the agent's requests were the core's.
            next_request: read("next_request")?.unwrap_or(1),
        })
    }

    /// A live session's pending injects (arrival order) and remembered ids (oldest first).
    fn read_queue(&self, session: &str) -> Result<PendingQueue, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT message_id, mode, content, owner FROM injects WHERE session_id = ?1 AND settled IS NULL ORDER BY id",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([session], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, Option<String>>(2)?, r.get::<_, String>(3)?))
            })
            .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
            .map_err(db_error)?;
        let (mut steers, mut queued) = (Vec::new(), Vec::new());
        for (id, mode, content, owner) in rows {
            sort_pending(id, mode.as_deref(), content.as_deref(), owner, &mut steers, &mut queued)?;
        }
        let bound = i64::try_from(self.remember_ids).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT message_id, status, owner FROM injects WHERE session_id = ?1 AND settled IS NOT NULL \
                 ORDER BY settled DESC LIMIT ?2",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![session, bound], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))
            .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
            .map_err(db_error)?;
        let mut remembered = Vec::with_capacity(rows.len());
        for (id, status, owner) in rows.into_iter().rev() {
            let fate = settled_fate(&id, &status)?;
            remembered.push((id, fate, owner.into()));
        }
        Ok(PendingQueue::from_parts(steers, queued, remembered))
    }
}

impl Store for SqliteStore {
    fn record(&mut self, change: Change<'_>) {
        if self.failed.is_some() {
            return; // the batch is lost already; the next commit reports why
        }
        let sync = !matches!(change, Change::History { .. } | Change::Turn { .. });
        if let Err(e) = self.level_for(sync).and_then(|()| self.apply(change)) {
            self.failed = Some(e);
        }
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        if let Some(e) = self.failed.take() {
            self.rollback();
            return Err(e);
        }
        if !self.batch_open {
            return Ok(());
        }
        let result = self.write_counters().and_then(|()| self.fence()).and_then(|()| {
            if self.conn.is_autocommit() {
                return Err(StoreError::Backend("SQLite rolled back the batch's transaction".into()));
            }
            self.conn.execute_batch("COMMIT").map_err(db_error)
        });
        if result.is_err() {
            self.rollback();
        }
        self.batch_open = false;
        result
    }

    fn list(&self, cwd: Option<&str>, principal: Option<&str>, before: Option<u64>, limit: usize) -> Result<SessionPage, StoreError> {
        // An ordinal bound past the integer range excludes nothing.
        let before = before.and_then(|b| i64::try_from(b).ok());
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        // `IS`: a NULL principal matches the sessions created without one.
        let mut filter = "WHERE principal IS ?2".to_owned();
        let mut values = vec![Value::Integer(fetch), principal.map_or(Value::Null, |p| Value::Text(p.to_owned()))];
        if let Some(c) = cwd {
            values.push(Value::Text(c.to_owned()));
            filter.push_str(&format!(" AND cwd = ?{}", values.len()));
        }
        if let Some(b) = before {
            values.push(Value::Integer(b));
            filter.push_str(&format!(" AND ordinal < ?{}", values.len()));
        }
        let sql = format!("SELECT {RECORD_COLUMNS} FROM sessions {filter} ORDER BY ordinal DESC LIMIT ?1");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(db_error)?;
        let raw = stmt
            .query_map(params_from_iter(values), RawRecord::read)
            .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
            .map_err(db_error)?;
        let more = raw.len() > limit;
        let sessions = raw.into_iter().take(limit).map(RawRecord::decode).collect::<Result<_, _>>()?;
        Ok(SessionPage { sessions, more })
    }

    fn session(&self, session_id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM sessions WHERE session_id = ?1");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(db_error)?;
        let mut rows = stmt.query_map([session_id.as_str()], RawRecord::read).map_err(db_error)?;
        rows.next().transpose().map_err(db_error)?.map(RawRecord::decode).transpose()
    }

    fn history(&self, session_id: &SessionId) -> Result<Vec<HistoryEntry>, StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT entry FROM history WHERE session_id = ?1 ORDER BY id").map_err(db_error)?;
        let texts = stmt
            .query_map([session_id.as_str()], |r| r.get::<_, String>(0))
            .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
            .map_err(db_error)?;
        texts.iter().map(|t| from_json("history entry", t)).collect()
    }

    fn message_for_key(&self, session_id: &SessionId, key: &str) -> Result<Option<MessageId>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT message_id FROM idempotency_keys WHERE session_id = ?1 AND key = ?2")
            .map_err(db_error)?;
        let id: Option<String> = stmt.query_row(params![session_id.as_str(), key], |r| r.get(0)).optional().map_err(db_error)?;
        Ok(id.map(MessageId))
    }

    /// The counters and every live (not closed) session with its record, turn and queue.
    /// Connections and attachments are not stored: a restarted process has none.
    ///
    /// A shared store returns this process's counters (its host name's) and no session: each
    /// is taken when a client resumes it here.
    fn load(&mut self) -> Result<Option<LiveState>, StoreError> {
        if self.shared.is_some() {
            let (s, m, r) = self.host_counters()?;
            let counters = Counters {
                next_session: to_u64("session counter", s)?,
                next_message: to_u64("message counter", m)?,
                next_request: to_u64("request counter", r)?,
            };
            return Ok(Some(LiveState {
                version: LIVE_STATE_VERSION,
                counters,
                sessions: Vec::new(),
                connections: BTreeMap::new(),
                requests: Vec::new(),
                v1: BTreeMap::new(),
            }));
        }
        let counters = self.read_counters()?;
        let sql = format!("SELECT {RECORD_COLUMNS}, turn FROM sessions WHERE closed = 0 ORDER BY ordinal");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(db_error)?;
        let rows = stmt
            .query_map([], |r| Ok((RawRecord::read(r)?, r.get::<_, String>(9)?)))
            .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
            .map_err(db_error)?;
        drop(stmt);
        let mut sessions = Vec::with_capacity(rows.len());
        for (raw, turn) in rows {
            let record = raw.decode()?;
            let turn: Turn = from_json("turn", &turn)?;
            let pending = self.read_queue(&record.session_id)?;
            sessions.push(LiveSession { record, turn, pending, attached: Default::default(), held: Default::default() });
        }
        Ok(Some(LiveState {
            version: LIVE_STATE_VERSION,
            counters,
            sessions,
            connections: BTreeMap::new(),
            requests: Vec::new(),
            v1: BTreeMap::new(),
        }))
    }

    fn id_scope(&self) -> Option<&str> {
        self.host()
    }

    fn lease(&self) -> Option<Duration> {
        self.shared.as_ref().map(|s| s.lease)
    }

    fn acquire(&mut self, session_id: &SessionId) -> Result<Acquired, StoreError> {
        if self.shared.is_none() {
            return Ok(Acquired::Unshared);
        }
        self.acquire_shared(session_id)
    }

    fn release(&mut self, session_id: &SessionId) {
        if self.shared.is_some() {
            self.release_shared(session_id);
        }
    }

    fn renew(&mut self) -> Result<(), StoreError> {
        if self.shared.is_none() {
            return Ok(());
        }
        self.renew_shared()
    }
}

/// Opens the store a location names: a `postgres://` (or `postgresql://`) URL is PostgreSQL
/// (with the `postgres` feature), shared by several agent hosts; anything else is a SQLite file
/// (created when missing), shared by the agent processes of this machine that open it
/// ([`SqliteStore::open_shared`]). The store remembers `remember_ids` revoked or delivered ids
/// per session (the agent's `policy.remember_ids`).
///
/// A PostgreSQL URL may carry this host's options as query parameters of its own, taken out
/// before the URL reaches the database driver: `acp_host=NAME` (default: the machine's host
/// name, made to fit [`postgres::PgOptions::host`]), `acp_lease_ms=N` (default 10,000) and
/// `acp_timeout_ms=N`, the longest wait for the server (default 30,000; past it the store
/// fails instead of hanging), `acp_lanes=N`, the connections that commit at once (default 4;
/// see [`postgres`]), and `acp_ssl_root_cert=PATH`, PEM roots for the server's
/// certificate under `sslmode=require` (TLS, always verified). The driver's own parameters
/// stay (`sslmode`, `connect_timeout`, `application_name`, …):
///
/// ```text
/// postgres://agent@db.internal/acp?acp_host=web-1&acp_lease_ms=5000&acp_timeout_ms=10000
/// ```
///
/// A SQLite file is a plain path (default options), or a `sqlite:` location that carries them
/// the same way: `acp_host=NAME` (default `<machine>.<n>`, the smallest `n` no running process
/// on the file uses; see [`SqliteOptions::host`]), `acp_lease_ms=N` (default 10,000), and
/// `acp_mode=exclusive` to hold the file for this process alone ([`SqliteStore::open`]: every
/// live session loaded at start, any other process refused). Only the `sqlite:` form takes
/// options; a plain path is a file name as it is.
///
/// ```text
/// sessions.db
/// sqlite:sessions.db?acp_lease_ms=2000
/// sqlite:///var/lib/agent/sessions.db?acp_host=editor.main
/// sqlite:sessions.db?acp_mode=exclusive
/// ```
///
/// The same text configures the reference agent (`--store`) and the Python and Kotlin agent
/// runtimes (`store=`).
pub fn open(location: &str, remember_ids: u64) -> Result<Box<dyn Store>, StoreError> {
    if location.starts_with("postgres://") || location.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        {
            let (url, options) = postgres::PgOptions::from_url(location)?;
            let store = postgres::PgStore::connect(&url, options.remember_ids(remember_ids))?;
            return Ok(Box::new(store));
        }
        #[cfg(not(feature = "postgres"))]
        return Err(StoreError::Backend("this build has no PostgreSQL store (the `postgres` feature of acp-inject-store)".into()));
    }
    match shared::SqliteLocation::parse(location)? {
        shared::SqliteLocation::Shared(path, options) => {
            Ok(Box::new(SqliteStore::open_shared(path, options.remember_ids(remember_ids))?))
        }
        shared::SqliteLocation::Exclusive(path) => Ok(Box::new(SqliteStore::open(path)?.with_remember_ids(remember_ids))),
    }
}

/// A store location as messages show it: a URL without its password.
pub fn shown(location: &str) -> String {
    match (location.find("://"), location.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = location[scheme + 3..at].split(':').next().unwrap_or("");
            format!("{}{user}@{}", &location[..scheme + 3], &location[at + 1..])
        }
        _ => location.to_owned(),
    }
}

/// An agent on the SQLite store at `path` (created when missing), held by this process alone
/// ([`SqliteStore::open`]), continuing from what it holds. The store remembers as many revoked or delivered ids per session as the agent's
/// `policy.remember_ids`.
pub fn open_agent(path: impl AsRef<Path>, config: AgentConfig) -> Result<Agent, OpenError> {
    config.check()?;
    let store = SqliteStore::open(path)?.with_remember_ids(config.policy.remember_ids);
    Agent::with_store(config, Box::new(store))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_never_show_the_password() {
        assert_eq!(shown("postgres://agent:s3cret@db:5432/acp"), "postgres://agent@db:5432/acp");
        assert_eq!(shown("postgres://agent@db/acp"), "postgres://agent@db/acp");
        assert_eq!(shown("/var/lib/agent.sqlite3"), "/var/lib/agent.sqlite3");
    }

    #[test]
    fn entry_ref_writes_what_history_entry_reads() {
        let content: Vec<ContentBlock> = serde_json::from_str(r#"[{"type":"text","text":"hi"}]"#).unwrap();
        let id = MessageId("msg_1".into());
        let json = to_json("", &EntryRef::User { message_id: &id, content: &content }).unwrap();
        assert_eq!(serde_json::from_str::<HistoryEntry>(&json).unwrap(), HistoryEntry::User { message_id: id, content });
        let update: SessionUpdate =
            serde_json::from_str(r#"{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"x"}}"#)
                .unwrap();
        let json = to_json("", &EntryRef::Update { update: &update }).unwrap();
        assert_eq!(serde_json::from_str::<HistoryEntry>(&json).unwrap(), HistoryEntry::Update { update });
    }
}
