//! The agent side: one `/acp` endpoint in front of an [`AgentServer`], every network client a
//! connection of the same core (so a session outlives the connection that opened it, and a
//! client that reconnects resumes it on a new one).
//!
//! Streamable HTTP: `POST` carries one client message (`initialize` answered `200` with the
//! answer and `Acp-Connection-Id`, the rest `202`); `GET` with `Accept: text/event-stream`
//! opens the connection-scoped stream, or a session-scoped one with `Acp-Session-Id`;
//! `DELETE` ends the connection. WebSocket: `GET` with `Upgrade: websocket`, one JSON-RPC
//! message per text frame, `Acp-Connection-Id` on the `101`.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use acp_inject_core::wire::errors::ErrorObject;
use acp_inject_core::wire::v1::methods as v1_methods;
use acp_inject_core::wire::{jsonrpc, methods, RequestId, SessionId};
use acp_inject_transport::budget::{Held, MemoryBudget, SHED_ABOVE};
use acp_inject_transport::{AgentServer, ClientLink, Lines};
use axum::body::{Body, Bytes};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::route::{self, Envelope};
use crate::{Authorize, Limits, RemoteError, HEADER_CONNECTION_ID, HEADER_SESSION_ID};

/// How [`listen`] serves.
#[derive(Clone, Default)]
pub struct ListenOptions {
    /// Checks every request (`POST`, `GET`, `DELETE`, the WebSocket upgrade). Required to bind
    /// anything but a loopback address.
    pub auth: Option<Arc<dyn Authorize>>,
    /// Browser origins allowed to call (`Origin` header, exact match such as
    /// `https://app.example`). A request that carries any other `Origin` is refused with 403;
    /// a request without one (a native app, a server) is not a browser's and passes.
    pub allowed_origins: Vec<String>,
    /// Sizes, counts and times.
    pub limits: Limits,
    /// Serve TLS (`https://`, `wss://`) with this certificate; HTTP/2 is offered by ALPN.
    /// Without it, put a TLS-terminating proxy in front of anything that leaves the machine.
    pub tls: Option<crate::TlsIdentity>,
}

impl std::fmt::Debug for ListenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenOptions")
            .field("auth", &self.auth.is_some())
            .field("allowed_origins", &self.allowed_origins)
            .field("limits", &self.limits)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// A bound `/acp` endpoint; [`Listener::serve`] runs it.
pub struct Listener {
    tcp: TcpListener,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").field("addr", &self.tcp.local_addr().ok()).finish()
    }
}

/// Binds `addr` for `agent`. Refuses a non-loopback address without an authentication hook
/// ([`RemoteError::Unauthenticated`]): an agent runs code on its host.
pub async fn listen(agent: AgentServer, addr: &str, options: ListenOptions) -> Result<Listener, RemoteError> {
    options.limits.check()?;
    let bind_error = |e: std::io::Error| RemoteError::Bind { addr: addr.to_owned(), reason: e.to_string() };
    // Checked before binding: every address the name resolves to must be loopback.
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host(addr).await.map_err(bind_error)?.collect();
    if options.auth.is_none() && resolved.iter().any(|a| !a.ip().is_loopback()) {
        return Err(RemoteError::Unauthenticated { addr: addr.to_owned() });
    }
    let tcp = TcpListener::bind(&resolved[..]).await.map_err(bind_error)?;
    let loopback_only = resolved.iter().all(|a| a.ip().is_loopback());
    Ok(Listener { tcp, shared: Shared::new(agent, options, loopback_only) })
}

/// The `/acp` endpoint: every request of every connection goes through it.
pub(crate) fn endpoint_router(shared: &Arc<Shared>) -> Router {
    Router::new()
        .route("/acp", any(endpoint))
        .layer(DefaultBodyLimit::max(shared.options.limits.max_message_bytes))
        .with_state(Arc::clone(shared))
}

