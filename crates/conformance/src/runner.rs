//! The Rust driver: replays vector files through `acp-inject-core`, and reports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use acp_inject_core::agent::{Agent, ConnId, Output};
use acp_inject_core::client::{CallRejected, ClientConnection};
use acp_inject_core::wire::{MessageId, SessionId};
use serde_json::Value;

use crate::replay::{agent_setup, client_setup, ClientCall, Instruction, Mismatch, Side, VectorRun};

/// The outcome of one vector.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorResult {
    /// The vector's name.
    pub name: String,
    /// Its file.
    pub file: String,
    /// `None` when it passed; otherwise the first mismatch, for a person to read.
    pub mismatch: Option<String>,
}

/// The outcome of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// One result per vector, in file order.
    pub results: Vec<VectorResult>,
}

impl Report {
    /// Vectors that passed.
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.mismatch.is_none()).count()
    }

    /// Vectors that failed.
    pub fn failed(&self) -> usize {
        self.results.len() - self.passed()
    }

    /// Each failing vector and its first mismatch, then `N passed, N failed`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for r in self.results.iter().filter(|r| r.mismatch.is_some()) {
            s.push_str(&format!("FAILED {} ({})\n  {}\n", r.name, r.file, r.mismatch.as_deref().unwrap_or("")));
        }
        s.push_str(&format!("{} passed, {} failed\n", self.passed(), self.failed()));
        s
    }
}

/// Every `*.json` file below `dirs` (recursively), sorted by path.
pub fn vector_files<P: AsRef<Path>>(dirs: &[P]) -> Vec<PathBuf> {
    fn collect(path: &Path, out: &mut Vec<PathBuf>) {
        if path.is_file() {
            if path.extension().is_some_and(|e| e == "json") {
                out.push(path.to_path_buf());
            }
            return;
        }
        if let Ok(entries) = std::fs::read_dir(path) {
            for e in entries.flatten() {
                collect(&e.path(), out);
            }
        }
    }
    let mut files = Vec::new();
    for d in dirs {
        collect(d.as_ref(), &mut files);
    }
    files.sort();
    files
}

/// The rule ids (`R-…`, `C-…`) a catalogue defines: each `### R-XXX-N` heading of
/// `spec/rules.md`.
pub fn rule_ids(catalogue: &str) -> BTreeSet<String> {
    catalogue
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .filter_map(|h| h.split_whitespace().next())
        .filter(|id| (id.starts_with("R-") || id.starts_with("C-")) && id.chars().last().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect()
}

/// Replays every vector file below `dirs` (recursively, sorted by path).
pub fn run_dirs<P: AsRef<Path>>(dirs: &[P]) -> Report {
    Report { results: vector_files(dirs).iter().map(|f| run_file(f)).collect() }
}

/// Replays one vector file.
pub fn run_file(path: &Path) -> VectorResult {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => VectorResult { file, ..run_text(&text) },
        Err(e) => VectorResult { name: file.clone(), file, mismatch: Some(format!("cannot read: {e}")) },
    }
}

/// Replays one vector given as JSON text.
pub fn run_text(text: &str) -> VectorResult {
    let name = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "(unnamed)".into());
    let outcome = VectorRun::new(text).and_then(|run| match run.side() {
        Side::Agent => drive_agent(run, text),
        Side::Client => drive_client(run, text),
    });
    VectorResult { name, file: String::new(), mismatch: outcome.err().map(|m| m.0) }
}

fn attached(agent: &Agent) -> BTreeMap<String, Vec<ConnId>> {
    agent.session_ids().into_iter().map(|s| (s.0.clone(), agent.attached(&s))).collect()
}

fn drain(agent: &mut Agent) -> Result<Vec<Output>, Mismatch> {
    agent.drain().map_err(|e| Mismatch(format!("the store failed: {e}")))
}

