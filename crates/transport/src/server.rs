//! The agent server: runs the agent core over stdio (or any reader/writer pair), with an
//! optional durable store, and calls the runtime an author implements ([`AgentRuntime`]).
//!
//! The author writes what a turn does; everything else — `initialize`, the session surface
//! (new, list, resume with replay, close, status), queue and steer injects, revoke and replace,
//! cancel, delivery at break-points, turn state — is the core's. A turn gets a
//! [`TurnContext`]: it streams updates, asks permission, reports break-points (where pending
//! steers are delivered and handed back), sees cancellation and stream interrupts, and ends by
//! returning a [`TurnEnd`].
//!
//! The server moves bytes and calls the runtime; the protocol is the core's ([`Agent`]):
//! each read from the client goes to [`Agent::receive_bytes`] as one batch (every complete line
//! through the core, then one commit to the store, then the answers go out), and the core's
//! own requests to the client (permission) are minted, routed and ended by the core.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use acp_inject_core::agent::{
    cancelled_outcome, Agent, AgentConfig, BreakPoint, Committed, ConnId, ConnectionRole, HostCall, HostError, Lanes, OpenError,
    Output, PendingInject, PermissionAsk, RuntimeAction, RuntimeEvent, SessionRecord, SessionSetup, Store, StoreError, UserInput,
};
use acp_inject_core::wire::{
    AgentMessageChunk, ContentBlock, ErrorObject, MessageId, PermissionOption, RequestId, RequestPermissionOutcome, SessionId,
    SessionUpdate, StopReason, TextContent, TurnFailure, Usage,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::task::TaskTracker;

use crate::budget::{MemoryBudget, SHED_ABOVE};

/// How a turn ended, as the runtime reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnEnd {
    /// Why (the core reports `cancelled` after a client cancel, whatever this says).
    pub stop_reason: StopReason,
    /// Token usage of the turn.
    pub usage: Option<Usage>,
    /// With [`StopReason::Error`]: what failed, sent to the client with the idle update.
    pub error: Option<TurnFailure>,
}

impl TurnEnd {
    /// The model finished.
    pub fn end_turn() -> TurnEnd {
        TurnEnd { stop_reason: StopReason::EndTurn, usage: None, error: None }
    }

    /// The turn stopped because it was cancelled.
    pub fn cancelled() -> TurnEnd {
        TurnEnd { stop_reason: StopReason::Cancelled, usage: None, error: None }
    }

    /// The turn failed: `stopReason: "error"`, with `error` as a JSON-RPC error object
    /// (`code`, `message`, optional `data`).
    pub fn failed(error: TurnFailure) -> TurnEnd {
        TurnEnd { stop_reason: StopReason::Error, usage: None, error: Some(error) }
    }
}

/// What an agent author implements. Only [`AgentRuntime::run_turn`] is required.
#[async_trait::async_trait]
pub trait AgentRuntime: Send + Sync + 'static {
    /// A client created a session (`session/new`): its working directory, extra roots and MCP
    /// servers.
    async fn session_opened(&self, _session: &SessionId, _setup: SessionSetup) {}

    /// A client resumed a session (`session/resume`); the core already replayed its history.
    async fn session_resumed(&self, _session: &SessionId, _setup: SessionSetup) {}

    /// Runs one turn whose opening input is `input` (empty when the runtime started the turn
    /// itself with [`AgentServer::start_turn`]). Returns how it ended.
    async fn run_turn(&self, turn: TurnContext, input: Vec<UserInput>) -> TurnEnd;

    /// The session was closed: stop any work for it. `dropped` are the injects that were
    /// pending (never delivered), for the host to persist, report or resend.
    async fn session_closed(&self, _session: &SessionId, _dropped: Vec<PendingInject>) {}

    /// A client logs in (`auth/login`, v1 `authenticate`) with `method_id`, one of the
    /// configured `agent` methods (`AgentConfig::auth`): check the credentials it stands for
    /// (an API key in the environment, a stored login). `Ok` logs the connection in; `Err` is
    /// the client's error (-32000 saying why, typically). The default refuses: an agent that
    /// advertises methods implements this.
    async fn authenticate(&self, method_id: &str) -> Result<(), ErrorObject> {
        Err(ErrorObject::with_detail(
            acp_inject_core::wire::errors::AUTH_REQUIRED,
            &format!("this agent cannot check the method {method_id:?}"),
        ))
    }

    /// A request of an extension this agent serves (`AgentConfig::extensions`): its result.
    /// The default answers -32601.
    async fn extension(&self, _method: &str, _params: Option<serde_json::Value>) -> Result<serde_json::Value, ErrorObject> {
        Err(ErrorObject::method_not_found())
    }

    /// A notification of an extension this agent serves. The default ignores it.
    async fn extension_notification(&self, _method: &str, _params: Option<serde_json::Value>) {}
}

/// A server failure that ends [`serve`].
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The agent could not be built (configuration or store).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The store failed; nothing after the failure was released. Restart from the store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading from or writing to the client failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// A runtime call the core refused (the turn was already over, or the session closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// The core refused the event.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The server stopped (the client went away, or the store failed).
    #[error("the server stopped")]
    Stopped,
}

/// How [`serve`] runs.
pub struct ServeOptions {
    /// What the agent advertises and how it behaves.
    pub config: AgentConfig,
    /// Where sessions live; `None` keeps them in memory.
    pub store: Option<Box<dyn Store>>,
}

const CLIENT: &str = "client";

/// How long `run` waits, once the client is gone, for the runtime to end its cancelled turns.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The signals of one running turn. Set with `send_replace`: `send` does not store the value
/// while no task is waiting on it, and a cancel arriving before the turn first waits would be
/// lost.
struct Signals {
    cancel: watch::Sender<bool>,
    interrupt: watch::Sender<bool>,
}