impl Listener {
    /// The address it is bound to (the port the system chose for port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, RemoteError> {
        self.tcp.local_addr().map_err(|e| RemoteError::Io(e.to_string()))
    }

    /// The endpoint's URL: `http://ADDR/acp`, or `https://ADDR/acp` with TLS (WebSocket clients
    /// use `ws://` or `wss://` on the same path).
    pub fn url(&self) -> Result<String, RemoteError> {
        let scheme = if self.shared.options.tls.is_some() { "https" } else { "http" };
        Ok(format!("{scheme}://{}/acp", self.local_addr()?))
    }

    /// Serves until `shutdown` completes: then it stops accepting, ends every connection
    /// (SSE streams end, WebSockets are closed with 1001) and returns once they are gone. The
    /// agent's sessions stay; call [`AgentServer::shutdown`] to stop their turns.
    pub async fn serve(self, shutdown: impl std::future::Future<Output = ()> + Send + 'static) -> Result<(), RemoteError> {
        let shared = Arc::clone(&self.shared);
        let reaper = tokio::spawn(reap_idle(Arc::clone(&shared)));
        let app = endpoint_router(&shared);
        // hyper's own builder rather than `axum::serve`, for TLS: HTTP/1.1 and HTTP/2 on one
        // port (by ALPN with TLS, by the connection preface without), upgrades (WebSocket,
        // also over HTTP/2's extended CONNECT), and a graceful end.
        let limits = &shared.options.limits;
        let mut http = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
        // A peer gets `first_request_timeout` to send a request's headers (HTTP/1.1 here; the
        // first request of any connection below); an HTTP/2 connection is pinged.
        http.http1().timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.first_request_timeout);
        http.http2()
            .enable_connect_protocol()
            .timer(hyper_util::rt::TokioTimer::new())
            .keep_alive_interval(Some(limits.keepalive))
            .keep_alive_timeout(limits.idle_timeout);
        let tls = shared.options.tls.as_ref().map(|t| tokio_rustls::TlsAcceptor::from(Arc::clone(&t.0)));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let sockets = Arc::new(tokio::sync::Semaphore::new(limits.max_sockets));
        let first_request = limits.first_request_timeout;
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let (stream, _) = tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok(a) => a,
                    // Out of descriptors, say: the next accept may succeed.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            // Past `max_sockets` the connection is closed at once: nothing it sends is read.
            let Ok(permit) = Arc::clone(&sockets).try_acquire_owned() else {
                drop(stream);
                continue;
            };
            let _ = stream.set_nodelay(true);
            let seen = Arc::new(AtomicBool::new(false));
            let service = FirstRequest { inner: hyper_util::service::TowerToHyperService::new(app.clone()), seen: Arc::clone(&seen) };
            let (http, watcher, tls) = (http.clone(), graceful.watcher(), tls.clone());
            tokio::spawn(async move {
                let _permit = permit;
                // A peer that sends no request in time (an HTTP/2 connection that only pings,
                // a TLS handshake that never ends) is dropped: it holds no slot for long.
                let deadline = async {
                    tokio::time::sleep(first_request).await;
                    if seen.load(Ordering::SeqCst) {
                        std::future::pending::<()>().await;
                    }
                };
                let serve = async {
                    match tls {
                        None => {
                            let conn = http.serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(stream), service);
                            let _ = watcher.watch(conn.into_owned()).await;
                        }
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else { return };
                            let conn = http.serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(stream), service);
                            let _ = watcher.watch(conn.into_owned()).await;
                        }
                    }
                };
                tokio::select! {
                    () = serve => {}
                    () = deadline => {}
                }
            });
        }
        // The graceful end waits for open requests, and a stream is one until it ends: end
        // them all first.
        shared.stopping.cancel();
        let conns: Vec<Arc<HttpConn>> = lock(&shared.conns).drain().map(|(_, c)| c).collect();
        for conn in conns {
            conn.end(&shared);
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), graceful.shutdown()).await;
        reaper.abort();
        Ok(())
    }
}

/// A connection's service that notes its first request.
#[derive(Clone)]
struct FirstRequest<S> {
    inner: S,
    seen: Arc<AtomicBool>,
}

impl<S: hyper::service::Service<R>, R> hyper::service::Service<R> for FirstRequest<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, request: R) -> Self::Future {
        self.seen.store(true, Ordering::SeqCst);
        self.inner.call(request)
    }
}

/// Where a message to the client goes on Streamable HTTP.
#[derive(Clone, Debug, PartialEq)]
enum Route {
    Connection,
    Session(String),
}

/// The lines of one SSE stream, each with its event id (1, 2, … in routing order): those not
/// written to a stream yet and, before them, those written, kept up to
/// `replay_window_bytes`. A stream reads from a cursor (the last id it wrote); a `GET` with
/// `Last-Event-ID` starts from that id, so what a dead stream had taken is sent again, and a
/// new `GET` takes the mailbox over from a stream the agent still believes open (behind a relay
/// that stopped forwarding, it may be dead).
struct Mailbox {
    state: Mutex<MailboxState>,
    changed: Notify,
    /// Every event it holds counts against the memory budget until it goes.
    budget: Arc<MemoryBudget>,
}

#[derive(Default)]
struct MailboxState {
    /// Ascending ids; the written ones first.
    events: VecDeque<(u64, String)>,
    /// The id the next line gets.
    next_id: u64,
    /// The highest id written to a stream (0: none).
    written: u64,
    /// Bytes of written events still kept.
    kept_bytes: usize,
    /// Bytes of every event held, written or not.
    held_bytes: usize,
    /// The generation of the stream reading it (0: none).
    receiver: u64,
    generations: u64,
}

impl Mailbox {
    fn new(budget: &Arc<MemoryBudget>) -> Mailbox {
        Mailbox {
            state: Mutex::new(MailboxState { next_id: 1, ..MailboxState::default() }),
            changed: Notify::new(),
            budget: Arc::clone(budget),
        }
    }

    fn push(&self, line: String) {
        let mut state = lock(&self.state);
        let id = state.next_id;
        state.next_id += 1;
        state.held_bytes += line.len();
        self.budget.hold(line.len());
        state.events.push_back((id, line));
        drop(state);
        self.changed.notify_waiters();
    }

    /// Nobody reads it and it holds nothing unwritten: it may go (when a new session needs its
    /// place), losing only what a reconnect could have asked again.
    fn idle(&self) -> bool {
        let state = lock(&self.state);
        state.receiver == 0 && state.events.back().is_none_or(|(id, _)| *id <= state.written)
    }

    /// A new receiver from `last` (the `Last-Event-ID` a client sent) or, without one, from
    /// where the last stream stopped writing; the one before it (if any) ends. `Err` when
    /// `last` cannot be honoured.
    fn attach(&self, last: Option<u64>) -> Result<(u64, u64), (StatusCode, &'static str)> {
        let mut state = lock(&self.state);
        let cursor = match last {
            None => state.written,
            Some(n) if n > state.written => {
                return Err((StatusCode::BAD_REQUEST, "Last-Event-ID names an event this stream never sent"))
            }
            Some(n) => {
                let oldest = state.events.front().map_or(state.next_id, |(id, _)| *id);
                if n + 1 < oldest {
                    return Err((
                        StatusCode::GONE,
                        "The events after Last-Event-ID are no longer kept (replay_window_bytes): resume the session with replay",
                    ));
                }
                n
            }
        };
        state.generations += 1;
        state.receiver = state.generations;
        let generation = state.receiver;
        drop(state);
        self.changed.notify_waiters();
        Ok((generation, cursor))
    }

