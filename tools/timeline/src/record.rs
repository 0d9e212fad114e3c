//! The recording: one scripted session against the reference agent, driven through the Rust
//! client (`acp-inject-transport`), every step the client made and everything the agent reported
//! timestamped in milliseconds from the moment the session was created.
//!
//! The script (the story the guide's inject page tells):
//!
//! 1. a prompt starts turn 1;
//! 2. mid-turn, a steer, which the agent takes at its next break-point (a tool result);
//! 3. mid-turn, three queued messages: the second replaced while pending, the third revoked;
//! 4. turn 1 ends; the queued messages still pending open turn 2 (the reference agent drains
//!    the queue as one batch);
//! 5. mid-turn 2, another steer, delivered at that turn's first break-point.
//!
//! The run is checked before it is kept: every accepted message is delivered once (the revoked
//! one never), the steers inside their turns, the queued ones at the start of turn 2, the
//! replaced one with its new text. A run that does not tell that story fails, so the picture
//! cannot show something the code did not do.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_inject_core::client::SessionEvent;
use acp_inject_core::wire::{ContentBlock, InjectMode, MessageId, Patch, SessionUpdate, StateUpdate, TextContent, ToolCallStatus};
use acp_inject_tool_support::Error;
use acp_inject_transport::{ConnectOptions, Connection, Session, SessionActivity};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// A recorded run: what was run, and what happened, in time order.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Recording {
    /// The agent's command line (program name and arguments).
    pub agent: Vec<String>,
    /// The session's id, as the agent named it.
    pub session_id: String,
    /// Everything, ordered by `t`.
    pub events: Vec<Event>,
}

/// One thing that happened; `t` is milliseconds since the session was created.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Event {
    /// The client sent a call: `prompt`, `inject` (with its `mode`), `replace` or `revoke`
    /// (naming the message they concern).
    Sent { t: f64, call: String, mode: Option<String>, text: Option<String>, message_id: Option<String> },
    /// The agent answered that call; a prompt's or an inject's answer carries the new message's id.
    Answered { t: f64, call: String, message_id: Option<String> },
    /// A `user_message` update: the message is in the conversation (delivered).
    UserMessage { t: f64, message_id: String, text: String },
    /// A `state_update`: `running`, `idle` (with its stop reason), …
    State { t: f64, state: String, stop_reason: Option<String> },
    /// A tool call completed: the reference agent's break-point, where steers are delivered.
    BreakPoint { t: f64, tool_call_id: String },
    /// The agent's pending list (the `_acp-inject/pending` update) changed to these items.
    Pending { t: f64, items: Vec<PendingEntry> },
}

impl Event {
    /// When it happened.
    pub fn t(&self) -> f64 {
        match self {
            Event::Sent { t, .. }
            | Event::Answered { t, .. }
            | Event::UserMessage { t, .. }
            | Event::State { t, .. }
            | Event::BreakPoint { t, .. }
            | Event::Pending { t, .. } => *t,
        }
    }
}

/// One item of the agent's pending list.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PendingEntry {
    pub message_id: String,
    pub mode: String,
    pub text: String,
}

fn text(t: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(Box::new(TextContent::new(t)))]
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the script waits on: turns started and ended so far, and messages delivered.
#[derive(Clone, Copy, Default, Debug)]
struct Progress {
    started: u32,
    ended: u32,
    delivered: u32,
    pending: usize,
    running: bool,
}

/// The log both the script and the event reader write to.
#[derive(Clone)]
struct Log {
    start: Instant,
    events: Arc<Mutex<Vec<Event>>>,
}

impl Log {
    fn now(&self) -> f64 {
        (self.start.elapsed().as_secs_f64() * 1000.0 * 10.0).round() / 10.0
    }

