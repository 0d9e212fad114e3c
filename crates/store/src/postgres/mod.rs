//! PostgreSQL as a store several agent hosts share: sessions, history and pending injects in
//! one database, each session served by one host at a time under a lease with a fencing epoch.
//!
//! ```no_run
//! use acp_inject_core::agent::{Agent, AgentConfig};
//! use acp_inject_store::postgres::{PgOptions, PgStore};
//!
//! let store = PgStore::connect("postgres://agent@db.internal/acp", PgOptions::new("host-a"))?;
//! let mut agent = Agent::with_store(AgentConfig::default(), Box::new(store))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Ownership.** Every session row carries its lease: `holder` (a host name), `epoch` (grows
//! by one at every take-over) and `expires_at` (the database's clock). A host takes a session
//! when a client resumes it there ([`Store::acquire`]): at once when nobody holds it, the
//! holder let it go, or the holder has this host's own name (the same host restarted);
//! otherwise only once the lease ran out. Every commit renews the leases of the sessions its
//! batch wrote, and only while `holder` and `epoch` are still this host's: a host that was
//! paused or cut off past its lease finds its commit refused ([`StoreError::LeaseLost`]),
//! releases nothing of that batch, and must stop. The host renews the leases of the sessions
//! it serves between batches too ([`Store::renew`], driven by `Agent::renew_leases`).
//!
//! **Ids.** Each host mints ids in its own scope (`sess_<host>-N`, `msg_<host>-N`), from
//! counters kept in its `acp_hosts` row. Starting a host bumps that row's epoch; counter
//! writes are fenced by it, so two processes started under one host name cannot both commit.
//!
//! **The connections.** `tokio-postgres` on threads of their own, each with a single-threaded
//! tokio runtime: [`Store`] is synchronous (the core reads it in the middle of a request), and
//! a blocking PostgreSQL client must not run on an async runtime's thread. A batch's
//! statements go out pipelined, in one round trip, inside one transaction per batch.
//!
//! **Lanes.** Besides the connection that reads, a host commits through `acp_lanes`
//! connections at once (4 by default): each session belongs to one lane ([`lane_of`]), each
//! lane commits its batches in order ([`Store::submit`]), and a batch that writes sessions of
//! several lanes commits once the earlier batches of each are committed. So a commit that
//! waits on the database (a slow or stopped backend, a lock) holds back only the sessions of
//! its lane. A read sees every batch handed over before it: a read about a session waits for
//! that session's commits in flight (an idempotency key in flight is answered from memory),
//! and a batch that reads after it wrote waits for every commit in flight and then runs on the
//! reading connection, as every batch does with `acp_lanes=1`. Each lane writes the host's
//! counters on a row of its own (`acp_host_lanes`), so lanes never wait on one another's row.

mod conn;
mod schema;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use acp_inject_core::agent::{
    Acquired, Change, Committed, Counters, HistoryEntry, Lanes, LiveSession, LiveState, PendingQueue, Seen, SessionPage,
    SessionRecord, Store, StoreError, Turn, DEFAULT_REMEMBER_IDS, LIVE_STATE_VERSION,
};
use acp_inject_core::wire::{MessageId, SessionId};
use tokio_postgres::Row;

use crate::{from_json, mode_name, to_i64, to_json, to_u64, EntryRef};
use conn::{Conn, Expect, Op, Param};

pub use schema::SCHEMA_VERSION;

/// How a host runs on a shared database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgOptions {
    /// This host's name among the hosts sharing the database: ASCII letters, digits, `_` and
    /// `.`, 1 to 40 characters. Give each running host its own; a host restarted under the
    /// same name takes its sessions back at once.
    pub host: String,
    /// How long a session stays this host's without a renewal. A host that stops renewing (it
    /// died, or is paused) holds its sessions this long; default 10 s.
    pub lease: Duration,
    /// How many revoked or delivered ids per session the store keeps (the agent's
    /// `policy.remember_ids`).
    pub remember_ids: u64,
    /// How long connecting, a commit or a read may wait for the server; past it the store
    /// fails with a clear error instead of hanging (the agent stops serving, and a new process
    /// starts from what was committed). Default 30 s.
    pub timeout: Duration,
    /// With `sslmode=require`: PEM certificates the server's may chain to, beside the webpki
    /// roots (a private CA, a self-signed server).
    pub ssl_root_cert: Option<std::path::PathBuf>,
    /// How many connections commit at once, each for its own share of the sessions (see the
    /// module docs); 1 commits every batch on the reading connection, in order. 1 to 64,
    /// default 4.
    pub lanes: usize,
}

impl PgOptions {
    /// Defaults for host `host`: a 10 s lease, [`DEFAULT_REMEMBER_IDS`], a 30 s timeout.
    pub fn new(host: impl Into<String>) -> PgOptions {
        PgOptions {
            host: host.into(),
            lease: Duration::from_secs(10),
            remember_ids: DEFAULT_REMEMBER_IDS,
            timeout: Duration::from_secs(30),
            ssl_root_cert: None,
            lanes: 4,
        }
    }