/// Where one connection's lines go: a queue its writer drains, with the bytes it holds
/// counted against a limit, so a client that stops reading cannot pin the server's memory.
struct Outbox {
    tx: mpsc::UnboundedSender<String>,
    state: Arc<OutboxState>,
}

struct OutboxState {
    /// Bytes queued and not yet taken by the writer.
    queued: AtomicUsize,
    /// The most it may hold.
    limit: usize,
    /// Set when the limit was passed: the connection is dropped and its queue discarded.
    overflowed: AtomicBool,
    /// Set when the connection was dropped to bring the server back within its memory budget.
    shed: AtomicBool,
    /// The server's budget, which the queued bytes count against.
    budget: Arc<MemoryBudget>,
}

/// The running server: the core, the connections to clients, the runtime.
struct Server {
    agent: Mutex<Agent>,
    runtime: Arc<dyn AgentRuntime>,
    /// Each connected client's outbox, by its connection id in the core.
    outboxes: Mutex<HashMap<ConnId, Outbox>>,
    /// Whether turns that a previous process left running were ended (once, at the start).
    started: AtomicBool,
    turns: Mutex<HashMap<SessionId, Arc<Signals>>>,
    /// The turns waiting on an answer to a permission request, by the core's request id.
    permissions: Mutex<HashMap<RequestId, oneshot::Sender<RequestPermissionOutcome>>>,
    failed: Mutex<Option<StoreError>>,
    /// Why the store failed, once it did ([`AgentServer::stopped`]).
    stopped: watch::Sender<Option<String>>,
    /// The lease renewal task was started (a store several hosts share).
    leasing: AtomicBool,
    /// Every task that calls into the runtime (turns, session callbacks): `run` waits for
    /// them before it returns, so no runtime future outlives the server (a foreign runtime's
    /// event loop may be gone by then).
    tasks: TaskTracker,
    /// The memory budget the connections' queues count against ([`AgentServer::limit_memory`]).
    budget: Mutex<Arc<MemoryBudget>>,
    /// The core has a store (a database round trip may happen under its lock).
    durable: bool,
    /// Batches whose outputs wait for their commits, when the store commits on several lanes.
    releases: Mutex<Releases>,
    /// Wakes the task that releases them; set (once) when the server starts with such a store
    /// on a multi-threaded runtime, which makes every step after it go through [`Releases`].
    releasing: std::sync::OnceLock<Arc<tokio::sync::Notify>>,
}

/// Batches handled under the core's lock, in that order, waiting for their commits: a batch
/// goes out once its own commit is done and every earlier batch that shares one of its lanes
/// (the sessions it wrote or looked at) went out, so a batch about other sessions does not
/// wait for a commit the database holds up.
#[derive(Default)]
struct Releases {
    queue: std::collections::VecDeque<Held>,
    next: u64,
}

struct Held {
    id: u64,
    /// Its outputs and lanes are known (until then it holds back every later batch).
    ready: bool,
    committed: bool,
    lanes: Lanes,
    outputs: Vec<Output>,
    /// Told once the batch went out and its actions were carried out, with the user input
    /// delivered to the turn that waits (its `Deliver` actions).
    released: Option<std::sync::mpsc::SyncSender<Actions>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        // The releasing task holds only a weak reference: woken, it finds the server gone.
        if let Some(wake) = self.releasing.get() {
            wake.notify_one();
        }
    }
}

/// Runs `f`, which may block its thread: on a multi-threaded tokio runtime the wait is
/// announced (`block_in_place`), so the worker's other tasks move to another thread.
fn blocking<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here completes or changes nothing, so a poisoned lock still
    // holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the core asks of the host after a step: a session runtime's action, or a call for
/// the host itself.
enum Work {
    Action(SessionId, RuntimeAction),
    Call(u64, HostCall),
}

type Actions = Vec<Work>;

impl Server {
    /// Runs `f` on the core, commits, sends the lines for the client (in order, while still
    /// holding the core so no other batch interleaves) and returns the actions. On a store
    /// with several lanes the batch is committed in the background and goes out in its turn
    /// ([`Releases`]); this waits until it went out and its actions were carried out (none are
    /// returned then).
    fn step<R>(self: &Arc<Self>, f: impl FnOnce(&mut Agent) -> R) -> Result<(R, Actions), TurnError> {
        self.step_then(true, f)
    }

    /// [`Server::step`]; with `wait` false, on a store with several lanes it returns once the
    /// batch is handed over (a client's next message need not wait for this one's commit).
    fn step_then<R>(self: &Arc<Self>, wait: bool, f: impl FnOnce(&mut Agent) -> R) -> Result<(R, Actions), TurnError> {
        // `failed` is taken by the first caller that asks why; `stopped` stays.
        if lock(&self.failed).is_some() || self.stopped.borrow().is_some() {
            return Err(TurnError::Stopped);
        }
        if let Some(wake) = self.releasing.get() {
            return self.step_in_lanes(wait, wake, f);
        }
        let stepped = self.with_core(|agent| {
            let r = f(agent);
            match agent.drain() {
                Ok(outputs) => Ok((r, self.send_lines(outputs))),
                Err(e) => Err(e),
            }
        });
        match stepped {
            Ok(done) => Ok(done),
            Err(e) => {
                self.fail(e);
                Err(TurnError::Stopped)
            }
        }
    }

