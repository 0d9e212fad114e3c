//! The network transport end to end, in one process: an agent server behind `listen`, clients
//! connecting by URL over WebSocket and over Streamable HTTP, through a TCP relay the tests can
//! cut (a dropped network, as a phone sees it). Plus what a hostile or careless peer gets.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_inject_core::agent::{AgentConfig, BreakPoint, UserInput};
use acp_inject_core::client::{MirrorSnapshot, TurnState};
use acp_inject_core::wire::{ContentBlock, InjectMode, TextContent};
use acp_inject_remote::{listen, BearerToken, Endpoint, Limits, ListenOptions, RemoteError};
use acp_inject_transport::{AgentRuntime, AgentServer, ConnectOptions, Connection, ServeOptions, Session, TurnContext, TurnEnd};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(Box::new(TextContent::new(t)))]
}

fn text_of(c: &[ContentBlock]) -> String {
    c.iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.clone(),
            _ => String::new(),
        })
        .collect()
}

/// Turns stream one chunk, wait for the test to open their gate, reach a break-point (where
/// steers are delivered) and end. Everything the runtime was handed is recorded, in order.
#[derive(Default)]
struct Gated {
    gates: Mutex<HashMap<String, Arc<Notify>>>,
    heard: Mutex<Vec<String>>,
}

impl Gated {
    fn gate(&self, session: &str) -> Arc<Notify> {
        Arc::clone(self.gates.lock().unwrap().entry(session.to_owned()).or_default())
    }

    fn heard(&self) -> Vec<String> {
        self.heard.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl AgentRuntime for Gated {
    async fn run_turn(&self, turn: TurnContext, input: Vec<UserInput>) -> TurnEnd {
        for i in &input {
            self.heard.lock().unwrap().push(text_of(&i.content));
        }
        let id = turn.new_message_id();
        turn.send_text(&id, "working").unwrap();
        let gate = self.gate(turn.session_id());
        tokio::select! {
            () = gate.notified() => {}
            () = turn.cancelled() => return TurnEnd::cancelled(),
        }
        for steer in turn.break_point(BreakPoint::ToolResult).unwrap() {
            self.heard.lock().unwrap().push(text_of(&steer.content));
        }
        turn.send_text(&id, " done").unwrap();
        TurnEnd::end_turn()
    }
}

fn config() -> AgentConfig {
    let inject = serde_json::from_value(serde_json::json!({
        "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": ["finish"]
    }))
    .unwrap();
    AgentConfig { inject: Some(inject), ..Default::default() }
}

async fn agent(runtime: Arc<Gated>, options: ListenOptions) -> (AgentServer, SocketAddr) {
    let server = AgentServer::new(runtime, ServeOptions { config: config(), store: None }).unwrap();
    let listener = listen(server.clone(), "127.0.0.1:0", options).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(listener.serve(std::future::pending()));
    (server, addr)
}

/// A TCP relay to `to`: `cut` drops every connection through it at once, both ways.
struct Relay {
    addr: SocketAddr,
    task: JoinHandle<()>,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Relay {
    async fn to(to: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let links: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let l = Arc::clone(&links);
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let link = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                l.lock().unwrap().push(link);
            }
        });
        Relay { addr, task, links }
    }

    /// The network goes for good: no more connections either.
    fn cut(&self) {
        self.task.abort();
        self.cut_links();
    }

    /// Drops every connection open now, both ways; new ones are still relayed.
    fn cut_links(&self) {
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }
}

async fn until(session: &Session, what: &str, done: impl Fn(&MirrorSnapshot) -> bool) -> MirrorSnapshot {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            session.take_events();
            if let Some(s) = session.snapshot().filter(|s| done(s)) {
                return s;
            }
            if session.next_events().await.is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}; snapshot {:#?}", session.snapshot()))
}

fn agent_pending(s: &MirrorSnapshot) -> Vec<(InjectMode, String)> {
    s.agent_pending.iter().flatten().map(|p| (p.mode, text_of(&p.content))).collect()
}

/// How the network comes back in [`survives_a_dropped_network`].
#[derive(Clone, Copy, Debug, PartialEq)]
enum Back {
    /// The relay goes on accepting: the same connection carries on (a WebSocket is made
    /// again by the client, Streamable HTTP reopens its streams).
    Same,
    /// The relay is gone: the connection ends (a WebSocket client that does not rejoin), and
    /// a new one straight to the agent resumes the session with replay.
    ByHand,
}