    /// With a lease of `lease`.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> PgOptions {
        self.lease = lease;
        self
    }

    /// Waiting at most `timeout` for the server.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> PgOptions {
        self.timeout = timeout;
        self
    }

    /// Committing through `n` connections at once (1 to 64).
    #[must_use]
    pub fn lanes(mut self, n: usize) -> PgOptions {
        self.lanes = n;
        self
    }

    /// Keeping `n` revoked or delivered ids per session.
    #[must_use]
    pub fn remember_ids(mut self, n: u64) -> PgOptions {
        self.remember_ids = n;
        self
    }

    /// Splits a URL into the driver's URL and these options: `acp_host`, `acp_lease_ms`,
    /// `acp_timeout_ms`, `acp_lanes` and `acp_ssl_root_cert` query parameters (see [`crate::open`]) are
    /// taken out; the rest stays.
    pub fn from_url(url: &str) -> Result<(String, PgOptions), StoreError> {
        let mut options = PgOptions::new(default_host_name());
        let Some((base, query)) = url.split_once('?') else { return Ok((url.to_owned(), options)) };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("acp_host", name)) => options.host = name.to_owned(),
                Some(("acp_lease_ms", ms)) => {
                    let ms: u64 =
                        ms.parse().map_err(|_| StoreError::Backend(format!("acp_lease_ms={ms:?} is not a number of milliseconds")))?;
                    options.lease = Duration::from_millis(ms);
                }
                Some(("acp_ssl_root_cert", path)) => options.ssl_root_cert = Some(path.into()),
                Some(("acp_lanes", n)) => {
                    options.lanes = n.parse().map_err(|_| StoreError::Backend(format!("acp_lanes={n:?} is not a number")))?;
                }
                Some(("acp_timeout_ms", ms)) => {
                    let ms: u64 = ms
                        .parse()
                        .map_err(|_| StoreError::Backend(format!("acp_timeout_ms={ms:?} is not a number of milliseconds")))?;
                    options.timeout = Duration::from_millis(ms);
                }
                _ => kept.push(pair),
            }
        }
        let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
        Ok((url, options))
    }

    fn check(&self) -> Result<(), StoreError> {
        let ok = (1..=40).contains(&self.host.len()) && self.host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if !ok {
            return Err(StoreError::Backend(format!("host name {:?}: use 1 to 40 ASCII letters, digits, `_` or `.`", self.host)));
        }
        if self.lease < Duration::from_millis(100) {
            return Err(StoreError::Backend(format!("a lease of {:?} is too short (at least 100 ms)", self.lease)));
        }
        if self.timeout < Duration::from_millis(100) {
            return Err(StoreError::Backend(format!("a timeout of {:?} is too short (at least 100 ms)", self.timeout)));
        }
        if !(1..=64).contains(&self.lanes) {
            return Err(StoreError::Backend(format!("acp_lanes={}: use 1 to 64", self.lanes)));
        }
        Ok(())
    }
}

/// The machine's host name (`HOSTNAME`, else `/etc/hostname`), cut to what a host name here
/// may hold; `host` when there is none.
pub fn default_host_name() -> String {
    let raw =
        std::env::var("HOSTNAME").ok().filter(|h| !h.trim().is_empty()).or_else(|| std::fs::read_to_string("/etc/hostname").ok());
    let name: String = raw
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' })
        .take(40)
        .collect();
    if name.is_empty() {
        "host".to_owned()
    } else {
        name
    }
}

/// The lane of a session among `lanes` ([`PgOptions::lanes`]): FNV-1a of its id, so every
/// process (and a test that stops one lane's backend) finds the same.
pub fn lane_of(session: &SessionId, lanes: usize) -> usize {
    // FNV-1a, written out: a stable hash of a few bytes needs no crate.
    let hash = session.0.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    usize::try_from(hash % u64::try_from(lanes.max(1)).unwrap_or(1)).unwrap_or(0)
}

/// A batch handed to a lane and not known to be committed yet.
struct Flight {
    /// The sessions it writes.
    sessions: BTreeSet<SessionId>,
    /// The idempotency keys it records (answered from here until it lands).
    keys: Vec<(SessionId, String, MessageId)>,
    landed: Arc<Landed>,
}

/// Set once a flight's commit is over (committed or failed).
#[derive(Default)]
struct Landed {
    done: Mutex<bool>,
    changed: Condvar,
}

impl Landed {
    fn set(&self) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.changed.notify_all();
    }

    fn is_set(&self) -> bool {
        *self.done.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until set, at most `timeout`; whether it was.
    fn wait(&self, timeout: Duration) -> bool {
        let done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        let (done, _) = self.changed.wait_timeout_while(done, timeout, |d| !*d).unwrap_or_else(|e| e.into_inner());
        *done
    }
}

/// The longest a read waits for commits in flight ([`PgStore::read_wait`]).
const READ_WAIT: Duration = Duration::from_secs(2);

/// The counters row of the reading connection's commits in `acp_host_lanes` (lanes use 0 to 63).
const READER_LANE: i32 = 64;

/// The store on a PostgreSQL database. See the module docs.
pub struct PgStore {
    /// Reads, and the batches that read after they wrote (all of them with one lane).
    conn: Conn,
    /// The connections that commit batches in the background (none with one lane).
    lanes: Vec<Conn>,
    /// Batches handed to a lane, until they are seen landed.
    flights: Vec<Flight>,
    /// Every session the batch wrote (its lanes).
    routed: BTreeSet<SessionId>,
    /// The idempotency keys the batch recorded.
    batch_keys: Vec<(SessionId, String, MessageId)>,
    /// A commit handed to a lane failed: no batch is handed over after it.
    broken: Arc<Mutex<Option<StoreError>>>,
    /// The counters as last recorded: every batch on a lane writes them on its lane's row,
    /// so a batch that commits carries the counters of every id minted before it (an id
    /// minted outside a batch, and used by a later one, is never reused after a restart).
    latest: Option<Counters>,
    options: PgOptions,
    /// The epoch of this process's `acp_hosts` row (fences the counters).
    host_epoch: i64,
    /// The sessions this host holds, with the epoch of its lease on each.
    held: HashMap<SessionId, i64>,
    /// Sessions the batch wrote, whose leases its commit checks and renews.
    touched: BTreeSet<SessionId>,
    /// The first failure of the batch, reported by the next commit.
    failed: Option<StoreError>,
    counters: Option<Counters>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("host", &self.options.host).field("held", &self.held.len()).finish()
    }
}

