//! The database connection on a thread of its own: `tokio-postgres` on a single-threaded
//! runtime, spoken to over a channel, so the synchronous [`Store`] calls work from any thread,
//! an async runtime's included (a blocking client would panic there).
//!
//! Statements are prepared once per connection and a batch's statements go out pipelined
//! (written together, answered together: one round trip however many rows a batch touches).
//!
//! [`Store`]: acp_inject_core::agent::Store

use acp_inject_core::wire::SessionId;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use acp_inject_core::agent::{Committed, StoreError};
use std::path::Path;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::config::SslMode;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

/// One statement parameter.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// What a statement of a batch must affect.
pub(crate) enum Expect {
    /// Any number of rows.
    Any,
    /// Exactly one row, else the store no longer matches the agent's memory (this text says how).
    One(String),
    /// Exactly one row, else this host no longer holds the session.
    Lease(SessionId),
    /// Exactly one row, else another process took this host's name (this text says so).
    Host(String),
    /// No row, else another host holds this session (a delete it could not make).
    NoneLeft(SessionId),
}

/// A statement of a batch.
pub(crate) struct Op {
    pub sql: &'static str,
    pub params: Vec<Param>,
    pub expect: Expect,
}

/// Runs `ops` in the batch's transaction (opening it if need be), then `query`, then commits.
struct Request {
    /// Open the batch's transaction even with no statement (what follows belongs to it).
    begin: bool,
    /// Run `query` under a savepoint: a lock it cannot get in time leaves the transaction
    /// usable and is answered `Ok(None)`.
    guarded: bool,
    ops: Vec<Op>,
    /// Statements without parameters (a migration script), after `ops`.
    script: Option<&'static str>,
    query: Option<(&'static str, Vec<Param>)>,
    end: End,
    reply: std_mpsc::SyncSender<Result<Option<Vec<Row>>, StoreError>>,
}

/// What a connection's thread is asked to do, in order.
enum Work {
    /// A request the caller waits for.
    Run(Request),
    /// A whole batch, committed in the background: runs once every `after` was signalled
    /// (the other lanes of a batch on several reached its place in their order), then signals
    /// `release` (they go on) and tells `done`.
    Commit { ops: Vec<Op>, after: Vec<oneshot::Receiver<()>>, release: Vec<oneshot::Sender<()>>, done: Committed },
    /// A batch on several lanes holds this lane here: signals `reached`, then waits for
    /// `resume` (the batch committed, or failed).
    Barrier { reached: oneshot::Sender<()>, resume: oneshot::Receiver<()> },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// Leave the transaction open (a read inside a batch).
    Open,
    Commit,
    Rollback,
}

/// The connection, with the batch's statements not yet sent.
pub(crate) struct Conn {
    tx: mpsc::UnboundedSender<Work>,
    /// How long a request may wait for its answer.
    timeout: Duration,
    /// A request went unanswered past `timeout`: what the server did with it is unknown, so
    /// nothing more is sent (the agent stops; a new process starts from what was committed).
    stalled: std::cell::Cell<bool>,
    /// Buffered until the next read or the commit, so reads see the batch's own writes.
    pending: RefCell<Vec<Op>>,
    /// The batch's transaction is open on the server (so a commit has something to end).
    in_batch: std::cell::Cell<bool>,
}

fn backend(e: &tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Backend(format!("PostgreSQL: {} ({})", db.message(), db.code().code())),
        None => {
            // The driver's own text is terse ("error performing TLS handshake"): its causes say why.
            let mut text = format!("PostgreSQL: {e}");
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            StoreError::Backend(text)
        }
    }
}

/// The parameters as the driver takes them.
fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect()
}

fn gone() -> StoreError {
    StoreError::Backend("the connection to PostgreSQL is gone".into())
}

fn stalled(timeout: Duration) -> StoreError {
    StoreError::Backend(format!(
        "PostgreSQL did not answer within {} ms (acp_timeout_ms): the database is stalled or out of reach",
        timeout.as_millis()
    ))
}