/// The whole story for one profile: a session with queue, steer, revoke and replace; the
/// network cut mid-turn; the transcript and the pending list intact afterwards, on the same
/// connection or on a new one that resumed with replay; then every accepted message
/// delivered exactly once.
async fn survives_a_dropped_network(scheme: &str, back: Back) {
    let runtime = Arc::new(Gated::default());
    let (_server, addr) = agent(Arc::clone(&runtime), ListenOptions::default()).await;
    let relay = Relay::to(addr).await;
    let url = |a: SocketAddr| format!("{scheme}://{a}/acp");

    let endpoint = Endpoint::new(url(relay.addr)).rejoin(back == Back::Same);
    let conn = endpoint.connect(ConnectOptions::default()).await.unwrap();
    let s = conn.new_session("/home/dev/app", vec![], vec![]).await.unwrap();
    let session_id = s.id().to_owned();
    s.prompt(text("first")).await.unwrap();
    until(&s, "the turn to run", |s| s.state == TurnState::Running).await;
    s.inject(InjectMode::Queue, text("later")).await.unwrap();
    s.inject(InjectMode::Steer, text("now")).await.unwrap();
    let gone = s.inject(InjectMode::Queue, text("revoke me")).await.unwrap();
    s.revoke(&gone).await.unwrap();
    let old = s.inject(InjectMode::Queue, text("old")).await.unwrap();
    s.replace(&old, text("new")).await.unwrap();
    let expected =
        vec![(InjectMode::Steer, "now".to_owned()), (InjectMode::Queue, "later".to_owned()), (InjectMode::Queue, "new".to_owned())];
    let before = until(&s, "the pending list", |s| agent_pending(s) == expected).await;

    // The network goes away mid-turn.
    let (conn, s) = match back {
        Back::Same => {
            relay.cut_links();
            // A call made now waits for the network, and is answered on the new one.
            let status = s.status().await.expect("the status call is answered after the cut");
            assert!(matches!(status.state, Some(acp_inject_core::wire::StateUpdate::Running(_))), "{status:?}");
            (conn, s)
        }
        Back::ByHand => {
            relay.cut();
            let err = tokio::time::timeout(Duration::from_secs(10), async {
                loop {
                    if let Err(e) = s.next_events().await {
                        return e;
                    }
                }
            })
            .await
            .expect("the client notices the dropped connection");
            drop(conn);
            assert!(
                matches!(err, acp_inject_transport::TransportError::Closed { .. } | acp_inject_transport::TransportError::Io(_)),
                "{err:?}"
            );
            // A new connection (the network is back) resumes the session with replay.
            let conn = Endpoint::new(url(addr)).connect(ConnectOptions::default()).await.unwrap();
            let s = conn.resume(&session_id, "/home/dev/app", true).await.unwrap();
            (conn, s)
        }
    };
    let after = until(&s, "the replay and the pending list", |s| agent_pending(s) == expected && s.state == TurnState::Running).await;
    assert_eq!(after.transcript.len(), before.transcript.len(), "{:#?}\n{:#?}", after.transcript, before.transcript);
    for (a, b) in after.transcript.iter().zip(&before.transcript) {
        assert_eq!((a.role, &a.message_id, text_of(&a.content)), (b.role, &b.message_id, text_of(&b.content)));
    }

    // The turn goes on: the steer is delivered at its break-point, then the queue opens the
    // next turn; each accepted message reaches the runtime once, the revoked one never.
    runtime.gate(&session_id).notify_one();
    until(&s, "the queued turn", |s| s.state == TurnState::Running && agent_pending(s).is_empty()).await;
    runtime.gate(&session_id).notify_one();
    let done = until(&s, "idle", |s| s.state == TurnState::Idle).await;
    assert_eq!(runtime.heard(), ["first", "now", "later", "new"]);
    let users: Vec<String> =
        done.transcript.iter().filter(|e| e.role == acp_inject_core::client::MessageRole::User).map(|e| text_of(&e.content)).collect();
    assert_eq!(users, ["first", "now", "later", "new"], "each once in the mirror");
    assert!(done.violations.is_empty(), "{:?}", done.violations);
    s.close().await.unwrap();
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_survives_a_dropped_network() {
    survives_a_dropped_network("ws", Back::Same).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_without_rejoin_ends_and_is_resumed_by_hand() {
    survives_a_dropped_network("ws", Back::ByHand).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_survives_a_dropped_network() {
    survives_a_dropped_network("http", Back::Same).await;
}

#[tokio::test]
async fn a_public_address_without_authentication_is_refused() {
    let server = AgentServer::new(Arc::new(Gated::default()), ServeOptions { config: config(), store: None }).unwrap();
    let err = listen(server.clone(), "0.0.0.0:0", ListenOptions::default()).await.unwrap_err();
    assert!(matches!(err, RemoteError::Unauthenticated { .. }), "{err:?}");
    assert!(err.to_string().contains("without authentication"), "{err}");
    // An empty or short token is refused, so it cannot stand for authentication.
    for weak in ["", "t", "               x", "with a space in it, long enough"] {
        let err = BearerToken::new(weak).map(drop).unwrap_err();
        assert!(matches!(err, RemoteError::WeakToken(_)), "{weak:?}: {err:?}");
    }
    let options = ListenOptions { auth: Some(Arc::new(BearerToken::new("0123456789abcdef").unwrap())), ..Default::default() };
    assert!(listen(server.clone(), "0.0.0.0:0", options).await.is_ok());
    // Limits it cannot run with are refused before anything listens.
    let limits = Limits { keepalive: Duration::ZERO, ..Default::default() };
    let err = listen(server, "127.0.0.1:0", ListenOptions { limits, ..Default::default() }).await.unwrap_err();
    assert!(matches!(&err, RemoteError::Limits(why) if why.contains("keepalive")), "{err:?}");
}

/// A token long enough for a listener.
const SECRET: &str = "s3cret-s3cret-s3cret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_required_when_set() {
    let options = ListenOptions { auth: Some(Arc::new(BearerToken::new(SECRET).unwrap())), ..Default::default() };
    let (_server, addr) = agent(Arc::new(Gated::default()), options).await;
    let Err(err) = Endpoint::new("ftp://127.0.0.1:1/acp").connect(ConnectOptions::default()).await else { panic!("ftp accepted") };
    assert!(err.to_string().contains("unsupported URL scheme"), "{err}");
    for scheme in ["ws", "http"] {
        let url = format!("{scheme}://{addr}/acp");
        let refused = Endpoint::new(&url).bearer("wrong").connect(ConnectOptions::default()).await;
        let err = refused.err().unwrap_or_else(|| panic!("{scheme}: a wrong token connected"));
        assert!(err.to_string().contains("401"), "{scheme}: {err}");
        let conn: Connection = Endpoint::new(&url).bearer(SECRET).connect(ConnectOptions::default()).await.unwrap();
        conn.new_session("/tmp", vec![], vec![]).await.unwrap();
        conn.close().await;
    }
}

/// Raw HTTP against the endpoint: each malformed or hostile request gets its status, and the
/// listener keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_clear_statuses() {
    let limits = Limits { max_message_bytes: 4096, ..Default::default() };
    let options = ListenOptions { allowed_origins: vec!["https://app.example".into()], limits, ..Default::default() };
    let (_server, addr) = agent(Arc::new(Gated::default()), options).await;
    let url = format!("http://{addr}/acp");
    let http = reqwest::Client::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{},"info":{"name":"t","version":"1"}}}"#;
    let post = |body: &str| http.post(&url).header("Content-Type", "application/json").body(body.to_owned());
    let status = |r: reqwest::Response| r.status().as_u16();

    assert_eq!(status(http.post(&url).header("Content-Type", "text/plain").body(init).send().await.unwrap()), 415);
    assert_eq!(status(post("[1, 2]").send().await.unwrap()), 501);
    assert_eq!(status(post("{not json").send().await.unwrap()), 400);
    assert_eq!(status(post(&"x".repeat(10_000)).send().await.unwrap()), 413);
    let stray = r#"{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}"#;
    assert_eq!(status(post(stray).send().await.unwrap()), 400, "no Acp-Connection-Id");
    assert_eq!(status(post(stray).header("Acp-Connection-Id", "nope").send().await.unwrap()), 404);
    assert_eq!(status(http.get(&url).header("Accept", "text/event-stream").send().await.unwrap()), 400);
    assert_eq!(status(http.get(&url).send().await.unwrap()), 406);
    assert_eq!(status(http.delete(&url).header("Acp-Connection-Id", "nope").send().await.unwrap()), 404);
    assert_eq!(status(http.put(&url).send().await.unwrap()), 405);
    assert_eq!(status(post(init).header("Origin", "https://evil.example").send().await.unwrap()), 403);

    // A real connection: initialize answered inline, then the session rules.
    let answer = post(init).header("Origin", "https://app.example").send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let conn = answer.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let body: serde_json::Value = serde_json::from_str(&answer.text().await.unwrap()).unwrap();
    assert_eq!(body["result"]["protocolVersion"], 2, "{body}");
    assert_eq!(status(post(init).header("Acp-Connection-Id", &conn).send().await.unwrap()), 400, "initialize twice");
    let prompt = r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#;
    assert_eq!(status(post(prompt).header("Acp-Connection-Id", &conn).send().await.unwrap()), 400, "no Acp-Session-Id");
    let mismatched = post(prompt).header("Acp-Connection-Id", &conn).header("Acp-Session-Id", "other");
    assert_eq!(status(mismatched.send().await.unwrap()), 400);
    let unknown =
        http.get(&url).header("Accept", "text/event-stream").header("Acp-Connection-Id", &conn).header("Acp-Session-Id", "s");
    assert_eq!(status(unknown.send().await.unwrap()), 409, "a session the agent does not have (409: see the crate docs)");
    let stream = http.get(&url).header("Accept", "text/event-stream").header("Acp-Connection-Id", &conn).send().await.unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    // A second GET takes the stream over (the first may be dead behind a relay); the first ends.
    let second = http.get(&url).header("Accept", "text/event-stream").header("Acp-Connection-Id", &conn).send().await.unwrap();
    assert_eq!(second.status().as_u16(), 200, "a new receiver takes the stream over");
    {
        use futures_util::StreamExt;
        let mut first = stream.bytes_stream();
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(chunk) = first.next().await {
                if chunk.is_err() {
                    break;
                }
            }
        });
        ended.await.expect("the first stream ended when the second took over");
    }
    let stream = second;
    let bad = http.get(&url).header("Accept", "text/event-stream").header("Acp-Connection-Id", &conn).header("Last-Event-ID", "x");
    assert_eq!(status(bad.send().await.unwrap()), 400, "a Last-Event-ID that is not an id");
    // A request id that cannot be routed back (an object) is refused.
    let odd = r#"{"jsonrpc":"2.0","id":{"a":1},"method":"session/list","params":{}}"#;
    assert_eq!(status(post(odd).header("Acp-Connection-Id", &conn).send().await.unwrap()), 400);
    // A message the core refuses is answered on the stream, not by HTTP.
    assert_eq!(
        status(post("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"}").header("Acp-Connection-Id", &conn).send().await.unwrap()),
        202
    );
    let mut body = stream.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("-32601") {
        use futures_util::StreamExt;
        let chunk =
            tokio::time::timeout(Duration::from_secs(5), body.next()).await.expect("the answer on the stream").unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    // Each event carries its id, for a reconnect's Last-Event-ID.
    assert!(seen.starts_with("id: 1\ndata: ") && seen.contains(r#""id":3"#), "{seen}");
    assert_eq!(status(http.delete(&url).header("Acp-Connection-Id", &conn).send().await.unwrap()), 202);
    assert_eq!(status(post(stray).header("Acp-Connection-Id", &conn).send().await.unwrap()), 404, "after DELETE");
}

/// The RFD requires HTTP/2: the listener speaks it in cleartext (prior knowledge) on the same
/// port as HTTP/1.1, streams included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_cleartext_is_served() {
    let (_server, addr) = agent(Arc::new(Gated::default()), ListenOptions::default()).await;
    let url = format!("http://{addr}/acp");
    let http = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{},"info":{"name":"t","version":"1"}}}"#;
    let answer = http.post(&url).header("Content-Type", "application/json").body(init).send().await.unwrap();
    assert_eq!((answer.status().as_u16(), answer.version()), (200, reqwest::Version::HTTP_2));
    let conn = answer.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let stream = http.get(&url).header("Accept", "text/event-stream").header("Acp-Connection-Id", &conn).send().await.unwrap();
    assert_eq!((stream.status().as_u16(), stream.version()), (200, reqwest::Version::HTTP_2));
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
}

