//! `acp-inject-agent`: a real ACP v2 agent over stdio (newline-delimited JSON-RPC), built on
//! `acp-inject-core`, whose "model" is deterministic and scripted: no network, no LLM.
//!
//! Each turn the model streams `--chunks` agent message chunks, then runs `--tools` tool
//! calls (`tool_call_update` in progress → completed, each completion a real `tool_result`
//! break-point; optionally a `session/request_permission` before tool `--permission-on-tool`),
//! then streams a closing chunk and ends the turn. Every step waits `--delay-ms`, so queue,
//! steer, permission holds, cancel and interrupt/finish are observable from a client. The core
//! decides every delivery; this program only plays the model and moves bytes.
//!
//! Flags: --tools N (2), --chunks N (3), --delay-ms MS (100), --permission-on-tool K (off),
//! --drain batch|one_per_turn, --steer-in-stream finish|interrupt, --store PATH (durable).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use acp_inject_core::agent::{
    Agent, AgentConfig, BreakPoint, Output, Policy, QueueDrain, RuntimeAction, RuntimeEvent, UserInput,
};
use acp_inject_core::wire::jsonrpc::{self, Frame, Incoming};
use acp_inject_core::wire::{InjectCapabilities, RequestId, SteerInStream, StopReason};
use acp_inject_store::{DurableAgent, FileStore};
use serde_json::{json, Value};

const CONN: &str = "client";

#[derive(Clone, Debug)]
struct Options {
    tools: u32,
    chunks: u32,
    delay: Duration,
    permission_on_tool: Option<u32>,
    policy: Policy,
    store: Option<String>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        tools: 2,
        chunks: 3,
        delay: Duration::from_millis(100),
        permission_on_tool: None,
        policy: Policy::default(),
        store: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--tools" => o.tools = value("--tools")?.parse().map_err(|e| format!("--tools: {e}"))?,
            "--chunks" => o.chunks = value("--chunks")?.parse().map_err(|e| format!("--chunks: {e}"))?,
            "--delay-ms" => o.delay = Duration::from_millis(value("--delay-ms")?.parse().map_err(|e| format!("--delay-ms: {e}"))?),
            "--permission-on-tool" => {
                o.permission_on_tool = Some(value("--permission-on-tool")?.parse().map_err(|e| format!("--permission-on-tool: {e}"))?)
            }
            "--drain" => {
                o.policy.queue_drain = match value("--drain")?.as_str() {
                    "batch" => QueueDrain::Batch,
                    "one_per_turn" => QueueDrain::OnePerTurn,
                    other => return Err(format!("--drain: unknown policy {other:?}")),
                }
            }
            "--steer-in-stream" => {
                o.policy.steer_in_stream = match value("--steer-in-stream")?.as_str() {
                    "finish" => SteerInStream::Finish,
                    "interrupt" => SteerInStream::Interrupt,
                    other => return Err(format!("--steer-in-stream: unknown mode {other:?}")),
                }
            }
            "--store" => o.store = Some(value("--store")?),
            "-h" | "--help" => {
                eprintln!("{}", include_str!("main.rs").lines().take_while(|l| l.starts_with("//!")).map(|l| l.trim_start_matches("//! ").trim_start_matches("//!")).collect::<Vec<_>>().join("\n"));
                std::process::exit(0);
            }
            other => return Err(format!("unknown flag {other:?} (see --help)")),
        }
    }
    Ok(o)
}

/// Where the scripted model is in its turn.
#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Streaming { left: u32 },
    ToolStart { tool: u32 },
    AwaitPermission { tool: u32, request: String },
    ToolRunning { tool: u32 },
    Closing,
    End,
}

#[derive(Debug)]
struct Model {
    phase: Phase,
    turn: u32,
    message: u32,
    due: Instant,
    heard: Vec<String>,
}

/// The core, with or without a store: accept responses leave only once durable.
enum Core {
    Memory(Agent),
    Durable(DurableAgent),
}

impl Core {
    fn line(&mut self, conn: &str, msg: &str) -> Vec<Output> {
        match self {
            Core::Memory(a) => {
                a.handle_line(conn, msg);
                a.drain()
            }
            Core::Durable(d) => d.handle_line(conn, msg).unwrap_or_else(|e| fatal(&e.to_string())),
        }
    }

