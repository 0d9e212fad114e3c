//! Async transports for acp-inject, on tokio: the same loop, ids and routing for every
//! language (the bindings export them through UniFFI's async support).
//!
//! - [`client`]: a connection to an agent — spawn its command (stderr kept and forwarded, exit
//!   reported as an error, graceful close then kill) or use any reader/writer pair — with
//!   async calls and a per-session stream of events, on the sans-IO client connection.
//! - [`budget`]: the memory budget a server's connections draw from.
//! - [`server`]: an agent server that runs the agent core over stdio (or any reader/writer
//!   pair), with an optional durable store, around a runtime the author implements.
//!
//! A client session against any agent command:
//!
//! ```no_run
//! use acp_inject_core::wire::{ContentBlock, InjectMode, TextContent};
//! use acp_inject_transport::{ConnectOptions, Connection};
//!
//! # async fn demo() -> Result<(), acp_inject_transport::TransportError> {
//! let text = |t: &str| vec![ContentBlock::Text(Box::new(TextContent::new(t)))];
//! let agent = Connection::spawn(&["acp-inject-agent".to_owned()], ConnectOptions::default()).await?;
//! let session = agent.new_session("/home/dev/project", Vec::new(), Vec::new()).await?;
//! session.prompt(text("Fix the failing login test")).await?; // answered on acceptance
//! let steer = session.inject(InjectMode::Steer, text("use the auth_v2 module")).await?;
//! for event in session.next_events().await? {
//!     println!("{event:?}"); // user messages with their ids, agent output, turn state…
//! }
//! # let _ = steer;
//! session.close().await?;
//! # Ok(()) }
//! ```
//!
//! An agent: implement [`AgentRuntime::run_turn`]; the core does every session method,
//! pending injects, list, resume and close.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use acp_inject_core::agent::{AgentConfig, BreakPoint, UserInput};
//! use acp_inject_transport::{serve_stdio, AgentRuntime, ServeOptions, TurnContext, TurnEnd};
//!
//! struct Echo;
//!
//! #[async_trait::async_trait]
//! impl AgentRuntime for Echo {
//!     async fn run_turn(&self, turn: TurnContext, input: Vec<UserInput>) -> TurnEnd {
//!         let reply = turn.new_message_id();
//!         for message in &input {
//!             let _ = turn.send_text(&reply, &format!("{:?}", message.content));
//!         }
//!         // A safe point: steers sent meanwhile are delivered here, for the model to read.
//!         let steers = turn.break_point(BreakPoint::ModelStep).unwrap_or_default();
//!         let _ = turn.send_text(&reply, &format!("and {} steer(s)", steers.len()));
//!         TurnEnd::end_turn()
//!     }
//! }
//!
//! # async fn main_() -> Result<(), acp_inject_transport::ServerError> {
//! let options = ServeOptions { config: AgentConfig::default(), store: None };
//! serve_stdio(Arc::new(Echo), options).await
//! # }
//! ```

#![warn(missing_docs)]

pub mod budget;
pub mod client;
pub mod server;

pub use budget::MemoryBudget;
pub use client::{ConnectOptions, Connection, Notification, Session, SessionActivity, TransportError};
pub use server::{
    serve, serve_stdio, AgentRuntime, AgentServer, ClientLink, Lines, ServeOptions, ServerError, TurnContext, TurnEnd, TurnError,
};