/// Stopping the listener ends the connections still open (an SSE stream and a WebSocket would
/// otherwise keep its graceful shutdown waiting forever): `serve` returns, the clients see the
/// end (the WebSocket client after trying to connect again for about 12 s: a 1001 may be a
/// restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_listener_ends_open_connections() {
    let server = AgentServer::new(Arc::new(Gated::default()), ServeOptions { config: config(), store: None }).unwrap();
    let listener = listen(server, "127.0.0.1:0", ListenOptions::default()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(listener.serve(async move {
        let _ = stopped.await;
    }));
    let mut sessions = Vec::new();
    for scheme in ["ws", "http"] {
        let conn = Endpoint::new(format!("{scheme}://{addr}/acp")).connect(ConnectOptions::default()).await.unwrap();
        sessions.push((conn.new_session("/tmp", vec![], vec![]).await.unwrap(), conn));
    }
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), served).await.expect("serve returns").unwrap().unwrap();
    for (session, _conn) in &sessions {
        let ended = tokio::time::timeout(Duration::from_secs(20), async { while session.next_events().await.is_ok() {} });
        ended.await.expect("the client sees the connection end");
    }
}

/// TLS: `wss://` and `https://` to a listener with a certificate the client trusts (a
/// self-signed one here, given as a root); HTTP/2 is chosen by ALPN; a client that does not
/// trust the certificate is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_both_profiles_and_http2_by_alpn() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.key_pair.serialize_pem());
    let tls = acp_inject_remote::TlsIdentity::from_pem(cert_pem.as_bytes(), key_pem.as_bytes()).unwrap();
    let server = AgentServer::new(Arc::new(Gated::default()), ServeOptions { config: config(), store: None }).unwrap();
    let options = ListenOptions { tls: Some(tls), ..Default::default() };
    let listener = listen(server, "127.0.0.1:0", options).await.unwrap();
    let url = listener.url().unwrap();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(listener.serve(std::future::pending()));

    for scheme in ["wss", "https"] {
        let url = format!("{scheme}://localhost:{port}/acp");
        let conn = Endpoint::new(&url).root_certificate_pem(cert_pem.as_bytes()).connect(ConnectOptions::default()).await.unwrap();
        conn.new_session("/tmp", vec![], vec![]).await.unwrap();
        conn.close().await;
        let untrusted = Endpoint::new(&url).connect(ConnectOptions::default()).await;
        assert!(untrusted.is_err(), "{scheme}: a certificate the client does not trust was accepted");
    }
    let http =
        reqwest::Client::builder().add_root_certificate(reqwest::Certificate::from_pem(cert_pem.as_bytes()).unwrap()).build().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{},"info":{"name":"t","version":"1"}}}"#;
    let answer =
        http.post(format!("https://localhost:{port}/acp")).header("Content-Type", "application/json").body(init).send().await.unwrap();
    assert_eq!((answer.status().as_u16(), answer.version()), (200, reqwest::Version::HTTP_2));
    assert!(acp_inject_remote::TlsIdentity::from_pem(b"not a certificate", key_pem.as_bytes()).is_err());
}

/// Each limit answers with its own status or close code, and affects only the connection that
/// passed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_limit_has_its_own_clear_error() {
    let limits = Limits {
        max_connections: 2,
        max_sessions_per_connection: 1,
        idle_timeout: Duration::from_millis(400),
        keepalive: Duration::from_millis(100),
        ..Default::default()
    };
    let (_server, addr) = agent(Arc::new(Gated::default()), ListenOptions { limits, ..Default::default() }).await;
    let http_url = format!("http://{addr}/acp");
    let ws_url = format!("ws://{addr}/acp");

    // Sessions per connection: the second session's stream is refused (429), and its calls
    // fail with that reason; the first session is unaffected.
    let conn = Endpoint::new(&http_url).connect(ConnectOptions::default()).await.unwrap();
    let first = conn.new_session("/tmp", vec![], vec![]).await.unwrap();
    let second = conn.new_session("/tmp", vec![], vec![]).await.unwrap();
    let refused = second.status().await.unwrap_err();
    assert!(refused.to_string().contains("429") || refused.to_string().contains("max_sessions_per_connection"), "{refused}");
    first.status().await.unwrap();

    // Connections: a third one is refused with 503, over either profile.
    let other = Endpoint::new(&ws_url).connect(ConnectOptions::default()).await.unwrap();
    for url in [&ws_url, &http_url] {
        let Err(err) = Endpoint::new(url).connect(ConnectOptions::default()).await else { panic!("{url}: over the limit, accepted") };
        assert!(err.to_string().contains("503"), "{url}: {err}");
    }
    conn.close().await;
    other.close().await;

    // Idle time: a WebSocket peer that sends nothing, not even the pongs to the agent's pings
    // (a half-open connection; this socket answers pings only when read), is closed (1001); an
    // HTTP connection with no stream and no request is ended (its id is then unknown: 404).
    // The two connections above end asynchronously: until the server has seen them go, a new
    // one is still over the limit (503). Their slots must come back, within a bound.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut socket = loop {
        match tokio_tungstenite::connect_async(ws_url.as_str()).await {
            Ok((socket, _)) => break socket,
            Err(e) if e.to_string().contains("503") && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("the closed connections' slots did not come back: {e}"),
        }
    };
    tokio::time::sleep(Duration::from_millis(1000)).await;
    use futures_util::StreamExt;
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match socket.next().await {
                Some(Ok(tokio_tungstenite::tungstenite::Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    })
    .await
    .expect("the idle socket is closed");
    assert_eq!(closed, Some(1001));
    let http = reqwest::Client::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"}}}"#;
    let answer = http.post(&http_url).header("Content-Type", "application/json").body(init).send().await.unwrap();
    let id = answer.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}"#;
    let late = http
        .post(&http_url)
        .header("Content-Type", "application/json")
        .header("Acp-Connection-Id", &id)
        .body(list)
        .send()
        .await
        .unwrap();
    assert_eq!(late.status().as_u16(), 404, "the idle connection was ended");
}

/// A runtime whose turn streams a lot, fast.
struct Chatty;

#[async_trait::async_trait]
impl AgentRuntime for Chatty {
    async fn run_turn(&self, turn: TurnContext, _input: Vec<UserInput>) -> TurnEnd {
        let id = turn.new_message_id();
        for i in 0..200_000 {
            if turn.send_text(&id, &format!("chunk {i} of a long answer, streamed as fast as it comes")).is_err() {
                break;
            }
            if i % 1000 == 0 {
                tokio::task::yield_now().await;
            }
        }
        TurnEnd::end_turn()
    }
}