/// A session row whose first columns are `record_columns!()`.
fn read_record(row: &Row) -> Result<SessionRecord, StoreError> {
    let get = |e: tokio_postgres::Error| StoreError::Corrupt(format!("a stored session row is unreadable: {e}"));
    Ok(SessionRecord {
        session_id: SessionId(row.try_get(0).map_err(get)?),
        ordinal: to_u64("session ordinal", row.try_get(1).map_err(get)?)?,
        cwd: row.try_get(2).map_err(get)?,
        additional_directories: from_json("additional directory list", row.try_get(3).map_err(get)?)?,
        mcp_servers: from_json("MCP server list", row.try_get(4).map_err(get)?)?,
        title: row.try_get(5).map_err(get)?,
        updated_at: row.try_get(6).map_err(get)?,
        closed: row.try_get(7).map_err(get)?,
        principal: row.try_get(8).map_err(get)?,
    })
}

/// The columns [`read_record`] reads, in order (a macro, so statements stay `&'static str`).
macro_rules! record_columns {
    () => {
        "session_id, ordinal, cwd, additional_directories, mcp_servers, title, updated_at, closed, principal"
    };
}

fn column<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i).map_err(|e| StoreError::Corrupt(format!("a stored row is unreadable: {e}")))
}

/// A record's columns as statement parameters: `$1` to `$7` are `session_id, cwd,
/// additional_directories, mcp_servers, title, updated_at, closed`.
fn record_params(r: &SessionRecord) -> Result<Vec<Param>, StoreError> {
    Ok(vec![
        text(r.session_id.clone()),
        text(r.cwd.clone()),
        text(to_json("additional directory list", &r.additional_directories)?),
        text(to_json("MCP server list", &r.mcp_servers)?),
        Box::new(r.title.clone()),
        Box::new(r.updated_at.clone()),
        Box::new(r.closed),
    ])
}

fn text(s: impl Into<String>) -> Param {
    Box::new(s.into())
}

fn sid(s: &SessionId) -> Param {
    Box::new(s.0.clone())
}

