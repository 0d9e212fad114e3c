//! One SQLite file shared by several agent processes on one machine (an editor that starts an
//! agent process per session, say), with the PostgreSQL store's ownership rules.
//!
//! ```no_run
//! use acp_inject_core::agent::{Agent, AgentConfig};
//! use acp_inject_store::{SqliteOptions, SqliteStore};
//!
//! let store = SqliteStore::open_shared("agent.sqlite3", SqliteOptions::default())?;
//! let mut agent = Agent::with_store(AgentConfig::default(), Box::new(store))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Ownership.** Every session row carries its lease: `holder` (a process's host name),
//! `epoch` (grows by one at every take-over) and `expires_at` (milliseconds since the Unix
//! epoch on the machine's clock, which every process on it shares). A process takes a session
//! when a client resumes it there ([`Store::acquire`]): at once when nobody holds it, the
//! holder let it go, the holder has this process's own name, or the holder is no longer
//! running; otherwise only once the lease ran out (the holder is alive but stopped renewing:
//! paused, or stuck). Every commit renews the leases of the sessions its batch wrote, and only
//! while `holder` and `epoch` are still this process's: a process that was paused past its
//! lease finds its commit refused ([`StoreError::LeaseLost`]), releases nothing of that batch,
//! and must stop. [`Store::renew`] (driven by `Agent::renew_leases`) extends the leases
//! between batches.
//!
//! **Who is running.** Each process holds an OS file lock on `<file>-hosts/<host>.lock` for as
//! long as its store is open; the OS drops it when the process dies (`kill -9` included). A
//! name whose lock is free belongs to no running process, so its sessions are taken at once
//! instead of after the lease, and its name may be given to a new process.
//!
//! **Ids.** Each process mints ids in its own scope (`sess_<host>-N`, `msg_<host>-N`), from
//! counters in its `hosts` row. Opening under a name bumps that row's epoch; counter writes are
//! fenced by it. The default name is `<machine>.<n>` with the smallest `n` no running process
//! uses: names stay short and are reused, so a restarted process usually continues under the
//! name of the one it replaces, with its counters.
//!
//! **Transactions.** WAL without exclusive locking (every process reads while one writes), one
//! `BEGIN IMMEDIATE` transaction per batch, and a busy timeout (the longer of 5 s and the
//! lease) while another process commits; a take-over waits a quarter lease (at least 1 s) and
//! then answers that the session is held. The limit: a process paused while it holds the write
//! lock (in a batch, mostly in its commit's fsync) blocks every other process's writes until it
//! runs again; a killed one never does (the OS drops its locks).
//!
//! **One machine.** The file must be on a local disk of the machine every process sharing it
//! runs on: SQLite's WAL index is shared memory, and the host locks are the OS's.
//!
//! [`Store::acquire`]: acp_inject_core::agent::Store::acquire
//! [`Store::renew`]: acp_inject_core::agent::Store::renew

use std::collections::{BTreeSet, HashMap};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use acp_inject_core::agent::{Acquired, LiveSession, StoreError, Turn, DEFAULT_REMEMBER_IDS};
use acp_inject_core::wire::SessionId;
use rusqlite::{params, ErrorCode, OptionalExtension};

use crate::{db_error, from_json, RawRecord, SqliteStore};

/// The shortest busy timeout of a shared store: how long a batch waits for another process's
/// transaction before it fails.
pub(crate) const MIN_BUSY_WAIT: Duration = Duration::from_secs(5);

/// The most default names (`<machine>.<n>`) tried before giving up.
const MAX_SLOTS: u32 = 9_999;

/// How a process shares a SQLite store with the other agent processes on its machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// This process's name among the processes sharing the file: ASCII letters, digits, `_`
    /// and `.`, 1 to 40 characters, unique among the running ones (a second process opening
    /// under a name a running one holds is refused). `None` (the default): `<machine>.<n>`,
    /// with the smallest `n` no running process uses.
    pub host: Option<String>,
    /// How long a session stays this process's without a renewal. A process that stops
    /// renewing while still running (paused, stuck) holds its sessions this long; a process
    /// that died holds them no longer. Default 10 s.
    pub lease: Duration,
    /// How many revoked or delivered ids per session the store keeps (the agent's
    /// `policy.remember_ids`).
    pub remember_ids: u64,
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions { host: None, lease: Duration::from_secs(10), remember_ids: DEFAULT_REMEMBER_IDS }
    }
}