    fn push(&self, event: Event) {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}

/// Reads the session's events until the connection ends, logging what the picture shows and
/// publishing the progress the script waits on.
async fn follow(session: Session, log: Log, progress: watch::Sender<Progress>) {
    while let Ok(batch) = session.next_events().await {
        for activity in batch {
            let SessionActivity::Event(SessionEvent::Update(update)) = activity else { continue };
            let t = log.now();
            match update {
                SessionUpdate::UserMessage(m) => {
                    let text = match &m.content {
                        Patch::Value(blocks) => text_of(blocks),
                        _ => String::new(),
                    };
                    log.push(Event::UserMessage { t, message_id: m.message_id.0.clone(), text });
                    progress.send_modify(|p| p.delivered += 1);
                }
                SessionUpdate::StateUpdate(s) => {
                    let stop_reason = match s.as_ref() {
                        StateUpdate::Idle(idle) => idle.stop_reason.as_ref().map(|r| r.as_str().to_owned()),
                        _ => None,
                    };
                    let running = matches!(s.as_ref(), StateUpdate::Running(_));
                    log.push(Event::State { t, state: s.tag().to_owned(), stop_reason });
                    progress.send_modify(|p| {
                        if running && !p.running {
                            p.started += 1;
                        }
                        if matches!(s.as_ref(), StateUpdate::Idle(_)) && p.running {
                            p.ended += 1;
                        }
                        p.running = running;
                    });
                }
                SessionUpdate::ToolCallUpdate(call) if call.status == Some(ToolCallStatus::Completed) => {
                    log.push(Event::BreakPoint { t, tool_call_id: call.tool_call_id.0.clone() });
                }
                SessionUpdate::AcpInjectPending(list) => {
                    let items: Vec<PendingEntry> = list
                        .pending
                        .iter()
                        .map(|p| PendingEntry {
                            message_id: p.message_id.0.clone(),
                            mode: p.mode.as_str().to_owned(),
                            text: text_of(&p.content),
                        })
                        .collect();
                    let n = items.len();
                    log.push(Event::Pending { t, items });
                    progress.send_modify(|p| p.pending = n);
                }
                _ => {}
            }
        }
    }
}

const WAIT: Duration = Duration::from_secs(30);

async fn until(rx: &mut watch::Receiver<Progress>, what: &str, done: impl Fn(&Progress) -> bool) -> Result<(), Error> {
    let outcome = tokio::time::timeout(WAIT, rx.wait_for(|p| done(p))).await.map(|r| r.is_ok());
    match outcome {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::msg(format!("the session's events ended while waiting for {what}"))),
        Err(_) => Err(Error::msg(format!("no {what} within {WAIT:?} ({:?})", *rx.borrow()))),
    }
}

fn failed(call: &str) -> impl Fn(acp_inject_transport::TransportError) -> Error + '_ {
    move |e| Error::msg(format!("{call}: {e}"))
}

/// The client's calls, each logged when sent and when answered.
struct Client {
    session: Session,
    log: Log,
}

impl Client {
    async fn prompt(&self, t: &str) -> Result<MessageId, Error> {
        self.log.push(Event::Sent { t: self.log.now(), call: "prompt".into(), mode: None, text: Some(t.into()), message_id: None });
        let id = self.session.prompt(text(t)).await.map_err(failed("prompt"))?;
        let id = id.ok_or_else(|| Error::msg("the agent answered the prompt without a messageId"))?;
        self.log.push(Event::Answered { t: self.log.now(), call: "prompt".into(), message_id: Some(id.0.clone()) });
        Ok(id)
    }

    async fn inject(&self, mode: InjectMode, t: &str) -> Result<MessageId, Error> {
        let sent = Event::Sent {
            t: self.log.now(),
            call: "inject".into(),
            mode: Some(mode.as_str().into()),
            text: Some(t.into()),
            message_id: None,
        };
        self.log.push(sent);
        let id = self.session.inject(mode, text(t)).await.map_err(failed("inject"))?;
        self.log.push(Event::Answered { t: self.log.now(), call: "inject".into(), message_id: Some(id.0.clone()) });
        Ok(id)
    }

    async fn replace(&self, id: &MessageId, t: &str) -> Result<(), Error> {
        let sent = Event::Sent {
            t: self.log.now(),
            call: "replace".into(),
            mode: None,
            text: Some(t.into()),
            message_id: Some(id.0.clone()),
        };
        self.log.push(sent);
        self.session.replace(id, text(t)).await.map_err(failed("replace"))?;
        self.log.push(Event::Answered { t: self.log.now(), call: "replace".into(), message_id: Some(id.0.clone()) });
        Ok(())
    }

    async fn revoke(&self, id: &MessageId) -> Result<(), Error> {
        self.log.push(Event::Sent {
            t: self.log.now(),
            call: "revoke".into(),
            mode: None,
            text: None,
            message_id: Some(id.0.clone()),
        });
        self.session.revoke(id).await.map_err(failed("revoke"))?;
        self.log.push(Event::Answered { t: self.log.now(), call: "revoke".into(), message_id: Some(id.0.clone()) });
        Ok(())
    }
}

/// Runs the script against `agent` (the command line of an `acp-inject-agent`) and returns the
/// checked recording.
pub async fn record(agent: &[String], delay_ms: u64) -> Result<Recording, Error> {
    let options = ConnectOptions { forward_stderr: true, ..ConnectOptions::default() };
    let connection = Connection::spawn(agent, options).await.map_err(failed("connect"))?;
    let session = connection.new_session("/home/dev/project", Vec::new(), Vec::new()).await.map_err(failed("session/new"))?;
    let log = Log { start: Instant::now(), events: Arc::default() };
    let (tx, mut rx) = watch::channel(Progress::default());
    let reader = tokio::spawn(follow(session.clone(), log.clone(), tx));
    let client = Client { session: session.clone(), log: log.clone() };
    let pause = Duration::from_millis(delay_ms);

    // Turn 1: a prompt, then a steer and three queued messages while it runs.
    client.prompt("Refactor the login module").await?;
    until(&mut rx, "turn 1 to start", |p| p.started >= 1).await?;
    tokio::time::sleep(pause).await;
    client.inject(InjectMode::Steer, "use the auth_v2 module").await?;
    client.inject(InjectMode::Queue, "then update the changelog").await?;
    let draft = client.inject(InjectMode::Queue, "add a test").await?;
    let gone = client.inject(InjectMode::Queue, "delete the old tests").await?;
    tokio::time::sleep(pause / 2).await;
    client.replace(&draft, "add tests for expired tokens").await?;
    tokio::time::sleep(pause / 2).await;
    client.revoke(&gone).await?;

    // Turn 2 opens with what is still queued; a steer while it runs.
    until(&mut rx, "turn 2 to start", |p| p.started >= 2).await?;
    tokio::time::sleep(pause).await;
    client.inject(InjectMode::Steer, "keep the public API unchanged").await?;
    until(&mut rx, "turn 2 to end with nothing pending", |p| p.ended >= 2 && p.delivered >= 5 && p.pending == 0 && !p.running).await?;
    // The last updates of the turn (its idle state comes last) are in; let the reader drain.
    tokio::time::sleep(Duration::from_millis(50)).await;
    session.close().await.map_err(failed("session/close"))?;
    connection.close().await;
    let _ = reader.await;

    let mut events = std::mem::take(&mut *log.events.lock().unwrap_or_else(|e| e.into_inner()));
    events.sort_by(|a, b| a.t().total_cmp(&b.t()));
    let recording = Recording { agent: display_command(agent), session_id: session.id().0.clone(), events };
    check(&recording)?;
    Ok(recording)
}