impl PgStore {
    /// Connects to `url` (`postgres://user[:password]@host[:port]/database`), brings the
    /// schema up to date (migrations run once, under a lock, whichever host starts first),
    /// and registers this host (bumping its epoch, so an older process under the same name
    /// can no longer commit).
    ///
    /// Refused: a database whose schema is newer than this release
    /// ([`StoreError::Corrupt`]), an unreachable server or bad credentials
    /// ([`StoreError::Backend`]).
    pub fn connect(url: &str, options: PgOptions) -> Result<PgStore, StoreError> {
        options.check()?;
        let open =
            |label: &str| Conn::open(url, options.lease, options.timeout, &options.host, label, options.ssl_root_cert.as_deref());
        let conn = open("")?;
        schema::migrate(&conn)?;
        let lanes = if options.lanes > 1 {
            (0..options.lanes).map(|i| open(&format!(" lane {i}"))).collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        Ok(PgStore {
            conn,
            lanes,
            flights: Vec::new(),
            routed: BTreeSet::new(),
            batch_keys: Vec::new(),
            broken: Arc::new(Mutex::new(None)),
            latest: None,
            options,
            host_epoch: 0,
            held: HashMap::new(),
            touched: BTreeSet::new(),
            failed: None,
            counters: None,
        })
    }

    /// This host's name.
    pub fn host(&self) -> &str {
        &self.options.host
    }

    fn lease_secs(&self) -> f64 {
        self.options.lease.as_secs_f64()
    }

    fn op(&mut self, sql: &'static str, params: Vec<Param>, expect: Expect) {
        self.conn.push(Op { sql, params, expect });
    }

    /// A read after the batch's statements so far (sent first, so it sees them).
    fn query(&mut self, sql: &'static str, params: Vec<Param>) -> Result<Vec<Row>, StoreError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.read(None, sql, params)
    }

    /// A read that sees every batch handed over before it: one about `session` waits for that
    /// session's commits in flight; one in a batch that wrote already (its statements go
    /// first, in its transaction on the reading connection) waits for every commit in flight.
    fn read(&self, session: Option<&SessionId>, sql: &'static str, params: Vec<Param>) -> Result<Vec<Row>, StoreError> {
        if self.conn.has_pending() && !self.conn.in_batch() {
            self.wait_for(|_| true, self.read_wait())?;
        } else if let Some(s) = session {
            self.wait_for(|f| f.sessions.contains(s), self.read_wait())?;
        }
        self.conn.query(sql, params)
    }

    /// How long a read waits for commits in flight: the core (every session) waits with it,
    /// so past [`READ_WAIT`] the read fails instead (the client's request is answered with
    /// the error, and can be made again).
    fn read_wait(&self) -> Duration {
        self.options.timeout.min(READ_WAIT)
    }

    /// Waits for the flights `which` picks to land, at most `bound`.
    fn wait_for(&self, which: impl Fn(&Flight) -> bool, bound: Duration) -> Result<(), StoreError> {
        let deadline = std::time::Instant::now() + bound;
        for flight in self.flights.iter().filter(|f| which(f)) {
            if !flight.landed.wait(deadline.saturating_duration_since(std::time::Instant::now())) {
                return Err(StoreError::Backend(format!(
                    "a commit this needs has waited on PostgreSQL for {} ms (a slow or stalled database): try again",
                    bound.as_millis()
                )));
            }
        }
        Ok(())
    }

    /// Drops the batch being recorded (it failed, or an earlier commit did).
    fn drop_batch(&mut self) {
        self.touched.clear();
        self.counters = None;
        self.conn.rollback();
    }

    /// The error of a lane's failed commit, once one failed.
    fn broken(&self) -> Option<StoreError> {
        self.broken.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The lanes of `sessions` (lane 0 for all of them with one lane).
    fn lanes_for<'a>(&self, sessions: impl IntoIterator<Item = &'a SessionId>) -> Lanes {
        let n = self.lanes.len();
        Lanes(sessions.into_iter().fold(0, |bits, s| bits | 1 << lane_of(s, n)))
    }

    fn remember_bound(&self) -> Result<i64, StoreError> {
        to_i64("remembered id bound", self.options.remember_ids)
    }

    /// Settles an id in the session's order and prunes the ids beyond the remembered bound.
    fn prune(&mut self, session: &str) -> Result<(), StoreError> {
        let bound = self.remember_bound()?;
        self.op(
            "DELETE FROM acp_injects WHERE session_id = $1 AND settled <= \
             (SELECT settled FROM acp_sessions WHERE session_id = $1) - $2",
            vec![text(session), Box::new(bound)],
            Expect::Any,
        );
        Ok(())
    }

    fn apply(&mut self, change: Change<'_>) -> Result<(), StoreError> {
        let session = match change {
            Change::Counters { .. } | Change::SessionForgotten(_) => None,
            Change::SessionCreated(r) | Change::SessionUpdated(r) => Some(&r.session_id),
            Change::Turn { session, .. }
            | Change::InjectAccepted { session, .. }
            | Change::InjectReplaced { session, .. }
            | Change::InjectRevoked { session, .. }
            | Change::Delivered { session, .. }
            | Change::InjectsDropped { session, .. }
            | Change::KeyRecorded { session, .. }
            | Change::History { session, .. } => Some(session),
        };
        if let Some(s) = session {
            if !self.touched.contains(s) {
                self.touched.insert(s.clone());
            }
        }
        if let Some(s) = session.or(match change {
            Change::SessionForgotten(id) => Some(id),
            _ => None,
        }) {
            if !self.routed.contains(s) {
                self.routed.insert(s.clone());
            }
        }
        let missing = |s: &str| format!("session {s:?} is not in the store");
        match change {
            Change::Counters { next_session, next_message, next_request } => {
                self.counters = Some(Counters { next_session, next_message, next_request });
                self.latest = self.counters;
            }
            Change::SessionCreated(r) => {
                let mut params = record_params(r)?;
                params.extend([text(to_json("turn", &Turn::Idle)?), text(self.options.host.clone()), Box::new(self.lease_secs())]);
                params.push(Box::new(r.principal.clone()));
                self.op(
                    "INSERT INTO acp_sessions (session_id, cwd, additional_directories, mcp_servers, title, updated_at, closed, \
                     turn, holder, epoch, expires_at, principal) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, now() + make_interval(secs => $10), $11)",
                    params,
                    Expect::Any,
                );
                self.held.insert(r.session_id.clone(), 1);
            }
            Change::SessionUpdated(r) => {
                let params = record_params(r)?;
                self.op(
                    "UPDATE acp_sessions SET cwd = $2, additional_directories = $3, mcp_servers = $4, title = $5, \
                     updated_at = $6, closed = $7 WHERE session_id = $1",
                    params,
                    Expect::One(missing(&r.session_id)),
                );
                if r.closed {
                    self.op("DELETE FROM acp_injects WHERE session_id = $1", vec![text(r.session_id.clone())], Expect::Any);
                }
            }
            Change::SessionForgotten(id) => {
                // History and inject rows go with it (ON DELETE CASCADE). A session this host
                // holds goes only while it still holds it; any other only while nobody does.
                match self.held.remove(id) {
                    Some(epoch) => self.op(
                        "DELETE FROM acp_sessions WHERE session_id = $1 AND holder = $2 AND epoch = $3",
                        vec![sid(id), text(self.options.host.clone()), Box::new(epoch)],
                        Expect::Lease(id.clone()),
                    ),
                    None => {
                        self.op(
                            "DELETE FROM acp_sessions WHERE session_id = $1 AND (holder IS NULL OR expires_at <= now())",
                            vec![sid(id)],
                            Expect::Any,
                        );
                        self.op("SELECT 1 FROM acp_sessions WHERE session_id = $1", vec![sid(id)], Expect::NoneLeft(id.clone()));
                    }
                }
                self.touched.remove(id);
            }
            Change::Turn { session, turn } => {
                self.op(
                    "UPDATE acp_sessions SET turn = $2 WHERE session_id = $1",
                    vec![sid(session), text(to_json("turn", turn)?)],
                    Expect::One(missing(session)),
                );
            }
            Change::InjectAccepted { session, mode, pending } => {
                self.op(
                    "INSERT INTO acp_injects (session_id, message_id, mode, content, owner, status) \
                     VALUES ($1, $2, $3, $4, $5, 'pending')",
                    vec![
                        sid(session),
                        text(pending.message_id.0.clone()),
                        text(mode_name(mode)),
                        text(to_json("inject content", &pending.content)?),
                        text(pending.owner.to_string()),
                    ],
                    Expect::Any,
                );
            }
            Change::InjectReplaced { session, message_id, content } => {
                self.op(
                    "UPDATE acp_injects SET content = $3 WHERE session_id = $1 AND message_id = $2 AND status = 'pending'",
                    vec![sid(session), text(message_id.0.clone()), text(to_json("inject content", content)?)],
                    Expect::One(format!("no pending inject {:?} in session {session:?}", message_id.0)),
                );
            }
            Change::InjectRevoked { session, message_id } => {
                self.op(
                    "WITH n AS (UPDATE acp_sessions SET settled = settled + 1 WHERE session_id = $1 RETURNING settled) \
                     UPDATE acp_injects SET status = 'revoked', content = NULL, settled = (SELECT settled FROM n) \
                     WHERE session_id = $1 AND message_id = $2 AND status = 'pending'",
                    vec![sid(session), text(message_id.0.clone())],
                    Expect::One(format!("no pending inject {:?} in session {session:?}", message_id.0)),
                );
                self.prune(session)?;
            }
            Change::Delivered { session, message_id, content, owner } => {
                let entry = to_json("history entry", &EntryRef::User { message_id, content })?;
                self.op("INSERT INTO acp_history (session_id, entry) VALUES ($1, $2)", vec![sid(session), text(entry)], Expect::Any);
                // A pending inject settles; a prompt (or an inject into an idle session) was
                // never pending and gets its row now.
                self.op(
                    "WITH n AS (UPDATE acp_sessions SET settled = settled + 1 WHERE session_id = $1 RETURNING settled) \
                     INSERT INTO acp_injects (session_id, message_id, mode, content, owner, status, settled) \
                     SELECT $1, $2, NULL, NULL, $3, 'delivered', settled FROM n \
                     ON CONFLICT (session_id, message_id) DO UPDATE SET status = 'delivered', content = NULL, settled = excluded.settled",
                    vec![sid(session), text(message_id.0.clone()), text(owner.to_string())],
                    Expect::One(missing(session)),
                );
                self.prune(session)?;
            }
            Change::InjectsDropped { session, dropped } => {
                for p in dropped {
                    self.op(
                        "DELETE FROM acp_injects WHERE session_id = $1 AND message_id = $2 AND status = 'pending'",
                        vec![sid(session), text(p.message_id.0.clone())],
                        Expect::Any,
                    );
                }
            }
            Change::KeyRecorded { session, key, message_id } => {
                self.batch_keys.push((session.clone(), key.to_owned(), message_id.clone()));
                self.op(
                    "INSERT INTO acp_idempotency_keys (session_id, key, message_id) VALUES ($1, $2, $3)",
                    vec![sid(session), text(key.to_owned()), text(message_id.0.clone())],
                    Expect::Any,
                );
            }
            Change::History { session, update } => {
                let entry = to_json("history entry", &EntryRef::Update { update })?;
                self.op("INSERT INTO acp_history (session_id, entry) VALUES ($1, $2)", vec![sid(session), text(entry)], Expect::Any);
            }
        }
        Ok(())
    }

    /// The statements that end a batch: the counters (fenced by the host's epoch), then each
    /// written session's lease renewed, only while it is still this host's.
    fn closing_ops(&mut self, lane: i32) -> Result<(), StoreError> {
        if let Some(Counters { next_session, next_message, next_request }) = self.counters.take() {
            let params: Vec<Param> = vec![
                text(self.options.host.clone()),
                Box::new(self.host_epoch),
                Box::new(to_i64("session counter", next_session)?),
                Box::new(to_i64("message counter", next_message)?),
                Box::new(to_i64("request counter", next_request)?),
                Box::new(lane),
            ];
            // The host's row is read under a share lock (lanes do not wait on one another;
            // a new process under this name bumps the epoch only once they committed), and
            // fences the write by its epoch.
            self.op(
                "WITH h AS (SELECT 1 FROM acp_hosts WHERE host = $1 AND epoch = $2 FOR SHARE)                  INSERT INTO acp_host_lanes (host, lane, next_session, next_message, next_request)                  SELECT $1, $6, $3, $4, $5 FROM h                  ON CONFLICT (host, lane) DO UPDATE SET next_session = excluded.next_session,                  next_message = excluded.next_message, next_request = excluded.next_request",
                params,
                Expect::Host(format!(
                    "another process started as host {:?}; this one must stop (give each host its own name)",
                    self.options.host
                )),
            );
        }
        for session in std::mem::take(&mut self.touched) {
            let lease = self.lease_secs();
            let host = self.options.host.clone();
            match self.held.get(&session).copied() {
                Some(epoch) => self.op(
                    "UPDATE acp_sessions SET expires_at = now() + make_interval(secs => $4) \
                     WHERE session_id = $1 AND holder = $2 AND epoch = $3",
                    vec![text(session.clone()), text(host), Box::new(epoch), Box::new(lease)],
                    Expect::Lease(session),
                ),
                // Written without being taken (a host call on a session nobody serves): only
                // while no other host holds it.
                None => self.op(
                    "SELECT 1 FROM acp_sessions WHERE session_id = $1 AND (holder IS NULL OR holder = $2 OR expires_at <= now()) \
                     FOR UPDATE",
                    vec![text(session.clone()), text(host)],
                    Expect::Lease(session),
                ),
            }
        }
        Ok(())
    }

    /// The session whose lease the batch just took, from its row: `None` when it is closed
    /// (a resume reopens it from its record), else its live state.
    fn taken(&mut self, session_id: &str, row: &Row) -> Result<Acquired, StoreError> {
        let closed: bool = column(row, 1)?;
        if closed {
            return Ok(Acquired::Taken(None));
        }
        let turn: Turn = from_json("turn", column(row, 2)?)?;
        let record = SessionRecord {
            session_id: SessionId(column(row, 3)?),
            ordinal: to_u64("session ordinal", column(row, 4)?)?,
            cwd: column(row, 5)?,
            additional_directories: from_json("additional directory list", column(row, 6)?)?,
            mcp_servers: from_json("MCP server list", column(row, 7)?)?,
            title: column(row, 8)?,
            updated_at: column(row, 9)?,
            closed,
            principal: column(row, 10)?,
        };
        let pending = self.read_queue(session_id)?;
        Ok(Acquired::Taken(Some(Box::new(LiveSession {
            record,
            turn,
            pending,
            attached: Default::default(),
            held: Default::default(),
        }))))
    }

    /// A live session's pending injects (arrival order) and remembered ids (oldest first).
    fn read_queue(&mut self, session: &str) -> Result<PendingQueue, StoreError> {
        let rows = self.query(
            "SELECT message_id, mode, content, owner FROM acp_injects WHERE session_id = $1 AND settled IS NULL ORDER BY id",
            vec![text(session)],
        )?;
        let (mut steers, mut queued) = (Vec::new(), Vec::new());
        for row in &rows {
            let (id, mode, content, owner): (String, Option<String>, Option<String>, String) =
                (column(row, 0)?, column(row, 1)?, column(row, 2)?, column(row, 3)?);
            crate::sort_pending(id, mode.as_deref(), content.as_deref(), owner, &mut steers, &mut queued)?;
        }
        let bound = self.remember_bound()?;
        let rows = self.query(
            "SELECT message_id, status, owner FROM acp_injects WHERE session_id = $1 AND settled IS NOT NULL \
             ORDER BY settled DESC LIMIT $2",
            vec![text(session), Box::new(bound)],
        )?;
        let mut remembered = Vec::with_capacity(rows.len());
        for row in rows.iter().rev() {
            let (id, status, owner): (String, String, String) = (column(row, 0)?, column(row, 1)?, column(row, 2)?);
            let fate = crate::settled_fate(&id, &status)?;
            remembered.push((id, fate, owner.into()));
        }
        Ok(PendingQueue::from_parts(steers, queued, remembered))
    }
}

impl Store for PgStore {
    fn record(&mut self, change: Change<'_>) {
        if self.failed.is_some() {
            return; // the batch is lost already; the next commit reports why
        }
        if let Err(e) = self.apply(change) {
            self.failed = Some(e);
        }
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.routed.clear();
        self.batch_keys.clear();
        // After a lane's failed commit nothing more commits, here either.
        let result = match self.failed.take().or_else(|| self.broken()) {
            Some(e) => Err(e),
            None => {
                // After every commit in flight: this batch may write their sessions too.
                // Their own lanes fail them at the timeout; a margin past it.
                let bound = self.options.timeout + Duration::from_secs(1);
                self.wait_for(|_| true, bound).and_then(|()| self.closing_ops(READER_LANE)).and_then(|()| self.conn.commit())
            }
        };
        if result.is_err() {
            self.drop_batch();
        }
        result
    }

