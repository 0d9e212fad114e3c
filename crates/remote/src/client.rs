//! The client side: a [`Connection`] to an agent by URL. `ws://` and `wss://` connect over
//! WebSocket; `http://` and `https://` over Streamable HTTP (POST plus SSE streams). Either
//! way the bytes are bridged into the same client connection stdio uses, so the session API,
//! the mirror and the pending-inject behaviour are the same.
//!
//! A WebSocket that the network cuts is made again by itself ([`Endpoint::rejoin`]; the
//! [`crate::websocket`] module says how): the sessions are resumed with replay, and calls
//! whose answers were lost go again where that cannot do anything twice. When that fails, the
//! connection ends with [`TransportError::Closed`]; the sessions live on in the agent: connect
//! again and resume them ([`Connection::resume`] with replay), which brings back the
//! transcript and the pending list. Over Streamable HTTP a connection outlives its TCP
//! connections: an SSE stream that breaks is opened again from the last event
//! read, and a prompt or inject whose POST got no answer (the network broke after the agent
//! may have accepted it) is sent again with the same idempotency key, up to three more times
//! (after 0.1, 0.4 and 1.6 s), so it is accepted exactly once; any other request whose POST
//! got no answer ends the connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use acp_inject_core::wire::RequestId;
use acp_inject_transport::{ConnectOptions, Connection, TransportError};
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_util::bytes::Bytes;

use crate::route;
use crate::{HEADER_CONNECTION_ID, HEADER_SESSION_ID};

/// Where an agent listens, and how to reach it: its URL and the headers every request
/// carries (credentials, say). Its `Debug` shows neither header values nor a password in the
/// URL.
#[derive(Clone)]
pub struct Endpoint {
    url: String,
    headers: Vec<(String, String)>,
    pub(crate) max_message_bytes: usize,
    /// A WebSocket connection cut by the network is made again ([`Endpoint::rejoin`]).
    rejoin: bool,
    /// Roots trusted beyond the webpki ones (PEM), for `wss://` and `https://`.
    roots: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<String> = self.headers.iter().map(|(name, _)| format!("{name}: <redacted>")).collect();
        f.debug_struct("Endpoint")
            .field("url", &crate::redacted_url(&self.url))
            .field("headers", &headers)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("roots", &self.roots.len())
            .field("rejoin", &self.rejoin)
            .finish()
    }
}

/// The size of the in-memory pipe from the client connection to the network.
const PIPE_BYTES: usize = 256 * 1024;

/// What the network side hands the client connection: lines, then (when the connection ends
/// other than by the client's own close) why, as the read error the connection reports
/// (`AcpError.Disconnected` / [`TransportError::Closed`] with it).
#[derive(Clone)]
pub(crate) struct AppSide(mpsc::Sender<std::io::Result<Bytes>>);

impl AppSide {
    /// Hands one message to the client connection as a line; `false` once it is gone. Waits
    /// while it is behind, so a fast agent is slowed down by TCP rather than buffered here.
    pub(crate) async fn line(&self, mut line: String) -> bool {
        line.push('\n');
        self.0.send(Ok(Bytes::from(line))).await.is_ok()
    }

    /// Ends the connection, saying why.
    pub(crate) async fn end(&self, why: String) {
        let _ = self.0.send(Err(std::io::Error::other(why))).await;
    }
}

impl Endpoint {
    /// An agent at `url` (`ws://`, `wss://`, `http://` or `https://`, the `/acp` path
    /// included).
    pub fn new(url: impl Into<String>) -> Endpoint {
        Endpoint {
            url: url.into(),
            headers: Vec::new(),
            max_message_bytes: crate::Limits::default().max_message_bytes,
            roots: Vec::new(),
            rejoin: true,
        }
    }

