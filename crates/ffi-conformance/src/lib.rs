//! The conformance engine for the bindings' vector drivers, as a UniFFI component of its own.
//!
//! Each language's test suite replays every vector through its binding: it performs each step
//! on `AgentCore` or `ClientCore` exactly as a host would and hands what came out to
//! [`VectorRun`], the shared Rust engine (`acp-inject-conformance`), which owns the vector
//! format and the comparison.
//!
//! # Why a crate of its own, and not a feature of `acp-inject-ffi`
//!
//! The engine (with jsonschema and clap behind it) must not ship: the wheel, the jar and the
//! Swift package are built from `crates/ffi` alone, which does not depend on
//! `acp-inject-conformance` at all. The tests, though, must exercise the very binding that ships.
//! UniFFI ties a binding to one library's exports (a module checks every function's checksum
//! when it loads, and fails on a missing one), and the Python package's flat readers are
//! installed only over the exact module they were generated from. A cargo feature inside
//! `acp-inject-ffi` would give its tests a different `acp_inject_ffi` binding from the one that
//! ships. A separate component does not: this crate has its own UniFFI namespace
//! (`acp_inject_ffi_conformance`), uses `acp-inject-ffi`'s types as external types, and its
//! cdylib (the library the test suites load) holds both components, so the tests load the
//! shipped `acp_inject_ffi` binding unchanged plus this one beside it (`generated/conformance/`).
//! `cargo xtask codegen` checks that the `acp_inject_ffi` binding generated from this library
//! is byte for byte the shipped one.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use acp_inject_conformance::{ClientCall as Call, Instruction as Step, Mismatch, Side as CoreSide};
use acp_inject_core::agent::{ConnId, HistoryEntry, HostError, Output};
use acp_inject_core::client::{CallRejected, Event, ItemStatus, MirrorSnapshot};
use acp_inject_ffi::{arg, guard, lock, out, AcpError, FfiError};

uniffi::setup_scaffolding!();

// ----- the engine's own types: records whose values are in the boundary encoding -----
//
// The drivers hand the engine what the language's own API returned, encoded again by the
// language's generated encoder (so the values go through both directions of every binding's
// codec), and decode what the engine gives them with its decoder.

/// Which side of the protocol a vector drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum Side {
    Agent,
    Client,
}

/// How to set up the agent for an agent-side vector.
#[derive(Debug, Clone, uniffi::Record)]
pub struct AgentSetup {
    /// An `AgentConfig`, encoded.
    pub config: Vec<u8>,
    pub session: String,
    pub cwd: String,
    pub connections: Vec<SetupConnection>,
}

/// A connection of an agent-side vector's setup.
#[derive(Debug, Clone, uniffi::Record)]
pub struct SetupConnection {
    pub id: String,
    /// A `ConnectionRole`, encoded.
    pub role: Vec<u8>,
    /// The principal it speaks for (R-TENANT-1).
    pub principal: Option<String>,
    /// Attached to the setup's session before the first step.
    pub joined: bool,
}

/// How to set up the client for a client-side vector.
#[derive(Debug, Clone, uniffi::Record)]
pub struct ClientSetup {
    pub session: String,
    /// An optional `InjectCapabilities`, encoded.
    pub capabilities: Vec<u8>,
    pub protocol_version: u16,
    /// An optional `SteerFallback`, encoded.
    pub steer_fallback: Vec<u8>,
    /// The agent's `initialize` answer (an `InitializeResponse`, encoded), for the client's
    /// `assume_initialized`: the version, `session.inject` and the advertised extensions.
    pub agent: Vec<u8>,
}

/// A call of the client API (content: a list of `ContentBlock`, mode: an `InjectMode`, encoded).
#[derive(Debug, Clone, uniffi::Enum)]
pub enum ClientCall {
    Prompt { session: String, content: Vec<u8> },
    Inject { session: String, mode: Vec<u8>, content: Vec<u8> },
    Revoke { session: String, message_id: String },
    Replace { session: String, message_id: String, content: Vec<u8> },
    Cancel { session: String },
    Status { session: String },
    Close { session: String },
    Resume { session: String, cwd: String, replay: bool },
}

