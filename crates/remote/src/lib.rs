//! ACP over the network for acp-inject: the upstream "Streamable HTTP & WebSocket Transport"
//! (RFD, Active since July 2026), agent side and client side, around the same cores as stdio.
//!
//! - [`listen`] serves an `acp_inject_transport::AgentServer` on one `/acp`
//!   endpoint: Streamable HTTP (`POST` messages, `GET` SSE streams scoped to the connection or
//!   to one session, `DELETE`) and WebSocket (`GET` with `Upgrade: websocket`), HTTP/1.1 and
//!   HTTP/2 cleartext on one port. Every network client is one connection of the agent's core,
//!   so sessions outlive connections: a client that reconnects resumes its sessions, with
//!   replay, and finds the transcript and the pending list as they were.
//! - [`Endpoint::connect`] connects to an agent by URL (`ws://`, `wss://`, `http://`,
//!   `https://`) and returns the same `acp_inject_transport::Connection` as a
//!   child process gives.
//!
//! ```no_run
//! use std::sync::Arc;
//! use acp_inject_remote::{listen, BearerToken, Endpoint, ListenOptions};
//! use acp_inject_transport::{AgentServer, ConnectOptions, ServeOptions};
//! # async fn demo(runtime: Arc<dyn acp_inject_transport::AgentRuntime>) -> Result<(), Box<dyn std::error::Error>> {
//! let agent = AgentServer::new(runtime, ServeOptions { config: Default::default(), store: None })?;
//! let options = ListenOptions { auth: Some(Arc::new(BearerToken::new("a-long-random-secret-token")?)), ..Default::default() };
//! let listener = listen(agent, "0.0.0.0:8080", options).await?;
//! tokio::spawn(listener.serve(std::future::pending()));
//!
//! let conn = Endpoint::new("ws://127.0.0.1:8080/acp").bearer("s3cret").connect(ConnectOptions::default()).await?;
//! let session = conn.new_session("/home/dev/project", vec![], vec![]).await?;
//! # let _ = session; Ok(()) }
//! ```
//!
//! # What the RFD leaves open, and what this crate does
//!
//! - **HTTP versions.** The RFD requires HTTP/2 for Streamable HTTP. The listener speaks
//!   HTTP/2 and HTTP/1.1 on the same port: with TLS ([`ListenOptions::tls`], rustls) the
//!   client picks by ALPN (`h2` offered first); without, HTTP/2 with prior knowledge (h2c) or
//!   HTTP/1.1, because common clients (Node's `fetch`, the official TypeScript SDK's client)
//!   send HTTP/1.1 to an `http://` URL. WebSocket works over HTTP/1.1's upgrade; HTTP/2's
//!   extended CONNECT (RFC 8441) is enabled and routed to the same handler, untested here (no
//!   client at hand speaks it). A TCP connection gets
//!   [`Limits::first_request_timeout`] (30 s) to finish its TLS handshake and send its first
//!   request's headers, HTTP/2 included, or it is closed; an HTTP/1.1 request gets as long for
//!   its headers and `idle_timeout` for its body. At most [`Limits::max_sockets`] TCP
//!   connections are open at once, authenticated or not: one more is closed as it is
//!   accepted. The client speaks TLS too (rustls, the webpki
//!   roots, plus any root given to [`Endpoint::root_certificate_pem`]).
//! - **Routing answers.** An answer goes to the stream of the session its request named
//!   (`Acp-Session-Id`), except `session/new` and `session/load`, answered on the
//!   connection's stream, as the RFD's diagrams show; requests and notifications go to the
//!   stream of the session their `params.sessionId` names, the rest to the connection's.
//!   Lines for a session whose stream is not open are kept until it opens.
//! - **A session stream before the session is on the connection.** After a reconnect the
//!   client opens the session's stream before it resumes the session; the listener accepts
//!   a `GET` for any session the agent has, and answers 404 for one it does not.
//! - **Batches** are answered `501 Not Implemented` with a JSON-RPC `-32600` body (the RFD).
//! - **Status codes:** 400 (missing or mismatched `Acp-Connection-Id` / `Acp-Session-Id`,
//!   `initialize` on an existing connection, a request id that is neither a string of up to
//!   1024 bytes without escapes nor an integer), 401 (the [`Authorize`] hook refused; with
//!   `WWW-Authenticate: Bearer`), 403 (an `Origin` not allowed), 404 (unknown connection),
//!   405, 406 (`Accept` without `text/event-stream`), 408 (a body slower than
//!   `idle_timeout`), 409 (a session the agent does not
//!   have, or one more than `max_sessions_per_connection`: the RFD says 404 for an unknown
//!   session, but the official TypeScript client takes any status but 409 on a session's
//!   stream as the whole connection's failure), 413 (a message over `max_message_bytes`), 415
//!   (`Content-Type` not `application/json`), 429 (more than 4,096 requests waiting for their
//!   answers), 503 (more connections than `max_connections`, or the agent stopped), 421 (a
//!   loopback listener asked for another host), 410 (a `Last-Event-ID` older than the kept
//!   window, below).
//! - **Resumable streams (an extension; the RFD leaves this to a later phase).** Every SSE
//!   event carries an `id:`, ascending per stream. A stream keeps the events it wrote, up to
//!   [`Limits::replay_window_bytes`], so a `GET` with `Last-Event-ID: N` (the HTML standard's
//!   reconnection header) sends every event after `N` again before the new ones: a line that
//!   a dying stream had taken is not lost. Past the window the `GET` is answered 410 (resume
//!   the session with replay instead); an id the stream never sent is 400. A new `GET` for a
//!   stream takes it over from the one before (which ends), rather than being refused: behind
//!   a relay that stopped forwarding, the agent may believe a dead stream is still open. This
//!   crate's client reopens a stream that died under a live connection by itself, from the
//!   last event it read; clients without `Last-Event-ID` get the stream from where the last
//!   one stopped writing, as before.
//! - **Keepalive:** an SSE comment, or a WebSocket ping, every [`Limits::keepalive`]. A
//!   WebSocket silent for [`Limits::idle_timeout`] is closed (1001); an HTTP connection with
//!   no open stream and no request for that long is ended.
//! - **Slow clients:** what waits for a client is counted; past
//!   [`Limits::max_buffered_bytes`] the connection is ended (WebSocket close 1008) rather than
//!   buffered further. Its sessions are not affected: the client resumes them.
//! - **Reconnection** is the client's: a dropped stream is reopened (above); a WebSocket the
//!   network cuts is opened again ([`Endpoint::rejoin`]), `initialize` repeated and every
//!   session of the connection resumed with replay, and the calls whose answers were lost go
//!   again where that cannot do anything twice (keyed prompts and injects, list, status,
//!   close, resume). An agent unreachable for about 12 s ends the `Connection`
//!   (`TransportError::Closed`); connect again and resume each session with replay. A dropped
//!   connection does not cancel its turns.
//! - **Principals.** The RFD leaves authentication to the deployment. The [`Authorize`] hook
//!   names the principal a request speaks for ([`BearerTokens`]: a token per principal); a
//!   connection keeps the one it was opened with (a request naming another gets 404, as for an
//!   unknown connection), and sees the sessions that principal created and no other (R-TENANT-1
//!   in `spec/rules.md`: another principal's session is answered as one the agent never had,
//!   and its session stream is refused 409 like an unknown session's).
//! - **Cookies** are kept for the connection's life on Streamable HTTP (the RFD requires it);
//!   the WebSocket upgrade is one request.
//!