    /// Whether a WebSocket connection that the network cut is made again (the default): the
    /// client connects again, repeats `initialize`, resumes every session of the connection
    /// with replay, and sends again the calls whose answers were lost where that cannot do
    /// anything twice (keyed prompts and injects, list, status, close, resume); other such
    /// calls fail with an error saying they may or may not have taken effect. After about
    /// 12 s of failed attempts, when the agent refuses the new connection, or when three new
    /// connections in a row fail again within 10 s of being made (a cause that comes back
    /// with every socket), the connection ends. With `false`, a cut ends the connection at
    /// once. Streamable HTTP connections
    /// outlive their TCP connections either way.
    #[must_use]
    pub fn rejoin(mut self, rejoin: bool) -> Endpoint {
        self.rejoin = rejoin;
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request.
    #[must_use]
    pub fn bearer(self, token: &str) -> Endpoint {
        self.header("Authorization", &format!("Bearer {token}"))
    }

    /// Sends this header with every request.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Endpoint {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Also trusts this root certificate (PEM) for TLS: a private CA, or a self-signed agent.
    /// The webpki roots are always trusted.
    #[must_use]
    pub fn root_certificate_pem(mut self, pem: &[u8]) -> Endpoint {
        self.roots.push(pem.to_vec());
        self
    }

    /// The TLS configuration of `wss://`: the webpki roots and the added ones, ring.
    fn tls(&self) -> Result<std::sync::Arc<rustls::ClientConfig>, TransportError> {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for pem in &self.roots {
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| TransportError::Io(format!("a root certificate: {e}")))?;
                roots.add(cert).map_err(|e| TransportError::Io(format!("a root certificate: {e}")))?;
            }
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TransportError::Io(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(std::sync::Arc::new(config))
    }

    /// The largest message accepted from the agent.
    #[must_use]
    pub fn max_message_bytes(mut self, bytes: usize) -> Endpoint {
        self.max_message_bytes = bytes;
        self
    }

    /// Connects and exchanges `initialize` (as [`Connection::over`] does).
    pub async fn connect(&self, options: ConnectOptions) -> Result<Connection, TransportError> {
        let scheme = self.url.split("://").next().unwrap_or("").to_ascii_lowercase();
        // The client connection writes into one end of a pipe the bridge reads, and reads the
        // bridge's lines (or the reason the connection ended) from a channel.
        let (app_out, bridge_in) = tokio::io::duplex(PIPE_BYTES);
        let (tx, rx) = mpsc::channel(256);
        let app = AppSide(tx);
        match scheme.as_str() {
            "ws" | "wss" => {
                let socket = self.open_websocket().await?;
                tokio::spawn(crate::websocket::bridge(self.clone(), socket, bridge_in, app, self.rejoin));
            }
            "http" | "https" => {
                let mut http = reqwest::Client::builder().cookie_store(true);
                for pem in &self.roots {
                    let cert =
                        reqwest::Certificate::from_pem(pem).map_err(|e| TransportError::Io(format!("a root certificate: {e}")))?;
                    http = http.add_root_certificate(cert);
                }
                let http = http.build().map_err(|e| TransportError::Io(format!("cannot build the HTTP client: {e}")))?;
                tokio::spawn(HttpBridge::new(http, self.clone(), app).run(bridge_in));
            }
            other => return Err(TransportError::Io(format!("unsupported URL scheme {other:?} (use ws, wss, http or https)"))),
        }
        let incoming = Box::pin(futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) }));
        Connection::over(tokio_util::io::StreamReader::new(incoming), app_out, options).await
    }

    pub(crate) async fn open_websocket(&self) -> Result<crate::websocket::Socket, TransportError> {
        let mut request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|e| TransportError::Io(format!("bad URL {}: {e}", crate::redacted_url(&self.url))))?;
        for (name, value) in &self.headers {
            let (Ok(name), Ok(value)) = (
                tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes()),
                tokio_tungstenite::tungstenite::http::HeaderValue::from_str(value),
            ) else {
                return Err(TransportError::Io(format!("bad header {name:?}")));
            };
            request.headers_mut().insert(name, value);
        }
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(self.max_message_bytes))
            .max_frame_size(Some(self.max_message_bytes));
        let connector = tokio_tungstenite::Connector::Rustls(self.tls()?);
        let (socket, _) =
            tokio_tungstenite::connect_async_tls_with_config(request, Some(config), false, Some(connector)).await.map_err(|e| {
                use tokio_tungstenite::tungstenite::Error;
                match e {
                    Error::Http(response) => {
                        let body = response.body().as_deref().unwrap_or_default();
                        let body = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_BYTES)]).into_owned();
                        TransportError::Handshake(format!("the agent refused the WebSocket: {} {}", response.status(), body.trim()))
                    }
                    other => TransportError::Io(format!("cannot connect to {}: {other}", crate::redacted_url(&self.url))),
                }
            })?;
        Ok(socket)
    }
}