    fn step_in_lanes<R>(
        self: &Arc<Self>,
        wait: bool,
        wake: &tokio::sync::Notify,
        f: impl FnOnce(&mut Agent) -> R,
    ) -> Result<(R, Actions), TurnError> {
        let (told, released) = std::sync::mpsc::sync_channel(1);
        let stepped = self.with_core(|agent| {
            let r = f(agent);
            // Its place in the order is taken under the core's lock.
            let id = {
                let mut releases = lock(&self.releases);
                let id = releases.next;
                releases.next += 1;
                let released = wait.then(|| told.clone());
                releases.queue.push_back(Held {
                    id,
                    ready: false,
                    committed: false,
                    lanes: Lanes::NONE,
                    outputs: Vec::new(),
                    released,
                });
                id
            };
            let server = Arc::downgrade(self);
            let done: Committed = Box::new(move |result| {
                if let Some(server) = server.upgrade() {
                    server.committed(id, result);
                }
            });
            let drained = agent.drain_submit(done);
            let mut releases = lock(&self.releases);
            let Some(held) = releases.queue.iter_mut().find(|h| h.id == id) else {
                // Failed meanwhile: everything queued was dropped.
                return drained.map(|_| r);
            };
            match drained {
                Ok((outputs, lanes)) => {
                    held.ready = true;
                    held.outputs = outputs;
                    held.lanes = lanes;
                    Ok(r)
                }
                Err(e) => {
                    releases.queue.retain(|h| h.id != id);
                    Err(e)
                }
            }
        });
        drop(told);
        let r = match stepped {
            Ok(r) => r,
            Err(e) => {
                self.fail(e);
                return Err(TurnError::Stopped);
            }
        };
        wake.notify_one();
        if !wait {
            return Ok((r, Vec::new()));
        }
        let went_out = blocking(|| released.recv());
        // Never told: the store failed before it went out.
        let delivered = went_out.map_err(|_| TurnError::Stopped)?;
        Ok((r, delivered))
    }

    /// A batch handed to the store is durable (or failed: then nothing more goes out).
    fn committed(&self, id: u64, result: Result<(), StoreError>) {
        match result {
            Ok(()) => {
                if let Some(held) = lock(&self.releases).queue.iter_mut().find(|h| h.id == id) {
                    held.committed = true;
                }
                if let Some(wake) = self.releasing.get() {
                    wake.notify_one();
                }
            }
            Err(e) => self.fail(e),
        }
    }

    /// Sends every batch whose turn has come ([`Releases`]) and carries out its actions, in
    /// order; then tells the steps that wait for them. Run by one task only.
    fn release(self: &Arc<Self>) {
        loop {
            if lock(&self.failed).is_some() || self.stopped.borrow().is_some() {
                // Nothing more goes out; a step that queued its batch since is told it stopped.
                lock(&self.releases).queue.clear();
                return;
            }
            let (actions, told) = {
                let mut releases = lock(&self.releases);
                let mut blocked = Lanes::NONE;
                let mut due = Vec::new();
                let mut i = 0;
                while i < releases.queue.len() {
                    let held = &releases.queue[i];
                    // Not ready yet: its lanes are not known, so it holds back everything.
                    let lanes = if held.ready { held.lanes } else { Lanes(u64::MAX) };
                    if held.ready && held.committed && !lanes.meets(blocked) {
                        due.extend(releases.queue.remove(i));
                        continue;
                    }
                    blocked = blocked | lanes;
                    i += 1;
                }
                let mut actions = Vec::new();
                let mut told = Vec::new();
                for held in due {
                    let (delivered, rest): (Actions, Actions) = self
                        .send_lines(held.outputs)
                        .into_iter()
                        .partition(|w| matches!(w, Work::Action(_, RuntimeAction::Deliver(_))));
                    actions.extend(rest);
                    // The input a break-point delivered goes to the turn that waits for it.
                    told.extend(held.released.map(|t| (t, delivered)));
                }
                (actions, told)
            };
            if actions.is_empty() && told.is_empty() {
                return;
            }
            self.dispatch(actions);
            for (t, delivered) in told {
                let _ = t.send(delivered);
            }
        }
    }

    /// Runs `f` with the core locked. A store round trip may happen under the lock (a commit,
    /// a read), or the lock may be held by one on another thread: on a multi-threaded tokio
    /// runtime the wait is announced (`block_in_place`), so the worker's other tasks (WebSocket
    /// pings, handshakes, timers, requests that need no core) move to another thread instead of
    /// waiting with it.
    fn with_core<R>(&self, f: impl FnOnce(&mut Agent) -> R) -> R {
        let run = || f(&mut lock(&self.agent));
        if !self.durable {
            // In memory: nothing under the lock waits on I/O.
            return run();
        }
        blocking(run)
    }

    /// Queues a step's lines for their connections (called with the core locked, so no other
    /// batch interleaves) and returns its actions.
    fn send_lines(&self, outputs: Vec<Output>) -> Actions {
        let mut actions = Vec::new();
        let mut outboxes = lock(&self.outboxes);
        // A batch is one request's or one event's lines: queued whole when the connection was
        // within its limit as the batch began, so a replay larger than the limit (a resume of a
        // long session) goes out, drained by the writer at the client's pace; a connection
        // still over its limit when the next batch comes is too far behind.
        let mut began_behind: HashMap<ConnId, bool> = HashMap::new();
        for o in outputs {
            match o {
                Output::Line { to, line } => {
                    for conn in &to {
                        let Some(outbox) = outboxes.get(conn) else { continue };
                        let state = &outbox.state;
                        let began = *began_behind.entry(conn.clone()).or_insert_with(|| state.behind());
                        // The budget is looked at line by line: past it, a batch stops growing
                        // a queue that holds much, whole batch or not.
                        let room = if began { Room::Behind } else { state.room_for(line.len()) };
                        if room != Room::Within {
                            // Too far behind, or holding much while the server is past its
                            // memory budget: drop the connection; its client resumes the
                            // session on a new one and the core replays what it missed.
                            let flag = if room == Room::Behind { &state.overflowed } else { &state.shed };
                            flag.store(true, Ordering::Relaxed);
                            outboxes.remove(conn);
                            continue;
                        }
                        state.queued.fetch_add(line.len(), Ordering::Relaxed);
                        state.budget.hold(line.len());
                        if outbox.tx.send(line.clone()).is_err() {
                            // Gone: its lines were never queued.
                            state.taken(line.len());
                            outboxes.remove(conn);
                        }
                    }
                }
                Output::Action { session, action } => actions.push(Work::Action(session, action)),
                Output::Call { id, call, .. } => actions.push(Work::Call(id, call)),
            }
        }
        actions
    }