#![warn(missing_docs)]

mod client;
mod route;
mod server;
mod sse;
mod websocket;

use std::time::Duration;

pub use client::Endpoint;
pub use server::{listen, ListenOptions, Listener};

/// The framing the transport reads from the network, for the fuzz targets: not part of the
/// API.
#[doc(hidden)]
pub mod fuzzing {
    /// Reads SSE bytes in the given chunks with an event limit: each event's data, or `None`
    /// when an event passed the limit.
    pub fn sse_events(chunks: &[&[u8]], limit: usize) -> Option<Vec<String>> {
        let mut parser = crate::sse::Parser::new(limit);
        let mut out = std::collections::VecDeque::new();
        for chunk in chunks {
            parser.push(chunk, &mut out).ok()?;
        }
        Some(out.into_iter().map(|(_, data)| data).collect())
    }

    /// What routing reads of a message: id, method, `params.sessionId`, `result.sessionId`,
    /// and whether it is a batch.
    pub fn envelope(text: &[u8]) -> (Option<[Option<String>; 4]>, bool) {
        let e = crate::route::envelope(text).map(|e| [e.id, e.method, e.params_session, e.result_session]);
        (e, crate::route::is_batch(text))
    }

    /// A received WebSocket text as the one line the client connection reads.
    pub fn as_line(text: &str) -> Option<String> {
        crate::client::as_line(text)
    }