/// Opens a WebSocket session on an agent of [`Chatty`] behind `limits`, prompts, stops reading
/// for two seconds, then reads what is there: the close code that ended it and how many
/// messages came before. The agent still serves the session afterwards.
async fn stop_reading(limits: Limits) -> (Option<u16>, usize) {
    let server = AgentServer::new(Arc::new(Chatty), ServeOptions { config: config(), store: None }).unwrap();
    let listener = listen(server.clone(), "127.0.0.1:0", ListenOptions { limits, ..Default::default() }).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(listener.serve(std::future::pending()));
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/acp")).await.unwrap();
    let send = |m: &str| Message::Text(m.to_owned().into());
    socket
        .send(send(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"}}}"#,
        ))
        .await
        .unwrap();
    socket.send(send(r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#)).await.unwrap();
    // Read until the session exists, then prompt and stop reading.
    let session = loop {
        let Some(Ok(Message::Text(t))) = socket.next().await else { panic!("no answer") };
        let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
        if v["id"] == 1 {
            break v["result"]["sessionId"].as_str().unwrap().to_owned();
        }
    };
    let prompt = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"go"}}]}}}}"#
    );
    socket.send(send(&prompt)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Now read what is there: it ends with the close, not with 200,000 chunks.
    let mut seen = 0usize;
    let code = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => seen += 1,
                _ => return None,
            }
        }
    })
    .await
    .expect("the connection ends");
    // The agent is fine: another client gets the session's status. (While the turn still
    // streams as fast as it can, a budget as small as the test's sheds the client it streams
    // to as well, as it should: that client tries again until the turn has ended.)
    let mut tries = 0;
    let status = loop {
        tries += 1;
        let attempt = async {
            let conn = Endpoint::new(format!("ws://{addr}/acp")).connect(ConnectOptions::default()).await?;
            conn.resume(&acp_inject_core::wire::SessionId(session.clone()), "/tmp", false).await?.status().await
        };
        match attempt.await {
            Ok(status) => break status,
            Err(e) if tries < 60 => {
                eprintln!("stop_reading: try {tries}: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("the agent did not serve the session again: {e}"),
        }
    };
    assert_eq!(status.status, acp_inject_core::wire::SessionStatus::Open);
    (code, seen)
}

/// A client that stops reading does not make the agent buffer without bound: past
/// `max_buffered_bytes` its connection is closed (1008), and the agent goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_disconnected_not_buffered_for() {
    let (code, seen) = stop_reading(Limits { max_buffered_bytes: 256 * 1024, ..Default::default() }).await;
    assert_eq!(code, Some(1008), "after {seen} messages");
    assert!(seen < 200_000, "{seen}");
}

/// Past the memory budget, the connection holding unread output is shed long before its own
/// `max_buffered_bytes` (64 MiB here, far more than the turn writes), and the agent goes on:
/// closed 1013 (try again later) when the queue caught it, or cut when the budget caught it in
/// the middle of a write the client stalled (no close frame can follow half a frame).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_memory_budget_a_client_that_stops_reading_is_shed() {
    let (code, seen) = stop_reading(Limits { max_memory: 512 * 1024, ..Default::default() }).await;
    assert!(matches!(code, Some(1013) | None), "closed {code:?} after {seen} messages");
    assert!(seen < 200_000, "{seen}");
}

static GAUGE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn gauge() -> usize {
    GAUGE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Past the memory budget (as a host's gauge reads it), new connections and large messages
/// are refused with 503 and `Retry-After` (close 1013 over WebSocket); small messages still
/// pass, and once back within it all is served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_memory_budget_new_work_is_refused_and_small_messages_pass() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let limits = Limits { max_memory: 1 << 20, memory_gauge: Some(gauge), ..Default::default() };
    let (_server, addr) = agent(Arc::new(Gated::default()), ListenOptions { limits, ..Default::default() }).await;
    let url = format!("http://{addr}/acp");
    let http = reqwest::Client::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{},"info":{"name":"t","version":"1"}}}"#;
    let post = |body: String| http.post(&url).header("Content-Type", "application/json").body(body);
    let answer = post(init.to_owned()).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let conn = answer.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/acp")).await.unwrap();

    GAUGE.store(2 << 20, std::sync::atomic::Ordering::Relaxed);
    let refused = post(init.to_owned()).send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 503, "a new connection past the budget");
    assert_eq!(refused.headers()["retry-after"], "5");
    assert!(refused.text().await.unwrap().contains("max_memory"));
    match tokio_tungstenite::connect_async(format!("ws://{addr}/acp")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status().as_u16(), 503),
        other => panic!("a WebSocket upgrade past the budget: {other:?}"),
    }
    // A small message on an open connection passes (a cancel, a list); a large one does not.
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}"#.to_owned();
    assert_eq!(post(list).header("Acp-Connection-Id", &conn).send().await.unwrap().status().as_u16(), 202);
    let large = format!(r#"{{"jsonrpc":"2.0","method":"_note","params":{{"text":"{}"}}}}"#, "x".repeat(100_000));
    let refused = post(large.clone()).header("Acp-Connection-Id", &conn).send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 503, "a large message past the budget");
    assert_eq!(refused.headers()["retry-after"], "5");
    ws.send(Message::Text(large.clone().into())).await.unwrap();
    let code = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => {}
                _ => return None,
            }
        }
    })
    .await
    .expect("the socket closes");
    assert_eq!(code, Some(1013), "a large WebSocket message past the budget");

    GAUGE.store(0, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(post(large).header("Acp-Connection-Id", &conn).send().await.unwrap().status().as_u16(), 202, "within it again");
    assert_eq!(post(init.to_owned()).send().await.unwrap().status().as_u16(), 200);
}

/// A store that loses its lease on demand (as a shared store does when another host took a
/// session over while this one was paused): every commit after `lose` fails.
#[derive(Clone, Default)]
struct LosingStore {
    lost: Arc<std::sync::atomic::AtomicBool>,
    inner: Arc<Mutex<acp_inject_core::agent::MemoryStore>>,
}

impl acp_inject_core::agent::Store for LosingStore {
    fn record(&mut self, change: acp_inject_core::agent::Change<'_>) {
        self.inner.lock().unwrap().record(change);
    }
    fn commit(&mut self) -> Result<(), acp_inject_core::agent::StoreError> {
        if self.lost.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(acp_inject_core::agent::StoreError::LeaseLost { session: "sess_1".into() });
        }
        Ok(())
    }
    fn list(
        &self,
        cwd: Option<&str>,
        principal: Option<&str>,
        before: Option<u64>,
        limit: usize,
    ) -> Result<acp_inject_core::agent::SessionPage, acp_inject_core::agent::StoreError> {
        self.inner.lock().unwrap().list(cwd, principal, before, limit)
    }
    fn session(
        &self,
        id: &acp_inject_core::wire::SessionId,
    ) -> Result<Option<acp_inject_core::agent::SessionRecord>, acp_inject_core::agent::StoreError> {
        self.inner.lock().unwrap().session(id)
    }
    fn history(
        &self,
        id: &acp_inject_core::wire::SessionId,
    ) -> Result<Vec<acp_inject_core::agent::HistoryEntry>, acp_inject_core::agent::StoreError> {
        self.inner.lock().unwrap().history(id)
    }
    fn message_for_key(
        &self,
        id: &acp_inject_core::wire::SessionId,
        key: &str,
    ) -> Result<Option<acp_inject_core::wire::MessageId>, acp_inject_core::agent::StoreError> {
        self.inner.lock().unwrap().message_for_key(id, key)
    }
}

/// A host whose store failed (here: it lost a session's lease) stops serving: nothing of the
/// failed batch is released, every connection is closed with 1011 saying why, and the client
/// reports that reason, so it can resume on another host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_lost_its_lease_tells_its_clients_why() {
    let store = LosingStore::default();
    let lost = Arc::clone(&store.lost);
    let server =
        AgentServer::new(Arc::new(Gated::default()), ServeOptions { config: config(), store: Some(Box::new(store)) }).unwrap();
    let listener = listen(server.clone(), "127.0.0.1:0", ListenOptions::default()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(listener.serve(std::future::pending()));

    // Our client: a call after the loss fails with the reason.
    let conn = Endpoint::new(format!("ws://{addr}/acp")).connect(ConnectOptions::default()).await.unwrap();
    let session = conn.new_session("/tmp", vec![], vec![]).await.unwrap();
    // A raw WebSocket too, to read the close frame itself.
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/acp")).await.unwrap();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"}}}"#;
    socket.send(Message::Text(init.into())).await.unwrap();
    let Some(Ok(Message::Text(_))) = socket.next().await else { panic!("no initialize answer") };

    lost.store(true, std::sync::atomic::Ordering::SeqCst);
    let refused = session.inject(InjectMode::Queue, text("after the loss")).await.expect_err("nothing is answered after the loss");
    assert!(refused.to_string().contains("lost the lease"), "{refused}");
    let reason = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| (u16::from(f.code), f.reason.to_string())),
                Some(Ok(_)) => {}
                _ => return None,
            }
        }
    })
    .await
    .expect("the connection is closed");
    let (code, why) = reason.expect("a close frame");
    assert_eq!(code, 1011);
    assert!(why.contains("lost the lease on session"), "{why}");
    assert!(server.stop_reason().is_some_and(|r| r.contains("another host")));
}