/// A message as one line: a message with line breaks in it (pretty-printed JSON) is written
/// compactly, since the client connection frames by newlines.
pub(crate) fn as_line(text: &str) -> Option<String> {
    if !text.contains(['\n', '\r']) {
        return Some(text.to_owned());
    }
    serde_json::from_str::<serde_json::Value>(text).ok().map(|v| v.to_string())
}

/// Reads the client's next line (without its newline): `Ok(None)` at the end, `Err` for a line
/// longer than the limit (or not UTF-8), which ends the connection with that reason. `line`
/// holds what was read of the line so far, so a read dropped midway (in a `select!`) loses
/// nothing: call again with the same buffer.
pub(crate) async fn next_line(
    reader: &mut BufReader<DuplexStream>,
    line: &mut Vec<u8>,
    limit: usize,
) -> Result<Option<String>, String> {
    loop {
        let n = reader.read_until(b'\n', line).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(None);
        }
        if line.len() > limit + 1 {
            return Err(format!("this client wrote a message over max_message_bytes ({limit})"));
        }
        if line.ends_with(b"\n") {
            let mut whole = std::mem::take(line);
            whole.pop();
            if whole.ends_with(b"\r") {
                whole.pop();
            }
            if whole.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return String::from_utf8(whole).map(Some).map_err(|_| "this client wrote a message that is not UTF-8".to_owned());
        }
    }
}

/// The Streamable HTTP side of one connection.
struct HttpBridge {
    http: reqwest::Client,
    endpoint: Endpoint,
    /// Lines for the client connection (from any stream, or made here).
    app: AppSide,
    routes: Arc<Mutex<Routes>>,
    /// Cancelled when the bridge ends: its streams stop.
    closing: tokio_util::sync::CancellationToken,
}

/// A session's stream: opened once, every sender waiting for the same outcome.
type Opening = Arc<tokio::sync::OnceCell<Result<(), String>>>;

#[derive(Default)]
struct Routes {
    connection: Option<String>,
    /// Sessions whose stream is open, or opening.
    streams: HashMap<String, Opening>,
    /// The session stream each open agent request came on: its answer carries that session.
    agent_requests: HashMap<String, String>,
    /// The client's requests waiting for their answers on a session's stream, by id: failed
    /// if that stream ends first.
    waiting: HashMap<String, String>,
}

/// How long a stream may bring nothing, not even the agent's keepalive (every 15 s by
/// default), before the network is taken as gone.
pub(crate) const SILENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// The pauses before each new attempt of a keyed prompt or inject whose POST got no answer.
const RETRY_PAUSES: [std::time::Duration; 3] =
    [std::time::Duration::from_millis(100), std::time::Duration::from_millis(400), std::time::Duration::from_millis(1600)];

/// Whether the client's request (`method`, `line`) may be sent again when its answer was
/// lost without doing anything twice: a keyed prompt or inject ([`keyed_submission`]), a read
/// (`session/list`, `session/status`), `session/close` (a second is answered -32002, a
/// successful close for the client: C-CLOSE-2) or `session/resume`.
pub(crate) fn safe_again(method: &str, line: &str) -> bool {
    use acp_inject_core::wire::methods;
    keyed_submission(method, line)
        || matches!(method, methods::SESSION_LIST | methods::SESSION_STATUS | methods::SESSION_CLOSE | methods::SESSION_RESUME)
}