    /// The listener's request handling in process, for the server fuzz target: a request goes
    /// through the same `/acp` endpoint as one from the network (authentication, CORS, routing,
    /// connections, streams), without a socket.
    pub struct Server {
        runtime: tokio::runtime::Runtime,
        service: hyper_util::service::TowerToHyperService<axum::Router>,
    }

    impl Server {
        /// A listener for an agent around `agent` (default configuration, sessions in memory)
        /// with `options`, bound (as far as `Host` checks go) to loopback or not.
        pub fn new(
            agent: std::sync::Arc<dyn acp_inject_transport::AgentRuntime>,
            options: crate::ListenOptions,
            loopback: bool,
        ) -> Server {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            let agent = {
                let _inside = runtime.enter();
                let serve = acp_inject_transport::ServeOptions { config: Default::default(), store: None };
                acp_inject_transport::AgentServer::new(agent, serve).expect("the default configuration")
            };
            let shared = crate::server::Shared::new(agent, options, loopback);
            Server { runtime, service: hyper_util::service::TowerToHyperService::new(crate::server::endpoint_router(&shared)) }
        }

        /// The status of the answer to one request (its body is not read: a stream's never
        /// ends); `None` when the request cannot be built (a bad method, header or URI).
        pub fn request(&self, method: &[u8], uri: &str, headers: &[(Vec<u8>, Vec<u8>)], body: Vec<u8>) -> Option<u16> {
            use hyper::service::Service;
            let mut request = axum::http::Request::builder().method(method).uri(uri);
            for (name, value) in headers {
                request = request.header(name.as_slice(), value.as_slice());
            }
            let request = request.body(axum::body::Body::from(body)).ok()?;
            let answer = self
                .runtime
                .block_on(async { tokio::time::timeout(std::time::Duration::from_secs(5), self.service.call(request)).await });
            match answer {
                Ok(Ok(response)) => Some(response.status().as_u16()),
                Ok(Err(never)) => match never {},
                Err(_) => panic!("a request went unanswered for 5 s"),
            }
        }