/// What a conformance driver must do next (event: a `RuntimeEvent`, encoded).
#[derive(Debug, Clone, uniffi::Enum)]
pub enum Instruction {
    ClientLine {
        connection: String,
        line: String,
    },
    Runtime {
        session: String,
        event: Vec<u8>,
    },
    Expect,
    ExpectHistory {
        session: String,
    },
    Call {
        call: ClientCall,
    },
    Receive {
        line: String,
    },
    ExpectState {
        session: String,
    },
    ExpectSent,
    ExpectItem {
        session: String,
        message_id: String,
    },
    /// Answer the host call `id` (`AgentCore.answer_call` with `result`, encoded JSON, or
    /// `AgentCore.refuse_call` with `error`, an encoded `TurnFailure`: exactly one is not
    /// empty); report with `record_runtime_result`.
    AnswerCall {
        id: u64,
        result: Vec<u8>,
        error: Vec<u8>,
    },
}

impl From<Call> for ClientCall {
    fn from(c: Call) -> Self {
        match c {
            Call::Prompt { session, content } => ClientCall::Prompt { session, content: out(&content) },
            Call::Inject { session, mode, content } => ClientCall::Inject { session, mode: out(&mode), content: out(&content) },
            Call::Revoke { session, message_id } => ClientCall::Revoke { session, message_id },
            Call::Replace { session, message_id, content } => ClientCall::Replace { session, message_id, content: out(&content) },
            Call::Cancel { session } => ClientCall::Cancel { session },
            Call::Status { session } => ClientCall::Status { session },
            Call::Close { session } => ClientCall::Close { session },
            Call::Resume { session, cwd, replay } => ClientCall::Resume { session, cwd, replay },
        }
    }
}

impl From<Step> for Instruction {
    fn from(s: Step) -> Self {
        match s {
            Step::ClientLine { connection, line } => Instruction::ClientLine { connection: connection.into(), line },
            Step::Runtime { session, event } => Instruction::Runtime { session, event: out(&event) },
            Step::Expect => Instruction::Expect,
            Step::ExpectHistory { session } => Instruction::ExpectHistory { session },
            Step::Call(call) => Instruction::Call { call: call.into() },
            Step::Receive { line } => Instruction::Receive { line },
            Step::ExpectState { session } => Instruction::ExpectState { session },
            Step::ExpectSent => Instruction::ExpectSent,
            Step::ExpectItem { session, message_id } => Instruction::ExpectItem { session, message_id },
            Step::AnswerCall { id, outcome } => match outcome {
                Ok(result) => Instruction::AnswerCall { id, result: out(&result), error: Vec::new() },
                Err(e) => {
                    let failure =
                        acp_inject_core::wire::TurnFailure::new(i32::try_from(e.code).unwrap_or(i32::MIN), e.message).data(e.data);
                    Instruction::AnswerCall { id, result: Vec::new(), error: out(&failure) }
                }
            },
        }
    }
}

// ----- the engine -----

fn mismatch(m: Mismatch) -> AcpError {
    AcpError::Mismatch { detail: m.0 }
}

/// One vector being replayed by a driver.
#[derive(uniffi::Object)]
pub struct VectorRun {
    run: Mutex<acp_inject_conformance::VectorRun>,
    agent: Option<AgentSetup>,
    client: Option<ClientSetup>,
}

#[uniffi::export]
impl VectorRun {
    /// Parses a vector (its JSON text).
    #[uniffi::constructor]
    pub fn new(vector_json: String) -> Result<Arc<Self>, FfiError> {
        guard(|| {
            let run = acp_inject_conformance::VectorRun::new(&vector_json).map_err(mismatch)?;
            let value: serde_json::Value = serde_json::from_str(&vector_json).map_err(AcpError::invalid)?;
            let (agent, client) = match run.side() {
                CoreSide::Agent => {
                    let a = acp_inject_conformance::agent_setup(&value).map_err(mismatch)?;
                    let connections = a
                        .connections
                        .into_iter()
                        .map(|c| SetupConnection { id: c.id.into(), role: out(&c.role), principal: c.principal, joined: c.joined })
                        .collect();
                    (Some(AgentSetup { config: out(&a.config), session: a.session, cwd: a.cwd, connections }), None)
                }
                CoreSide::Client => {
                    let c = acp_inject_conformance::client_setup(&value).map_err(mismatch)?;
                    let setup = ClientSetup {
                        session: c.session,
                        capabilities: out(&c.capabilities),
                        protocol_version: c.protocol_version,
                        steer_fallback: out(&c.steer_fallback),
                        agent: out(&c.agent),
                    };
                    (None, Some(setup))
                }
            };
            Ok(Arc::new(VectorRun { run: Mutex::new(run), agent, client }))
        })
    }

    /// The vector's name.
    pub fn name(&self) -> String {
        lock(&self.run).name().to_owned()
    }

    /// Which side it drives.
    pub fn side(&self) -> Side {
        match lock(&self.run).side() {
            CoreSide::Agent => Side::Agent,
            CoreSide::Client => Side::Client,
        }
    }