impl SqliteOptions {
    /// Under host name `host` (see [`SqliteOptions::host`]).
    #[must_use]
    pub fn host(mut self, host: impl Into<String>) -> SqliteOptions {
        self.host = Some(host.into());
        self
    }

    /// With a lease of `lease`.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> SqliteOptions {
        self.lease = lease;
        self
    }

    /// Keeping `n` revoked or delivered ids per session.
    #[must_use]
    pub fn remember_ids(mut self, n: u64) -> SqliteOptions {
        self.remember_ids = n;
        self
    }

    pub(crate) fn check(&self) -> Result<(), StoreError> {
        if let Some(host) = &self.host {
            if !valid_host(host) {
                return Err(StoreError::Backend(format!("host name {host:?}: use 1 to 40 ASCII letters, digits, `_` or `.`")));
            }
        }
        if self.lease < Duration::from_millis(100) {
            return Err(StoreError::Backend(format!("a lease of {:?} is too short (at least 100 ms)", self.lease)));
        }
        Ok(())
    }
}

fn valid_host(host: &str) -> bool {
    (1..=40).contains(&host.len()) && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// What [`crate::open`] makes of a SQLite location.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SqliteLocation {
    /// Shared by the agent processes that open it so.
    Shared(PathBuf, SqliteOptions),
    /// Held by one process alone (`acp_mode=exclusive`).
    Exclusive(PathBuf),
}

impl SqliteLocation {
    /// A plain path (shared, default options), or `sqlite:PATH?acp_host=NAME&acp_lease_ms=N&acp_mode=shared|exclusive`
    /// (`sqlite://PATH` too). Only the `sqlite:` form takes options: a plain path is a file
    /// name as it is, `?` included.
    pub(crate) fn parse(location: &str) -> Result<SqliteLocation, StoreError> {
        let Some(rest) = location.strip_prefix("sqlite:") else {
            return Ok(SqliteLocation::Shared(PathBuf::from(location), SqliteOptions::default()));
        };
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if path.is_empty() {
            return Err(StoreError::Backend(format!("{location:?} names no file (sqlite:PATH)")));
        }
        let mut options = SqliteOptions::default();
        let mut exclusive = false;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("acp_host", name)) => options.host = Some(name.to_owned()),
                Some(("acp_lease_ms", ms)) => {
                    let ms: u64 =
                        ms.parse().map_err(|_| StoreError::Backend(format!("acp_lease_ms={ms:?} is not a number of milliseconds")))?;
                    options.lease = Duration::from_millis(ms);
                }
                Some(("acp_mode", "shared")) => exclusive = false,
                Some(("acp_mode", "exclusive")) => exclusive = true,
                _ => {
                    return Err(StoreError::Backend(format!(
                    "{pair:?} in {location:?}: a sqlite: location takes acp_host=NAME, acp_lease_ms=N and acp_mode=shared|exclusive"
                )))
                }
            }
        }
        if exclusive {
            if options != SqliteOptions::default() {
                return Err(StoreError::Backend(format!("{location:?}: acp_host and acp_lease_ms apply to a shared store only")));
            }
            return Ok(SqliteLocation::Exclusive(PathBuf::from(path)));
        }
        Ok(SqliteLocation::Shared(PathBuf::from(path), options))
    }
}

/// The machine's name (`HOSTNAME`, else `/etc/hostname`), cut to `max` characters a host name
/// may hold; `host` when there is none.
fn machine_name(max: usize) -> String {
    let raw =
        std::env::var("HOSTNAME").ok().filter(|h| !h.trim().is_empty()).or_else(|| std::fs::read_to_string("/etc/hostname").ok());
    let name: String = raw
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' })
        .take(max)
        .collect();
    if name.is_empty() {
        "host".to_owned()
    } else {
        name
    }
}