    fn lanes(&self) -> usize {
        self.lanes.len().max(1)
    }

    fn lanes_of(&self, seen: &Seen) -> Lanes {
        match seen {
            Seen::All => Lanes::all(self.lanes()),
            Seen::Sessions(set) => self.lanes_for(set),
        }
    }

    fn submit(&mut self, done: Committed) -> Result<Lanes, StoreError> {
        self.flights.retain(|f| !f.landed.is_set());
        if self.lanes.is_empty() || self.conn.in_batch() {
            // One lane, or a batch that read after it wrote (its transaction is open on the
            // reading connection): committed there, now.
            let all = Lanes::all(self.lanes());
            let result = self.commit();
            done(result.clone());
            return result.map(|()| all);
        }
        let routed = std::mem::take(&mut self.routed);
        let keys = std::mem::take(&mut self.batch_keys);
        if let Some(e) = self.failed.take().or_else(|| self.broken()) {
            self.drop_batch();
            return Err(e);
        }
        let lanes = self.lanes_for(&routed);
        // A batch of no session (counters only) commits on lane 0.
        let first = if lanes.0 == 0 { 0 } else { usize::try_from(lanes.0.trailing_zeros()).unwrap_or(0) };
        if !self.conn.has_pending() && self.counters.is_none() {
            // Nothing to store.
            self.touched.clear();
            done(Ok(()));
            return Ok(Lanes::NONE);
        }
        self.counters = self.latest;
        if let Err(e) = self.closing_ops(i32::try_from(first).unwrap_or(0)) {
            self.drop_batch();
            return Err(e);
        }
        let ops = self.conn.take_pending();
        // The batch's other lanes wait at its place in their order until it committed.
        let (mut after, mut release) = (Vec::new(), Vec::new());
        for (i, lane) in self.lanes.iter().enumerate() {
            if i != first && lanes.0 & (1 << i) != 0 {
                let (reached, resume) = lane.barrier();
                after.push(reached);
                release.push(resume);
            }
        }
        let landed = Arc::new(Landed::default());
        let landing = Arc::clone(&landed);
        let broken = Arc::clone(&self.broken);
        self.lanes[first].commit_in_background(
            ops,
            after,
            release,
            Box::new(move |result| {
                if let Err(e) = &result {
                    broken.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| e.clone());
                }
                landing.set();
                done(result);
            }),
        );
        self.flights.push(Flight { sessions: routed, keys, landed });
        Ok(lanes | Lanes(1 << first))
    }

