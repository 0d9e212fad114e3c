//! The client's WebSocket side: one socket at a time under one client connection, and a new
//! one after a network cut.
//!
//! A WebSocket is the agent's connection: when it breaks, the agent forgets the connection
//! (its sessions and turns live on). So that the app does not see the cut, the bridge
//! remembers what a new connection needs and, when the socket fails (not when the app or the
//! agent closes it on purpose), connects again and, before any of the app's lines go out:
//!
//! 1. sends the app's `initialize` again (under an id of its own, answer not passed on);
//! 2. resumes every session the connection had, with replay from the start: the replayed
//!    messages reach the app's mirror, which folds them by id (C-RESUME-1), so what the
//!    cut hid arrives and nothing is doubled; the agent then reports the turn's state and
//!    the pending list as to any resuming connection (R-RESUME-2, R-RESUME-3);
//! 3. sends again the app's requests whose answers were lost, where that cannot do a thing
//!    twice: prompts and injects that carry an idempotency key (the agent answers a retry
//!    with the original id and accepts it once, R-IDEM-2), and `session/list`,
//!    `session/status`, `session/close` and `session/resume`. Any other such request is
//!    answered here with an error saying it may or may not have taken effect.
//!
//! Three new sockets in a row that fail again within 10 s of being made end the connection: a
//! cause that comes back with every socket is not a network that comes and goes.
//!
//! Version 1 connections are not rejoined (version 1 has no resume with replay here): a cut
//! ends them, as before.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use acp_inject_core::wire::{jsonrpc, methods, McpServer, ReplayFrom, ReplayFromStart, RequestId, ResumeSessionRequest, SessionId};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{BufReader, DuplexStream};
use tokio_tungstenite::tungstenite::Message;

use crate::client::{as_line, next_line, AppSide, Endpoint, SILENCE};
use crate::route;

pub(crate) type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The pauses before each attempt to connect again after a cut: about 12 s in all, then the
/// connection ends.
const REJOIN_PAUSES: [Duration; 5] = [
    Duration::from_millis(100),
    Duration::from_millis(400),
    Duration::from_millis(1600),
    Duration::from_millis(3200),
    Duration::from_millis(6400),
];

/// How long one answer may take while rejoining (to `initialize`, to each resume).
const REJOIN_ANSWER: Duration = Duration::from_secs(15);

/// A socket that fails this soon after it was made again counts as a failed rejoin; after
/// [`QUICK_FAILURES`] in a row the connection ends (a cause that comes back with every socket,
/// rather than a network that comes and goes).
const QUICK: Duration = Duration::from_secs(10);
const QUICK_FAILURES: u32 = 3;

/// The prefix of the ids of the bridge's own requests (the client connection's are numbers).
const OWN_ID: &str = "acp-inject/rejoin-";

/// Why a socket stopped.
enum Stop {
    /// The app closed the connection, or is gone.
    App,
    /// For good, saying why (the agent closed it on purpose, or the app wrote a bad line).
    Final(String),
    /// The network failed: worth a new socket.
    Cut(String),
}

/// Runs the bridge until the app closes the connection or the agent cannot be reached again.
pub(crate) async fn bridge(endpoint: Endpoint, socket: Socket, pipe: DuplexStream, app: AppSide, rejoin: bool) {
    let limit = endpoint.max_message_bytes;
    let mut reader = BufReader::new(pipe);
    // The app's line being read: kept across the select below, which may drop a read midway.
    let mut partial = Vec::new();
    let mut recall = Recall::default();
    let mut socket = socket;
    // When the last rejoin succeeded, and how many in a row failed again at once.
    let mut rejoined: Option<tokio::time::Instant> = None;
    let mut quick_failures = 0;
    loop {
        let why = match pump(&mut socket, &mut reader, &mut partial, &app, &mut recall, limit).await {
            Stop::App => {
                let _ = socket.close(None).await;
                return;
            }
            Stop::Final(why) => why,
            Stop::Cut(why) if rejoin && recall.rejoinable() => {
                quick_failures = if rejoined.is_some_and(|at| at.elapsed() < QUICK) { quick_failures + 1 } else { 0 };
                if quick_failures >= QUICK_FAILURES {
                    format!("{why} (again right after each of {QUICK_FAILURES} new connections)")
                } else {
                    match recall.rejoin(&endpoint, &app).await {
                        Ok(next) => {
                            socket = next;
                            rejoined = Some(tokio::time::Instant::now());
                            continue;
                        }
                        Err(again) => format!("{why}; connecting again failed: {again}"),
                    }
                }
            }
            Stop::Cut(why) => why,
        };
        let _ = socket.close(None).await;
        app.end(why).await;
        return;
    }
}