    /// The store failed (or this host lost a session to another): nothing more is served.
    /// Every connection is dropped at once, so its client can resume elsewhere.
    fn fail(&self, e: StoreError) {
        let reason = e.to_string();
        lock(&self.failed).get_or_insert(e);
        // What waits for its commit never goes out (its steps are told it stopped).
        lock(&self.releases).queue.clear();
        // The reason first: a connection that finds its lines ended asks for it.
        self.stopped.send_if_modified(|r| r.is_none() && r.replace(reason).is_none());
        lock(&self.outboxes).clear();
    }

    /// On a store several hosts share: renews this host's leases every quarter lease, until
    /// the server is gone or has stopped (needs a tokio runtime; without one, the host calls
    /// `Agent::renew_leases` itself).
    fn keep_leases(self: &Arc<Self>) {
        let Some(every) = self.with_core(|a| a.renew_every()) else { return };
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        if self.leasing.swap(true, Ordering::SeqCst) {
            return;
        }
        let server = Arc::downgrade(self);
        handle.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(alive) = server.upgrade() else { return };
                if lock(&alive.failed).is_some() || alive.stopped.borrow().is_some() {
                    return;
                }
                // The renewal is a database round trip under the core's lock: off the
                // async workers.
                let renewing = Arc::clone(&alive);
                let renewed = tokio::task::spawn_blocking(move || lock(&renewing.agent).renew_leases()).await;
                match renewed {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return alive.fail(e),
                    Err(_) => return alive.fail(StoreError::Backend("the lease renewal panicked".into())),
                }
            }
        });
    }

    /// Ends the turns a previous process left running (the store's sessions), once: what they
    /// held pending opens the next turn (R-DELIV-2).
    fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        self.start_releasing();
        self.keep_leases();
        let interrupted: Vec<SessionId> = self
            .with_core(|agent| agent.session_ids().into_iter().filter(|s| agent.turn(s).is_some_and(|t| t.in_progress())).collect());
        for session in interrupted {
            let event = RuntimeEvent::TurnEnded { stop_reason: StopReason::Cancelled, usage: None, error: None };
            if let Ok((_, actions)) = self.step(|a| a.runtime_event(&session, event)) {
                self.dispatch(actions);
            }
        }
    }

    /// On a store that commits on several lanes and a multi-threaded runtime: from now on each
    /// batch is committed in the background and goes out in its turn, released by a task.
    fn start_releasing(self: &Arc<Self>) {
        if self.with_core(|a| a.store_lanes()) < 2 {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            // A step waits for its batch to go out by blocking its thread: the releasing task
            // needs another.
            return;
        }
        let wake = Arc::new(tokio::sync::Notify::new());
        if self.releasing.set(Arc::clone(&wake)).is_err() {
            return;
        }
        let server = Arc::downgrade(self);
        handle.spawn(async move {
            loop {
                wake.notified().await;
                // Gone: the server's drop woke this task to end it.
                let Some(server) = server.upgrade() else { return };
                server.release();
            }
        });
    }

    /// Attaches a client connection: the core's lines for it go to the returned queue.
    fn connect(self: &Arc<Self>, conn: &ConnId, max_queued_bytes: usize, principal: Option<String>) -> Lines {
        self.start();
        let (tx, rx) = mpsc::unbounded_channel();
        let state = Arc::new(OutboxState {
            queued: AtomicUsize::new(0),
            limit: max_queued_bytes,
            overflowed: AtomicBool::new(false),
            shed: AtomicBool::new(false),
            budget: Arc::clone(&lock(&self.budget)),
        });
        lock(&self.outboxes).insert(conn.clone(), Outbox { tx, state: Arc::clone(&state) });
        self.with_core(|a| a.attach_as(conn, ConnectionRole::Controller, principal));
        Lines { rx, state }
    }

    /// Detaches a client connection (its turns go on; the core answers the requests only it
    /// could answer `cancelled`).
    fn disconnect(self: &Arc<Self>, conn: &ConnId) {
        lock(&self.outboxes).remove(conn);
        if let Ok(((), actions)) = self.step(|a| a.detach(conn)) {
            self.dispatch(actions);
        }
    }

    /// Carries out the core's instructions.
    fn dispatch(self: &Arc<Self>, actions: Actions) {
        for work in actions {
            let (session, action) = match work {
                Work::Action(session, action) => (session, action),
                Work::Call(id, call) => {
                    self.call(id, call);
                    continue;
                }
            };
            match action {
                RuntimeAction::StartTurn(inputs) => self.spawn_turn(session, inputs),
                RuntimeAction::InterruptStream => {
                    if let Some(s) = lock(&self.turns).get(&session) {
                        s.interrupt.send_replace(true);
                    }
                }
                RuntimeAction::CancelTurn => {
                    if let Some(s) = lock(&self.turns).get(&session) {
                        s.cancel.send_replace(true);
                    }
                }
                RuntimeAction::Closed { dropped, .. } => {
                    if let Some(s) = lock(&self.turns).remove(&session) {
                        s.cancel.send_replace(true);
                    }
                    let rt = Arc::clone(&self.runtime);
                    self.tasks.spawn(async move { rt.session_closed(&session, dropped).await });
                }
                RuntimeAction::SessionOpened(setup) => {
                    let rt = Arc::clone(&self.runtime);
                    self.tasks.spawn(async move { rt.session_opened(&session, setup).await });
                }
                RuntimeAction::SessionResumed(setup) => {
                    let rt = Arc::clone(&self.runtime);
                    self.tasks.spawn(async move { rt.session_resumed(&session, setup).await });
                }
                RuntimeAction::PermissionAnswered { request_id, outcome } => {
                    if let Some(waiter) = lock(&self.permissions).remove(&request_id) {
                        let _ = waiter.send(outcome);
                    }
                }
                // Deliveries are handed back by `break_point` to the turn that reached it.
                RuntimeAction::Deliver(_) => {}
            }
        }
    }

    /// A call for the host: the runtime answers it, in a task of its own, and the answer goes
    /// to the client that asked.
    fn call(self: &Arc<Self>, id: u64, call: HostCall) {
        let server = Arc::clone(self);
        self.tasks.spawn(async move {
            let rt = Arc::clone(&server.runtime);
            let outcome = match call {
                HostCall::Authenticate { method_id } => rt.authenticate(&method_id).await.map(|()| serde_json::Value::Null),
                HostCall::Extension { method, params } => rt.extension(&method, params).await,
                HostCall::ExtensionNotification { method, params } => return rt.extension_notification(&method, params).await,
            };
            // The client may have gone meanwhile: then the call is closed and nothing is sent.
            if let Ok((_, actions)) = server.step(|a| a.answer_call(id, outcome)) {
                server.dispatch(actions);
            }
        });
    }

    fn spawn_turn(self: &Arc<Self>, session: SessionId, inputs: Vec<UserInput>) {
        let signals = Arc::new(Signals { cancel: watch::channel(false).0, interrupt: watch::channel(false).0 });
        lock(&self.turns).insert(session.clone(), Arc::clone(&signals));
        let record = self.with_core(|a| a.session_record(&session).ok().flatten());
        let ctx = TurnContext { server: Arc::clone(self), session: session.clone(), signals: Arc::clone(&signals), record };
        let server = Arc::clone(self);
        self.tasks.spawn(async move {
            let rt = Arc::clone(&server.runtime);
            // The runtime runs in its own task, so a panic in it ends only this turn.
            let end = match server.tasks.spawn(async move { rt.run_turn(ctx, inputs).await }).await {
                Ok(end) => end,
                // Upstream's `error` stop reason, with a JSON-RPC internal error saying why.
                Err(e) => TurnEnd::failed(TurnFailure::internal(if e.is_panic() {
                    "the agent's turn panicked"
                } else {
                    "the agent's turn was aborted"
                })),
            };
            {
                let mut turns = lock(&server.turns);
                if turns.get(&session).is_some_and(|s| Arc::ptr_eq(s, &signals)) {
                    turns.remove(&session);
                }
            }
            let event = RuntimeEvent::TurnEnded { stop_reason: end.stop_reason, usage: end.usage, error: end.error };
            // A refused turn end (the session closed meanwhile) needs nothing more.
            if let Ok((_, actions)) = server.step(|a| a.runtime_event(&session, event)) {
                server.dispatch(actions);
            }
        });
    }

    fn start_turn(self: &Arc<Self>, session: &SessionId) -> Result<(), TurnError> {
        let (r, actions) = self.step(|a| a.runtime_event(session, RuntimeEvent::TurnStarted))?;
        r?;
        self.dispatch(actions);
        self.spawn_turn(session.clone(), Vec::new());
        Ok(())
    }

    fn close_session(self: &Arc<Self>, session: &SessionId) -> Result<(), TurnError> {
        let (r, actions) = self.step(|a| a.runtime_event(session, RuntimeEvent::Close))?;
        r?;
        self.dispatch(actions);
        Ok(())
    }

    fn sessions(&self) -> Vec<SessionId> {
        self.with_core(|a| a.session_ids())
    }

    /// The error a failed store left (the first caller gets the store's own error).
    fn failure(&self) -> ServerError {
        ServerError::Store(lock(&self.failed).take().unwrap_or(StoreError::Poisoned))
    }

    /// Handles one read from a client (`None` at the end of its stream): the core frames
    /// and applies it, one commit, one dispatch.
    fn read(self: &Arc<Self>, conn: &ConnId, chunk: Option<&[u8]>) -> Result<(), TurnError> {
        self.feed(|agent| match chunk {
            Some(bytes) => agent.receive_bytes(conn, bytes),
            None => agent.receive_end(conn),
        })
    }

    /// Applies client input to the core (`f`), then one commit and one dispatch.
    fn feed(self: &Arc<Self>, f: impl FnOnce(&mut Agent)) -> Result<(), TurnError> {
        let ((), actions) = self.step_then(false, f)?;
        self.dispatch(actions);
        Ok(())
    }
}

