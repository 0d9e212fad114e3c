//! The shared, sans-IO core of acp-inject: the agent-side session and pending-inject state
//! machine ([`agent`]) and the client-side connection and session mirror ([`client`]).
//!
//! # The draining contract
//!
//! Neither side does I/O, reads a clock, spawns a thread or awaits anything. Inputs are method
//! calls: a JSON-RPC line (or bytes) from a peer, a runtime event (agent side) or a user's call
//! (client side). Each call queues every output it causes before it returns; the caller then
//! drains them — [`agent::Agent::drain`] (which first commits the batch to the agent's store),
//! or [`client::ClientConnection::take_outgoing`] and
//! [`client::ClientConnection::take_events`] — and writes the lines to the peers and hands the
//! actions to its runtime, in order. A response comes before the notifications its request
//! caused, except where the protocol puts them first (a `session/resume` replay, the notices
//! of a `session/close`). Outputs not drained stay queued, in order, until the next drain.
//!
//! The rules are the project's catalogue, `spec/rules.md`; rule ids (R-…, C-…) in the docs and
//! tests refer to it. The conformance vectors in `spec/vectors/` are replayed by the
//! `acp-inject-conformance` crate, in every language.

#![warn(missing_docs)]

pub mod agent;
pub mod client;

pub use acp_inject_wire as wire;