    fn event(&mut self, session: &str, event: RuntimeEvent) -> Vec<Output> {
        let r = match self {
            Core::Memory(a) => a.runtime_event(session, event).map(|_| a.drain()).map_err(|e| e.to_string()),
            Core::Durable(d) => d.runtime_event(session, event).map_err(|e| e.to_string()),
        };
        // The runtime follows the core's instructions, so a refused event is a bug here.
        r.unwrap_or_else(|e| fatal(&format!("runtime event refused: {e}")))
    }

    fn is_live(&self, session: &str) -> bool {
        match self {
            Core::Memory(a) => a.is_live(session),
            Core::Durable(d) => d.agent().is_live(session),
        }
    }
}

fn fatal(message: &str) -> ! {
    eprintln!("acp-inject-agent: {message}");
    std::process::exit(2)
}

struct Runtime {
    core: Core,
    opts: Options,
    models: BTreeMap<String, Model>,
    permission_requests: HashMap<String, String>,
    next_request: u64,
    out: std::io::BufWriter<std::io::Stdout>,
}

impl Runtime {
    fn write(&mut self, line: &str) {
        let ok = writeln!(self.out, "{line}").and_then(|_| self.out.flush());
        if ok.is_err() {
            std::process::exit(0); // the client went away
        }
    }

    /// Sends the core's lines and applies its actions (which may cause further outputs).
    fn apply(&mut self, outputs: Vec<Output>) {
        let mut queue: std::collections::VecDeque<Output> = outputs.into();
        while let Some(o) = queue.pop_front() {
            match o {
                Output::Line { line, .. } => self.write(&line),
                Output::Action { session, action } => {
                    let more = self.act(&session, action);
                    queue.extend(more);
                }
            }
        }
    }

    fn act(&mut self, session: &str, action: RuntimeAction) -> Vec<Output> {
        let now = Instant::now();
        let delay = self.opts.delay;
        match action {
            RuntimeAction::StartTurn(inputs) => {
                let m = self.models.entry(session.to_owned()).or_insert(Model {
                    phase: Phase::End,
                    turn: 0,
                    message: 0,
                    due: now,
                    heard: Vec::new(),
                });
                m.turn += 1;
                m.message += 1;
                m.heard = inputs.iter().map(summary).collect();
                m.phase = Phase::Streaming { left: self.opts.chunks };
                m.due = now + delay;
                self.core.event(session, RuntimeEvent::StreamStarted)
            }
            RuntimeAction::Deliver(inputs) => {
                let Some(m) = self.models.get_mut(session) else { return Vec::new() };
                let heard: Vec<String> = inputs.iter().map(summary).collect();
                let text = format!("(noted: {}) ", heard.join("; "));
                m.heard.extend(heard);
                let id = format!("a{}_{}", m.turn, m.message);
                self.core.event(session, chunk(&id, &text))
            }
            RuntimeAction::InterruptStream => {
                // Cut the stream, then report the break-point the core delivers the steer at.
                let Some(m) = self.models.get_mut(session) else { return Vec::new() };
                if let Phase::Streaming { .. } = m.phase {
                    m.phase = Phase::ToolStart { tool: 0 };
                    m.due = now + delay;
                }
                let mut out = self.core.event(session, RuntimeEvent::StreamFinished);
                out.extend(self.core.event(session, RuntimeEvent::BreakPoint(BreakPoint::ModelStep)));
                out
            }
            RuntimeAction::CancelTurn => {
                let Some(m) = self.models.get_mut(session) else { return Vec::new() };
                let mut out = Vec::new();
                if let Phase::AwaitPermission { request, .. } = &m.phase {
                    self.permission_requests.remove(request);
                    out.extend(self.core.event(session, RuntimeEvent::PermissionResolved));
                }
                if let Phase::Streaming { .. } = m.phase {
                    out.extend(self.core.event(session, RuntimeEvent::StreamFinished));
                }
                let m = self.models.get_mut(session).expect("present");
                m.phase = Phase::End;
                out.extend(self.core.event(session, RuntimeEvent::TurnEnded { stop_reason: StopReason::Cancelled, usage: None }));
                out
            }
            RuntimeAction::Dropped(injects) => {
                for d in injects {
                    eprintln!("acp-inject-agent: session {session} closed with {} pending: {}", d.message_id, serde_json::to_string(&d.content).unwrap_or_default());
                }
                self.models.remove(session);
                Vec::new()
            }
        }
    }