    /// The next event after `cursor` for the receiver `generation`: `Some(None)` when there is
    /// none yet, `None` once another receiver took over. A first write releases the line's
    /// bytes from the connection's buffer, and the oldest written events beyond the window go
    /// (all of them, past the memory budget: a reconnect then resumes the session instead).
    fn next(&self, generation: u64, cursor: u64, conn: &HttpConn, window: usize) -> Option<Option<(u64, String)>> {
        let window = if self.budget.over() { 0 } else { window };
        let mut state = lock(&self.state);
        if state.receiver != generation {
            return None;
        }
        let at = state.events.partition_point(|(id, _)| *id <= cursor);
        let Some((id, line)) = state.events.get(at).cloned() else { return Some(None) };
        if id > state.written {
            state.written = id;
            state.kept_bytes += line.len();
            conn.buffered.fetch_sub(line.len(), Ordering::Relaxed);
            while state.kept_bytes > window {
                let Some((oldest, _)) = state.events.front() else { break };
                if *oldest > state.written || *oldest == id {
                    break;
                }
                if let Some((_, gone)) = state.events.pop_front() {
                    state.kept_bytes -= gone.len();
                    state.held_bytes -= gone.len();
                    self.budget.release(gone.len());
                }
            }
        }
        Some(Some((id, line)))
    }

    fn detach(&self, generation: u64) {
        let mut state = lock(&self.state);
        if state.receiver == generation {
            state.receiver = 0;
        }
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        self.budget.release(state.held_bytes);
    }
}

/// A stream's hold on its mailbox; released when the stream ends.
struct Lease {
    mailbox: Arc<Mailbox>,
    generation: u64,
    cursor: u64,
    conn: Arc<HttpConn>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.mailbox.detach(self.generation);
        self.conn.streams_open.fetch_sub(1, Ordering::Relaxed);
        self.conn.touch();
    }
}

/// One Streamable HTTP connection.
struct HttpConn {
    id: String,
    /// Who the request that opened it spoke for ([`Authorize`]); every later request on it
    /// must speak for the same.
    principal: Option<String>,
    link: ClientLink,
    routing: Mutex<Routing>,
    /// Bytes waiting in this connection's mailboxes.
    buffered: AtomicUsize,
    /// Open SSE streams (an idle connection has none and sends nothing).
    streams_open: AtomicUsize,
    last_active: Mutex<Instant>,
    ended: CancellationToken,
}

struct Routing {
    connection: Arc<Mailbox>,
    sessions: HashMap<String, Arc<Mailbox>>,
    /// Where the answer to each of the client's open requests goes, by id text.
    answers: HashMap<String, Route>,
}

impl Routing {
    /// Room for one more session's mailbox: under the limit, or after dropping one that
    /// nobody reads and that holds nothing unwritten (the sessions in use count).
    fn make_room(&mut self, limit: usize) -> bool {
        if self.sessions.len() < limit {
            return true;
        }
        let idle = self.sessions.iter().find(|(_, m)| m.idle()).map(|(s, _)| s.clone());
        idle.is_some_and(|session| self.sessions.remove(&session).is_some())
    }
}

impl HttpConn {
    fn touch(&self) {
        *lock(&self.last_active) = Instant::now();
    }

    /// Ends the connection: its streams close, the core detaches it (its turns go on).
    fn end(&self, shared: &Shared) {
        if !self.ended.is_cancelled() {
            self.ended.cancel();
            shared.live.fetch_sub(1, Ordering::Relaxed);
            self.link.disconnect();
        }
    }

    /// Routes one line of the core's to its stream (counted in [`HttpConn::buffered`], which
    /// [`router`] checks). `Err` when a limit was passed.
    fn route_line(&self, line: String, shared: &Shared) -> Result<(), &'static str> {
        let limits = &shared.options.limits;
        let envelope = route::envelope(line.as_bytes()).unwrap_or_default();
        let mut routing = lock(&self.routing);
        let to = if envelope.is_response() {
            envelope.id.as_ref().and_then(|id| routing.answers.remove(id)).unwrap_or(Route::Connection)
        } else {
            envelope.params_session.map_or(Route::Connection, Route::Session)
        };
        self.buffered.fetch_add(line.len(), Ordering::Relaxed);
        let mailbox = match to {
            Route::Connection => &routing.connection,
            Route::Session(session) => {
                if !routing.sessions.contains_key(&session) && !routing.make_room(limits.max_sessions_per_connection) {
                    return Err("too many sessions on one connection (max_sessions_per_connection)");
                }
                routing.sessions.entry(session).or_insert_with(|| Arc::new(Mailbox::new(&shared.budget)))
            }
        };
        mailbox.push(line);
        Ok(())
    }
}

pub(crate) struct Shared {
    agent: AgentServer,
    options: ListenOptions,
    /// Bound to loopback addresses only: requests must name a loopback host (`Host`), so a
    /// web page cannot reach the agent through a DNS name it rebinds to 127.0.0.1.
    loopback_only: bool,
    conns: Mutex<HashMap<String, Arc<HttpConn>>>,
    /// Live connections, HTTP and WebSocket.
    live: AtomicUsize,
    /// Cancelled when the listener stops: WebSockets close, new connections are refused.
    stopping: CancellationToken,
    /// The memory budget (`Limits::max_memory`), shared with the agent server's queues.
    budget: Arc<MemoryBudget>,
}