/// The lines the core sends one client connection, in order ([`AgentServer::connect`]).
#[derive(Debug)]
pub struct Lines {
    rx: mpsc::UnboundedReceiver<String>,
    state: Arc<OutboxState>,
}

impl std::fmt::Debug for OutboxState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxState").field("queued", &self.queued).field("limit", &self.limit).finish()
    }
}

/// Whether a connection may take a batch of lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Room {
    Within,
    /// More than its own limit behind.
    Behind,
    /// Would hold [`SHED_ABOVE`] or more while the server is past its memory budget.
    Shed,
}

impl OutboxState {
    /// Past its own limit as a batch begins.
    fn behind(&self) -> bool {
        self.queued.load(Ordering::Relaxed) > self.limit
    }

    /// Whether a line of `bytes` may be queued for the server's memory budget: always while
    /// the queue stays under [`SHED_ABOVE`] or the server is within its budget.
    fn room_for(&self, bytes: usize) -> Room {
        if self.queued.load(Ordering::Relaxed).saturating_add(bytes) >= SHED_ABOVE && self.budget.over() {
            Room::Shed
        } else {
            Room::Within
        }
    }

    /// A line of `bytes` left the queue.
    fn taken(&self, bytes: usize) {
        self.queued.fetch_sub(bytes, Ordering::Relaxed);
        self.budget.release(bytes);
    }
}