/// The command as the recording shows it: the program's file name, not the path on the
/// machine that built the docs.
fn display_command(agent: &[String]) -> Vec<String> {
    agent.iter().enumerate().map(|(i, a)| if i == 0 { a.rsplit('/').next().unwrap_or(a).to_owned() } else { a.clone() }).collect()
}

/// The turns of a recording: (start, end) of each `running` … `idle` interval.
pub fn turns(recording: &Recording) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut open: Option<f64> = None;
    for e in &recording.events {
        if let Event::State { t, state, .. } = e {
            match (state.as_str(), open) {
                ("running", None) => open = Some(*t),
                ("idle", Some(start)) => {
                    out.push((start, *t));
                    open = None;
                }
                _ => {}
            }
        }
    }
    out
}

/// The recording tells the script's story (see the module docs), or says what it does not.
pub fn check(recording: &Recording) -> Result<(), Error> {
    let turns = turns(recording);
    if turns.len() != 2 {
        return Err(Error::msg(format!("expected 2 turns, recorded {turns:?}")));
    }
    // Each sent prompt or inject, in order, with the id its answer gave.
    let mut sent: Vec<(String, Option<String>, String)> = Vec::new();
    let mut last_text = String::new();
    let mut last_mode = String::new();
    for e in &recording.events {
        match e {
            Event::Sent { call, mode, text, .. } if call == "prompt" || call == "inject" => {
                last_text = text.clone().unwrap_or_default();
                last_mode = mode.clone().unwrap_or_else(|| "prompt".into());
            }
            Event::Answered { call, message_id: Some(id), .. } if call == "prompt" || call == "inject" => {
                sent.push((id.clone(), Some(last_mode.clone()), last_text.clone()));
            }
            _ => {}
        }
    }
    let delivered = |id: &str| -> Vec<(f64, String)> {
        recording
            .events
            .iter()
            .filter_map(|e| match e {
                Event::UserMessage { t, message_id, text } if message_id == id => Some((*t, text.clone())),
                _ => None,
            })
            .collect()
    };
    let [(prompt, ..), (steer1, ..), (queued, ..), (replaced, ..), (revoked, ..), (steer2, ..)] = sent.as_slice() else {
        return Err(Error::msg(format!("expected 6 accepted messages, recorded {sent:?}")));
    };
    let once = |id: &str, what: &str| -> Result<(f64, String), Error> {
        let all = delivered(id);
        match all.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(Error::msg(format!("{what} ({id}) was delivered {} time(s)", all.len()))),
        }
    };
    let inside = |t: f64, turn: (f64, f64)| t > turn.0 && t <= turn.1;
    once(prompt, "the prompt")?;
    let (t, _) = once(steer1, "the first steer")?;
    if !inside(t, turns[0]) {
        return Err(Error::msg(format!("the first steer was delivered at {t} ms, outside turn 1 {:?}", turns[0])));
    }
    for (id, what) in [(queued, "the queued message"), (replaced, "the replaced message")] {
        let (t, _) = once(id, what)?;
        if t < turns[0].1 || t > turns[1].0 + 1.0 {
            return Err(Error::msg(format!("{what} was delivered at {t} ms, not when turn 2 opened ({} ms)", turns[1].0)));
        }
    }
    let (_, text) = once(replaced, "the replaced message")?;
    if text != "add tests for expired tokens" {
        return Err(Error::msg(format!("the replaced message was delivered as {text:?}")));
    }
    if !delivered(revoked).is_empty() {
        return Err(Error::msg("the revoked message was delivered"));
    }
    let (t, _) = once(steer2, "the second steer")?;
    if !inside(t, turns[1]) {
        return Err(Error::msg(format!("the second steer was delivered at {t} ms, outside turn 2 {:?}", turns[1])));
    }
    Ok(())
}