    /// Advances every model whose step is due.
    fn step_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self.models.iter().filter(|(_, m)| m.phase != Phase::End && !matches!(m.phase, Phase::AwaitPermission { .. }) && m.due <= now).map(|(s, _)| s.clone()).collect();
        for session in due {
            if !self.core.is_live(&session) {
                self.models.remove(&session);
                continue;
            }
            let outputs = self.step(&session);
            self.apply(outputs);
        }
    }

    fn step(&mut self, session: &str) -> Vec<Output> {
        let opts = self.opts.clone();
        let m = self.models.get_mut(session).expect("due model");
        m.due = Instant::now() + opts.delay;
        let turn = m.turn;
        let message = format!("a{}_{}", m.turn, m.message);
        match m.phase.clone() {
            Phase::Streaming { left } if left > 0 => {
                m.phase = Phase::Streaming { left: left - 1 };
                let text = if left == opts.chunks {
                    format!("Working on: {}. ", m.heard.join("; "))
                } else {
                    format!("step {} of my plan. ", opts.chunks - left + 1)
                };
                self.core.event(session, chunk(&message, &text))
            }
            Phase::Streaming { .. } => {
                m.phase = if opts.tools > 0 { Phase::ToolStart { tool: 0 } } else { Phase::Closing };
                self.core.event(session, RuntimeEvent::StreamFinished)
            }
            Phase::ToolStart { tool } => {
                let call = format!("call_{turn}_{tool}");
                let mut out = self.core.event(
                    session,
                    update(json!({ "sessionUpdate": "tool_call_update", "toolCallId": call, "title": format!("Run step {}", tool + 1), "kind": "execute", "status": "pending" })),
                );
                if opts.permission_on_tool == Some(tool) {
                    self.next_request += 1;
                    let request = format!("perm_{}", self.next_request);
                    let line = jsonrpc::request_line(
                        &RequestId::Str(request.clone()),
                        "session/request_permission",
                        &json!({ "sessionId": session, "title": format!("Allow step {}?", tool + 1),
                                 "options": [ { "optionId": "allow", "name": "Allow", "kind": "allow_once" },
                                              { "optionId": "reject", "name": "Reject", "kind": "reject_once" } ] }),
                    );
                    self.permission_requests.insert(request.clone(), session.to_owned());
                    let m = self.models.get_mut(session).expect("model");
                    m.phase = Phase::AwaitPermission { tool, request };
                    out.push(Output::Line { to: acp_inject_core::agent::Recipient::All, line });
                    out.extend(self.core.event(session, RuntimeEvent::PermissionRequested));
                } else {
                    let m = self.models.get_mut(session).expect("model");
                    m.phase = Phase::ToolRunning { tool };
                    out.extend(self.core.event(session, update(json!({ "sessionUpdate": "tool_call_update", "toolCallId": call, "status": "in_progress" }))));
                }
                out
            }
            Phase::AwaitPermission { .. } => Vec::new(),
            Phase::ToolRunning { tool } => {
                let call = format!("call_{turn}_{tool}");
                m.phase = if tool + 1 < opts.tools { Phase::ToolStart { tool: tool + 1 } } else { Phase::Closing };
                let mut out = self.core.event(
                    session,
                    update(json!({ "sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed",
                                   "content": [ { "type": "content", "content": { "type": "text", "text": format!("step {} done", tool + 1) } } ] })),
                );
                out.extend(self.core.event(session, RuntimeEvent::BreakPoint(BreakPoint::ToolResult)));
                out
            }
            Phase::Closing => {
                m.phase = Phase::End;
                let heard = m.heard.len();
                let mut out = self.core.event(session, chunk(&message, &format!("Done ({heard} message(s) handled this turn).")));
                out.extend(self.core.event(
                    session,
                    RuntimeEvent::TurnEnded {
                        stop_reason: StopReason::EndTurn,
                        usage: Some(json!({ "totalTokens": 100 * heard as u64 + 50, "inputTokens": 100 * heard as u64, "outputTokens": 50 })),
                    },
                ));
                out
            }
            Phase::End => Vec::new(),
        }
    }

    fn permission_answered(&mut self, request: &str, outcome: Result<&serde_json::value::RawValue, String>) {
        let Some(session) = self.permission_requests.remove(request) else { return };
        let allowed = matches!(&outcome, Ok(r) if serde_json::from_str::<Value>(r.get()).ok().and_then(|v| v["outcome"]["optionId"].as_str().map(|s| s == "allow")).unwrap_or(false));
        let Some(m) = self.models.get_mut(&session) else { return };
        let Phase::AwaitPermission { tool, .. } = m.phase else { return };
        m.phase = Phase::ToolRunning { tool };
        m.due = Instant::now() + self.opts.delay;
        let call = format!("call_{}_{tool}", m.turn);
        let status = if allowed { "in_progress" } else { "failed" };
        let mut out = self.core.event(&session, RuntimeEvent::PermissionResolved);
        out.extend(self.core.event(&session, update(json!({ "sessionUpdate": "tool_call_update", "toolCallId": call, "status": status }))));
        self.apply(out);
    }

    fn line(&mut self, bytes: &[u8]) {
        // Responses to this runtime's own requests are the runtime's; everything else is the core's.
        if let Ok(Frame::Single(Incoming::Response { id: RequestId::Str(id), outcome })) = jsonrpc::parse_bytes(bytes) {
            if self.permission_requests.contains_key(&id) {
                let outcome = outcome.map_err(|e| e.message);
                self.permission_answered(&id, outcome);
                return;
            }
        }
        let text = String::from_utf8_lossy(bytes);
        let outputs = match std::str::from_utf8(bytes) {
            Ok(t) => self.core.line(CONN, t),
            Err(_) => self.core.line(CONN, &text), // lossy text is not JSON-RPC: answered -32700
        };
        self.apply(outputs);
    }
}