        /// One WebSocket connection in process: the upgrade (with `headers` added to it), then
        /// `client_bytes` written to the socket as they are (frames the fuzzer made), then the
        /// socket shut for writing. Everything the server wrote, until it closed the socket.
        /// Panics when the server has not closed it 5 s after the client's last byte.
        pub fn websocket(&self, headers: &str, client_bytes: &[u8]) -> WebSocketRun {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let service = self.service.clone();
            self.runtime.block_on(async move {
                let (client, server) = tokio::io::duplex(64 * 1024);
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(server);
                    // Half-closed: the client shuts its side for writing after its bytes, and
                    // the answer to the upgrade must still come.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .half_close(true)
                        .serve_connection(io, service)
                        .with_upgrades()
                        .await;
                });
                let (mut read, mut write) = tokio::io::split(client);
                // Read as the server writes, so its output never waits on the client's input.
                let reader = tokio::spawn(async move {
                    let mut all = Vec::new();
                    let _ = read.read_to_end(&mut all).await;
                    all
                });
                let head = format!(
                    "GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                     Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{headers}\r\n"
                );
                let _ = write.write_all(head.as_bytes()).await;
                let _ = write.write_all(client_bytes).await;
                let _ = write.shutdown().await;
                let all = match tokio::time::timeout(std::time::Duration::from_secs(5), reader).await {
                    Ok(Ok(all)) => all,
                    Ok(Err(e)) => panic!("the reader failed: {e}"),
                    Err(_) => panic!("the server kept the WebSocket open 5 s after the client's last byte"),
                };
                WebSocketRun::parse(&all)
            })
        }
    }

    /// What the server wrote on one WebSocket connection ([`Server::websocket`]).
    #[derive(Debug, Default)]
    pub struct WebSocketRun {
        /// The status of the answer to the upgrade.
        pub status: u16,
        /// The frames after a `101`: opcode and payload (a close's code is its first two
        /// bytes); `None` when the bytes after the last whole frame are not one.
        pub frames: Option<Vec<(u8, Vec<u8>)>>,
    }

    impl WebSocketRun {
        fn parse(all: &[u8]) -> WebSocketRun {
            let Some(end) = all.windows(4).position(|w| w == b"\r\n\r\n") else { return WebSocketRun::default() };
            let head = String::from_utf8_lossy(&all[..end]);
            let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            let frames = if status == 101 { server_frames(&all[end + 4..]) } else { Some(Vec::new()) };
            WebSocketRun { status, frames }
        }

        /// The code of the server's close frame, if it sent one with a code.
        pub fn close_code(&self) -> Option<u16> {
            self.frames
                .as_ref()?
                .iter()
                .find(|(op, _)| *op == 8)
                .and_then(|(_, p)| Some(u16::from_be_bytes([*p.first()?, *p.get(1)?])))
        }
    }

    /// Frames as a server writes them (unmasked, RFC 6455 5.2); `None` when the bytes are not
    /// whole frames.
    fn server_frames(mut bytes: &[u8]) -> Option<Vec<(u8, Vec<u8>)>> {
        let mut frames = Vec::new();
        while !bytes.is_empty() {
            let (&b0, rest) = bytes.split_first()?;
            let (&b1, rest) = rest.split_first()?;
            if b1 & 0x80 != 0 {
                return None; // a server never masks
            }
            let (len, rest) = match b1 & 0x7f {
                126 => (usize::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?)), &rest[2..]),
                127 => (usize::try_from(u64::from_be_bytes(rest.get(..8)?.try_into().ok()?)).ok()?, &rest[8..]),
                n => (usize::from(n), rest),
            };
            frames.push((b0 & 0x0f, rest.get(..len)?.to_vec()));
            bytes = &rest[len..];
        }
        Some(frames)
    }
}

/// The header that names a connection (returned by `initialize` and on the WebSocket `101`).
pub const HEADER_CONNECTION_ID: &str = "Acp-Connection-Id";
/// The header that names the session of a session-scoped request or stream.
pub const HEADER_SESSION_ID: &str = "Acp-Session-Id";