impl Lines {
    /// The next line (without its newline), or `None` once the connection was dropped: it
    /// was disconnected, the server stopped, it fell more than its limit behind
    /// ([`Lines::overflowed`]), or it was shed for the memory budget ([`Lines::shed`]).
    pub async fn next(&mut self) -> Option<String> {
        if self.dropped() {
            self.discard();
            return None;
        }
        let line = self.rx.recv().await?;
        self.state.taken(line.len());
        Some(line)
    }

    /// The next line if one is queued now (for batching writes).
    pub fn try_next(&mut self) -> Option<String> {
        if self.dropped() {
            self.discard();
            return None;
        }
        let line = self.rx.try_recv().ok()?;
        self.state.taken(line.len());
        Some(line)
    }

    /// Bytes queued and not yet taken.
    pub fn queued(&self) -> usize {
        self.state.queued.load(Ordering::Relaxed)
    }

    /// Whether the connection was dropped because its client read too slowly.
    pub fn overflowed(&self) -> bool {
        self.state.overflowed.load(Ordering::Relaxed)
    }

    /// Whether the connection was dropped to bring the server back within its memory budget
    /// ([`AgentServer::limit_memory`]): it held the most unread output.
    pub fn shed(&self) -> bool {
        self.state.shed.load(Ordering::Relaxed)
    }

    fn dropped(&self) -> bool {
        self.overflowed() || self.shed()
    }
}

impl Lines {
    /// Drops what is still queued, back to the budget (nothing more can be queued once closed).
    fn discard(&mut self) {
        self.rx.close();
        while let Ok(line) = self.rx.try_recv() {
            self.state.taken(line.len());
        }
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        self.discard();
    }
}

/// One client connection of an agent server that serves many (a network listener's): the
/// bytes it reads go in through [`ClientLink::receive`], the core's lines for it come out of
/// the [`Lines`] that [`AgentServer::connect`] returned. Cheap to clone.
#[derive(Clone)]
pub struct ClientLink {
    server: Arc<Server>,
    conn: ConnId,
    /// Set by [`ClientLink::disconnect`]: what arrives afterwards (a request racing the
    /// connection's end) is dropped, so it cannot bring the connection back in the core.
    gone: Arc<AtomicBool>,
}

impl std::fmt::Debug for ClientLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientLink").field("conn", &self.conn).finish()
    }
}

impl ClientLink {
    /// The connection's id in the core.
    pub fn id(&self) -> &ConnId {
        &self.conn
    }

    /// Bytes the client sent: the core frames them into lines (a partial line waits for the
    /// rest), applies them, commits, and queues its answers. Fails once the store failed.
    pub fn receive(&self, bytes: &[u8]) -> Result<(), ServerError> {
        if self.gone.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.server.read(&self.conn, Some(bytes)).map_err(|_| self.server.failure())
    }

    /// One whole message the client sent (a WebSocket text frame, an HTTP request body),
    /// framed by its carrier rather than by newlines: applied as one line (size-checked,
    /// invalid UTF-8 refused), committed, answered.
    pub fn receive_message(&self, message: &[u8]) -> Result<(), ServerError> {
        if self.gone.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.server.feed(|a| a.handle_bytes(&self.conn, message)).map_err(|_| self.server.failure())
    }

    /// The client is gone: a partial line it left is refused, the connection is detached.
    /// Its sessions' turns go on, and a client can resume them on another connection.
    pub fn disconnect(&self) {
        if self.gone.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = self.server.read(&self.conn, None);
        self.server.disconnect(&self.conn);
    }

    /// Whether [`ClientLink::disconnect`] was called.
    pub fn is_disconnected(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }
}

/// What a running turn can do. Cheap to clone.
#[derive(Clone)]
pub struct TurnContext {
    server: Arc<Server>,
    session: SessionId,
    signals: Arc<Signals>,
    record: Option<SessionRecord>,
}

impl std::fmt::Debug for TurnContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnContext").field("session", &self.session).finish()
    }
}

impl TurnContext {
    /// The session this turn belongs to.
    pub fn session_id(&self) -> &SessionId {
        &self.session
    }

    /// The session's working directory (empty if unknown).
    pub fn cwd(&self) -> &str {
        self.record.as_ref().map_or("", |r| r.cwd.as_str())
    }

    fn event(&self, event: RuntimeEvent) -> Result<(), TurnError> {
        let (r, actions) = self.server.step(|a| a.runtime_event(&self.session, event))?;
        self.server.dispatch(actions);
        r.map_err(TurnError::from)
    }

    /// Sends one of the runtime's own updates (message and thought chunks or upserts, tool
    /// calls, plans, usage, session info) to every client attached to the session.
    pub fn send(&self, update: SessionUpdate) -> Result<(), TurnError> {
        self.event(RuntimeEvent::Update(update))
    }

    /// A fresh id for an agent message or thought.
    pub fn new_message_id(&self) -> MessageId {
        self.server.with_core(|a| a.mint_agent_message_id())
    }

    /// Streams a piece of text of an agent message.
    pub fn send_text(&self, message_id: &MessageId, text: &str) -> Result<(), TurnError> {
        let content = ContentBlock::Text(Box::new(TextContent::new(text.to_owned())));
        self.send(AgentMessageChunk::new(message_id.clone(), content).into())
    }

    /// Clears what was streamed so far for an agent message (C-MSG-2).
    pub fn clear_message(&self, message_id: &MessageId) -> Result<(), TurnError> {
        self.event(RuntimeEvent::ClearAgentMessage { message_id: message_id.clone() })
    }