/// The directory of the host lock files of the store at `db`: `<db>-hosts`.
pub(crate) fn lock_dir(db: &Path) -> PathBuf {
    let mut dir = db.as_os_str().to_owned();
    dir.push("-hosts");
    PathBuf::from(dir)
}

fn lock_file(dir: &Path, host: &str) -> PathBuf {
    dir.join(format!("{host}.lock"))
}

/// Takes host name `host`'s lock in `dir`: `None` when a running process holds it. A process
/// that checks whether the name's holder runs holds the lock shared for a moment, hence the
/// `tries`, 10 ms apart.
fn claim(dir: &Path, host: &str, tries: u32) -> Result<Option<File>, StoreError> {
    let path = lock_file(dir, host);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| StoreError::Backend(format!("cannot open the host lock {}: {e}", path.display())))?;
    for attempt in 1..=tries {
        match file.try_lock() {
            Ok(()) => return Ok(Some(file)),
            Err(TryLockError::WouldBlock) if attempt < tries => std::thread::sleep(Duration::from_millis(10)),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(StoreError::Backend(format!("cannot lock {}: {e}", path.display()))),
        }
    }
    Ok(None)
}

/// Whether a running process holds host name `host` on the store of `dir`. When it cannot
/// tell (the lock file is unreadable), it says yes: the lease decides then.
pub(crate) fn host_running(dir: &Path, host: &str) -> bool {
    match File::open(lock_file(dir, host)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) => true,
        // Dropping the file lets go of the shared lock taken to look.
        Ok(f) => !matches!(f.try_lock_shared(), Ok(())),
    }
}

/// Takes this process's host name on the store at `db`: the one `options` names, or the first
/// free `<machine>.<n>`. Returns the name and its lock, held until the store is dropped.
pub(crate) fn take_host_name(db: &Path, options: &SqliteOptions) -> Result<(String, File), StoreError> {
    let dir = lock_dir(db);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::Backend(format!("cannot create {}: {e}", dir.display())))?;
    if let Some(host) = &options.host {
        return match claim(&dir, host, 20)? {
            Some(lock) => Ok((host.clone(), lock)),
            None => Err(StoreError::Backend(format!(
                "host name {host:?} is in use by another running process on {} (give each process its own acp_host, or none)",
                db.display()
            ))),
        };
    }
    let machine = machine_name(40 - 1 - MAX_SLOTS.to_string().len());
    for n in 1..=MAX_SLOTS {
        let host = format!("{machine}.{n}");
        if let Some(lock) = claim(&dir, &host, 1)? {
            return Ok((host, lock));
        }
    }
    Err(StoreError::Backend(format!("{MAX_SLOTS} processes hold host names on {}; name this one (acp_host)", db.display())))
}

/// Milliseconds since the Unix epoch: lease times, on the clock every process of the machine
/// shares.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A shared store's own state.
pub(crate) struct Shared {
    pub(crate) host: String,
    pub(crate) lease: Duration,
    /// The host lock files' directory.
    pub(crate) dir: PathBuf,
    /// This process's lock on its host name, held while the store lives.
    pub(crate) _lock: File,
    /// The epoch of this process's `hosts` row (fences the counters).
    pub(crate) host_epoch: i64,
    /// The sessions this process holds, with the epoch of its lease on each.
    pub(crate) held: HashMap<SessionId, i64>,
    /// Sessions the open transaction wrote, whose leases its commit checks and renews.
    pub(crate) touched: BTreeSet<SessionId>,
}

impl Shared {
    fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }

    /// The lease's end if it were taken or renewed now.
    pub(crate) fn until(&self) -> i64 {
        now_ms().saturating_add(self.lease_ms())
    }
}

/// A session row's lease: `holder`, `epoch`, `expires_at`.
type Lease = (Option<String>, i64, Option<i64>);

/// The columns [`SqliteStore::take_row`] reads after `RETURNING`.
const TAKEN: &str = "epoch, turn, session_id, ordinal, cwd, additional_directories, mcp_servers, title, updated_at, closed, principal";

impl SqliteStore {
    fn shared_ref(&self) -> &Shared {
        self.shared.as_deref().expect("a shared store")
    }

