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

use acp_inject_conformance::{AgentSetup, ClientCall, ClientSetup, Instruction, Mismatch, SetupConnection, Side};
use acp_inject_core::agent::{AgentConfig, ConnId, ConnectionRole, HistoryEntry, HostError, Output, RuntimeEvent};
use acp_inject_core::client::{CallRejected, Event, ItemStatus, MirrorSnapshot, SteerFallback};
use acp_inject_core::wire::{ContentBlock, InjectCapabilities, InjectMode};
use acp_inject_ffi::{guard, lock, AcpError};

uniffi::setup_scaffolding!();

// acp-inject-ffi's declarations of the core's types, used here as external types: the bindings
// of this component refer to acp-inject-ffi's classes, never to copies of them.
uniffi::use_remote_type!(acp_inject_ffi::AgentConfig);
uniffi::use_remote_type!(acp_inject_ffi::ConnId);
uniffi::use_remote_type!(acp_inject_ffi::ConnectionRole);
uniffi::use_remote_type!(acp_inject_ffi::HistoryEntry);
uniffi::use_remote_type!(acp_inject_ffi::HostError);
uniffi::use_remote_type!(acp_inject_ffi::Output);
uniffi::use_remote_type!(acp_inject_ffi::RuntimeEvent);
uniffi::use_remote_type!(acp_inject_ffi::CallRejected);
uniffi::use_remote_type!(acp_inject_ffi::Event);
uniffi::use_remote_type!(acp_inject_ffi::ItemStatus);
uniffi::use_remote_type!(acp_inject_ffi::MirrorSnapshot);
uniffi::use_remote_type!(acp_inject_ffi::SteerFallback);
uniffi::use_remote_type!(acp_inject_ffi::ContentBlock);
uniffi::use_remote_type!(acp_inject_ffi::InjectCapabilities);
uniffi::use_remote_type!(acp_inject_ffi::InjectMode);

// ----- the engine's own types -----

/// Which side of the protocol a vector drives.
#[uniffi::remote(Enum)]
pub enum Side {
    Agent,
    Client,
}

/// How to set up the agent for an agent-side vector.
#[uniffi::remote(Record)]
pub struct AgentSetup {
    pub config: AgentConfig,
    pub session: String,
    pub cwd: String,
    pub connections: Vec<SetupConnection>,
}

/// A connection of an agent-side vector's setup.
#[uniffi::remote(Record)]
pub struct SetupConnection {
    pub id: ConnId,
    pub role: ConnectionRole,
}

/// How to set up the client for a client-side vector.
#[uniffi::remote(Record)]
pub struct ClientSetup {
    pub session: String,
    pub capabilities: Option<InjectCapabilities>,
    pub protocol_version: u16,
    pub steer_fallback: Option<SteerFallback>,
}

/// A call of the client API.
#[uniffi::remote(Enum)]
pub enum ClientCall {
    Prompt { session: String, content: Vec<ContentBlock> },
    Inject { session: String, mode: InjectMode, content: Vec<ContentBlock> },
    Revoke { session: String, message_id: String },
    Replace { session: String, message_id: String, content: Vec<ContentBlock> },
    Cancel { session: String },
    Status { session: String },
    Close { session: String },
    Resume { session: String, cwd: String, replay: bool },
}

/// What a conformance driver must do next.
#[uniffi::remote(Enum)]
pub enum Instruction {
    ClientLine { connection: ConnId, line: String },
    Runtime { session: String, event: RuntimeEvent },
    Expect,
    ExpectHistory { session: String },
    Call(ClientCall),
    Receive { line: String },
    ExpectState { session: String },
    ExpectSent,
    ExpectItem { session: String, message_id: String },
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
    pub fn new(vector_json: String) -> Result<Arc<Self>, AcpError> {
        guard(|| {
            let run = acp_inject_conformance::VectorRun::new(&vector_json).map_err(mismatch)?;
            let value: serde_json::Value =
                serde_json::from_str(&vector_json).map_err(|e| AcpError::InvalidInput { detail: e.to_string() })?;
            let (agent, client) = match run.side() {
                Side::Agent => (Some(acp_inject_conformance::agent_setup(&value).map_err(mismatch)?), None),
                Side::Client => (None, Some(acp_inject_conformance::client_setup(&value).map_err(mismatch)?)),
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
        lock(&self.run).side()
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
    pub fn next(&self) -> Result<Option<Instruction>, AcpError> {
        guard(|| lock(&self.run).next_instruction().map_err(mismatch))
    }

    /// Reports a runtime event's result: `None` if accepted, else the host error.
    pub fn record_runtime_result(&self, host_error: Option<HostError>) -> Result<(), AcpError> {
        guard(|| lock(&self.run).record_runtime_result(host_error.as_ref().map(HostError::kind)).map_err(mismatch))
    }

    /// Reports the outputs drained, with the connections attached to each live session.
    pub fn check_outputs(&self, outputs: Vec<Output>, attached: HashMap<String, Vec<ConnId>>) -> Result<(), AcpError> {
        guard(|| {
            let attached: BTreeMap<String, Vec<ConnId>> = attached.into_iter().collect();
            lock(&self.run).check_outputs(&outputs, &attached).map_err(mismatch)
        })
    }

    /// Reports a session's history.
    pub fn check_history(&self, history: Vec<HistoryEntry>) -> Result<(), AcpError> {
        guard(|| lock(&self.run).check_history(&history).map_err(mismatch))
    }

    /// Reports a call's result (`None` when it was sent) and the lines it sent.
    pub fn check_call(&self, rejected: Option<CallRejected>, sent: Vec<String>) -> Result<(), AcpError> {
        guard(|| {
            let result = match &rejected {
                None => Ok(()),
                Some(r) => Err(r),
            };
            lock(&self.run).check_call(result, &sent).map_err(mismatch)
        })
    }

    /// Reports the lines the client sent since the last call (`expectSent`).
    pub fn check_sent(&self, sent: Vec<String>) -> Result<(), AcpError> {
        guard(|| lock(&self.run).check_sent(&sent).map_err(mismatch))
    }

    /// Reports the events a received line caused.
    pub fn record_events(&self, events: Vec<Event>) -> Result<(), AcpError> {
        guard(|| {
            lock(&self.run).record_events(&events);
            Ok(())
        })
    }

    /// Reports a session's snapshot.
    pub fn check_state(&self, snapshot: Option<MirrorSnapshot>) -> Result<(), AcpError> {
        guard(|| lock(&self.run).check_state(snapshot.as_ref()).map_err(mismatch))
    }

    /// Reports an item's status.
    pub fn check_item(&self, status: Option<ItemStatus>) -> Result<(), AcpError> {
        guard(|| lock(&self.run).check_item(status).map_err(mismatch))
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
        assert!(matches!(VectorRun::new("{not json".into()), Err(AcpError::Mismatch { .. })));
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/agent");
        let text = std::fs::read_to_string(dir.join("steer-delivered-at-tool-result.json")).expect("the vector");
        let run = VectorRun::new(text).expect("a valid vector");
        assert_eq!(run.side(), Side::Agent);
        assert!(run.agent_setup().is_some() && run.client_setup().is_none());
        assert!(run.next().expect("a first step").is_some());
    }
}
