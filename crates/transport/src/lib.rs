//! Async transports for acp-inject, on tokio: the same loop, ids and routing for every
//! language (the bindings export them through UniFFI's async support).
//!
//! - [`client`]: a connection to an agent — spawn its command (stderr kept and forwarded, exit
//!   reported as an error, graceful close then kill) or use any reader/writer pair — with
//!   async calls and a per-session stream of events, on the sans-IO client connection.
//! - [`server`]: an agent server that runs the agent core over stdio (or any reader/writer
//!   pair), with an optional durable store, around a runtime the author implements.

#![warn(missing_docs)]

pub mod client;
pub mod server;

pub use client::{ConnectOptions, Connection, Session, SessionActivity, TransportError};
pub use server::{serve, serve_stdio, AgentRuntime, AgentServer, ServeOptions, ServerError, TurnContext, TurnEnd, TurnError};