fn drive_agent(mut run: VectorRun, text: &str) -> Result<(), Mismatch> {
    let vector: Value = serde_json::from_str(text).map_err(|e| Mismatch(e.to_string()))?;
    let setup = agent_setup(&vector)?;
    let mut agent = Agent::new(setup.config).map_err(|e| Mismatch(e.to_string()))?;
    let session = SessionId(setup.session.clone());
    agent.create_session(&session, &setup.cwd).map_err(|e| Mismatch(e.to_string()))?;
    for c in &setup.connections {
        agent.attach_as(&c.id, c.role, c.principal.clone());
        if c.joined {
            agent.attach_to_session(&c.id, &session).map_err(|e| Mismatch(e.to_string()))?;
        }
    }
    drain(&mut agent)?;
    while let Some(instruction) = run.next_instruction()? {
        match instruction {
            Instruction::ClientLine { connection, line } => agent.handle_line(&connection, &line),
            Instruction::Runtime { session, event } => {
                let result = agent.runtime_event(&SessionId(session), event);
                run.record_runtime_result(result.err().as_ref().map(|e| e.kind()))?;
            }
            Instruction::Expect => {
                let outputs = drain(&mut agent)?;
                run.check_outputs(&outputs, &attached(&agent))?;
            }
            Instruction::ExpectHistory { session } => {
                let history = agent.history(&SessionId(session)).map_err(|e| Mismatch(e.to_string()))?;
                run.check_history(&history)?;
            }
            Instruction::AnswerCall { id, outcome } => {
                let result = agent.answer_call(id, outcome);
                run.record_runtime_result(result.err().as_ref().map(|e| e.kind()))?;
            }
            other => return Err(Mismatch(format!("an agent-side vector has a client-side step: {other:?}"))),
        }
    }
    let outputs = drain(&mut agent)?;
    run.check_outputs(&outputs, &attached(&agent))
}

fn drive_client(mut run: VectorRun, text: &str) -> Result<(), Mismatch> {
    let vector: Value = serde_json::from_str(text).map_err(|e| Mismatch(e.to_string()))?;
    let setup = client_setup(&vector)?;
    let mut conn = ClientConnection::default();
    conn.assume_initialized(setup.agent);
    conn.set_steer_fallback(setup.steer_fallback);
    conn.open_session(&SessionId(setup.session), None);
    while let Some(instruction) = run.next_instruction()? {
        match instruction {
            Instruction::Call(call) => {
                let result = call_client(&mut conn, call);
                let sent = conn.take_outgoing();
                conn.take_events();
                run.check_call(result.as_ref().map(|_| ()), &sent)?;
            }
            Instruction::Receive { line } => {
                conn.receive_line(&line);
                let events = conn.take_events();
                run.record_events(&events);
            }
            Instruction::ExpectState { session } => {
                let snapshot = conn.mirror(&SessionId(session)).map(|m| m.snapshot());
                run.check_state(snapshot.as_ref())?;
            }
            Instruction::ExpectSent => run.check_sent(&conn.take_outgoing())?,
            Instruction::ExpectItem { session, message_id } => {
                let status = conn.mirror(&SessionId(session)).and_then(|m| m.item_status(&MessageId(message_id)));
                run.check_item(status)?;
            }
            other => return Err(Mismatch(format!("a client-side vector has an agent-side step: {other:?}"))),
        }
    }
    Ok(())
}

/// Performs a client call on the Rust connection (the vectors' ids are plain strings; the
/// connection takes typed ones).
pub(crate) fn call_client(conn: &mut ClientConnection, call: ClientCall) -> Result<(), CallRejected> {
    let id = |session: String| SessionId(session);
    match call {
        ClientCall::Prompt { session, content } => conn.prompt(&id(session), content).map(drop),
        ClientCall::Inject { session, mode, content } => conn.inject(&id(session), mode, content).map(drop),
        ClientCall::Revoke { session, message_id } => conn.revoke(&id(session), &MessageId(message_id)).map(drop),
        ClientCall::Replace { session, message_id, content } => conn.replace(&id(session), &MessageId(message_id), content).map(drop),
        ClientCall::Cancel { session } => {
            conn.cancel(&id(session));
            Ok(())
        }
        ClientCall::Status { session } => {
            conn.status(&id(session));
            Ok(())
        }
        ClientCall::Close { session } => {
            conn.close(&id(session));
            Ok(())
        }
        ClientCall::Resume { session, cwd, replay } => {
            conn.resume(&id(session), &cwd, replay, Vec::new(), Vec::new());
            Ok(())
        }
    }
}