    fn list(&self, cwd: Option<&str>, principal: Option<&str>, before: Option<u64>, limit: usize) -> Result<SessionPage, StoreError> {
        let before = before.and_then(|b| i64::try_from(b).ok()).unwrap_or(i64::MAX);
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        // `IS NOT DISTINCT FROM`: a NULL principal matches the sessions created without one.
        let sql = match cwd {
            Some(_) => concat!(
                "SELECT ",
                record_columns!(),
                " FROM acp_sessions WHERE ordinal < $1 AND principal IS NOT DISTINCT FROM $3 AND cwd = $4 \
                 ORDER BY ordinal DESC LIMIT $2"
            ),
            None => concat!(
                "SELECT ",
                record_columns!(),
                " FROM acp_sessions WHERE ordinal < $1 AND principal IS NOT DISTINCT FROM $3 ORDER BY ordinal DESC LIMIT $2"
            ),
        };
        let mut params: Vec<Param> = vec![Box::new(before), Box::new(fetch), Box::new(principal.map(str::to_owned))];
        if let Some(c) = cwd {
            params.push(text(c));
        }
        // What is committed: a session whose change is in flight shows as it was before.
        let rows = self.read(None, sql, params)?;
        let more = rows.len() > limit;
        let sessions = rows.iter().take(limit).map(read_record).collect::<Result<_, _>>()?;
        Ok(SessionPage { sessions, more })
    }