/// Carries lines both ways over one socket until it stops.
async fn pump(
    socket: &mut Socket,
    reader: &mut BufReader<DuplexStream>,
    partial: &mut Vec<u8>,
    app: &AppSide,
    recall: &mut Recall,
    limit: usize,
) -> Stop {
    loop {
        tokio::select! {
            line = next_line(reader, partial, limit) => match line {
                Ok(Some(line)) => {
                    recall.sent(&line);
                    if let Err(e) = socket.send(Message::Text(line.into())).await {
                        return Stop::Cut(format!("the WebSocket failed: {e}"));
                    }
                }
                Ok(None) => return Stop::App,
                Err(why) => return Stop::Final(why),
            },
            frame = tokio::time::timeout(SILENCE, socket.next()) => {
                let frame = match frame {
                    Ok(frame) => frame,
                    Err(_) => return Stop::Cut(format!("no word from the agent for {} s", SILENCE.as_secs())),
                };
                match frame {
                    Some(Ok(Message::Text(text))) => {
                        let Some(line) = as_line(text.as_str()) else { continue };
                        recall.received(&line);
                        if !app.line(line).await {
                            return Stop::App;
                        }
                    }
                    Some(Ok(Message::Close(frame))) => return closed(frame),
                    // Binary frames are ignored (the RFD); pings are answered by the socket.
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return failed(&e),
                    None => return Stop::Cut("the WebSocket ended".to_owned()),
                }
            }
        }
    }
}

/// The agent's close frame: on purpose (for good), or a passing condition worth a new socket
/// (it restarts, it was overloaded, this client read too slowly).
fn closed(frame: Option<tokio_tungstenite::tungstenite::protocol::CloseFrame>) -> Stop {
    let Some(f) = frame else { return Stop::Final("the agent closed the WebSocket".to_owned()) };
    let code = u16::from(f.code);
    let why = if f.reason.is_empty() {
        format!("the agent closed the WebSocket ({code})")
    } else {
        format!("the agent closed the WebSocket ({code}: {})", f.reason)
    };
    // 1001 going away, 1008 over a limit (a slow reader), 1011 an error, 1012 restart, 1013
    // try again later.
    if matches!(code, 1001 | 1008 | 1011 | 1012 | 1013) {
        Stop::Cut(why)
    } else {
        Stop::Final(why)
    }
}

fn failed(e: &tokio_tungstenite::tungstenite::Error) -> Stop {
    use tokio_tungstenite::tungstenite::error::ProtocolError;
    use tokio_tungstenite::tungstenite::Error;
    let why = format!("the WebSocket failed: {e}");
    match e {
        // The TCP connection ended under the socket: the network.
        Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => Stop::Cut(why),
        // A message over the limit or a broken frame would come again on a new socket.
        Error::Capacity(_) | Error::Protocol(_) | Error::Utf8(_) => Stop::Final(why),
        _ => Stop::Cut(why),
    }
}

/// One of the app's requests still waiting for its answer.
struct Flight {
    /// Order sent, so lost calls go again in their order.
    seq: u64,
    method: String,
    /// `params.sessionId`.
    session: Option<String>,
    /// The line, for a method that may go again or names a session's setup; `None` otherwise.
    line: Option<String>,
}

impl Flight {
    /// It can go again without doing anything twice (decided only when it must, at a rejoin:
    /// a prompt's line is not parsed a second time on the way out).
    fn again(&self) -> bool {
        self.line.as_deref().is_some_and(|line| crate::client::safe_again(&self.method, line))
    }
}

/// What a new socket needs to stand where the old one stood.
#[derive(Default)]
pub(crate) struct Recall {
    /// The app's `initialize` line.
    init: Option<String>,
    /// The negotiated version (2 rejoins; 1 does not).
    version: Option<u64>,
    flights: HashMap<String, Flight>,
    seq: u64,
    /// The sessions on the connection, each with the setup a resume repeats.
    sessions: BTreeMap<String, Setup>,
    rejoins: u64,
}

impl Recall {
    fn rejoinable(&self) -> bool {
        self.version == Some(2) && self.init.is_some()
    }

    /// Notes a line the app sent.
    pub(crate) fn sent(&mut self, line: &str) {
        let Some(e) = route::envelope(line.as_bytes()) else { return };
        let (Some(id), Some(method)) = (e.id, e.method) else { return };
        if method == methods::INITIALIZE && self.init.is_none() {
            self.init = Some(line.to_owned());
        }
        let kept = matches!(
            method.as_str(),
            methods::SESSION_PROMPT
                | methods::SESSION_INJECT
                | methods::SESSION_LIST
                | methods::SESSION_STATUS
                | methods::SESSION_CLOSE
                | methods::SESSION_RESUME
                | methods::SESSION_NEW
                | "session/fork"
        );
        self.seq += 1;
        let flight = Flight { seq: self.seq, method, session: e.params_session, line: kept.then(|| line.to_owned()) };
        self.flights.insert(id, flight);
    }