fn summary(u: &UserInput) -> String {
    let text: Vec<String> = u.content.iter().map(|b| match serde_json::to_value(b) {
        Ok(v) => v["text"].as_str().map(str::to_owned).unwrap_or_else(|| format!("[{}]", v["type"].as_str().unwrap_or("content"))),
        Err(_) => String::new(),
    }).collect();
    format!("\"{}\"", text.join(" "))
}

fn update(v: Value) -> RuntimeEvent {
    RuntimeEvent::Update(serde_json::from_value(v).unwrap_or_else(|e| fatal(&format!("bad scripted update: {e}"))))
}

fn chunk(message: &str, text: &str) -> RuntimeEvent {
    update(json!({ "sessionUpdate": "agent_message_chunk", "messageId": message, "content": { "type": "text", "text": text } }))
}

fn main() {
    let opts = parse_args().unwrap_or_else(|e| fatal(&e));
    let inject: InjectCapabilities = serde_json::from_value(json!({
        "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": [opts.policy.steer_in_stream.as_str()]
    }))
    .expect("static capabilities");
    let config = AgentConfig {
        inject: Some(inject),
        policy: opts.policy.clone(),
        info: acp_inject_core::agent::AgentInfo { name: "acp-inject-reference-agent".into(), version: env!("CARGO_PKG_VERSION").into() },
    };
    let core = match &opts.store {
        Some(path) => Core::Durable(DurableAgent::open(FileStore::new(path), config).unwrap_or_else(|e| fatal(&e.to_string()))),
        None => Core::Memory(Agent::new(config)),
    };
    let mut rt = Runtime {
        core,
        opts,
        models: BTreeMap::new(),
        permission_requests: HashMap::new(),
        next_request: 0,
        out: std::io::BufWriter::new(std::io::stdout()),
    };

    // A restored turn lost its model process with the crash: end it as cancelled, so the
    // pending injects it held open the next turn (nothing accepted is lost, R-DELIV-2).
    let interrupted: Vec<String> = match &rt.core {
        Core::Durable(d) => d.agent().session_ids().into_iter().filter(|s| d.agent().turn_in_progress(s)).collect(),
        Core::Memory(_) => Vec::new(),
    };
    for session in interrupted {
        let out = rt.core.event(&session, RuntimeEvent::TurnEnded { stop_reason: StopReason::Cancelled, usage: None });
        rt.apply(out);
    }

    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match stdin.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                        buf.pop();
                    }
                    if !buf.is_empty() && tx.send(buf.clone()).is_err() {
                        break;
                    }
                }
            }
        }
    });

    loop {
        let next = rt.models.values().filter(|m| m.phase != Phase::End && !matches!(m.phase, Phase::AwaitPermission { .. })).map(|m| m.due).min();
        let msg = match next {
            Some(due) => rx.recv_timeout(due.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match msg {
            Ok(line) => rt.line(&line),
            Err(mpsc::RecvTimeoutError::Timeout) => rt.step_due(),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
}