impl Shared {
    pub(crate) fn new(agent: AgentServer, options: ListenOptions, loopback_only: bool) -> Arc<Shared> {
        let limits = &options.limits;
        let budget = match limits.memory_gauge {
            Some(gauge) => MemoryBudget::with_gauge(limits.max_memory, gauge),
            None => MemoryBudget::new(limits.max_memory),
        };
        agent.limit_memory(Arc::clone(&budget));
        Arc::new(Shared {
            budget,
            agent,
            options,
            loopback_only,
            conns: Mutex::new(HashMap::new()),
            live: AtomicUsize::new(0),
            stopping: CancellationToken::new(),
        })
    }

    /// The connection a request names, when it speaks for the connection's principal (another
    /// principal's connection is answered as an unknown one); `Err` is the status and text to
    /// answer.
    fn conn(&self, headers: &HeaderMap, principal: &Option<String>) -> Result<Arc<HttpConn>, (StatusCode, &'static str)> {
        let Some(id) = header_str(headers, HEADER_CONNECTION_ID) else {
            return Err((StatusCode::BAD_REQUEST, "Missing Acp-Connection-Id"));
        };
        lock(&self.conns)
            .get(id)
            .filter(|c| c.principal == *principal)
            .cloned()
            .ok_or((StatusCode::NOT_FOUND, "Unknown Acp-Connection-Id"))
    }

    /// Takes a connection slot; `Err` (the 503 to answer) at the limit, past the memory
    /// budget, or once the listener is stopping.
    fn admit(&self) -> Result<(), Refused> {
        if self.stopping.is_cancelled() {
            return Err(Refused::Stopping);
        }
        if self.budget.over() {
            return Err(Refused::OverBudget);
        }
        let max = self.options.limits.max_connections;
        match self.live.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1)) {
            Ok(_) => Ok(()),
            Err(_) => Err(Refused::Full),
        }
    }

    /// Holds an incoming message's bytes while it is handled: a small one always, one of
    /// [`SHED_ABOVE`] bytes or more only when it fits in the budget.
    fn hold_message(&self, bytes: usize) -> Option<Held> {
        if bytes < SHED_ABOVE {
            return Some(self.budget.hold_while(bytes));
        }
        self.budget.try_hold(bytes)
    }

    fn remove(&self, id: &str) {
        let conn = lock(&self.conns).remove(id);
        if let Some(conn) = conn {
            conn.end(self);
        }
    }
}

/// Requests one HTTP connection may have waiting for their answers.
const MAX_OPEN_REQUESTS: usize = 4096;

/// A request id's text as the core writes it back, or `None` for one that cannot be routed.
fn routable_id(id: &str) -> Option<String> {
    if let Some(inner) = id.strip_prefix('"').and_then(|i| i.strip_suffix('"')) {
        return (inner.len() <= 1024 && !inner.contains('\\')).then(|| id.to_owned());
    }
    id.parse::<i64>().ok().map(|n| n.to_string())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here completes or changes nothing.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty())
}

fn text(status: StatusCode, body: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body.to_owned()).into_response()
}

/// Why a new connection was refused ([`Shared::admit`]).
enum Refused {
    Stopping,
    OverBudget,
    Full,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Refused::Stopping => text(StatusCode::SERVICE_UNAVAILABLE, "The agent is shutting down"),
            Refused::OverBudget => over_budget(),
            Refused::Full => text(StatusCode::SERVICE_UNAVAILABLE, "Too many connections (max_connections)"),
        }
    }
}

/// Why load was shed: the 503's text, the 1013 close's reason, the log line's.
const OVER_BUDGET: &str = "the agent is at its memory budget (max_memory)";

/// 503 for the memory budget: the client tries again later.
fn over_budget() -> Response {
    let mut response = text(StatusCode::SERVICE_UNAVAILABLE, &format!("{OVER_BUDGET}: try again later"));
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// A JSON-RPC error response (id `null`: the message was not one the core could take) as an
/// HTTP response's body.
fn json_rpc_error(status: StatusCode, error: &ErrorObject) -> Response {
    let body = jsonrpc::error_line(&RequestId::Null, error);
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Whether `host` (a `Host` header or an `:authority`, with or without a port) names this
/// machine's loopback interface.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, port)| if port.bytes().all(|b| b.is_ascii_digit()) { name } else { host }),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The CORS headers of a response to an allowed origin: the origin itself (never `*`: requests
/// carry credentials), and the ACP headers a page may read.
fn allow_origin(response: &mut Response, origin: &str) {
    if let Ok(value) = HeaderValue::from_str(origin) {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("Acp-Connection-Id, Acp-Session-Id"));
    }
}

/// The one endpoint: checks that apply to every method, then the method's handler.
async fn endpoint(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    body: Body,
) -> Response {
    if shared.loopback_only {
        // HTTP/1.1 names the host in `Host`, HTTP/2 in `:authority` (the URI's).
        let host = header_str(&headers, header::HOST.as_str()).or_else(|| uri.authority().map(|a| a.as_str()));
        if !host.is_some_and(loopback_host) {
            return text(
                StatusCode::MISDIRECTED_REQUEST,
                "This agent listens on loopback: the Host must be localhost or a loopback address",
            );
        }
    }
    let origin = header_str(&headers, header::ORIGIN.as_str()).map(str::to_owned);
    if let Some(origin) = &origin {
        if !shared.options.allowed_origins.iter().any(|o| o == origin) {
            return text(StatusCode::FORBIDDEN, "Origin not allowed");
        }
        // A browser's preflight carries no credentials: answered before authentication.
        if method == Method::OPTIONS {
            let mut response = StatusCode::NO_CONTENT.into_response();
            allow_origin(&mut response, origin);
            let h = response.headers_mut();
            h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, DELETE"));
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("Authorization, Content-Type, Accept, Acp-Connection-Id, Acp-Session-Id, Last-Event-ID"),
            );
            h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
            return response;
        }
    }
    let mut response = authorized_endpoint(&shared, method, headers, ws, body).await;
    if let Some(origin) = &origin {
        allow_origin(&mut response, origin);
    }
    response
}