    /// Notes a line the agent sent: an answer settles a flight, and may open or close a
    /// session or say the version.
    pub(crate) fn received(&mut self, line: &str) {
        // Only an answer to a flight matters: with none waiting, the agent's stream of updates
        // is not read here at all.
        if self.flights.is_empty() {
            return;
        }
        let Some(e) = route::envelope(line.as_bytes()) else { return };
        if !e.is_response() {
            return;
        }
        let Some(flight) = e.id.as_ref().and_then(|id| self.flights.remove(id)) else { return };
        match flight.method.as_str() {
            methods::INITIALIZE if !e.failed => self.version = protocol_version(line),
            methods::SESSION_NEW | "session/fork" if !e.failed => {
                if let (Some(session), Some(request)) = (e.result_session, &flight.line) {
                    self.sessions.insert(session, setup_of(request));
                }
            }
            methods::SESSION_RESUME if !e.failed => {
                if let (Some(session), Some(request)) = (flight.session, &flight.line) {
                    self.sessions.insert(session, setup_of(request));
                }
            }
            // Closed, or (-32002) already gone: either way not on the connection.
            methods::SESSION_CLOSE => {
                if let Some(session) = flight.session {
                    self.sessions.remove(&session);
                }
            }
            _ => {}
        }
    }

    fn own_id(&mut self) -> String {
        self.rejoins += 1;
        format!("{OWN_ID}{}", self.rejoins)
    }

    /// Connects again and stands where the old socket stood (the module's doc says how).
    async fn rejoin(&mut self, endpoint: &Endpoint, app: &AppSide) -> Result<Socket, String> {
        let mut last = String::new();
        for pause in REJOIN_PAUSES {
            tokio::time::sleep(pause).await;
            let mut socket = match endpoint.open_websocket().await {
                Ok(socket) => socket,
                // The agent answered, and refused: another try would be refused too.
                Err(e @ acp_inject_transport::TransportError::Handshake(_)) => return Err(e.to_string()),
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            };
            match self.restore(&mut socket, app).await {
                Ok(()) => return Ok(socket),
                Err(Restore::Again(why)) => last = why,
                Err(Restore::Never(why)) => return Err(why),
            }
        }
        Err(last)
    }

    async fn restore(&mut self, socket: &mut Socket, app: &AppSide) -> Result<(), Restore> {
        let init = self.init.clone().ok_or_else(|| Restore::Never("no initialize to repeat".into()))?;
        let id = self.own_id();
        let answer = call(socket, app, &with_id(&init, &id), &id).await?;
        if protocol_version(&answer) != self.version {
            return Err(Restore::Never(format!("the agent now answers initialize otherwise: {answer}")));
        }
        for (session, setup) in self.sessions.clone() {
            let id = self.own_id();
            let params = ResumeSessionRequest::new(SessionId(session.clone()), setup.cwd)
                .additional_directories(setup.additional_directories)
                .mcp_servers(setup.mcp_servers)
                .replay_from(ReplayFrom::Start(Box::new(ReplayFromStart::new())));
            let request = jsonrpc::request_line(&RequestId::Str(id.clone()), &params);
            let answer = call(socket, app, &request, &id).await?;
            if route::envelope(answer.as_bytes()).is_some_and(|e| e.failed) {
                // The agent no longer has it: the app's next call on it says so.
                self.sessions.remove(&session);
            }
        }
        // The app's requests whose answers were lost, in the order sent.
        let mut lost: Vec<(String, Flight)> = self.flights.drain().collect();
        lost.sort_by_key(|(_, f)| f.seq);
        for (id, flight) in lost {
            match (&flight.line, flight.again()) {
                (Some(line), true) => {
                    let sent = socket.send(Message::Text(line.clone().into())).await;
                    self.flights.insert(id, flight);
                    sent.map_err(|e| Restore::Again(format!("the WebSocket failed: {e}")))?;
                }
                _ => {
                    let message = crate::client::lost_answer(&flight.method, "the WebSocket was made again");
                    app.line(crate::client::failed_answer(&id, &message, None)).await;
                }
            }
        }
        Ok(())
    }
}

/// Why a rejoin stopped: worth another attempt, or not.
enum Restore {
    Again(String),
    Never(String),
}