    /// A model stream with no tool call pending began (under `steerInStream: interrupt` a steer
    /// may now ask to cut it).
    pub fn stream_started(&self) -> Result<(), TurnError> {
        self.event(RuntimeEvent::StreamStarted)
    }

    /// That stream ended.
    pub fn stream_finished(&self) -> Result<(), TurnError> {
        self.event(RuntimeEvent::StreamFinished)
    }

    /// A safe break-point (a tool result, between model steps): pending steers are delivered
    /// here, and their content is returned for the model. Clears an interrupt request.
    pub fn break_point(&self, kind: BreakPoint) -> Result<Vec<UserInput>, TurnError> {
        let (r, actions) = self.server.step(|a| a.runtime_event(&self.session, RuntimeEvent::BreakPoint(kind)))?;
        r?;
        self.signals.interrupt.send_replace(false);
        let mut delivered = Vec::new();
        let mut rest = Vec::new();
        for work in actions {
            match work {
                Work::Action(session, RuntimeAction::Deliver(inputs)) if session == self.session => delivered.extend(inputs),
                other => rest.push(other),
            }
        }
        self.server.dispatch(rest);
        Ok(delivered)
    }

    /// A model-process pause began (rate limit, usage cap): steers are held.
    pub fn paused(&self) -> Result<(), TurnError> {
        self.event(RuntimeEvent::Paused)
    }

    /// The pause cleared.
    pub fn resumed(&self) -> Result<(), TurnError> {
        self.event(RuntimeEvent::Resumed)
    }

    /// Whether the client cancelled the turn (stop, then return; the turn reports `cancelled`).
    pub fn is_cancelled(&self) -> bool {
        *self.signals.cancel.borrow()
    }

    /// Waits until the client cancels the turn.
    pub async fn cancelled(&self) {
        let mut rx = self.signals.cancel.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Whether a steer asked to cut the current model stream (`steerInStream: interrupt`):
    /// cut it, then report [`BreakPoint::ModelStep`].
    pub fn interrupt_requested(&self) -> bool {
        *self.signals.interrupt.borrow()
    }

    /// Waits until a steer asks to cut the current model stream.
    pub async fn interrupted(&self) {
        let mut rx = self.signals.interrupt.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Asks the user for permission (`session/request_permission`, sent by the core): the
    /// session is `requires_action` until the answer, and held steers wait for the next
    /// break-point (R-PERM-1). A cancel, the turn's end or the session's close while waiting
    /// returns the `cancelled` outcome (R-PERM-2).
    pub async fn request_permission(
        &self,
        title: &str,
        description: Option<&str>,
        options: Vec<PermissionOption>,
        subject: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<RequestPermissionOutcome, TurnError> {
        let ask = PermissionAsk { title: title.to_owned(), description: description.map(str::to_owned), options, subject };
        let (tx, rx) = oneshot::channel();
        // The waiter is registered while the core is still held, before the request is sent:
        // no answer can arrive before it is in place.
        let (r, actions) = self.server.step(|a| {
            let id = a.request_permission(&self.session, ask)?;
            lock(&self.server.permissions).insert(id.clone(), tx);
            Ok::<_, HostError>(id)
        })?;
        r?;
        self.server.dispatch(actions);
        Ok(rx.await.unwrap_or_else(|_| cancelled_outcome()))
    }
}

/// An agent server: build it, keep a clone to start turns or close sessions from the runtime's
/// side, then [`AgentServer::run`] it.
#[derive(Clone)]
pub struct AgentServer {
    inner: Arc<Server>,
}

impl std::fmt::Debug for AgentServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentServer").field("sessions", &self.inner.sessions()).finish()
    }
}

impl AgentServer {
    /// Builds the agent (on the store, when given: its sessions are live again) around the
    /// runtime. Turns interrupted by the end of an earlier process end as `cancelled` when
    /// the server runs, so what they held pending opens the next turn (R-DELIV-2).
    pub fn new(runtime: Arc<dyn AgentRuntime>, options: ServeOptions) -> Result<AgentServer, ServerError> {
        let durable = options.store.is_some();
        let agent = match options.store {
            Some(store) => Agent::with_store(options.config, store)?,
            None => Agent::new(options.config).map_err(OpenError::from)?,
        };
        let inner = Arc::new(Server {
            agent: Mutex::new(agent),
            runtime,
            outboxes: Mutex::new(HashMap::new()),
            started: AtomicBool::new(false),
            turns: Mutex::new(HashMap::new()),
            permissions: Mutex::new(HashMap::new()),
            failed: Mutex::new(None),
            stopped: watch::channel(None).0,
            leasing: AtomicBool::new(false),
            tasks: TaskTracker::new(),
            budget: Mutex::new(MemoryBudget::unlimited()),
            durable,
            releases: Mutex::new(Releases::default()),
            releasing: std::sync::OnceLock::new(),
        });
        // Sessions the host opens before any client connects are leased too.
        inner.keep_leases();
        Ok(AgentServer { inner })
    }

    /// The memory budget the queues of connections attached from now on count against
    /// ([`crate::budget`]): past it, a line that would leave a connection holding
    /// [`SHED_ABOVE`] bytes or more of unread output drops that connection
    /// ([`Lines::shed`]) instead of growing its queue.
    pub fn limit_memory(&self, budget: Arc<MemoryBudget>) {
        *lock(&self.inner.budget) = budget;
    }

    /// The memory budget connections count against (unlimited unless
    /// [`AgentServer::limit_memory`] set one).
    pub fn memory_budget(&self) -> Arc<MemoryBudget> {
        Arc::clone(&lock(&self.inner.budget))
    }

    /// Starts a turn in a session with no user message (R-TURN-2), e.g. for a scheduled task.
    pub fn start_turn(&self, session: &SessionId) -> Result<(), TurnError> {
        self.inner.start_turn(session)
    }

