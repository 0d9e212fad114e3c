//! The shared, sans-IO core of acp-inject: the agent-side pending-inject state machine
//! ([`agent`]) and the client-side mirror ([`client`]).
//!
//! # The draining contract
//!
//! Neither side does I/O, reads a clock, spawns a thread or awaits anything. Inputs are method
//! calls: a JSON-RPC line from a peer, or (agent side) a runtime event. Each call queues every
//! output it causes before it returns; the caller then drains them ([`agent::Agent::poll_output`]
//! until `None`, or [`agent::Agent::drain`]) and writes the lines to the peers and hands the
//! actions to its runtime, in order. A response always comes before the notifications its
//! request caused. Outputs not drained stay queued, in order, until the next drain.
//!
//! The semantics are those of `SEMANTICS.md`; rule ids (R-…, C-…) in the docs and tests refer
//! to it. The conformance vectors in `spec/vectors/` are replayed through [`vectors`].

pub mod agent;
pub mod client;
pub mod vectors;

pub use acp_inject_wire as wire;
