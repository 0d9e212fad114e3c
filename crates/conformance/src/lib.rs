//! The conformance vectors of acp-inject: the replay engine and the Rust runner.
//!
//! A vector (format: `spec/vectors/README.md`) drives one side of a session — the agent core,
//! or a client connection — and states exactly what must come out. [`VectorRun`] owns the
//! format; a driver owns the implementation under test and follows the engine's
//! [`Instruction`]s. [`run_dirs`] is the Rust driver: it replays every vector file below the
//! given directories through `acp-inject-core`. Every binding drives the same engine through
//! its own API, so identical results in every language prove that every language inherits the
//! same state machine.
//!
//! ```
//! let vector = r#"{"name": "status is open", "rules": ["R-STATUS-1"], "side": "agent", "steps": [
//!   {"client": {"jsonrpc": "2.0", "id": 1, "method": "session/status", "params": {"sessionId": "s1"}}},
//!   {"expect": [{"jsonrpc": "2.0", "id": 1, "result": {"status": "open", "state": {"state": "idle"}}}]}]}"#;
//! let result = acp_inject_conformance::run_text(vector);
//! assert_eq!(result.mismatch, None);
//! ```

#![warn(missing_docs)]

pub mod blackbox;
mod captures;
pub mod crash;
pub mod encode;
pub mod hosts;
pub mod load;
mod peer;
mod replay;
mod runner;

pub use captures::Captures;
pub use replay::{
    agent_setup, client_setup, AgentSetup, ClientCall, ClientSetup, Instruction, Mismatch, SetupConnection, Side, VectorRun,
};
pub use runner::{rule_ids, run_dirs, run_file, run_text, vector_files, Report, VectorResult};