impl Conn {
    /// Connects (waiting until the server answered) and starts the connection's thread.
    /// Waits are bounded by the lease: a statement waits for a row lock at most a quarter
    /// lease (a take-over finds the session busy instead of freezing the host), and the server
    /// ends a connection whose transaction sat idle for a lease (a paused or cut-off host's
    /// locks do not outlive its lease). TCP keepalives find a vanished server. Connecting, and
    /// every request after, waits at most `timeout` for the server; a connection the server
    /// closed between batches is made again (with backoff, within `timeout`).
    /// `label` follows the host's name in `application_name` (a lane's number, say).
    pub fn open(
        url: &str,
        lease: Duration,
        timeout: Duration,
        host: &str,
        label: &str,
        root_cert: Option<&Path>,
    ) -> Result<Conn, StoreError> {
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e| StoreError::Backend(format!("not a PostgreSQL URL ({e}): {}", crate::shown(url))))?;
        let tls = match config.get_ssl_mode() {
            SslMode::Require => Some(tls(root_cert)?),
            // `prefer` (the driver's default) and `disable`: no TLS, as without this store's TLS.
            _ => None,
        };
        let ms = |d: Duration| d.as_millis().max(1);
        let existing = config.get_options().map(str::to_owned).unwrap_or_default();
        config.options(format!(
            "{existing} -c lock_timeout={} -c idle_in_transaction_session_timeout={} -c statement_timeout={}",
            ms(lease / 4),
            ms(lease),
            ms(lease * 4)
        ));
        config.keepalives(true).keepalives_idle(Duration::from_secs(10));
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(timeout);
        }
        if config.get_application_name().is_none() {
            // Names the host's backends in pg_stat_activity.
            config.application_name(format!("acp-inject {host}{label}"));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std_mpsc::sync_channel(1);
        let where_ = crate::shown(url);
        std::thread::Builder::new()
            .name("acp-inject-postgres".into())
            .spawn(move || serve(config, tls, timeout, rx, ready_tx))
            .map_err(|e| StoreError::Backend(format!("cannot start the PostgreSQL connection thread: {e}")))?;
        // The driver's connect timeout covers each address; the whole wait gets a margin.
        match ready_rx.recv_timeout(timeout * 2 + Duration::from_secs(1)) {
            Ok(Ok(())) => Ok(Conn {
                tx,
                timeout,
                stalled: std::cell::Cell::new(false),
                pending: RefCell::new(Vec::new()),
                in_batch: std::cell::Cell::new(false),
            }),
            Ok(Err(e)) => Err(StoreError::Backend(format!("cannot connect to {where_}: {e}"))),
            Err(std_mpsc::RecvTimeoutError::Timeout) => Err(StoreError::Backend(format!(
                "cannot connect to {where_}: no answer within {} ms (acp_timeout_ms)",
                timeout.as_millis()
            ))),
            Err(std_mpsc::RecvTimeoutError::Disconnected) => Err(gone()),
        }
    }

    /// Adds a statement to the batch.
    pub fn push(&self, op: Op) {
        self.pending.borrow_mut().push(op);
    }

    /// Takes the batch's statements not sent yet (to commit them on another connection).
    pub fn take_pending(&self) -> Vec<Op> {
        std::mem::take(&mut *self.pending.borrow_mut())
    }

    /// Whether the batch has statements not sent yet.
    pub fn has_pending(&self) -> bool {
        !self.pending.borrow().is_empty()
    }

    /// Whether the batch's transaction is open on the server.
    pub fn in_batch(&self) -> bool {
        self.in_batch.get()
    }

    /// Commits `ops` as one transaction in the background, after this connection's earlier
    /// work and once every `after` was signalled; then signals `release` and tells `done`
    /// (the result, or the timeout's error when the server did not answer in time).
    pub fn commit_in_background(
        &self,
        ops: Vec<Op>,
        after: Vec<oneshot::Receiver<()>>,
        release: Vec<oneshot::Sender<()>>,
        done: Committed,
    ) {
        if let Err(mpsc::error::SendError(Work::Commit { done, .. })) = self.tx.send(Work::Commit { ops, after, release, done }) {
            done(Err(gone()));
        }
    }

    /// Holds this connection's later work until the returned sender is signalled (or
    /// dropped); the receiver is signalled once its earlier work is done.
    pub fn barrier(&self) -> (oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (reached, reached_rx) = oneshot::channel();
        let (resume_tx, resume) = oneshot::channel();
        // A connection whose thread is gone drops `reached`: the waiting batch fails.
        let _ = self.tx.send(Work::Barrier { reached, resume });
        (reached_rx, resume_tx)
    }

    /// Runs a query outside the batch: the statements not sent yet stay unsent (it does not
    /// see them), and a transaction open on the server is the query's (it sees what was sent).
    pub fn read_outside(&self, sql: &'static str, params: Vec<Param>) -> Result<Vec<Row>, StoreError> {
        let kept = self.take_pending();
        let result = self.send(false, None, Some((sql, params)), End::Open).map(Option::unwrap_or_default);
        *self.pending.borrow_mut() = kept;
        result
    }

    fn send(
        &self,
        begin: bool,
        script: Option<&'static str>,
        query: Option<(&'static str, Vec<Param>)>,
        end: End,
    ) -> Result<Option<Vec<Row>>, StoreError> {
        self.send_request(begin, false, script, query, end)
    }

    fn send_request(
        &self,
        begin: bool,
        guarded: bool,
        script: Option<&'static str>,
        query: Option<(&'static str, Vec<Param>)>,
        end: End,
    ) -> Result<Option<Vec<Row>>, StoreError> {
        let ops = std::mem::take(&mut *self.pending.borrow_mut());
        let opens = begin || !ops.is_empty() || script.is_some();
        let nothing = !opens && query.is_none();
        // A drain that recorded nothing costs no round trip.
        if nothing && (end == End::Open || end == End::Commit && !self.in_batch.get()) {
            return Ok(Some(Vec::new()));
        }
        if self.stalled.get() {
            return Err(stalled(self.timeout));
        }
        self.in_batch.set(end == End::Open && (opens || self.in_batch.get()));
        let (reply, answer) = std_mpsc::sync_channel(1);
        self.tx.send(Work::Run(Request { begin, guarded, ops, script, query, end, reply })).map_err(|_| gone())?;
        match answer.recv_timeout(self.timeout) {
            Ok(answer) => answer,
            Err(std_mpsc::RecvTimeoutError::Timeout) => {
                self.stalled.set(true);
                Err(stalled(self.timeout))
            }
            Err(std_mpsc::RecvTimeoutError::Disconnected) => Err(gone()),
        }
    }

    /// Runs a query in the batch's transaction (opened now if need be) under a savepoint:
    /// `None` when it could not get a row lock within the lock timeout (the transaction goes on).
    pub fn query_or_busy(&self, sql: &'static str, params: Vec<Param>) -> Result<Option<Vec<Row>>, StoreError> {
        self.send_request(true, true, None, Some((sql, params)), End::Open)
    }

    /// Runs statements without parameters inside the batch's transaction.
    pub fn simple(&self, script: &'static str) -> Result<(), StoreError> {
        self.send(false, Some(script), None, End::Open).map(drop)
    }

    /// Runs a query after the batch's statements so far, inside the batch's transaction when
    /// one is open.
    pub fn query(&self, sql: &'static str, params: Vec<Param>) -> Result<Vec<Row>, StoreError> {
        self.send(false, None, Some((sql, params)), End::Open).map(Option::unwrap_or_default)
    }

    /// Sends the rest of the batch and commits it.
    pub fn commit(&self) -> Result<(), StoreError> {
        self.send(false, None, None, End::Commit).map(drop)
    }

    /// Drops the batch.
    pub fn rollback(&self) {
        self.pending.borrow_mut().clear();
        // Ignored: a connection that is gone rolled back by itself.
        // Always sent: the server's transaction may be open even when this side wrote nothing
        // (a lease taken, a read that flushed statements).
        self.in_batch.set(false);
        let _ = self.send(false, None, None, End::Rollback);
    }
}

/// The TLS of `sslmode=require`: the server's certificate verified against the webpki roots
/// and, when given, the PEM certificates of `root_cert` (`acp_ssl_root_cert`), for the name
/// the URL connects to.
fn tls(root_cert: Option<&Path>) -> Result<MakeRustlsConnect, StoreError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    if let Some(path) = root_cert {
        let bad = |e: &dyn std::fmt::Display| StoreError::Backend(format!("acp_ssl_root_cert={}: {e}", path.display()));
        let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))?.collect::<Result<Vec<_>, _>>().map_err(|e| bad(&e))?;
        if certs.is_empty() {
            return Err(bad(&"no PEM certificate in it"));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| bad(&e))?;
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Backend(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// Connects (with TLS when given), the driver's connection task spawned on the current runtime.
async fn connect(config: &tokio_postgres::Config, tls: &Option<MakeRustlsConnect>) -> Result<Client, tokio_postgres::Error> {
    match tls {
        Some(tls) => {
            let (client, connection) = config.connect(tls.clone()).await?;
            tokio::spawn(connection);
            Ok(client)
        }
        None => {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(connection);
            Ok(client)
        }
    }
}

/// Connects again after the server closed the connection between batches: pauses of 0.1 s
/// doubling up to 3.2 s, until `within` has passed.
async fn reconnect(config: &tokio_postgres::Config, tls: &Option<MakeRustlsConnect>, within: Duration) -> Result<Client, StoreError> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        match connect(config, tls).await {
            Ok(client) => return Ok(client),
            Err(e) if started.elapsed() + pause >= within => {
                return Err(StoreError::Backend(format!(
                    "the connection to PostgreSQL was lost and could not be made again: {}",
                    backend(&e)
                )))
            }
            Err(_) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(3200));
            }
        }
    }
}