    fn shared_mut(&mut self) -> &mut Shared {
        self.shared.as_deref_mut().expect("a shared store")
    }

    /// Notes that the open transaction writes `session` (its lease is checked at commit).
    pub(crate) fn touch(&mut self, session: &SessionId) {
        if let Some(shared) = self.shared.as_deref_mut() {
            if !shared.touched.contains(session) {
                shared.touched.insert(session.clone());
            }
        }
    }

    /// Whether this process may write `session` without holding it: nobody holds it, or its
    /// holder is this process's name, its lease ran out, or its holder no longer runs.
    fn unheld(&self, holder: Option<&str>, expires_at: Option<i64>) -> bool {
        let shared = self.shared_ref();
        match holder {
            None => true,
            Some(h) if h == shared.host => true,
            Some(h) => expires_at.is_none_or(|t| t <= now_ms()) || !host_running(&shared.dir, h),
        }
    }

    fn lease_row(&self, session: &SessionId) -> Result<Option<Lease>, StoreError> {
        self.conn
            .prepare_cached("SELECT holder, epoch, expires_at FROM sessions WHERE session_id = ?1")
            .and_then(|mut s| s.query_row([session.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
            .map_err(db_error)
    }

    /// The statements that end a shared store's transaction: each written session's lease
    /// renewed, only while it is still this process's (else [`StoreError::LeaseLost`], and the
    /// caller rolls back).
    pub(crate) fn fence(&mut self) -> Result<(), StoreError> {
        let Some(shared) = self.shared.as_deref_mut() else { return Ok(()) };
        let touched = std::mem::take(&mut shared.touched);
        let (host, until) = (shared.host.clone(), shared.until());
        for session in touched {
            match self.shared_ref().held.get(&session).copied() {
                Some(epoch) => {
                    let n = self.exec(
                        "UPDATE sessions SET expires_at = ?4 WHERE session_id = ?1 AND holder = ?2 AND epoch = ?3",
                        params![session.as_str(), host, epoch, until],
                    )?;
                    if n != 1 {
                        return Err(StoreError::LeaseLost { session });
                    }
                }
                // Written without being taken (a host call on a session nobody serves): only
                // while no other running process holds it.
                None => match self.lease_row(&session)? {
                    Some((holder, _, expires_at)) if self.unheld(holder.as_deref(), expires_at) => {}
                    _ => return Err(StoreError::LeaseLost { session }),
                },
            }
        }
        Ok(())
    }

    /// A shared store's counters, fenced by the epoch of this process's `hosts` row.
    pub(crate) fn write_host_counters(&self, next_session: i64, next_message: i64, next_request: i64) -> Result<(), StoreError> {
        let shared = self.shared_ref();
        let n = self.exec(
            "UPDATE hosts SET next_session = ?3, next_message = ?4, next_request = ?5 WHERE host = ?1 AND epoch = ?2",
            params![shared.host, shared.host_epoch, next_session, next_message, next_request],
        )?;
        if n != 1 {
            return Err(StoreError::Backend(format!(
                "another process opened the store as host {:?}; this one must stop (give each process its own name)",
                shared.host
            )));
        }
        Ok(())
    }

    /// Registers this process under its host name: a new epoch for its row, so a process that
    /// opened the store under the name before can no longer write its counters.
    pub(crate) fn register_host(&mut self) -> Result<(), StoreError> {
        let host = self.shared_ref().host.clone();
        let epoch: i64 = self
            .conn
            .prepare_cached(
                "INSERT INTO hosts (host, epoch) VALUES (?1, 1) ON CONFLICT (host) DO UPDATE SET epoch = epoch + 1 RETURNING epoch",
            )
            .and_then(|mut s| s.query_row([&host], |r| r.get(0)))
            .map_err(db_error)?;
        self.shared_mut().host_epoch = epoch;
        Ok(())
    }

    /// This process's id counters (its `hosts` row).
    pub(crate) fn host_counters(&self) -> Result<(i64, i64, i64), StoreError> {
        let shared = self.shared_ref();
        self.conn
            .prepare_cached("SELECT next_session, next_message, next_request FROM hosts WHERE host = ?1 AND epoch = ?2")
            .and_then(|mut s| {
                s.query_row(params![shared.host, shared.host_epoch], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional()
            })
            .map_err(db_error)?
            .ok_or_else(|| {
                StoreError::Backend(format!(
                    "another process opened the store as host {:?}; this one must stop (give each process its own name)",
                    shared.host
                ))
            })
    }

    /// Inserts a session created here, leased to this process.
    pub(crate) fn insert_held(&mut self, values: [rusqlite::types::Value; 9], turn: String) -> Result<(), StoreError> {
        let (host, until) = {
            let shared = self.shared_ref();
            (shared.host.clone(), shared.until())
        };
        let [id, ordinal, cwd, dirs, mcp, title, updated_at, closed, principal] = values;
        self.exec(
            "INSERT INTO sessions (session_id, ordinal, cwd, additional_directories, mcp_servers, title, updated_at, \
             closed, turn, holder, epoch, expires_at, principal) \
             VALUES (?1, MAX(?2, COALESCE((SELECT MAX(ordinal) FROM sessions), 0) + 1), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, ?11, ?12)",
            params![id, ordinal, cwd, dirs, mcp, title, updated_at, closed, turn, host, until, principal],
        )?;
        if let rusqlite::types::Value::Text(id) = id {
            self.shared_mut().held.insert(SessionId(id), 1);
        }
        Ok(())
    }

    /// Deletes a session for good: one this process holds only while it still does, any other
    /// only while no running process holds it.
    pub(crate) fn forget_shared(&mut self, session: &SessionId) -> Result<(), StoreError> {
        let shared = self.shared_mut();
        shared.touched.remove(session);
        let host = shared.host.clone();
        match shared.held.remove(session) {
            Some(epoch) => {
                let n = self.exec(
                    "DELETE FROM sessions WHERE session_id = ?1 AND holder = ?2 AND epoch = ?3",
                    params![session.as_str(), host, epoch],
                )?;
                if n != 1 {
                    return Err(StoreError::LeaseLost { session: session.clone() });
                }
            }
            None => {
                if let Some((holder, _, expires_at)) = self.lease_row(session)? {
                    if !self.unheld(holder.as_deref(), expires_at) {
                        return Err(StoreError::LeaseLost { session: session.clone() });
                    }
                    self.exec("DELETE FROM sessions WHERE session_id = ?1", [session.as_str()])?;
                }
            }
        }
        Ok(())
    }

    /// Takes `session` for this process (see the module docs), inside the batch's transaction.
    pub(crate) fn acquire_shared(&mut self, session: &SessionId) -> Result<Acquired, StoreError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if let Err(e) = self.level_for(true) {
            self.failed.get_or_insert(e.clone());
            return Err(e);
        }
        if self.batch_open {
            if let Err(e) = self.begin() {
                self.failed.get_or_insert(e.clone());
                return Err(e);
            }
        } else {
            // A take-over waits for the write lock a quarter lease (at least a second), not the
            // whole busy timeout: the client is told to ask again instead of the host freezing.
            let lease = self.shared_ref().lease;
            let patience = (lease / 4).max(Duration::from_secs(1)).min(lease.max(MIN_BUSY_WAIT));
            let begun = self.conn.busy_timeout(patience).and_then(|()| self.conn.execute_batch("BEGIN IMMEDIATE"));
            self.batch_open = begun.is_ok();
            let restored = self.conn.busy_timeout(lease.max(MIN_BUSY_WAIT));
            match begun.and(restored) {
                Ok(()) => {}
                // Another process's transaction held the file past that (it is stuck, or paused
                // mid-batch): like a lease, ask again later.
                Err(e) if is_busy(&e) => {
                    let wait = u64::try_from(patience.as_millis()).unwrap_or(u64::MAX);
                    return Ok(match self.lease_row(session)? {
                        None => Acquired::Taken(None),
                        Some((holder, _, expires_at)) => {
                            Acquired::Held { holder: holder.unwrap_or_default(), retry_after_ms: remaining(expires_at).max(wait) }
                        }
                    });
                }
                Err(e) => {
                    let e = db_error(e);
                    self.failed.get_or_insert(e.clone());
                    return Err(e);
                }
            }
        }
        let (host, until) = {
            let shared = self.shared_ref();
            (shared.host.clone(), shared.until())
        };
        let take = format!(
            "UPDATE sessions SET holder = ?2, epoch = epoch + 1, expires_at = ?3 \
             WHERE session_id = ?1 AND (holder IS NULL OR holder = ?2 OR expires_at <= ?4) RETURNING {TAKEN}"
        );
        let mut taken = self.take_row(&take, params![session.as_str(), host, until, now_ms()])?;
        if taken.is_none() {
            let Some((holder, epoch, expires_at)) = self.lease_row(session)? else { return Ok(Acquired::Taken(None)) };
            let holder = holder.unwrap_or_default();
            if host_running(&self.shared_ref().dir, &holder) {
                return Ok(Acquired::Held { holder, retry_after_ms: remaining(expires_at) });
            }
            // Its holder no longer runs: no need to wait for the lease. The write lock this
            // transaction holds keeps the row as it was read.
            let take = format!(
                "UPDATE sessions SET holder = ?2, epoch = epoch + 1, expires_at = ?3 \
                 WHERE session_id = ?1 AND holder = ?4 AND epoch = ?5 RETURNING {TAKEN}"
            );
            taken = self.take_row(&take, params![session.as_str(), host, until, holder, epoch])?;
        }
        let Some((epoch, turn, raw)) = taken else {
            return Err(StoreError::Backend(format!("session {session:?} changed while this process held the write lock")));
        };
        let shared = self.shared_mut();
        shared.held.insert(session.clone(), epoch);
        shared.touched.insert(session.clone());
        // The lease is this batch's now: a failure reading the session must fail the batch
        // too, or the commit would keep a lease on a session nobody serves.
        let live = (|| -> Result<Option<Box<LiveSession>>, StoreError> {
            let record = raw.decode()?;
            if record.closed {
                return Ok(None);
            }
            let turn: Turn = from_json("turn", &turn)?;
            let pending = self.read_queue(&record.session_id)?;
            Ok(Some(Box::new(LiveSession { record, turn, pending, attached: Default::default(), held: Default::default() })))
        })();
        match live {
            Ok(live) => Ok(Acquired::Taken(live)),
            Err(e) => {
                self.failed.get_or_insert(e.clone());
                Err(e)
            }
        }
    }

    /// Runs a take-over statement: the new epoch, the turn and the record of the row it took.
    fn take_row(&mut self, sql: &str, values: impl rusqlite::Params) -> Result<Option<(i64, String, RawRecord)>, StoreError> {
        let result = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| {
                s.query_row(values, |r| {
                    let raw = RawRecord {
                        session_id: r.get(2)?,
                        ordinal: r.get(3)?,
                        cwd: r.get(4)?,
                        additional_directories: r.get(5)?,
                        mcp_servers: r.get(6)?,
                        title: r.get(7)?,
                        updated_at: r.get(8)?,
                        closed: r.get(9)?,
                        principal: r.get(10)?,
                    };
                    Ok((r.get(0)?, r.get(1)?, raw))
                })
                .optional()
            })
            .map_err(db_error);
        if let Err(e) = &result {
            self.failed.get_or_insert(e.clone());
        }
        result
    }

    /// Lets go of `session` (part of the batch): only while this process still holds it.
    pub(crate) fn release_shared(&mut self, session: &SessionId) {
        let shared = self.shared_mut();
        let Some(epoch) = shared.held.remove(session) else { return };
        shared.touched.remove(session);
        let host = shared.host.clone();
        if self.failed.is_some() {
            return;
        }
        let released = self.level_for(false).and_then(|()| self.begin()).and_then(|()| {
            self.exec(
                "UPDATE sessions SET holder = NULL, expires_at = NULL WHERE session_id = ?1 AND holder = ?2 AND epoch = ?3",
                params![session.as_str(), host, epoch],
            )
        });
        match released {
            Ok(1) => {}
            Ok(_) => self.failed = Some(StoreError::LeaseLost { session: session.clone() }),
            Err(e) => self.failed = Some(e),
        }
    }

    /// Extends this process's leases: inside the batch's transaction when one is open, else
    /// in a transaction of its own (without the fsync: a lease needs none).
    pub(crate) fn renew_shared(&mut self) -> Result<(), StoreError> {
        if self.shared_ref().held.is_empty() {
            return Ok(());
        }
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let own = !self.batch_open;
        self.level_for(false).and_then(|()| self.begin())?;
        let (host, until) = {
            let shared = self.shared_ref();
            (shared.host.clone(), shared.until())
        };
        let mut held: Vec<(SessionId, i64)> = self.shared_ref().held.iter().map(|(s, e)| (s.clone(), *e)).collect();
        held.sort();
        let mut lost = None;
        for (session, epoch) in held {
            let n = self.exec(
                "UPDATE sessions SET expires_at = ?4 WHERE session_id = ?1 AND holder = ?2 AND epoch = ?3",
                params![session.as_str(), host, epoch, until],
            );
            match n {
                Ok(1) => {}
                Ok(_) => {
                    lost.get_or_insert(session);
                }
                Err(e) => {
                    if own {
                        self.rollback();
                    }
                    return Err(e);
                }
            }
        }
        if own {
            use acp_inject_core::agent::Store;
            self.commit()?;
        }
        match lost {
            Some(session) => Err(StoreError::LeaseLost { session }),
            None => Ok(()),
        }
    }
}

/// Milliseconds until `expires_at`, 0 when past or unset.
fn remaining(expires_at: Option<i64>) -> u64 {
    expires_at.map_or(0, |t| u64::try_from(t.saturating_sub(now_ms())).unwrap_or(0))
}

/// Whether a rusqlite error is another process holding the file.
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_and_their_options() {
        let shared = |p: &str, o: SqliteOptions| SqliteLocation::Shared(PathBuf::from(p), o);
        assert_eq!(SqliteLocation::parse("agent.db").unwrap(), shared("agent.db", SqliteOptions::default()));
        assert_eq!(SqliteLocation::parse("odd?name.db").unwrap(), shared("odd?name.db", SqliteOptions::default()));
        assert_eq!(SqliteLocation::parse("sqlite:agent.db").unwrap(), shared("agent.db", SqliteOptions::default()));
        assert_eq!(
            SqliteLocation::parse("sqlite:///var/lib/a.db?acp_host=ed.1&acp_lease_ms=500").unwrap(),
            shared("/var/lib/a.db", SqliteOptions::default().host("ed.1").lease(Duration::from_millis(500)))
        );
        assert_eq!(SqliteLocation::parse("sqlite:a.db?acp_mode=exclusive").unwrap(), SqliteLocation::Exclusive("a.db".into()));
        assert_eq!(SqliteLocation::parse("sqlite:a.db?acp_mode=shared").unwrap(), shared("a.db", SqliteOptions::default()));
        for bad in
            ["sqlite:a.db?acp_lease_ms=soon", "sqlite:a.db?cache=shared", "sqlite:", "sqlite:a.db?acp_mode=exclusive&acp_host=x"]
        {
            assert!(SqliteLocation::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn default_names_are_valid_and_free_ones_are_reused() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("a.db");
        let (first, lock) = take_host_name(&db, &SqliteOptions::default()).unwrap();
        let (second, _lock2) = take_host_name(&db, &SqliteOptions::default()).unwrap();
        assert!(valid_host(&first) && valid_host(&second) && first != second, "{first} {second}");
        assert!(first.ends_with(".1") && second.ends_with(".2"), "{first} {second}");
        assert!(host_running(&lock_dir(&db), &first));
        drop(lock);
        assert!(!host_running(&lock_dir(&db), &first));
        assert!(!host_running(&lock_dir(&db), "never.seen"));
        let (again, _lock) = take_host_name(&db, &SqliteOptions::default()).unwrap();
        assert_eq!(again, first, "a name no running process holds is given again");
        let named = SqliteOptions::default().host("ed");
        let (_, _held) = take_host_name(&db, &named).unwrap();
        let err = take_host_name(&db, &named).unwrap_err();
        assert!(err.to_string().contains("in use by another running process"), "{err}");
    }
}