/// A loopback listener serves requests naming a loopback host only (a page on a rebound DNS
/// name is refused), and answers a browser's CORS preflight from an allowed origin without
/// credentials, with the ACP headers exposed on the real responses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_host_check_and_cors_preflight() {
    let options = ListenOptions {
        allowed_origins: vec!["https://app.example".into()],
        auth: Some(Arc::new(BearerToken::new(SECRET).unwrap())),
        ..Default::default()
    };
    let (_server, addr) = agent(Arc::new(Gated::default()), options).await;
    let url = format!("http://{addr}/acp");
    let http = reqwest::Client::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"}}}"#;
    let post = || http.post(&url).header("Content-Type", "application/json").bearer_auth(SECRET).body(init);
    // DNS rebinding: the name resolved to 127.0.0.1, but the request names another host.
    let rebound = post().header("Host", "attacker.example").send().await.unwrap();
    assert_eq!(rebound.status().as_u16(), 421);
    for host in [format!("localhost:{}", addr.port()), format!("127.0.0.1:{}", addr.port()), "[::1]".to_owned()] {
        let ok = post().header("Host", &host).send().await.unwrap();
        assert_eq!(ok.status().as_u16(), 200, "{host}");
    }
    // The preflight: no credentials, the allowed origin echoed, the methods and headers listed.
    let preflight = http
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", "https://app.example")
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "authorization, content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status().as_u16(), 204);
    let h = preflight.headers();
    assert_eq!(h["access-control-allow-origin"], "https://app.example");
    assert!(h["access-control-allow-methods"].to_str().unwrap().contains("POST"));
    assert!(h["access-control-allow-headers"].to_str().unwrap().contains("Authorization"));
    let other = http.request(reqwest::Method::OPTIONS, &url).header("Origin", "https://evil.example").send().await.unwrap();
    assert_eq!(other.status().as_u16(), 403);
    // The real request from the page carries the CORS headers, the connection id readable.
    let answered = post().header("Origin", "https://app.example").send().await.unwrap();
    assert_eq!(answered.status().as_u16(), 200);
    assert_eq!(answered.headers()["access-control-allow-origin"], "https://app.example");
    assert!(answered.headers()["access-control-expose-headers"].to_str().unwrap().contains("Acp-Connection-Id"));
    // Without an Origin (a native client), no CORS headers.
    assert!(post().send().await.unwrap().headers().get("access-control-allow-origin").is_none());
}

/// The WebSocket closing handshake completes when the client closes (1000 echoed, never an
/// abnormal 1006), and a message over the limit is closed with 1009, a protocol error with
/// 1002.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_close_codes_follow_rfc_6455() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    use tokio_tungstenite::tungstenite::Message;
    let limits = Limits { max_message_bytes: 1024, ..Default::default() };
    let (_server, addr) = agent(Arc::new(Gated::default()), ListenOptions { limits, ..Default::default() }).await;
    let url = format!("ws://{addr}/acp");
    // The client closes: the server answers with its close.
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    ws.send(Message::Close(Some(CloseFrame { code: CloseCode::Normal, reason: "bye".into() }))).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), ws.next()).await.expect("an answer to the close");
    match answer {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Normal),
        other => panic!("the close was not answered with a close frame: {other:?}"),
    }
    // Too large: 1009, with a reason.
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    ws.send(Message::Text("x".repeat(4096).into())).await.unwrap();
    let closed = loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await.expect("a close") {
            Some(Ok(Message::Close(frame))) => break frame,
            Some(Ok(_)) => continue,
            other => panic!("no close frame: {other:?}"),
        }
    };
    let frame = closed.expect("a close frame with a code");
    assert_eq!(u16::from(frame.code), 1009, "{frame:?}");
}

/// Turns stream many chunks, a few milliseconds apart, then end.
struct Streamer {
    chunks: usize,
}

#[async_trait::async_trait]
impl AgentRuntime for Streamer {
    async fn run_turn(&self, turn: TurnContext, _input: Vec<UserInput>) -> TurnEnd {
        let id = turn.new_message_id();
        for i in 0..self.chunks {
            if turn.send_text(&id, &format!("[{i}]")).is_err() {
                return TurnEnd::cancelled();
            }
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
        TurnEnd::end_turn()
    }
}

/// How a [`SniffingRelay`] drops a stream.
#[derive(Clone, Copy, Debug)]
enum Drop_ {
    /// Both sockets close: the agent sees its stream end.
    Reset,
    /// The client's side closes; the agent's stays open, what it writes read and dropped (a
    /// relay that gave up without telling it).
    Silent,
}

/// A TCP relay that can drop the one connection carrying a given session's SSE stream (the
/// `GET` with its `Acp-Session-Id`), leaving the others alone; or cut the connection that
/// carries the next request of a method once the agent has it, before its answer comes back.
struct SniffingRelay {
    addr: SocketAddr,
    links: Arc<Mutex<Vec<Link>>>,
    /// `"method":"…"` of the next request whose answer is cut off ([`SniffingRelay::cut_answer_to`]).
    armed: Arc<Mutex<Option<String>>>,
    /// How many answers were cut off.
    cut: Arc<std::sync::atomic::AtomicUsize>,
}

struct Link {
    /// The session whose stream this connection carries, once its GET was seen.
    tag: Arc<Mutex<Option<String>>>,
    /// Dropping the client's side, Silent or not.
    stop: Arc<Notify>,
    silent: Arc<std::sync::atomic::AtomicBool>,
    tasks: [JoinHandle<()>; 2],
}

impl SniffingRelay {
    async fn to(to: SocketAddr) -> SniffingRelay {
        use std::sync::atomic::{AtomicBool, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let links: Arc<Mutex<Vec<Link>>> = Arc::default();
        let armed: Arc<Mutex<Option<String>>> = Arc::default();
        let cut = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (l, armed_all, cut_all) = (Arc::clone(&links), Arc::clone(&armed), Arc::clone(&cut));
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let cut_here = Arc::new(AtomicBool::new(false));
                let (armed_up, cut_up, cut_down, cut_count) =
                    (Arc::clone(&armed_all), Arc::clone(&cut_here), Arc::clone(&cut_here), Arc::clone(&cut_all));
                let Ok(outbound) = TcpStream::connect(to).await else { continue };
                let (mut in_read, mut in_write) = inbound.into_split();
                let (mut out_read, mut out_write) = outbound.into_split();
                let tag: Arc<Mutex<Option<String>>> = Arc::default();
                let (stop, silent) = (Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
                let (t, stop_up, silent_up) = (Arc::clone(&tag), Arc::clone(&stop), Arc::clone(&silent));
                // Client to agent, noting which session's stream a GET opens. When stopped
                // silently, the agent's side stays open (no FIN): it is not told.
                let up = tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = tokio::select! {
                            r = in_read.read(&mut buf) => match r {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            },
                            () = stop_up.notified() => {
                                if silent_up.load(Ordering::SeqCst) {
                                    // Hold the agent's side open for good.
                                    std::future::pending::<()>().await;
                                }
                                return;
                            }
                        };
                        let seen = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                        {
                            let mut armed = armed_up.lock().unwrap();
                            if armed.as_ref().is_some_and(|m| seen.contains(m.as_str())) {
                                // The agent gets this request whole; its answer will not come back.
                                *armed = None;
                                cut_up.store(true, Ordering::SeqCst);
                            }
                        }
                        if seen.starts_with("get ") {
                            if let Some(at) = seen.find("acp-session-id: ") {
                                let rest = &seen[at + "acp-session-id: ".len()..];
                                *t.lock().unwrap() = rest.split("\r\n").next().map(str::to_owned);
                            }
                        }
                        if out_write.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
                let (stop_down, silent_down) = (Arc::clone(&stop), Arc::clone(&silent));
                // Agent to client. When stopped silently it goes on reading what the agent
                // writes and drops it, as a relay that gave up without telling it would.
                let down = tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        tokio::select! {
                            r = out_read.read(&mut buf) => match r {
                                Ok(0) | Err(_) => return,
                                // The answer to the request cut off: the connection breaks
                                // before the client reads a byte of it.
                                Ok(_) if cut_down.load(Ordering::SeqCst) => {
                                    cut_count.fetch_add(1, Ordering::SeqCst);
                                    return;
                                }
                                Ok(n) => if in_write.write_all(&buf[..n]).await.is_err() { return },
                            },
                            () = stop_down.notified() => break,
                        }
                    }
                    drop(in_write);
                    if silent_down.load(Ordering::SeqCst) {
                        while matches!(out_read.read(&mut buf).await, Ok(n) if n > 0) {}
                        std::future::pending::<()>().await;
                    }
                });
                l.lock().unwrap().push(Link { tag, stop, silent, tasks: [up, down] });
            }
        });
        SniffingRelay { addr, links, armed, cut }
    }

    /// Cuts the connection carrying the next request of `method` after the agent got it,
    /// before the client reads the agent's answer to that POST.
    fn cut_answer_to(&self, method: &str) {
        *self.armed.lock().unwrap() = Some(format!("\"method\":\"{method}\""));
    }

    /// How many answers [`SniffingRelay::cut_answer_to`] cut off.
    fn answers_cut(&self) -> usize {
        self.cut.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Drops the connection carrying `session`'s stream; `false` when none is seen yet.
    fn drop_stream(&self, session: &str, how: Drop_) -> bool {
        let links = self.links.lock().unwrap();
        let Some(link) = links.iter().find(|l| l.tag.lock().unwrap().as_deref() == Some(&session.to_ascii_lowercase())) else {
            return false;
        };
        match how {
            Drop_::Reset => link.tasks.iter().for_each(JoinHandle::abort),
            Drop_::Silent => {
                link.silent.store(true, std::sync::atomic::Ordering::SeqCst);
                link.stop.notify_waiters();
            }
        }
        true
    }
}