async fn authorized_endpoint(
    shared: &Arc<Shared>,
    method: Method,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    body: Body,
) -> Response {
    let shared = Arc::clone(shared);
    let principal = match &shared.options.auth {
        Some(auth) => match auth.authorize(&headers) {
            Ok(principal) => principal,
            Err(reason) => {
                let mut response = text(StatusCode::UNAUTHORIZED, &reason);
                response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return response;
            }
        },
        None => None,
    };
    match method {
        Method::POST => post(shared, principal, headers, body).await,
        Method::GET => match ws.ok() {
            Some(ws) => upgrade(shared, principal, ws),
            None if header_str(&headers, header::UPGRADE.as_str()).is_some_and(|u| u.eq_ignore_ascii_case("websocket")) => {
                text(StatusCode::BAD_REQUEST, "Malformed WebSocket upgrade")
            }
            None => stream(shared, &principal, &headers),
        },
        // WebSocket over HTTP/2 (RFC 8441's extended CONNECT).
        Method::CONNECT => match ws.ok() {
            Some(ws) => upgrade(shared, principal, ws),
            None => text(StatusCode::METHOD_NOT_ALLOWED, "CONNECT is for a WebSocket over HTTP/2"),
        },
        Method::DELETE => match shared.conn(&headers, &principal) {
            Ok(conn) => {
                shared.remove(&conn.id);
                StatusCode::ACCEPTED.into_response()
            }
            Err((status, why)) => text(status, why),
        },
        _ => {
            let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "Use POST, GET or DELETE");
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

async fn post(shared: Arc<Shared>, principal: Option<String>, headers: HeaderMap, body: Body) -> Response {
    let json = header_str(&headers, header::CONTENT_TYPE.as_str())
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|ct| ct.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return text(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
    }
    let limits = &shared.options.limits;
    // The body is held against the memory budget from before it is read to after it is
    // handled (its announced length; the most a body may be when it announces none).
    let announced = header_str(&headers, header::CONTENT_LENGTH.as_str()).and_then(|n| n.trim().parse::<usize>().ok());
    let Some(_held) = shared.hold_message(announced.unwrap_or(limits.max_message_bytes).min(limits.max_message_bytes)) else {
        return over_budget();
    };
    let body = match tokio::time::timeout(limits.idle_timeout, axum::body::to_bytes(body, limits.max_message_bytes)).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => return text(StatusCode::PAYLOAD_TOO_LARGE, "The message is larger than max_message_bytes"),
        Err(_) => return text(StatusCode::REQUEST_TIMEOUT, "The request's body did not arrive within idle_timeout"),
    };
    if route::is_batch(&body) {
        // The RFD: batches are not supported on this transport.
        return json_rpc_error(StatusCode::NOT_IMPLEMENTED, &ErrorObject::invalid_request("JSON-RPC batches are not supported"));
    }
    let Some(envelope) = route::envelope(&body) else {
        return json_rpc_error(StatusCode::BAD_REQUEST, &ErrorObject::parse_error("the body is not a JSON object"));
    };
    let connection = header_str(&headers, HEADER_CONNECTION_ID);
    if envelope.method.as_deref() == Some(methods::INITIALIZE) && envelope.is_request() {
        return match connection {
            None => initialize(shared, principal, envelope, body).await,
            Some(_) => text(StatusCode::BAD_REQUEST, "initialize is not allowed on an existing connection"),
        };
    }
    let conn = match shared.conn(&headers, &principal) {
        Ok(c) => c,
        Err((status, why)) => return text(status, why),
    };
    conn.touch();
    let header_session = header_str(&headers, HEADER_SESSION_ID);
    if let Some(method) = &envelope.method {
        if (route::is_session_scoped(method) || envelope.params_session.is_some()) && header_session.is_none() {
            return text(StatusCode::BAD_REQUEST, "Missing Acp-Session-Id");
        }
        if let (Some(h), Some(p)) = (header_session, &envelope.params_session) {
            if h != p {
                return text(StatusCode::BAD_REQUEST, "Mismatched Acp-Session-Id");
            }
        }
        if let Some(id) = &envelope.id {
            // The answer is routed by its id's text, as the core writes it back: a string
            // without escapes, or an integer (anything else the core answers with a null id).
            let Some(id) = routable_id(id) else {
                return json_rpc_error(
                    StatusCode::BAD_REQUEST,
                    &ErrorObject::invalid_request("an id is a string (up to 1024 bytes, no escapes) or an integer"),
                );
            };
            if lock(&conn.routing).answers.len() >= MAX_OPEN_REQUESTS {
                return text(StatusCode::TOO_MANY_REQUESTS, "Too many requests waiting for their answers on this connection");
            }
            // `session/new` and `session/load` are answered on the connection's stream (the
            // client may not have the session's stream yet); other session methods on theirs.
            let to = match header_session {
                Some(s) if method != v1_methods::SESSION_LOAD && method != methods::SESSION_NEW => Route::Session(s.to_owned()),
                _ => Route::Connection,
            };
            lock(&conn.routing).answers.insert(id, to);
        }
    }
    match conn.link.receive_message(&body) {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(e) => text(StatusCode::SERVICE_UNAVAILABLE, &format!("The agent stopped: {e}")),
    }
}

/// `initialize` without a connection: a new connection, answered inline.
async fn initialize(shared: Arc<Shared>, principal: Option<String>, envelope: Envelope, body: Bytes) -> Response {
    if let Err(refused) = shared.admit() {
        return refused.into_response();
    }
    let id = uuid::Uuid::new_v4().to_string();
    let (link, mut lines) = shared.agent.connect_as(id.as_str().into(), shared.options.limits.max_buffered_bytes, principal.clone());
    let conn = Arc::new(HttpConn {
        id: id.clone(),
        principal,
        link,
        routing: Mutex::new(Routing {
            connection: Arc::new(Mailbox::new(&shared.budget)),
            sessions: HashMap::new(),
            answers: HashMap::new(),
        }),
        buffered: AtomicUsize::new(0),
        streams_open: AtomicUsize::new(0),
        last_active: Mutex::new(Instant::now()),
        ended: CancellationToken::new(),
    });
    if let Err(e) = conn.link.receive_message(&body) {
        conn.end(&shared);
        return text(StatusCode::SERVICE_UNAVAILABLE, &format!("The agent stopped: {e}"));
    }
    // The core answers `initialize` at once; anything it sent before is for the stream.
    let answer = loop {
        match lines.try_next() {
            Some(line) if route::envelope(line.as_bytes()).is_some_and(|e| e.is_response() && e.id == envelope.id) => {
                break Some(line)
            }
            Some(line) => {
                let _ = conn.route_line(line, &shared);
            }
            None => break None,
        }
    };
    let Some(answer) = answer else {
        conn.end(&shared);
        return text(StatusCode::INTERNAL_SERVER_ERROR, "The agent did not answer initialize");
    };
    lock(&shared.conns).insert(id.clone(), Arc::clone(&conn));
    if shared.stopping.is_cancelled() {
        // The listener began to stop after this was admitted: its drain may have missed it.
        shared.remove(&id);
        return text(StatusCode::SERVICE_UNAVAILABLE, "The agent is shutting down");
    }
    tokio::spawn(router(Arc::clone(&shared), conn, lines));
    let mut response = (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], answer).into_response();
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER_CONNECTION_ID, value);
    }
    response
}