/// Limits of a listener. Each, when passed, gets a clear status (or WebSocket close code) and
/// affects only the connection that passed it.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The largest message (request body or WebSocket message): 413, or close 1009.
    pub max_message_bytes: usize,
    /// Connections at once, HTTP and WebSocket: 503.
    pub max_connections: usize,
    /// TCP connections open at once, before any authentication (Streamable HTTP may use
    /// several per connection): one more is closed as soon as it is accepted.
    pub max_sockets: usize,
    /// How long a TCP connection may go without sending a request (its headers whole, HTTP/1.1
    /// or HTTP/2) before it is closed; a TLS handshake gets the same time.
    pub first_request_timeout: Duration,
    /// Sessions whose messages one HTTP connection carries: 429.
    pub max_sessions_per_connection: usize,
    /// Bytes waiting for one client to read them: the connection is ended. One batch (what a
    /// request or an event produced: a resume's replay, say) that begins within the limit is
    /// queued whole, so a client can resume a session whose history is larger (over WebSocket
    /// and Streamable HTTP alike); a client still over the limit when the next batch comes is
    /// too far behind.
    pub max_buffered_bytes: usize,
    /// Bytes of events already written to a Streamable HTTP stream that it keeps, so a client
    /// whose stream died reconnects with `Last-Event-ID` and gets what it may have missed;
    /// past it, such a reconnect is answered 410 (resume the session instead).
    pub replay_window_bytes: usize,
    /// How long a connection may be silent (no request, no open stream, no frame).
    pub idle_timeout: Duration,
    /// How often an open stream or socket is kept alive.
    pub keepalive: Duration,
    /// The server's memory budget, in bytes, a ceiling: what it holds for clients (output not
    /// yet read, messages being handled, events kept for a reconnect) or, with
    /// [`Limits::memory_gauge`], what that gauge reads. From half of it, new
    /// connections are answered 503 (`Retry-After`), a message of 16 KiB or more that does not
    /// fit 503 or close 1013, and a connection holding 16 KiB or more of unread output is ended
    /// (close 1013; its client resumes later).
    pub max_memory: usize,
    /// The process's memory in use, measured by the host (a counting allocator, say), for
    /// [`Limits::max_memory`] to bound the whole process rather than its buffers.
    pub memory_gauge: Option<fn() -> usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 16 * 1024 * 1024,
            max_connections: 4096,
            max_sockets: 16_384,
            first_request_timeout: Duration::from_secs(30),
            max_sessions_per_connection: 256,
            max_buffered_bytes: 64 * 1024 * 1024,
            replay_window_bytes: 4 * 1024 * 1024,
            idle_timeout: Duration::from_secs(300),
            keepalive: Duration::from_secs(15),
            max_memory: 1024 * 1024 * 1024,
            memory_gauge: None,
        }
    }
}

impl Limits {
    /// Refuses limits a listener cannot run with (a zero time or count).
    pub fn check(&self) -> Result<(), RemoteError> {
        let zero = [
            ("max_message_bytes", self.max_message_bytes == 0),
            ("max_connections", self.max_connections == 0),
            ("max_sockets", self.max_sockets == 0),
            ("first_request_timeout", self.first_request_timeout.is_zero()),
            ("max_sessions_per_connection", self.max_sessions_per_connection == 0),
            ("max_buffered_bytes", self.max_buffered_bytes == 0),
            ("idle_timeout", self.idle_timeout.is_zero()),
            ("keepalive", self.keepalive.is_zero()),
            ("max_memory", self.max_memory == 0),
        ];
        match zero.iter().find(|(_, z)| *z) {
            Some((name, _)) => Err(RemoteError::Limits(format!("{name} must be more than zero"))),
            None => Ok(()),
        }
    }
}

/// A check of every request's headers, before anything else is done with it. Return `Err`
/// with what the client is told (401).
///
/// `Ok` names who the request speaks for, its *principal* (`None`: nobody in particular, as
/// with one token everyone shares). A connection keeps the principal of the request that
/// opened it: it lists, resumes and acts on the sessions that principal created and no other
/// (another principal's session is answered as one the agent does not know, R-TENANT-1), and a
/// later request on it that names another principal is answered as for an unknown connection.
pub trait Authorize: Send + Sync + 'static {
    /// `Ok(principal)` to let the request through.
    fn authorize(&self, headers: &axum::http::HeaderMap) -> Result<Option<String>, String>;
}

/// `Authorization: Bearer <token>`, compared in constant time.
#[derive(Clone)]
pub struct BearerToken(String);

/// The shortest bearer token a listener takes, in bytes: an empty or short one would leave the
/// agent open to anyone who guesses it (an empty token once matched a request without any).
pub const MIN_TOKEN_BYTES: usize = 16;