/// An agent streaming `chunks` chunks per turn, listening on a loopback port, and a client
/// connected to it over Streamable HTTP through a [`SniffingRelay`].
async fn streamer_through_relay(chunks: usize) -> (AgentServer, SniffingRelay, Connection) {
    let server = AgentServer::new(Arc::new(Streamer { chunks }), ServeOptions { config: config(), store: None }).unwrap();
    let listener = listen(server.clone(), "127.0.0.1:0", ListenOptions::default()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(listener.serve(std::future::pending()));
    let relay = SniffingRelay::to(addr).await;
    let conn = Endpoint::new(format!("http://{}/acp", relay.addr)).connect(ConnectOptions::default()).await.unwrap();
    (server, relay, conn)
}

/// One session's SSE stream is dropped mid-turn while the connection lives on: the client
/// opens it again from the last event it read (`Last-Event-ID`) and gets every chunk exactly
/// once and the turn's end, whether the agent saw the stream end or not.
async fn a_dropped_session_stream_loses_nothing(how: Drop_) {
    let chunks = 60;
    let (server, relay, conn) = streamer_through_relay(chunks).await;
    let s = conn.new_session("/tmp", vec![], vec![]).await.unwrap();
    let session = s.id().0.clone();
    s.prompt(text("stream")).await.unwrap();
    let agent_text = |snap: &MirrorSnapshot| {
        snap.transcript
            .iter()
            .filter(|e| e.role == acp_inject_core::client::MessageRole::Agent)
            .map(|e| text_of(&e.content))
            .collect::<String>()
    };
    until(&s, "a few chunks", |snap| agent_text(snap).matches('[').count() >= 5).await;
    assert!(relay.drop_stream(&session, how), "the session's stream was not seen on the relay");
    let done = until(&s, "the turn's end", |snap| snap.state == TurnState::Idle && snap.stop_reason.is_some()).await;
    let expected: String = (0..chunks).map(|i| format!("[{i}]")).collect();
    assert_eq!(agent_text(&done), expected, "{how:?}: every chunk exactly once, in order");
    conn.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stream_reset_mid_turn_loses_nothing() {
    a_dropped_session_stream_loses_nothing(Drop_::Reset).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stream_a_relay_gave_up_on_loses_nothing() {
    a_dropped_session_stream_loses_nothing(Drop_::Silent).await;
}

/// `Last-Event-ID` picks where a reopened stream starts: the events after it are sent again;
/// one the stream never sent is 400; one older than the kept window is 410 (resume instead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_event_id_resends_what_followed_it_within_the_window() {
    use futures_util::StreamExt;
    let limits = Limits { replay_window_bytes: 400, ..Default::default() };
    let (_server, addr) = agent(Arc::new(Gated::default()), ListenOptions { limits, ..Default::default() }).await;
    let url = format!("http://{addr}/acp");
    let http = reqwest::Client::new();
    let post = |body: String| http.post(&url).header("Content-Type", "application/json").body(body);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"}}}"#;
    let answer = post(init.to_owned()).send().await.unwrap();
    let conn = answer.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let get = |last: Option<&str>| {
        let mut r = http.get(&url).header("Accept", "text/event-stream").header("Acp-Connection-Id", &conn);
        if let Some(last) = last {
            r = r.header("Last-Event-ID", last);
        }
        r
    };
    // Read `n` events' ids off a stream.
    async fn ids(response: reqwest::Response, n: usize) -> Vec<u64> {
        let mut body = response.bytes_stream();
        let mut seen = String::new();
        while seen.matches("\n\n").count() < n {
            let chunk = tokio::time::timeout(Duration::from_secs(5), body.next()).await.expect("events").unwrap().unwrap();
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        seen.lines().filter_map(|l| l.strip_prefix("id: ")).map(|id| id.parse().unwrap()).collect()
    }
    let stream = get(None).send().await.unwrap();
    // Four answers on the connection's stream (unknown methods, each about 150 bytes).
    for id in 1..=4 {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"nope"}}"#);
        assert_eq!(post(body).header("Acp-Connection-Id", &conn).send().await.unwrap().status().as_u16(), 202);
    }
    assert_eq!(ids(stream, 4).await, [1, 2, 3, 4]);
    // The window (400 bytes) still holds the last two: from 2 on, 3 and 4 come again.
    let again = get(Some("2")).send().await.unwrap();
    assert_eq!(again.status().as_u16(), 200);
    assert_eq!(ids(again, 2).await, [3, 4]);
    assert_eq!(get(Some("9")).send().await.unwrap().status().as_u16(), 400, "never sent");
    let gone = get(Some("0")).send().await.unwrap();
    assert_eq!(gone.status().as_u16(), 410, "older than the window");
    assert!(gone.text().await.unwrap().contains("resume the session"));
}

/// What the cut tests need of a relay.
trait CutsAnswers {
    /// Cuts the network carrying the next request of `method` after the agent got it, before
    /// the client reads the agent's answer.
    fn cut_answer_to(&self, method: &str);
    /// How many answers were cut off.
    fn answers_cut(&self) -> usize;
}

impl CutsAnswers for SniffingRelay {
    fn cut_answer_to(&self, method: &str) {
        SniffingRelay::cut_answer_to(self, method);
    }
    fn answers_cut(&self) -> usize {
        SniffingRelay::answers_cut(self)
    }
}

/// A WebSocket relay, message by message, that can cut the socket carrying the next request of
/// a method as the agent's answer to it comes back: the agent accepted it, the client never
/// reads the answer.
struct WebSocketCutter {
    addr: SocketAddr,
    armed: Arc<Mutex<Option<String>>>,
    cut: Arc<std::sync::atomic::AtomicUsize>,
}

impl WebSocketCutter {
    async fn to(agent: SocketAddr) -> WebSocketCutter {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (armed, cut): (Arc<Mutex<Option<String>>>, Arc<std::sync::atomic::AtomicUsize>) = Default::default();
        let (armed_all, cut_all) = (Arc::clone(&armed), Arc::clone(&cut));
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (armed, cut) = (Arc::clone(&armed_all), Arc::clone(&cut_all));
                tokio::spawn(async move {
                    let Ok(client) = tokio_tungstenite::accept_async(tcp).await else { return };
                    let Ok((agent, _)) = tokio_tungstenite::connect_async(format!("ws://{agent}/acp")).await else { return };
                    WebSocketCutter::link(client, agent, &armed, &cut).await;
                });
            }
        });
        WebSocketCutter { addr, armed, cut }
    }

    /// Relays one socket's messages both ways; returning drops both without a close frame, as
    /// a network that breaks does.
    async fn link<C, A>(
        client: tokio_tungstenite::WebSocketStream<C>,
        agent: tokio_tungstenite::WebSocketStream<A>,
        armed: &Mutex<Option<String>>,
        cut: &std::sync::atomic::AtomicUsize,
    ) where
        C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
        A: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let (mut to_client, mut from_client) = client.split();
        let (mut to_agent, mut from_agent) = agent.split();
        // The id of the request whose answer is cut off, once it went by.
        let mut doomed: Option<serde_json::Value> = None;
        loop {
            tokio::select! {
                m = from_client.next() => {
                    let Some(Ok(m)) = m else { return };
                    if let Message::Text(t) = &m {
                        let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                        let mut armed = armed.lock().unwrap();
                        if armed.as_deref().is_some_and(|method| v["method"] == method) {
                            *armed = None;
                            doomed = Some(v["id"].clone());
                        }
                    }
                    if to_agent.send(m).await.is_err() { return }
                }
                m = from_agent.next() => {
                    let Some(Ok(m)) = m else { return };
                    if let Message::Text(t) = &m {
                        let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                        if v.get("method").is_none() && doomed.as_ref().is_some_and(|id| &v["id"] == id) {
                            cut.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            return;
                        }
                    }
                    if to_client.send(m).await.is_err() { return }
                }
            }
        }
    }
}