/// Moves the core's lines for one HTTP connection to its streams until either ends.
async fn router(shared: Arc<Shared>, conn: Arc<HttpConn>, mut lines: Lines) {
    let limits = &shared.options.limits;
    'routing: loop {
        let line = tokio::select! {
            line = lines.next() => line,
            () = conn.ended.cancelled() => None,
        };
        let Some(line) = line else {
            if lines.shed() {
                eprintln!("acp-inject-remote: closing connection {}: {OVER_BUDGET}", conn.id);
            }
            break;
        };
        // What the core queued together (a resume's replay, say) goes to the streams whole
        // when the connection was within `max_buffered_bytes` as it came, as over WebSocket;
        // a connection still over it when more comes reads too slowly.
        let buffered = conn.buffered.load(Ordering::Relaxed);
        if buffered > limits.max_buffered_bytes {
            eprintln!(
                "acp-inject-remote: closing connection {}: the client read its streams too slowly (max_buffered_bytes)",
                conn.id
            );
            break;
        }
        let mut next = Some(line);
        while let Some(line) = next {
            if shared.budget.over() && conn.buffered.load(Ordering::Relaxed) + line.len() >= SHED_ABOVE {
                eprintln!("acp-inject-remote: closing connection {}: {OVER_BUDGET}", conn.id);
                break 'routing;
            }
            if let Err(reason) = conn.route_line(line, &shared) {
                eprintln!("acp-inject-remote: closing connection {}: {reason}", conn.id);
                break 'routing;
            }
            next = lines.try_next();
        }
    }
    shared.remove(&conn.id);
}