    /// The agent setup of an agent-side vector.
    pub fn agent_setup(&self) -> Option<AgentSetup> {
        self.agent.clone()
    }

    /// The client setup of a client-side vector.
    pub fn client_setup(&self) -> Option<ClientSetup> {
        self.client.clone()
    }

    /// The next instruction, or `None` when done (then drain once more and report with
    /// `check_outputs`).
    pub fn next(&self) -> Result<Option<Instruction>, FfiError> {
        guard(|| Ok(lock(&self.run).next_instruction().map_err(mismatch)?.map(Instruction::from)))
    }

    /// Reports a runtime event's result: `host_error` is an optional `HostError`, encoded
    /// (absent if the event was accepted).
    pub fn record_runtime_result(&self, host_error: Vec<u8>) -> Result<(), FfiError> {
        guard(|| {
            let error = arg::<Option<HostError>>(&host_error, "host_error")?;
            lock(&self.run).record_runtime_result(error.as_ref().map(HostError::kind)).map_err(mismatch)
        })
    }

    /// Reports the outputs drained (a list of `Output`, encoded), with the connections attached
    /// to each live session.
    pub fn check_outputs(&self, outputs: Vec<u8>, attached: HashMap<String, Vec<String>>) -> Result<(), FfiError> {
        guard(|| {
            let outputs = arg::<Vec<Output>>(&outputs, "outputs")?;
            let attached: BTreeMap<String, Vec<ConnId>> =
                attached.into_iter().map(|(s, cs)| (s, cs.into_iter().map(ConnId::from).collect())).collect();
            lock(&self.run).check_outputs(&outputs, &attached).map_err(mismatch)
        })
    }

    /// Reports a session's history (a list of `HistoryEntry`, encoded).
    pub fn check_history(&self, history: Vec<u8>) -> Result<(), FfiError> {
        guard(|| lock(&self.run).check_history(&arg::<Vec<HistoryEntry>>(&history, "history")?).map_err(mismatch))
    }

    /// Reports a call's result (`rejected`: an optional `CallRejected`, encoded; absent when it
    /// was sent) and the lines it sent.
    pub fn check_call(&self, rejected: Vec<u8>, sent: Vec<String>) -> Result<(), FfiError> {
        guard(|| {
            let rejected = arg::<Option<CallRejected>>(&rejected, "rejected")?;
            let result = match &rejected {
                None => Ok(()),
                Some(r) => Err(r),
            };
            lock(&self.run).check_call(result, &sent).map_err(mismatch)
        })
    }

    /// Reports the lines the client sent since the last call (`expectSent`).
    pub fn check_sent(&self, sent: Vec<String>) -> Result<(), FfiError> {
        guard(|| lock(&self.run).check_sent(&sent).map_err(mismatch))
    }

    /// Reports the events a received line caused (a list of `Event`, encoded).
    pub fn record_events(&self, events: Vec<u8>) -> Result<(), FfiError> {
        guard(|| {
            lock(&self.run).record_events(&arg::<Vec<Event>>(&events, "events")?);
            Ok(())
        })
    }

    /// Reports a session's snapshot (an optional `MirrorSnapshot`, encoded).
    pub fn check_state(&self, snapshot: Vec<u8>) -> Result<(), FfiError> {
        guard(|| lock(&self.run).check_state(arg::<Option<MirrorSnapshot>>(&snapshot, "snapshot")?.as_ref()).map_err(mismatch))
    }

    /// Reports an item's status (an optional `ItemStatus`, encoded).
    pub fn check_item(&self, status: Vec<u8>) -> Result<(), FfiError> {
        guard(|| lock(&self.run).check_item(arg::<Option<ItemStatus>>(&status, "status")?).map_err(mismatch))
    }
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<VectorRun>();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine answers through the boundary's error type: an unreadable vector is a typed
    /// mismatch, and a vector replayed to the end with the right outputs passes.
    #[test]
    fn a_vector_replays_through_the_exported_engine() {
        assert!(matches!(VectorRun::new("{not json".into()).map_err(AcpError::from), Err(AcpError::Mismatch { .. })));
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/agent");
        let text = std::fs::read_to_string(dir.join("steer-delivered-at-tool-result.json")).expect("the vector");
        let run = VectorRun::new(text).expect("a valid vector");
        assert_eq!(run.side(), Side::Agent);
        assert!(run.agent_setup().is_some() && run.client_setup().is_none());
        assert!(run.next().expect("a first step").is_some());
    }
}