impl CutsAnswers for WebSocketCutter {
    fn cut_answer_to(&self, method: &str) {
        *self.armed.lock().unwrap() = Some(method.to_owned());
    }
    fn answers_cut(&self) -> usize {
        self.cut.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The network breaks between the agent's acceptance of a prompt, and of an inject, and their
/// answers: the client sends each again with its idempotency key (C-IDEM-1; over WebSocket
/// on a new socket, after resuming the session), and the agent answers the retry with the
/// original id without accepting it twice (R-IDEM-2). Exactly one copy of each is accepted,
/// and the calls succeed.
async fn a_cut_between_acceptance_and_answer_leaves_exactly_one_copy(scheme: &str) {
    let server = AgentServer::new(Arc::new(Streamer { chunks: 40 }), ServeOptions { config: config(), store: None }).unwrap();
    let listener = listen(server.clone(), "127.0.0.1:0", ListenOptions::default()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(listener.serve(std::future::pending()));
    let (relay, at): (Box<dyn CutsAnswers>, SocketAddr) = if scheme == "ws" {
        let relay = WebSocketCutter::to(addr).await;
        let at = relay.addr;
        (Box::new(relay), at)
    } else {
        let relay = SniffingRelay::to(addr).await;
        let at = relay.addr;
        (Box::new(relay), at)
    };
    let conn = Endpoint::new(format!("{scheme}://{at}/acp")).connect(ConnectOptions::default()).await.unwrap();
    let s = conn.new_session("/tmp", vec![], vec![]).await.unwrap();

    relay.cut_answer_to("session/prompt");
    let prompt = s.prompt(text("stream")).await.expect("the prompt's call succeeds after the retry");
    // Over Streamable HTTP the answer itself travels on the session's stream and may reach
    // the client before the relay has cut the POST's connection: wait for the cut.
    let cut = |n: usize| {
        let relay = &relay;
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            while relay.answers_cut() < n && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            relay.answers_cut()
        }
    };
    assert_eq!(cut(1).await, 1, "the prompt's answer was cut off");
    relay.cut_answer_to("session/inject");
    let inject = s.inject(acp_inject_core::wire::InjectMode::Queue, text("then this")).await.expect("the inject's call succeeds");
    assert_eq!(cut(2).await, 2, "the inject's answer was cut off");

    let done = until(&s, "both turns' ends", |snap| {
        snap.state == TurnState::Idle
            && snap.transcript.iter().filter(|e| e.role == acp_inject_core::client::MessageRole::User).count() >= 2
    })
    .await;
    let users: Vec<String> =
        done.transcript.iter().filter(|e| e.role == acp_inject_core::client::MessageRole::User).map(|e| text_of(&e.content)).collect();
    assert_eq!(users, ["stream", "then this"], "one copy of each");
    let ids: Vec<String> = done
        .transcript
        .iter()
        .filter(|e| e.role == acp_inject_core::client::MessageRole::User)
        .map(|e| e.message_id.0.clone())
        .collect();
    assert_eq!(ids, [prompt.clone().map(|m| m.0).unwrap_or_default(), inject.0.clone()], "the answers carry the accepted ids");
    let _ = (prompt, inject);
    conn.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_between_acceptance_and_answer_leaves_exactly_one_copy_over_streamable_http() {
    a_cut_between_acceptance_and_answer_leaves_exactly_one_copy("http").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_between_acceptance_and_answer_leaves_exactly_one_copy_over_websocket() {
    a_cut_between_acceptance_and_answer_leaves_exactly_one_copy("ws").await;
}

/// R-TENANT-1: with a token per principal, each client sees the sessions its principal created
/// and no other: another principal's session is listed nowhere and answered as unknown
/// (resume, status, prompt, inject, close), over WebSocket and Streamable HTTP alike; a
/// shared token (no principal) sees neither; an HTTP connection answers only its own principal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principals_see_their_own_sessions_only() {
    use acp_inject_remote::BearerTokens;
    use acp_inject_transport::TransportError;
    let tokens = BearerTokens::new()
        .principal("alice", "alice-0123456789abcdef")
        .unwrap()
        .principal("bob", "bob-0123456789abcdef00")
        .unwrap()
        .shared("shared-0123456789abcdef")
        .unwrap();
    assert!(BearerTokens::new()
        .principal("carol", "alice-0123456789abcdef")
        .unwrap()
        .principal("dave", "alice-0123456789abcdef")
        .is_err());
    assert!(BearerTokens::new().principal("carol", "short").is_err());
    let (server, addr) = agent(Arc::new(Gated::default()), ListenOptions { auth: Some(Arc::new(tokens)), ..Default::default() }).await;
    let connect = |scheme: &str, token: &str| {
        let endpoint = Endpoint::new(format!("{scheme}://{addr}/acp")).bearer(token);
        async move { endpoint.connect(ConnectOptions::default()).await }
    };

    let alice = connect("ws", "alice-0123456789abcdef").await.unwrap();
    let theirs = alice.new_session("/home/alice", vec![], vec![]).await.unwrap();
    let id = theirs.id().clone();
    for scheme in ["ws", "http"] {
        for token in ["bob-0123456789abcdef00", "shared-0123456789abcdef"] {
            let other = connect(scheme, token).await.unwrap();
            let mine = other.new_session("/home/other", vec![], vec![]).await.unwrap();
            let (listed, _) = other.list_sessions(None, None).await.unwrap();
            assert!(listed.iter().all(|s| s.session_id != id), "{scheme} {token}: {listed:?}");
            assert!(listed.iter().any(|s| &s.session_id == mine.id()), "{scheme} {token}: its own session is listed");
            // Answered exactly as a session the agent never had (over Streamable HTTP its
            // stream is refused first, 409, as for an unknown session).
            let code = |e: TransportError| match e {
                TransportError::Protocol(p) => (p.code, p.message.replace(&id.0, "ID").replace("sess_nowhere", "ID")),
                other => panic!("{other:?}"),
            };
            let never = code(other.resume(&"sess_nowhere".into(), "/home/alice", true).await.map(drop).unwrap_err());
            if scheme == "ws" {
                assert_eq!(never.0, -32002);
            }
            for replay in [true, false] {
                let err = code(other.resume(&id, "/home/alice", replay).await.map(drop).unwrap_err());
                assert_eq!(err, never, "{scheme} {token}: resume (replay {replay})");
            }
            mine.close().await.unwrap();
            other.close().await;
        }
    }
    // The foreign session was not touched: alice still has it, idle, and lists it.
    let (listed, _) = alice.list_sessions(None, None).await.unwrap();
    assert_eq!(listed.iter().map(|s| s.session_id.clone()).collect::<Vec<_>>(), std::slice::from_ref(&id));
    assert!(matches!(theirs.status().await.unwrap().state, Some(acp_inject_core::wire::StateUpdate::Idle(_))));

    // A raw HTTP client with bob's token cannot use alice's connection, nor status her session.
    let http = reqwest::Client::new();
    let post = |token: &str, conn: Option<&str>, session: Option<&str>, body: String| {
        let mut r = http
            .post(format!("http://{addr}/acp"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(c) = conn {
            r = r.header("Acp-Connection-Id", c);
        }
        if let Some(s) = session {
            r = r.header("Acp-Session-Id", s);
        }
        r.send()
    };
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"raw","version":"1"}}}"#;
    let opened = post("alice-0123456789abcdef", None, None, init.to_owned()).await.unwrap();
    let conn = opened.headers()["acp-connection-id"].to_str().unwrap().to_owned();
    let status = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/status","params":{{"sessionId":"{}"}}}}"#, id.0);
    let hijack = post("bob-0123456789abcdef00", Some(&conn), Some(&id.0), status.clone()).await.unwrap();
    assert_eq!(hijack.status().as_u16(), 404, "another principal's connection is unknown");
    let own = post("alice-0123456789abcdef", Some(&conn), Some(&id.0), status).await.unwrap();
    assert_eq!(own.status().as_u16(), 202);
    alice.close().await;
    server.shutdown().await;
}

/// Sockets before any request: past `max_sockets` one is closed as soon as it is accepted, and
/// one that sends no request within `first_request_timeout` (an HTTP/2 connection that only
/// said its preface, a peer that says nothing) is closed; then the slots are free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_are_counted_and_an_idle_one_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let limits = Limits { max_sockets: 2, first_request_timeout: Duration::from_millis(800), ..Default::default() };
    let (server, addr) = agent(Arc::new(Gated::default()), ListenOptions { limits, ..Default::default() }).await;
    // Reads until the server closes the socket; how long that took.
    async fn closed_after(s: &mut TcpStream) -> Duration {
        let start = std::time::Instant::now();
        let mut buf = [0u8; 1024];
        while tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await.expect("closed in time").is_ok_and(|n| n > 0) {}
        start.elapsed()
    }
    let mut h2 = TcpStream::connect(addr).await.unwrap();
    // HTTP/2 with prior knowledge: the preface and an empty SETTINGS frame, then nothing.
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.unwrap();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = TcpStream::connect(addr).await.unwrap();
    assert!(closed_after(&mut third).await < Duration::from_millis(500), "past max_sockets: closed at once");
    let (a, b) = (closed_after(&mut h2).await, closed_after(&mut silent).await);
    assert!(a >= Duration::from_millis(500) && b < Duration::from_secs(5), "{a:?} {b:?}: closed at the deadline");
    // The slots are free: a client connects and works, past the deadline too.
    let conn = Endpoint::new(format!("ws://{addr}/acp")).connect(ConnectOptions::default()).await.unwrap();
    let s = conn.new_session("/tmp", vec![], vec![]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(matches!(s.status().await.unwrap().state, Some(acp_inject_core::wire::StateUpdate::Idle(_))));
    conn.close().await;
    server.shutdown().await;
}

/// A session with 100 MB of history, more than a connection may have waiting
/// (`max_buffered_bytes`, 64 MiB), is resumed with replay over WebSocket and over Streamable
/// HTTP: the replay is one batch, queued whole and written at the client's pace; the client
/// gets every message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_replays_a_history_larger_than_the_output_limit() {
    const MESSAGES: usize = 100;
    const BYTES: usize = 1 << 20;
    let server = AgentServer::new(Arc::new(Streamer { chunks: 0 }), ServeOptions { config: config(), store: None }).unwrap();
    let listener = listen(server.clone(), "127.0.0.1:0", ListenOptions::default()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(listener.serve(std::future::pending()));
    let url = format!("ws://{addr}/acp");
    let writer = Endpoint::new(&url).connect(ConnectOptions::default()).await.unwrap();
    let s = writer.new_session("/tmp", vec![], vec![]).await.unwrap();
    for i in 0..MESSAGES {
        let mut body = format!("{i:03}:");
        body.push_str(&"x".repeat(BYTES - body.len()));
        s.prompt(text(&body)).await.unwrap();
        until(&s, "the turn's end", |snap| {
            snap.state == TurnState::Idle
                && snap.transcript.iter().filter(|e| e.role == acp_inject_core::client::MessageRole::User).count() == i + 1
        })
        .await;
    }
    let id = s.id().clone();
    writer.close().await;
    assert!(MESSAGES * BYTES > acp_inject_remote::Limits::default().max_buffered_bytes);

    for url in [url.clone(), format!("http://{addr}/acp")] {
        let reader = Endpoint::new(&url).connect(ConnectOptions::default()).await.unwrap();
        let resumed = tokio::time::timeout(Duration::from_secs(120), reader.resume(&id, "/tmp", true))
            .await
            .expect("the replay arrives")
            .expect("the resume succeeds");
        let snap = resumed.snapshot().unwrap();
        let users: Vec<String> = snap
            .transcript
            .iter()
            .filter(|e| e.role == acp_inject_core::client::MessageRole::User)
            .map(|e| text_of(&e.content))
            .collect();
        assert_eq!(users.len(), MESSAGES, "{url}");
        assert!(
            users.iter().enumerate().all(|(i, u)| u.len() == BYTES && u.starts_with(&format!("{i:03}:"))),
            "{url}: every message whole, in order"
        );
        reader.close().await;
    }
    server.shutdown().await;
}

/// A WebSocket that fails again right after every new connection (the cause comes back with
/// each socket, not a network that comes and goes): the client stops trying after three such
/// rejoins and ends the connection, rather than connecting forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_fails_after_every_rejoin_ends_the_connection() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    // An agent that answers `initialize` and `session/new`, and drops each socket 200 ms
    // after its `initialize`.
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else { return };
                let deadline = tokio::time::sleep(Duration::from_secs(3600));
                tokio::pin!(deadline);
                loop {
                    tokio::select! {
                        m = ws.next() => {
                            let Some(Ok(Message::Text(t))) = m else { return };
                            let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                            let result = match v["method"].as_str() {
                                Some("initialize") => {
                                    deadline.as_mut().reset(tokio::time::Instant::now() + Duration::from_millis(200));
                                    serde_json::json!({"protocolVersion": 2, "info": {"name": "flaky", "version": "1"}, "capabilities": {}})
                                }
                                Some("session/new") => serde_json::json!({"sessionId": "s1"}),
                                _ => serde_json::json!({}),
                            };
                            let answer = serde_json::json!({"jsonrpc": "2.0", "id": v["id"], "result": result});
                            if ws.send(Message::Text(answer.to_string().into())).await.is_err() { return }
                        }
                        () = &mut deadline => return,
                    }
                }
            });
        }
    });
    let conn = Endpoint::new(format!("ws://{addr}/acp")).connect(ConnectOptions::default()).await.unwrap();
    let s = conn.new_session("/tmp", vec![], vec![]).await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Err(e) = s.next_events().await {
                return e;
            }
        }
    })
    .await
    .expect("the connection ends");
    assert!(ended.to_string().contains("right after each of 3 new connections"), "{ended}");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 4, "the first socket and three rejoins");
}