/// `GET` without an upgrade: the connection's stream, or a session's.
fn stream(shared: Arc<Shared>, principal: &Option<String>, headers: &HeaderMap) -> Response {
    let accepts = header_str(headers, header::ACCEPT.as_str()).is_some_and(|a| a.to_ascii_lowercase().contains("text/event-stream"));
    if !accepts {
        return text(StatusCode::NOT_ACCEPTABLE, "Accept must include text/event-stream");
    }
    let conn = match shared.conn(headers, principal) {
        Ok(c) => c,
        Err((status, why)) => return text(status, why),
    };
    conn.touch();
    let last = match header_str(headers, "last-event-id").map(|v| v.trim().parse::<u64>()) {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(_)) => return text(StatusCode::BAD_REQUEST, "Last-Event-ID is not an event id of this agent's"),
    };
    let mailbox = {
        let mut routing = lock(&conn.routing);
        match header_str(headers, HEADER_SESSION_ID) {
            None => Arc::clone(&routing.connection),
            Some(session) => {
                // 409, not the RFD's 404 for an unknown session: the official TypeScript
                // client takes any other status as the whole connection's failure, and 409 as
                // that session's (its requests fail, the connection goes on).
                if !routing.sessions.contains_key(session) {
                    if !shared.agent.is_live_for(&SessionId::from(session), principal.as_deref()) {
                        return text(StatusCode::CONFLICT, "Unknown Acp-Session-Id: the agent has no such session");
                    }
                    if !routing.make_room(shared.options.limits.max_sessions_per_connection) {
                        return text(StatusCode::CONFLICT, "Too many sessions on this connection (max_sessions_per_connection)");
                    }
                }
                Arc::clone(routing.sessions.entry(session.to_owned()).or_insert_with(|| Arc::new(Mailbox::new(&shared.budget))))
            }
        }
    };
    let (generation, cursor) = match mailbox.attach(last) {
        Ok(attached) => attached,
        Err((status, why)) => return text(status, why),
    };
    conn.streams_open.fetch_add(1, Ordering::Relaxed);
    let window = shared.options.limits.replay_window_bytes;
    let lease = Lease { mailbox, generation, cursor, conn };
    let events = futures_util::stream::unfold(lease, move |mut lease| async move {
        loop {
            let mailbox = Arc::clone(&lease.mailbox);
            // Made before looking, so a line pushed in between still wakes this stream.
            let changed = mailbox.changed.notified();
            match mailbox.next(lease.generation, lease.cursor, &lease.conn, window)? {
                Some((id, line)) => {
                    lease.cursor = id;
                    let event = Event::default().id(id.to_string()).data(line);
                    return Some((Ok::<_, std::convert::Infallible>(event), lease));
                }
                None => {
                    tokio::select! {
                        () = changed => {}
                        () = lease.conn.ended.cancelled() => return None,
                    }
                }
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(shared.options.limits.keepalive)).into_response()
}

/// `GET` with `Upgrade: websocket`: a full-duplex connection of its own.
/// A connection slot taken by [`Shared::admit`], given back when dropped: whether the upgrade
/// completes or not (a peer that leaves before or right after the `101` never runs the
/// socket's task), and whatever ends the task.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A core connection detached when dropped, however its task ends.
struct Attached(ClientLink);

impl Drop for Attached {
    fn drop(&mut self) {
        self.0.disconnect();
    }
}

fn upgrade(shared: Arc<Shared>, principal: Option<String>, ws: WebSocketUpgrade) -> Response {
    if let Err(refused) = shared.admit() {
        return refused.into_response();
    }
    let slot = Slot(Arc::clone(&shared));
    let id = uuid::Uuid::new_v4().to_string();
    let limits = shared.options.limits.clone();
    let header_id = HeaderValue::from_str(&id).ok();
    // Small socket buffers: tungstenite's defaults (128 KiB to read, 128 KiB to write) cost
    // a quarter of a megabyte per idle session; a message larger than the buffer still reads
    // whole (the buffer grows up to `max_message_bytes`).
    let mut response = ws
        .read_buffer_size(8 * 1024)
        .write_buffer_size(8 * 1024)
        .max_message_size(limits.max_message_bytes)
        .max_frame_size(limits.max_message_bytes)
        .on_upgrade(move |socket| websocket(shared, slot, id, principal, socket));
    if let Some(value) = header_id {
        response.headers_mut().insert(HEADER_CONNECTION_ID, value);
    }
    response
}

async fn websocket(shared: Arc<Shared>, _slot: Slot, id: String, principal: Option<String>, socket: WebSocket) {
    let limits = &shared.options.limits;
    let (link, mut lines) = shared.agent.connect_as(id.as_str().into(), limits.max_buffered_bytes, principal);
    let attached = Attached(link.clone());
    // The client's messages are handled in order by a task of their own, so the socket goes
    // on (pings answered, output written) while a message waits on the store; a client more
    // than `INBOX` messages ahead waits to be read.
    let (inbox, mut handling) = tokio::sync::mpsc::channel::<(Utf8Bytes, Held)>(INBOX);
    let (failed_tx, mut failed) = tokio::sync::oneshot::channel::<()>();
    let handler = tokio::spawn(async move {
        while let Some((text, _held)) = handling.recv().await {
            if link.receive_message(text.as_bytes()).is_err() {
                let _ = failed_tx.send(());
                return;
            }
        }
    });
    let (mut sink, mut frames) = socket.split();
    // The first ping one period from now (an interval's immediate first tick still waits for
    // the timer's next millisecond).
    let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + limits.keepalive, limits.keepalive);
    let mut last_heard = Instant::now();
    let close = |code: u16, reason: &str| Message::Close(Some(CloseFrame { code, reason: close_reason(reason).into() }));
    let mut peer_closed = false;
    let farewell = loop {
        tokio::select! {
            frame = frames.next() => {
                last_heard = Instant::now();
                match frame {
                    Some(Ok(Message::Text(text))) => {
                        let Some(held) = shared.hold_message(text.len()) else {
                            break Some(close(1013, &format!("{OVER_BUDGET}: try again later")));
                        };
                        if inbox.send((text, held)).await.is_err() {
                            break Some(stopped(&shared));
                        }
                    }
                    // The RFD: binary frames are ignored. Pings are answered by the socket.
                    Some(Ok(Message::Binary(_) | Message::Ping(_) | Message::Pong(_))) => {}
                    // The peer closed: its close is answered below (the closing handshake).
                    Some(Ok(Message::Close(_))) => {
                        peer_closed = true;
                        break None;
                    }
                    None => break None,
                    Some(Err(e)) => {
                        let (code, why) = read_error_close(e);
                        break Some(close(code, why));
                    }
                }
            }
            line = lines.next() => match line {
                Some(line) => {
                    // Taken from the queue (and the budget) a bounded batch at a time: a peer
                    // that stops reading holds the rest where the budget counts it.
                    let mut taken = line.len();
                    let mut batch = vec![line];
                    while taken < SHED_ABOVE {
                        let Some(more) = lines.try_next() else { break };
                        taken += more.len();
                        batch.push(more);
                    }
                    // A peer that stops reading stalls the write (TCP backpressure): it gets
                    // `idle_timeout` to take it, and a stopping listener does not wait. What
                    // it holds counts against the memory budget until written; past the
                    // budget, a stalled write of much is given up (the connection is shed).
                    let _in_flight = shared.budget.hold_while(taken);
                    let write = async {
                        for line in batch {
                            sink.feed(Message::Text(line.into())).await?;
                        }
                        sink.flush().await
                    };
                    let shed = async {
                        loop {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            if taken >= SHED_ABOVE && shared.budget.over() {
                                return;
                            }
                        }
                    };
                    let written = tokio::select! {
                        w = tokio::time::timeout(limits.idle_timeout, write) => matches!(w, Ok(Ok(()))),
                        () = shared.stopping.cancelled() => false,
                        () = shed => {
                            eprintln!("acp-inject-remote: closing connection {id}: {OVER_BUDGET}");
                            false
                        }
                    };
                    if !written {
                        break None;
                    }
                }
                None if lines.overflowed() => break Some(close(1008, "the client read too slowly (max_buffered_bytes)")),
                None if lines.shed() => break Some(close(1013, &format!("{OVER_BUDGET}: resume later"))),
                // The store failed, or (several hosts) another host took a session over:
                // the client learns why, and resumes elsewhere.
                None if shared.agent.stop_reason().is_some() => break Some(stopped(&shared)),
                None => break Some(close(1001, "the server is going away")),
            },
            _ = &mut failed => break Some(stopped(&shared)),
            () = shared.stopping.cancelled() => break Some(close(1001, "the agent is shutting down")),
            _ = keepalive.tick() => {
                if last_heard.elapsed() > limits.idle_timeout {
                    break Some(close(1001, "idle for longer than idle_timeout"));
                }
                if !matches!(tokio::time::timeout(limits.idle_timeout, sink.send(Message::Ping(Bytes::new()))).await, Ok(Ok(()))) {
                    break None;
                }
            }
        }
    };
    // What the client sent before it left is still handled, in order; then the core detaches it.
    drop(inbox);
    tokio::spawn(async move {
        let _ = handler.await;
        drop(attached);
    });
    if peer_closed {
        // The socket queued the answer to the peer's close; sending it completes the
        // handshake (without it the peer sees 1006, an abnormal end).
        let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
    }
    if let Some(frame) = farewell {
        // The closing handshake: send the close, then read until the peer's close (or a
        // second), so the peer reads the reason instead of a reset.
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            if sink.send(frame).await.is_ok() {
                while let Some(Ok(message)) = frames.next().await {
                    if matches!(message, Message::Close(_)) {
                        break;
                    }
                }
            }
        })
        .await;
    }
}