/// The connection thread: connects, then runs requests in order until the store is dropped.
fn serve(
    config: tokio_postgres::Config,
    tls: Option<MakeRustlsConnect>,
    timeout: Duration,
    mut rx: mpsc::UnboundedReceiver<Work>,
    ready: std_mpsc::SyncSender<Result<(), String>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot start a runtime: {e}")));
            return;
        }
    };
    rt.block_on(async move {
        let client = match connect(&config, &tls).await {
            Ok(client) => client,
            Err(e) => {
                let _ = ready.send(Err(backend(&e).to_string()));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        let mut session = Session { client, statements: HashMap::new(), in_batch: false, aborted: None };
        // A background commit failed (or went unanswered past the timeout: what the server did
        // with it is unknown): nothing more commits here, or a later batch of its sessions
        // could be stored without it. The agent stops on that commit's error.
        let mut dead: Option<StoreError> = None;
        while let Some(work) = rx.recv().await {
            match work {
                Work::Run(request) => {
                    if let Some(e) = &dead {
                        let _ = request.reply.send(Err(e.clone()));
                        continue;
                    }
                    if let Err(e) = session.usable(&config, &tls, timeout).await {
                        let _ = request.reply.send(Err(e));
                        continue;
                    }
                    let answer =
                        session.handle(request.begin, request.guarded, request.ops, request.script, request.query, request.end).await;
                    let _ = request.reply.send(answer);
                }
                Work::Commit { ops, after, release, done } => {
                    let result = if let Some(e) = &dead {
                        Err(e.clone())
                    } else {
                        let run = async {
                            for turn in after {
                                // Dropped: the other lane's thread is gone.
                                turn.await.map_err(|_| gone())?;
                            }
                            session.usable(&config, &tls, timeout).await?;
                            session.handle(false, false, ops, None, None, End::Commit).await.map(drop)
                        };
                        let result = tokio::time::timeout(timeout, run).await.unwrap_or_else(|_| Err(stalled(timeout)));
                        if let Err(e) = &result {
                            dead = Some(e.clone());
                        }
                        result
                    };
                    if result.is_ok() {
                        for lane in release {
                            let _ = lane.send(());
                        }
                    }
                    // Failed: `release` is dropped, and the lanes it held stop too.
                    done(result);
                }
                Work::Barrier { reached, resume } => {
                    let _ = reached.send(());
                    if resume.await.is_err() {
                        dead =
                            Some(StoreError::Backend("a commit this connection waited for failed; nothing more is committed".into()));
                    }
                }
            }
        }
    });
}

struct Session {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    /// The batch's transaction is open.
    in_batch: bool,
    /// A statement of the open transaction failed: it can only roll back, and its commit
    /// reports this (PostgreSQL would answer COMMIT with a silent rollback).
    aborted: Option<StoreError>,
}

impl Session {
    /// Connects again when the server closed the connection between batches (a server
    /// restart, an administrator, a network cut the keepalives found): nothing of a batch is
    /// lost then.
    async fn usable(
        &mut self,
        config: &tokio_postgres::Config,
        tls: &Option<MakeRustlsConnect>,
        timeout: Duration,
    ) -> Result<(), StoreError> {
        if self.client.is_closed() && !self.in_batch {
            let client = reconnect(config, tls, timeout).await?;
            *self = Session { client, statements: HashMap::new(), in_batch: false, aborted: None };
        }
        Ok(())
    }

    async fn statement(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await.map_err(|e| backend(&e))?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }

    async fn handle(
        &mut self,
        begin: bool,
        guarded: bool,
        ops: Vec<Op>,
        script: Option<&'static str>,
        query: Option<(&'static str, Vec<Param>)>,
        end: End,
    ) -> Result<Option<Vec<Row>>, StoreError> {
        if end == End::Rollback {
            self.aborted = None;
            if self.in_batch {
                self.in_batch = false;
                self.client.batch_execute("ROLLBACK").await.map_err(|e| backend(&e))?;
            }
            return Ok(Some(Vec::new()));
        }
        if guarded {
            return self.guarded(begin, query).await;
        }
        let result = self.run(begin, ops, script, query).await.map(Some);
        if let Err(e) = &result {
            if self.in_batch && self.aborted.is_none() {
                self.aborted = Some(e.clone());
            }
        }
        if end == End::Commit && self.in_batch {
            self.in_batch = false;
            if let Some(e) = self.aborted.take() {
                let _ = self.client.batch_execute("ROLLBACK").await;
                return Err(e);
            }
            self.client.batch_execute("COMMIT").await.map_err(|e| backend(&e))?;
        }
        result
    }

    /// A query under a savepoint, so a lock timeout does not abort the batch.
    async fn guarded(&mut self, begin: bool, query: Option<(&'static str, Vec<Param>)>) -> Result<Option<Vec<Row>>, StoreError> {
        if let Some(e) = &self.aborted {
            return Err(e.clone());
        }
        let Some((sql, params)) = query else { return Ok(Some(Vec::new())) };
        if begin && !self.in_batch {
            self.client.batch_execute("BEGIN").await.map_err(|e| backend(&e))?;
            self.in_batch = true;
        }
        let st = self.statement(sql).await?;
        self.client.batch_execute("SAVEPOINT acp_guarded").await.map_err(|e| backend(&e))?;
        let params = refs(&params);
        match self.client.query(&st, &params).await {
            Ok(rows) => {
                self.client.batch_execute("RELEASE SAVEPOINT acp_guarded").await.map_err(|e| backend(&e))?;
                Ok(Some(rows))
            }
            Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                self.client.batch_execute("ROLLBACK TO SAVEPOINT acp_guarded").await.map_err(|e| backend(&e))?;
                Ok(None)
            }
            Err(e) => {
                let e = backend(&e);
                self.aborted = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn run(
        &mut self,
        begin: bool,
        ops: Vec<Op>,
        script: Option<&'static str>,
        query: Option<(&'static str, Vec<Param>)>,
    ) -> Result<Vec<Row>, StoreError> {
        if let Some(e) = &self.aborted {
            return Err(e.clone());
        }
        if (begin || !ops.is_empty() || script.is_some()) && !self.in_batch {
            self.client.batch_execute("BEGIN").await.map_err(|e| backend(&e))?;
            self.in_batch = true;
        }
        let mut statements = Vec::with_capacity(ops.len());
        for op in &ops {
            statements.push(self.statement(op.sql).await?);
        }
        // A query new to this connection is prepared after the statements before it ran (it
        // may read a table they create); a known one goes out in the same pipeline.
        let (query, later) = match query {
            Some((sql, params)) if self.statements.contains_key(sql) || ops.is_empty() && script.is_none() => {
                (Some((self.statement(sql).await?, params)), None)
            }
            other => (None, other),
        };
        let rows = self.pipeline(&ops, &statements, script, query).await?;
        match later {
            Some((sql, params)) => {
                let st = self.statement(sql).await?;
                let params = refs(&params);
                self.client.query(&st, &params).await.map_err(|e| backend(&e))
            }
            None => Ok(rows),
        }
    }

    async fn pipeline(
        &self,
        ops: &[Op],
        statements: &[Statement],
        script: Option<&'static str>,
        query: Option<(Statement, Vec<Param>)>,
    ) -> Result<Vec<Row>, StoreError> {
        let client = &self.client;
        // Pipelined: every statement is written before the first answer is read.
        let executed = futures_util::future::join_all(ops.iter().zip(statements).map(|(op, st)| async move {
            let params = refs(&op.params);
            client.execute(st, &params).await
        }));
        let queried = async {
            match &query {
                Some((st, params)) => {
                    let params = refs(params);
                    client.query(st, &params).await.map(Some)
                }
                None => Ok(None),
            }
        };
        let (executed, queried) = if let Some(script) = script {
            // Statements of a script run after the batch's, before the query.
            let executed = executed.await;
            client.batch_execute(script).await.map_err(|e| backend(&e))?;
            (executed, queried.await)
        } else {
            futures_util::future::join(executed, queried).await
        };
        for (op, n) in ops.iter().zip(executed) {
            let n = n.map_err(|e| backend(&e))?;
            match &op.expect {
                Expect::Any => {}
                Expect::One(what) if n != 1 => {
                    return Err(StoreError::Corrupt(format!("{what} ({n} rows matched, expected 1)")));
                }
                Expect::Lease(session) if n != 1 => return Err(StoreError::LeaseLost { session: session.clone() }),
                Expect::Host(what) if n != 1 => return Err(StoreError::Backend(what.clone())),
                Expect::NoneLeft(session) if n != 0 => return Err(StoreError::LeaseLost { session: session.clone() }),
                Expect::One(_) | Expect::Lease(_) | Expect::Host(_) | Expect::NoneLeft(_) => {}
            }
        }
        Ok(queried.map_err(|e| backend(&e))?.unwrap_or_default())
    }
}