impl BearerToken {
    /// Accepts requests that carry this token. Refused ([`RemoteError::WeakToken`]) when it is
    /// shorter than [`MIN_TOKEN_BYTES`] (after trimming whitespace) or holds a character a
    /// header cannot carry.
    pub fn new(token: impl Into<String>) -> Result<BearerToken, RemoteError> {
        let token = token.into();
        if token.trim().len() < MIN_TOKEN_BYTES {
            return Err(RemoteError::WeakToken(format!(
                "a bearer token of {} bytes is too short: use at least {MIN_TOKEN_BYTES} (for example 32 random bytes, hex-encoded)",
                token.trim().len()
            )));
        }
        if token.bytes().any(|b| !(0x21..0x7f).contains(&b)) {
            return Err(RemoteError::WeakToken("a bearer token is visible ASCII without spaces (it travels in a header)".into()));
        }
        Ok(BearerToken(token))
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// Whether `given` is this token, in constant time in the token's length (every byte is
    /// compared whatever differs first).
    fn matches(&self, given: &str) -> bool {
        let (a, b) = (given.as_bytes(), self.0.as_bytes());
        // `b` is never empty (`new`), so a missing header (`a` empty) never matches.
        !b.is_empty() && a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// The bearer token a request carries (`""` without one).
fn bearer(headers: &axum::http::HeaderMap) -> &str {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .unwrap_or("")
}

const UNAUTHORIZED: &str = "Unauthorized: a valid bearer token is required";

/// One token everyone shares: no principal.
impl Authorize for BearerToken {
    fn authorize(&self, headers: &axum::http::HeaderMap) -> Result<Option<String>, String> {
        if self.matches(bearer(headers)) {
            Ok(None)
        } else {
            Err(UNAUTHORIZED.into())
        }
    }
}

/// A bearer token per principal (a user, a tenant): a request is that principal's when it
/// carries its token, and sees that principal's sessions only (R-TENANT-1). A shared token
/// (no principal) may stand beside them.
#[derive(Clone, Debug, Default)]
pub struct BearerTokens(Vec<(Option<String>, BearerToken)>);

impl BearerTokens {
    /// No token yet: every request is refused until one is added.
    pub fn new() -> BearerTokens {
        BearerTokens::default()
    }

    /// Adds `principal`'s token. Refused: a weak token ([`BearerToken::new`]), an empty
    /// principal, or a token or principal given twice.
    pub fn principal(self, principal: &str, token: impl Into<String>) -> Result<BearerTokens, RemoteError> {
        if principal.is_empty() {
            return Err(RemoteError::WeakToken("a principal's name is not empty".into()));
        }
        if self.0.iter().any(|(p, _)| p.as_deref() == Some(principal)) {
            return Err(RemoteError::WeakToken(format!("principal {principal:?} is named twice")));
        }
        self.add(Some(principal.to_owned()), token)
    }

    /// Adds a token everyone who holds it shares: no principal (the sessions created
    /// without one).
    pub fn shared(self, token: impl Into<String>) -> Result<BearerTokens, RemoteError> {
        self.add(None, token)
    }

    fn add(mut self, principal: Option<String>, token: impl Into<String>) -> Result<BearerTokens, RemoteError> {
        let token = BearerToken::new(token)?;
        if self.0.iter().any(|(_, t)| t.matches(&token.0)) {
            return Err(RemoteError::WeakToken("two principals cannot share a token".into()));
        }
        self.0.push((principal, token));
        Ok(self)
    }

    /// Whether no token was added.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Authorize for BearerTokens {
    fn authorize(&self, headers: &axum::http::HeaderMap) -> Result<Option<String>, String> {
        let given = bearer(headers);
        // Every token is compared, so the time says nothing of which one matched.
        let mut found = None;
        for (principal, token) in &self.0 {
            if token.matches(given) && found.is_none() {
                found = Some(principal.clone());
            }
        }
        found.ok_or_else(|| UNAUTHORIZED.into())
    }
}

/// `url` for messages and logs: a password in its user info (`user:secret@`) and the values of
/// query parameters that carry secrets (`password`, `token`, `key`, `secret`, …) replaced by
/// `<redacted>`.
pub fn redacted_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let base = match (base.find("://"), base.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = base[scheme + 3..at].split(':').next().unwrap_or("");
            let hidden = if base[scheme + 3..at].contains(':') { ":<redacted>" } else { "" };
            format!("{}{user}{hidden}@{}", &base[..scheme + 3], &base[at + 1..])
        }
        _ => base.to_owned(),
    };
    let Some(query) = query else { return base };
    let secret = |name: &str| {
        let name = name.to_ascii_lowercase();
        ["pass", "token", "key", "secret", "auth", "credential", "signature"].iter().any(|s| name.contains(s))
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if secret(name) => format!("{name}=<redacted>"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", pairs.join("&"))
}

/// A certificate chain and its private key, for a listener that serves TLS.
#[derive(Clone)]
pub struct TlsIdentity(std::sync::Arc<rustls::ServerConfig>);

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsIdentity(..)")
    }
}

impl TlsIdentity {
    /// From PEM: the certificate chain (the server's first) and its private key (PKCS#8,
    /// PKCS#1 or SEC1). ALPN offers `h2` then `http/1.1`.
    pub fn from_pem(cert_chain: &[u8], key: &[u8]) -> Result<TlsIdentity, RemoteError> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let bad = |what: &str, e: &dyn std::fmt::Display| RemoteError::Tls(format!("{what}: {e}"));
        let certs =
            CertificateDer::pem_slice_iter(cert_chain).collect::<Result<Vec<_>, _>>().map_err(|e| bad("the certificate chain", &e))?;
        if certs.is_empty() {
            return Err(RemoteError::Tls("the certificate chain holds no certificate".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| bad("the private key", &e))?;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad("the TLS versions", &e))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| bad("the certificate and key", &e))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(TlsIdentity(std::sync::Arc::new(config)))
    }
}