/// An error answer made here (-32603) for the client's request `id` (its JSON text).
pub(crate) fn failed_answer(id: &str, message: &str, data: Option<serde_json::Value>) -> String {
    use acp_inject_core::wire::errors::{ErrorObject, INTERNAL_ERROR};
    let id: RequestId = serde_json::from_str(id).unwrap_or(RequestId::Null);
    let error = ErrorObject { code: INTERNAL_ERROR, message: message.to_owned(), data };
    acp_inject_core::wire::jsonrpc::error_line(&id, &error)
}

/// The error message for a request whose answer was lost and that is not sent again.
pub(crate) fn lost_answer(method: &str, why: &str) -> String {
    format!(
        "the network dropped before the agent answered {method} ({why}); it is not sent twice: it may or may not have taken effect"
    )
}

/// A `session/prompt` or `session/inject` (`method`) carrying an `idempotencyKey`: sending
/// it again cannot submit it twice.
pub(crate) fn keyed_submission(method: &str, line: &str) -> bool {
    use acp_inject_core::wire::methods;
    #[derive(serde::Deserialize)]
    struct Keyed {
        params: Params,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "idempotencyKey")]
        key: Option<String>,
    }
    matches!(method, methods::SESSION_PROMPT | methods::SESSION_INJECT)
        && serde_json::from_str::<Keyed>(line).is_ok_and(|k| k.params.key.is_some())
}

/// A reqwest error's text without the URL it carries (which may hold a secret).
fn redacted_error(e: &reqwest::Error) -> String {
    match e.url() {
        Some(url) => e.to_string().replace(url.as_str(), &crate::redacted_url(url.as_str())),
        None => e.to_string(),
    }
}

/// Error bodies are read up to this many bytes (they are diagnostics).
const ERROR_BODY_BYTES: usize = 8 * 1024;