    fn session(&self, session_id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let rows = self.read(
            Some(session_id),
            concat!("SELECT ", record_columns!(), " FROM acp_sessions WHERE session_id = $1"),
            vec![sid(session_id)],
        )?;
        rows.first().map(read_record).transpose()
    }

    fn history(&self, session_id: &SessionId) -> Result<Vec<HistoryEntry>, StoreError> {
        let rows =
            self.read(Some(session_id), "SELECT entry FROM acp_history WHERE session_id = $1 ORDER BY id", vec![sid(session_id)])?;
        rows.iter().map(|r| from_json("history entry", column::<&str>(r, 0)?)).collect()
    }

    fn message_for_key(&self, session_id: &SessionId, key: &str) -> Result<Option<MessageId>, StoreError> {
        // This batch's keys and those in flight are answered from memory; any other is
        // committed, so the read need not wait for a commit in flight (nor send this batch).
        let pending = self.flights.iter().filter(|f| !f.landed.is_set()).flat_map(|f| &f.keys).chain(&self.batch_keys);
        if let Some((_, _, id)) = pending.into_iter().find(|(s, k, _)| s == session_id && k == key) {
            return Ok(Some(id.clone()));
        }
        let rows = self.conn.read_outside(
            "SELECT message_id FROM acp_idempotency_keys WHERE session_id = $1 AND key = $2",
            vec![sid(session_id), text(key.to_owned())],
        )?;
        rows.first().map(|r| column::<String>(r, 0).map(MessageId)).transpose()
    }

    /// Registers this host (a new epoch for its row) and returns its counters. No session:
    /// each is taken when a client resumes it here.
    fn load(&mut self) -> Result<Option<LiveState>, StoreError> {
        let rows = self.conn.query(
            "INSERT INTO acp_hosts (host, epoch) VALUES ($1, 1) ON CONFLICT (host) DO UPDATE SET epoch = acp_hosts.epoch + 1 \
             RETURNING epoch, next_session, next_message, next_request",
            vec![text(self.options.host.clone())],
        )?;
        let row = rows.first().ok_or_else(|| StoreError::Backend("registering the host returned no row".into()))?;
        self.host_epoch = column(row, 0)?;
        // The epoch's new value waited for every lane write of an earlier process under this
        // name (they hold the host's row shared): the lanes' rows are whole now.
        let lanes = self.conn.query(
            "SELECT COALESCE(MAX(next_session), 1), COALESCE(MAX(next_message), 1), COALESCE(MAX(next_request), 1)              FROM acp_host_lanes WHERE host = $1",
            vec![text(self.options.host.clone())],
        )?;
        let lane = lanes.first().ok_or_else(|| StoreError::Backend("reading the host's counters returned no row".into()))?;
        let most = |i: usize, what: &str| -> Result<u64, StoreError> {
            Ok(to_u64(what, column(row, i + 1)?)?.max(to_u64(what, column(lane, i)?)?))
        };
        let counters = Counters {
            next_session: most(0, "session counter")?,
            next_message: most(1, "message counter")?,
            next_request: most(2, "request counter")?,
        };
        Ok(Some(LiveState {
            version: LIVE_STATE_VERSION,
            counters,
            sessions: Vec::new(),
            connections: BTreeMap::new(),
            requests: Vec::new(),
            v1: BTreeMap::new(),
        }))
    }

    fn id_scope(&self) -> Option<&str> {
        Some(&self.options.host)
    }