/// A listener failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address.
        addr: String,
        /// The OS error.
        reason: String,
    },
    /// A non-loopback address without an authentication hook.
    #[error(
        "refusing to listen on {addr} without authentication: anyone who can reach it could drive the agent. \
         Bind a loopback address (127.0.0.1, ::1), or set an authentication hook (a bearer token at least)"
    )]
    Unauthenticated {
        /// The address.
        addr: String,
    },
    /// Serving failed.
    #[error("I/O error: {0}")]
    Io(String),
    /// A limit a listener cannot run with.
    #[error("invalid limits: {0}")]
    Limits(String),
    /// The TLS certificate or key cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// A bearer token too short, or with characters a header cannot carry.
    #[error("refusing the bearer token: {0}")]
    WeakToken(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_messages_hide_secrets() {
        assert_eq!(redacted_url("wss://agents.example/acp"), "wss://agents.example/acp");
        assert_eq!(redacted_url("https://me:hunter2@agents.example/acp"), "https://me:<redacted>@agents.example/acp");
        assert_eq!(redacted_url("https://me@agents.example/acp"), "https://me@agents.example/acp");
        assert_eq!(
            redacted_url("https://agents.example/acp?password=hunter2&team=a&api_key=k&Token=t"),
            "https://agents.example/acp?password=<redacted>&team=a&api_key=<redacted>&Token=<redacted>"
        );
        let endpoint = crate::Endpoint::new("wss://me:hunter2@agents.example/acp?token=abc").bearer("0123456789abcdef-secret");
        let shown = format!("{endpoint:?}");
        assert!(!shown.contains("hunter2") && !shown.contains("abc") && !shown.contains("0123456789abcdef"), "{shown}");
        assert!(shown.contains("Authorization: <redacted>"), "{shown}");
    }
}