/// Client messages read from a WebSocket and not yet handled.
const INBOX: usize = 64;

/// The close for a connection whose agent stopped serving (its store failed).
fn stopped(shared: &Shared) -> Message {
    let why = shared.agent.stop_reason().unwrap_or_default();
    Message::Close(Some(CloseFrame { code: 1011, reason: close_reason(&format!("the agent stopped: {why}")).into() }))
}

/// The close code and reason for a frame that could not be read (RFC 6455, 7.4.1): 1009 for a
/// message over `max_message_bytes`, 1007 for text that is not UTF-8, 1002 for a protocol
/// error, 1011 otherwise.
fn read_error_close(e: axum::Error) -> (u16, &'static str) {
    use tokio_tungstenite::tungstenite::Error;
    let inner = e.into_inner();
    match inner.downcast_ref::<Error>() {
        Some(Error::Capacity(_)) => (1009, "message larger than max_message_bytes"),
        Some(Error::Utf8(_)) => (1007, "a text message that is not UTF-8"),
        Some(Error::Protocol(_)) => (1002, "a WebSocket protocol error"),
        _ => (1011, "the connection failed"),
    }
}

/// A close frame's reason: at most 123 bytes (RFC 6455), cut at a character boundary.
fn close_reason(reason: &str) -> String {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    reason[..end].to_owned()
}

/// Ends HTTP connections with no open stream and no request for longer than `idle_timeout`
/// (a client that vanished without `DELETE`).
async fn reap_idle(shared: Arc<Shared>) {
    let idle = shared.options.limits.idle_timeout;
    let mut tick = tokio::time::interval((idle / 4).max(Duration::from_millis(50)));
    loop {
        tick.tick().await;
        let stale: Vec<String> = lock(&shared.conns)
            .values()
            .filter(|c| c.streams_open.load(Ordering::Relaxed) == 0 && lock(&c.last_active).elapsed() > idle)
            .map(|c| c.id.clone())
            .collect();
        for id in stale {
            shared.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_close_reason_fits_a_close_frame_and_stays_utf8() {
        assert_eq!(super::close_reason("short"), "short");
        let long = "é".repeat(100); // 200 bytes
        let cut = super::close_reason(&long);
        assert!(cut.len() <= 123 && cut.len() >= 122, "{}", cut.len());
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
