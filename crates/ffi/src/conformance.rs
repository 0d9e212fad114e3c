//! The conformance engine for the bindings' drivers: each language replays every vector
//! through its own API and reports what came out; the format and the matching are Rust's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use acp_inject_conformance::{AgentSetup, ClientSetup, Instruction, Side};
use acp_inject_core::agent::{HistoryEntry, HostError, Output};
use acp_inject_core::client::{CallRejected, Event, ItemStatus, MirrorSnapshot};

use crate::{guard, lock, AcpError};

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
            let run = acp_inject_conformance::VectorRun::new(&vector_json)?;
            let value: serde_json::Value = serde_json::from_str(&vector_json).map_err(AcpError::invalid)?;
            let (agent, client) = match run.side() {
                Side::Agent => (Some(acp_inject_conformance::agent_setup(&value)?), None),
                Side::Client => (None, Some(acp_inject_conformance::client_setup(&value)?)),
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
        guard(|| Ok(lock(&self.run).next_instruction()?))
    }

    /// Reports a runtime event's result: `None` if accepted, else the host error.
    pub fn record_runtime_result(&self, host_error: Option<HostError>) -> Result<(), AcpError> {
        guard(|| Ok(lock(&self.run).record_runtime_result(host_error.as_ref().map(HostError::kind))?))
    }

    /// Reports the outputs drained, with the connections attached to each live session.
    pub fn check_outputs(&self, outputs: Vec<Output>, attached: HashMap<String, Vec<String>>) -> Result<(), AcpError> {
        guard(|| {
            let attached: BTreeMap<String, Vec<String>> = attached.into_iter().collect();
            Ok(lock(&self.run).check_outputs(&outputs, &attached)?)
        })
    }

    /// Reports a session's history.
    pub fn check_history(&self, history: Vec<HistoryEntry>) -> Result<(), AcpError> {
        guard(|| Ok(lock(&self.run).check_history(&history)?))
    }

    /// Reports a call's result (`None` when it was sent) and the lines it sent.
    pub fn check_call(&self, rejected: Option<CallRejected>, sent: Vec<String>) -> Result<(), AcpError> {
        guard(|| {
            let result = match &rejected {
                None => Ok(()),
                Some(r) => Err(r),
            };
            Ok(lock(&self.run).check_call(result, &sent)?)
        })
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
        guard(|| Ok(lock(&self.run).check_state(snapshot.as_ref())?))
    }

    /// Reports an item's status.
    pub fn check_item(&self, status: Option<ItemStatus>) -> Result<(), AcpError> {
        guard(|| Ok(lock(&self.run).check_item(status)?))
    }
}