    /// Closes a session from the agent's side (R-CLOSE-1).
    pub fn close_session(&self, session: &SessionId) -> Result<(), TurnError> {
        self.inner.close_session(session)
    }

    /// The live sessions.
    pub fn sessions(&self) -> Vec<SessionId> {
        self.inner.sessions()
    }

    /// Resolves once the server stopped serving because its store failed, with the reason:
    /// a database error, or, on a store several hosts share, a session taken over by another
    /// host while this one was paused or cut off (its commit was refused, nothing of it was
    /// released). Every connection was dropped; a network host should exit and be restarted.
    pub async fn stopped(&self) -> String {
        let mut rx = self.inner.stopped.subscribe();
        let reason = match rx.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone(),
            Err(_) => None,
        };
        match reason {
            Some(reason) => reason,
            None => std::future::pending().await,
        }
    }

    /// Why the server stopped serving, once its store failed ([`AgentServer::stopped`]).
    pub fn stop_reason(&self) -> Option<String> {
        self.inner.stopped.borrow().clone()
    }

    /// Whether the agent holds this session live.
    pub fn is_live(&self, session: &SessionId) -> bool {
        self.inner.with_core(|a| a.is_live(session))
    }

    /// Whether the agent holds this session live for `principal` (R-TENANT-1): it is live
    /// and that principal created it.
    pub fn is_live_for(&self, session: &SessionId, principal: Option<&str>) -> bool {
        self.inner.with_core(|a| a.principal_of(session).is_some_and(|p| p == principal))
    }

    /// Serves over stdin/stdout until the client closes stdin.
    pub async fn run_stdio(self) -> Result<(), ServerError> {
        self.run(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Attaches a client connection under `id` (unique among the connected ones), for a host
    /// that serves many clients at once (a network listener) or moves bytes itself: feed what
    /// the client sends to the returned [`ClientLink`] and write the [`Lines`] to it. A batch of
    /// lines (what one request or event produced, a resume's replay included) that finds the
    /// client within `max_queued_bytes` is queued whole; one that finds it past the limit drops
    /// the connection instead of growing (the client resumes its sessions on a new one). The
    /// first connection also ends the turns a previous process left running.
    pub fn connect(&self, id: ConnId, max_queued_bytes: usize) -> (ClientLink, Lines) {
        self.connect_as(id, max_queued_bytes, None)
    }

    /// [`AgentServer::connect`] for a client speaking for `principal`, as the host's
    /// authentication named it: it sees the sessions that principal created and no other
    /// (R-TENANT-1).
    pub fn connect_as(&self, id: ConnId, max_queued_bytes: usize, principal: Option<String>) -> (ClientLink, Lines) {
        let lines = self.inner.connect(&id, max_queued_bytes, principal);
        (ClientLink { server: Arc::clone(&self.inner), conn: id, gone: Arc::new(AtomicBool::new(false)) }, lines)
    }

    /// Stops the server: cancels every running turn, gives the runtime a moment to end them,
    /// and waits for its tasks. For a host that used [`AgentServer::connect`]; [`AgentServer::run`]
    /// does this itself when its client leaves.
    pub async fn shutdown(&self) {
        let server = &self.inner;
        for (_, s) in lock(&server.turns).drain() {
            s.cancel.send_replace(true);
        }
        let conns: Vec<ConnId> = lock(&server.outboxes).keys().cloned().collect();
        for conn in conns {
            server.disconnect(&conn);
        }
        lock(&server.permissions).clear();
        server.tasks.close();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, server.tasks.wait()).await;
    }

    /// Serves one client over a reader/writer pair until the reader ends, then stops (every
    /// turn is cancelled: over stdio the client's leaving ends the agent).
    pub async fn run<R, W>(self, mut reader: R, mut writer: W) -> Result<(), ServerError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        if lock(&self.inner.outboxes).contains_key(CLIENT) {
            return Err(ServerError::Io(std::io::Error::other("the server is already running")));
        }
        // Over stdio nothing bounds what the client has not read yet but the pipe.
        let (link, mut lines) = self.connect(CLIENT.into(), usize::MAX);
        let writer_task = tokio::spawn(async move {
            while let Some(line) = lines.next().await {
                let mut bytes = line.into_bytes();
                bytes.push(b'\n');
                // Batch what is already queued into one write.
                while let Some(more) = lines.try_next() {
                    bytes.extend_from_slice(more.as_bytes());
                    bytes.push(b'\n');
                }
                if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                    break;
                }
            }
            let _ = writer.flush().await;
        });

        let mut buf = vec![0u8; 64 * 1024];
        let result = loop {
            let n = match reader.read(&mut buf).await {
                Ok(n) => n,
                Err(e) => break Err(ServerError::Io(e)),
            };
            if n == 0 {
                // The end of the stream: a partial line left is refused.
                let _ = self.inner.read(&CLIENT.into(), None);
                break Ok(());
            }
            if let Err(e) = link.receive(&buf[..n]) {
                break Err(e);
            }
        };
        // The client is gone: cancel every turn and give the runtime a moment to end them (a
        // turn that honours its cancel signal ends at once); the core answers the client's
        // open requests `cancelled`. Then flush what was written and stop the writer.
        self.shutdown().await;
        let _ = writer_task.await;
        result
    }
}

/// Serves `runtime` over stdin/stdout until the client closes stdin.
pub async fn serve_stdio(runtime: Arc<dyn AgentRuntime>, options: ServeOptions) -> Result<(), ServerError> {
    AgentServer::new(runtime, options)?.run_stdio().await
}

/// Serves `runtime` over a reader/writer pair until the reader ends.
pub async fn serve<R, W>(runtime: Arc<dyn AgentRuntime>, options: ServeOptions, reader: R, writer: W) -> Result<(), ServerError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    AgentServer::new(runtime, options)?.run(reader, writer).await
}