    fn lease(&self) -> Option<Duration> {
        Some(self.options.lease)
    }

    fn acquire(&mut self, session_id: &SessionId) -> Result<Acquired, StoreError> {
        // Part of the batch: its transaction holds the row until the commit, on the reading
        // connection, after every commit in flight.
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.wait_for(|_| true, self.read_wait())?;
        let host = self.options.host.clone();
        let lease = self.lease_secs();
        let taken = self.conn.query_or_busy(
            "UPDATE acp_sessions SET holder = $2, epoch = epoch + 1, expires_at = now() + make_interval(secs => $3) \
             WHERE session_id = $1 AND (holder IS NULL OR holder = $2 OR expires_at <= now()) \
             RETURNING epoch, closed, turn, session_id, ordinal, cwd, additional_directories, mcp_servers, title, updated_at, principal",
            vec![sid(session_id), text(host), Box::new(lease)],
        )?;
        // No row taken: another host holds the session, or its batch holds the row (it is
        // writing the session now, or stalled mid-batch: the lock timeout ended the wait).
        let locked = taken.is_none();
        let rows = taken.unwrap_or_default();
        let Some(row) = rows.first() else {
            let rows = self.query(
                "SELECT holder, GREATEST(0, CEIL(EXTRACT(EPOCH FROM (expires_at - now())) * 1000))::bigint \
                 FROM acp_sessions WHERE session_id = $1",
                vec![sid(session_id)],
            )?;
            let busy = u64::try_from(self.options.lease.as_millis() / 4).unwrap_or(u64::MAX);
            return match rows.first() {
                None => Ok(Acquired::Taken(None)),
                // A lease run out but its row still locked: ask again after a lock timeout.
                Some(r) => Ok(Acquired::Held {
                    holder: column::<Option<String>>(r, 0)?.unwrap_or_default(),
                    retry_after_ms: to_u64("lease time", column(r, 1)?)?.max(if locked { busy } else { 0 }),
                }),
            };
        };
        let epoch: i64 = column(row, 0)?;
        self.held.insert(session_id.to_owned(), epoch);
        self.touched.insert(session_id.to_owned());
        // The lease is this batch's now: a failure reading the session must fail the batch
        // too, or the commit would keep a lease on a session nobody serves.
        match self.taken(session_id, row) {
            Ok(acquired) => Ok(acquired),
            Err(e) => {
                self.failed.get_or_insert(e.clone());
                Err(e)
            }
        }
    }

    fn release(&mut self, session_id: &SessionId) {
        let Some(epoch) = self.held.remove(session_id) else { return };
        self.touched.remove(session_id);
        self.routed.insert(session_id.to_owned());
        self.op(
            "UPDATE acp_sessions SET holder = NULL, expires_at = NULL WHERE session_id = $1 AND holder = $2 AND epoch = $3",
            vec![sid(session_id), text(self.options.host.clone()), Box::new(epoch)],
            Expect::Lease(session_id.to_owned()),
        );
    }

    fn renew(&mut self) -> Result<(), StoreError> {
        if self.held.is_empty() {
            return Ok(());
        }
        self.flights.retain(|f| !f.landed.is_set());
        // A session with a commit in flight is renewed by that commit (and its row may be
        // locked by it while the database is slow): not here.
        let flying: BTreeSet<&SessionId> = self.flights.iter().flat_map(|f| &f.sessions).collect();
        let (ids, epochs): (Vec<String>, Vec<i64>) =
            self.held.iter().filter(|(s, _)| !flying.contains(s)).map(|(s, e)| (s.0.clone(), *e)).unzip();
        if ids.is_empty() {
            return Ok(());
        }
        let rows = self.query(
            "UPDATE acp_sessions AS s SET expires_at = now() + make_interval(secs => $4) \
             FROM unnest($1::text[], $2::bigint[]) AS h(id, epoch) \
             WHERE s.session_id = h.id AND s.epoch = h.epoch AND s.holder = $3 RETURNING s.session_id",
            vec![Box::new(ids.clone()), Box::new(epochs), text(self.options.host.clone()), Box::new(self.lease_secs())],
        )?;
        let renewed: BTreeSet<String> = rows.iter().map(|r| column::<String>(r, 0)).collect::<Result<_, _>>()?;
        match ids.iter().find(|s| !renewed.contains(s.as_str())) {
            Some(lost) => Err(StoreError::LeaseLost { session: SessionId(lost.clone()) }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_url_parameters_are_taken_out_and_the_rest_kept() {
        let (url, o) = PgOptions::from_url("postgres://a@db/acp?acp_host=web-1&sslmode=disable&acp_lease_ms=2500").unwrap();
        assert_eq!(url, "postgres://a@db/acp?sslmode=disable");
        assert_eq!((o.host.as_str(), o.lease), ("web-1", Duration::from_millis(2500)));
        let (url, o) = PgOptions::from_url("postgres://a@db/acp?acp_host=h1").unwrap();
        assert_eq!((url.as_str(), o.host.as_str()), ("postgres://a@db/acp", "h1"));
        let (url, o) = PgOptions::from_url("postgres://a@db/acp").unwrap();
        assert_eq!((url.as_str(), o.host), ("postgres://a@db/acp", default_host_name()));
        assert!(PgOptions::from_url("postgres://a@db/acp?acp_lease_ms=soon").is_err());
    }

    #[test]
    fn the_default_host_name_is_always_usable() {
        let name = default_host_name();
        assert!(PgOptions::new(name).check().is_ok());
    }
}