/// A response's body as text, read up to `cap` bytes.
async fn capped_text(response: reqwest::Response, cap: usize) -> String {
    let mut body = response.bytes_stream();
    let mut out = Vec::new();
    while let Some(Ok(chunk)) = body.next().await {
        let room = cap.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= cap {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl HttpBridge {
    fn new(http: reqwest::Client, endpoint: Endpoint, app: AppSide) -> HttpBridge {
        HttpBridge { http, endpoint, app, routes: Arc::default(), closing: tokio_util::sync::CancellationToken::new() }
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut request = self.http.request(method, &self.endpoint.url);
        for (name, value) in &self.endpoint.headers {
            request = request.header(name, value);
        }
        if let Some(id) = &lock(&self.routes).connection {
            request = request.header(HEADER_CONNECTION_ID, id);
        }
        request
    }

    /// An error answer for one of the client's requests that could not be delivered.
    async fn fail_request(&self, id: &str, message: &str, data: Option<serde_json::Value>) {
        self.app.line(failed_answer(id, message, data)).await;
    }

    async fn run(self, bridge: DuplexStream) {
        let mut reader = BufReader::new(bridge);
        let mut partial = Vec::new();
        let this = Arc::new(self);
        let limit = this.endpoint.max_message_bytes;
        loop {
            let sent = match next_line(&mut reader, &mut partial, limit).await {
                Ok(Some(line)) => this.send(&line).await,
                Ok(None) => break,
                Err(why) => Err(why),
            };
            if let Err(why) = sent {
                this.app.end(why).await;
                break;
            }
        }
        // The app closed (or the connection failed): the streams stop, and the connection
        // is ended on the agent (a DELETE that cannot be sent in a few seconds is given up).
        this.closing.cancel();
        if lock(&this.routes).connection.is_some() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), this.request(reqwest::Method::DELETE).send()).await;
        }
    }

    /// Sends one of the client's lines; `Err` says why the connection is over.
    async fn send(self: &Arc<Self>, line: &str) -> Result<(), String> {
        let envelope = route::envelope(line.as_bytes()).unwrap_or_default();
        let connected = lock(&self.routes).connection.is_some();
        if !connected {
            return self.initialize(line, &envelope).await;
        }
        let session = envelope.params_session.clone().or_else(|| {
            let id = envelope.id.as_ref().filter(|_| envelope.method.is_none())?;
            lock(&self.routes).agent_requests.remove(id)
        });
        if let Some(session) = &session {
            if let Err(message) = self.open_session_stream(session).await {
                if let (true, Some(id)) = (envelope.is_request(), &envelope.id) {
                    self.fail_request(id, &message, None).await;
                }
                return Ok(());
            }
        }
        let post = || {
            let request =
                self.request(reqwest::Method::POST).header(reqwest::header::CONTENT_TYPE, "application/json").body(line.to_owned());
            match &session {
                Some(session) => request.header(HEADER_SESSION_ID, session),
                None => request,
            }
        };
        if let (Some(session), true, Some(id)) = (&session, envelope.is_request(), &envelope.id) {
            lock(&self.routes).waiting.insert(id.clone(), session.clone());
        }
        let mut sent = post().send().await;
        // A request whose POST got no answer (the connection broke before the agent's status
        // line came back, so whether it was taken is unknown) goes again when that cannot do
        // anything twice: a keyed prompt or inject (the agent answers a retry with the
        // original id and never accepts it twice: R-IDEM-2; the same key on every attempt,
        // C-IDEM-1), or a read, close or resume. Any other request fails alone, saying so.
        if sent.is_err() && envelope.is_request() && envelope.method.as_deref().is_some_and(|m| safe_again(m, line)) {
            for pause in RETRY_PAUSES {
                tokio::time::sleep(pause).await;
                sent = post().send().await;
                if sent.is_ok() {
                    break;
                }
            }
        }
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                let why = format!("cannot reach the agent: {}", redacted_error(&e));
                let Some(id) = envelope.id.as_ref().filter(|_| envelope.is_request()) else { return Err(why) };
                lock(&self.routes).waiting.remove(id);
                let method = envelope.method.as_deref().unwrap_or_default();
                self.fail_request(id, &lost_answer(method, &why), None).await;
                return Ok(());
            }
        };
        if response.status().is_success() {
            return Ok(());
        }
        let status = response.status();
        let body = capped_text(response, ERROR_BODY_BYTES).await;
        let request_id = envelope.id.as_ref().filter(|_| envelope.is_request());
        if let Some(id) = request_id {
            lock(&self.routes).waiting.remove(id);
        }
        if matches!(status.as_u16(), 401 | 403 | 404 | 410) || request_id.is_none() {
            // The connection is unusable (credentials refused, or the agent forgot it), or a
            // notification or an answer (a permission outcome) was refused: nothing can say
            // so to the app but the connection's end.
            return Err(format!("the agent's endpoint ended the connection: HTTP {status}: {}", body.trim()));
        }
        if let Some(id) = request_id {
            /// What the SDK's client puts in such an error's data too.
            #[derive(serde::Serialize)]
            struct Refusal {
                status: u16,
                body: String,
            }
            let data = serde_json::to_value(Refusal { status: status.as_u16(), body }).ok();
            self.fail_request(id, &format!("the agent's endpoint refused the request: HTTP {status}"), data).await;
        }
        Ok(())
    }

    async fn initialize(self: &Arc<Self>, line: &str, envelope: &route::Envelope) -> Result<(), String> {
        if envelope.method.as_deref() != Some(acp_inject_core::wire::methods::INITIALIZE) {
            return Err("the first message over Streamable HTTP must be initialize".into());
        }
        let response = self
            .request(reqwest::Method::POST)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(line.to_owned())
            .send()
            .await
            .map_err(|e| format!("cannot reach the agent at {}: {}", crate::redacted_url(&self.endpoint.url), redacted_error(&e)))?;
        let status = response.status();
        let connection = response.headers().get(HEADER_CONNECTION_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let cap = if status.is_success() { self.endpoint.max_message_bytes } else { ERROR_BODY_BYTES };
        let body = capped_text(response, cap).await;
        if !status.is_success() {
            return Err(format!("the agent's endpoint refused initialize: HTTP {status}: {}", body.trim()));
        }
        let connection = connection.ok_or("the agent's initialize answer has no Acp-Connection-Id")?;
        lock(&self.routes).connection = Some(connection);
        // The connection's stream first, so nothing the agent sends next is missed.
        self.open_stream(None, None).await?;
        if let Some(line) = as_line(&body) {
            self.app.line(line).await;
        }
        Ok(())
    }

    /// Opens a session's stream unless it is open; every caller waits for the same outcome.
    /// Boxed: a stream's task opens the streams of the sessions its answers create, so the
    /// future refers to itself.
    fn open_session_stream(self: &Arc<Self>, session: &str) -> futures_util::future::BoxFuture<'static, Result<(), String>> {
        let this = Arc::clone(self);
        let session = session.to_owned();
        Box::pin(async move {
            let opening = Arc::clone(lock(&this.routes).streams.entry(session.clone()).or_default());
            let opened = opening.get_or_init(|| this.open_stream(Some(session.clone()), None)).await.clone();
            if opened.is_err() {
                this.forget_stream(&session, &opening, "");
            }
            opened
        })
    }

    /// Forgets a session's stream (the next message for the session opens it again) and
    /// fails the requests that were waiting for their answers on it.
    fn forget_stream(&self, session: &str, opening: &Opening, why: &str) -> Vec<String> {
        let mut routes = lock(&self.routes);
        if routes.streams.get(session).is_some_and(|o| Arc::ptr_eq(o, opening)) {
            routes.streams.remove(session);
        }
        if why.is_empty() {
            return Vec::new();
        }
        let waiting: Vec<String> = routes.waiting.iter().filter(|(_, s)| *s == session).map(|(id, _)| id.clone()).collect();
        for id in &waiting {
            routes.waiting.remove(id);
        }
        waiting
    }

    /// Opens an SSE stream (the connection's, or a session's) and forwards its events until it
    /// ends. Returns once the agent accepted the `GET`. `last` is the `Last-Event-ID` to
    /// resume from (a stream that died), sent when known.
    async fn open_stream(self: &Arc<Self>, session: Option<String>, last: Option<String>) -> Result<(), String> {
        let response = self.get_stream(session.as_deref(), last.as_deref()).await.map_err(|(_, why)| why)?;
        let this = Arc::clone(self);
        let opening = session.as_ref().and_then(|s| lock(&self.routes).streams.get(s).cloned());
        tokio::spawn(async move {
            let mut response = response;
            let mut last = last;
            let why = loop {
                let (why, resumable) = this.forward(response, session.as_deref(), &mut last).await;
                if this.closing.is_cancelled() {
                    return;
                }
                if !resumable {
                    break why;
                }
                // The stream died under a live connection (a network cut, a relay that gave
                // up): open it again from the last event read, so nothing the agent sent meanwhile
                // is lost. An agent that no longer keeps those events says so (410): the
                // connection ends, telling the app to resume the session.
                match this.reopen(session.as_deref(), last.as_deref()).await {
                    Ok(again) => response = again,
                    Err((Some(410), refused)) => {
                        this.app.end(format!("{why}; reopening it: {refused}")).await;
                        return;
                    }
                    Err((_, refused)) => break format!("{why}; reopening it: {refused}"),
                }
            };
            match (&session, &opening) {
                // The connection's stream ended: the connection is over.
                (None, _) => this.app.end(why).await,
                // A session's stream ended: the requests waiting on it fail; the next message
                // for the session opens it again.
                (Some(session), Some(opening)) => {
                    for id in this.forget_stream(session, opening, &why) {
                        this.fail_request(&id, &format!("the session's stream ended: {why}"), None).await;
                    }
                }
                (Some(_), None) => {}
            }
        });
        Ok(())
    }

    /// `GET` of a stream; `Err` carries the HTTP status, when there was one.
    async fn get_stream(&self, session: Option<&str>, last: Option<&str>) -> Result<reqwest::Response, (Option<u16>, String)> {
        let mut request = self.request(reqwest::Method::GET).header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(session) = session {
            request = request.header(HEADER_SESSION_ID, session);
        }
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last);
        }
        let response = request.send().await.map_err(|e| (None, format!("cannot open the agent's stream: {}", redacted_error(&e))))?;
        if !response.status().is_success() {
            let status = response.status();
            let body = capped_text(response, ERROR_BODY_BYTES).await;
            return Err((Some(status.as_u16()), format!("the agent refused the stream: HTTP {status}: {}", body.trim())));
        }
        Ok(response)
    }

    /// Opens a stream again from `last`, a few times over about two seconds.
    async fn reopen(&self, session: Option<&str>, last: Option<&str>) -> Result<reqwest::Response, (Option<u16>, String)> {
        let mut failed = (None, String::new());
        for wait in [50u64, 250, 700, 1500] {
            tokio::select! {
                () = tokio::time::sleep(std::time::Duration::from_millis(wait)) => {}
                () = self.closing.cancelled() => return Err((None, "the connection is closing".into())),
            }
            match self.get_stream(session, last).await {
                Ok(response) => return Ok(response),
                // Refusals that a retry will not change.
                Err((Some(status), why)) if status != 503 && status != 429 => return Err((Some(status), why)),
                Err(e) => failed = e,
            }
        }
        Err(failed)
    }

    /// Forwards a stream's events to the client connection until it ends, keeping the last
    /// event id read; says why it ended, and whether reopening it may resume it (the stream
    /// itself failed, the connection did not).
    async fn forward(
        self: &Arc<Self>,
        response: reqwest::Response,
        session: Option<&str>,
        last: &mut Option<String>,
    ) -> (String, bool) {
        let mut body = response.bytes_stream();
        let mut events = crate::sse::Parser::new(self.endpoint.max_message_bytes);
        let mut ready = std::collections::VecDeque::new();
        loop {
            let (id, data) = match ready.pop_front() {
                Some(event) => event,
                None => {
                    let chunk = tokio::select! {
                        c = tokio::time::timeout(SILENCE, body.next()) => c,
                        () = self.closing.cancelled() => return ("the connection is closing".into(), false),
                    };
                    match chunk {
                        Ok(Some(Ok(chunk))) => match events.push(&chunk, &mut ready) {
                            Ok(()) => continue,
                            Err(_) => return ("an event over max_message_bytes".into(), false),
                        },
                        Ok(Some(Err(e))) => return (format!("the stream failed: {e}"), true),
                        Ok(None) => return ("the agent's stream ended".into(), true),
                        Err(_) => return (format!("no word from the agent for {} s", SILENCE.as_secs()), true),
                    }
                }
            };
            let Some(line) = as_line(&data) else {
                *last = id.or(last.take());
                continue;
            };
            let envelope = route::envelope(line.as_bytes()).unwrap_or_default();
            if let (Some(session), true) = (session, envelope.is_request()) {
                if let Some(id) = &envelope.id {
                    lock(&self.routes).agent_requests.insert(id.clone(), session.to_owned());
                }
            }
            if envelope.is_response() {
                if let Some(id) = &envelope.id {
                    lock(&self.routes).waiting.remove(id);
                }
            }
            if let Some(new_session) = &envelope.result_session {
                let _ = self.open_session_stream(new_session).await;
            }
            if !self.app.line(line).await {
                return ("the client connection is gone".into(), false);
            }
            // Read: a reopen starts after it.
            if id.is_some() {
                *last = id;
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