/// Sends one of the bridge's own requests and waits for its answer, passing on to the app
/// whatever else comes first (the replay, the agent's requests).
async fn call(socket: &mut Socket, app: &AppSide, line: &str, id: &str) -> Result<String, Restore> {
    let again = |why: String| Restore::Again(why);
    socket.send(Message::Text(line.to_owned().into())).await.map_err(|e| again(format!("the WebSocket failed: {e}")))?;
    let want = Value::String(id.to_owned()).to_string();
    let deadline = tokio::time::Instant::now() + REJOIN_ANSWER;
    loop {
        let frame = tokio::time::timeout_at(deadline, socket.next())
            .await
            .map_err(|_| again(format!("no answer within {} s", REJOIN_ANSWER.as_secs())))?;
        match frame {
            Some(Ok(Message::Text(text))) => {
                let Some(line) = as_line(text.as_str()) else { continue };
                if route::envelope(line.as_bytes()).is_some_and(|e| e.is_response() && e.id.as_deref() == Some(want.as_str())) {
                    return Ok(line);
                }
                if !app.line(line).await {
                    return Err(Restore::Never("the app is gone".into()));
                }
            }
            Some(Ok(Message::Close(frame))) => {
                return Err(match closed(frame) {
                    Stop::Cut(why) => Restore::Again(why),
                    Stop::Final(why) => Restore::Never(why),
                    Stop::App => Restore::Never("the app is gone".into()),
                });
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(again(format!("the WebSocket failed: {e}"))),
            None => return Err(again("the WebSocket ended".into())),
        }
    }
}

/// A request line under another id.
fn with_id(line: &str, id: &str) -> String {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(mut m)) => {
            m.insert("id".into(), Value::String(id.to_owned()));
            Value::Object(m).to_string()
        }
        _ => line.to_owned(),
    }
}

/// `result.protocolVersion` of an `initialize` answer.
fn protocol_version(line: &str) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Answer {
        result: Version,
    }
    #[derive(serde::Deserialize)]
    struct Version {
        #[serde(rename = "protocolVersion")]
        version: u64,
    }
    serde_json::from_str::<Answer>(line).ok().map(|a| a.result.version)
}

/// What a resume repeats of the request that opened or resumed a session (`session/new`,
/// `session/resume`, `session/fork`: each has these members).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Setup {
    cwd: String,
    #[serde(default)]
    additional_directories: Option<Vec<String>>,
    #[serde(default)]
    mcp_servers: Option<Vec<McpServer>>,
}

fn setup_of(request: &str) -> Setup {
    #[derive(serde::Deserialize)]
    struct Request {
        params: Setup,
    }
    serde_json::from_str::<Request>(request).map(|r| r.params).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_what_a_new_socket_needs() {
        let mut r = Recall::default();
        r.sent(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}"#);
        assert!(!r.rejoinable(), "not before the answer");
        r.received(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}"#);
        assert!(r.rejoinable());
        r.sent(r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#);
        r.received(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#);
        r.sent(r#"{"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"s2","cwd":"/v","replayFrom":{"type":"start"}}}"#);
        r.received(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        r.sent(r#"{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"s3","cwd":"/v"}}"#);
        r.received(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"no"}}"#);
        assert_eq!(r.sessions.keys().collect::<Vec<_>>(), ["s1", "s2"]);
        assert_eq!(r.sessions["s1"], Setup { cwd: "/w".into(), additional_directories: None, mcp_servers: Some(vec![]) });
        assert_eq!(r.sessions["s2"], Setup { cwd: "/v".into(), ..Setup::default() }, "replayFrom is the bridge's");
        r.sent(r#"{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":"s2"}}"#);
        r.received(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"gone"}}"#);
        assert_eq!(r.sessions.keys().collect::<Vec<_>>(), ["s1"]);

        // What may go again, and what may not.
        r.sent(r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[],"idempotencyKey":"k"}}"#);
        r.sent(r#"{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#);
        r.sent(r#"{"jsonrpc":"2.0","id":7,"method":"session/revoke_inject","params":{"sessionId":"s1","messageId":"m"}}"#);
        r.sent(r#"{"jsonrpc":"2.0","id":8,"method":"session/status","params":{"sessionId":"s1"}}"#);
        r.sent(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#);
        r.received(r#"{"jsonrpc":"2.0","id":"5","result":{}}"#);
        let mut again: Vec<(&str, bool)> = r.flights.iter().map(|(id, f)| (id.as_str(), f.again())).collect();
        again.sort_unstable();
        assert_eq!(again, [("5", true), ("6", false), ("7", false), ("8", true)], "\"5\" is not 5; a notification is no flight");
    }

    #[test]
    fn version_1_does_not_rejoin() {
        let mut r = Recall::default();
        r.sent(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}"#);
        r.received(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#);
        assert!(!r.rejoinable());
    }

    #[test]
    fn requests_go_again_under_their_own_id() {
        let line = with_id(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#, "acp-inject/rejoin-1");
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            serde_json::json!({"jsonrpc":"2.0","id":"acp-inject/rejoin-1","method":"initialize","params":{}})
        );
    }
}
