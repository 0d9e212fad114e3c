//! The client side: one connection to an agent ([`ClientConnection`]) and a mirror of each
//! session open on it ([`SessionMirror`], C-… rules) that every client UI can render.
//!
//! ```
//! use acp_inject_core::client::{ClientConnection, Event};
//! use acp_inject_core::wire::Implementation;
//!
//! let mut conn = ClientConnection::default();
//! let info = Implementation::new("my-app", "1.0");
//! conn.initialize(info, false);
//! let lines = conn.take_outgoing(); // write these to the agent
//! assert!(lines[0].contains(r#""method":"initialize""#));
//! conn.receive_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":2,\"info\":{\"name\":\"a\",\"version\":\"1\"}}}\n");
//! assert!(matches!(conn.take_events()[0], Event::Answered { .. }));
//! ```

mod connection;
mod event;
mod item;
mod mirror;
mod view;

pub use connection::{ClientConnection, Phase, SteerFallback};
pub use event::{Answer, Event, ProtocolError, RequestKind, SessionEvent};
pub use item::{IllegalTransition, ItemMode, ItemStatus, Lifecycle, PendingItem, Step};
pub use mirror::SessionMirror;
pub use view::{Affordances, CallRejected, MessageRole, MirrorSnapshot, TranscriptEntry, TurnState, Violation};
