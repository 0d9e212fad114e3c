//! What a store keeps of a session besides its live state: its record (listable, resumable,
//! live or closed) and its replayable history.

use acp_inject_wire::{ContentBlock, McpServer, MessageId, SessionId, SessionUpdate};
use serde::{Deserialize, Serialize};

/// What the store knows about a session, live or closed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The session's id.
    pub session_id: SessionId,
    /// Creation order, agent-wide (`session/list` is newest first).
    pub ordinal: u64,
    /// The working directory (`session/new`).
    pub cwd: String,
    /// Additional workspace roots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
    /// MCP servers of the last `session/new` or `session/resume`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServer>,
    /// A title (from the runtime's `session_info_update`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// RFC 3339 time of the last activity, as the host reports it (the core reads no clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// Closed: listable and resumable, not live.
    #[serde(default)]
    pub closed: bool,
    /// The principal that created it (R-TENANT-1): only connections speaking for it see the
    /// session. `None`: created without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// One entry of a session's replayable history (R-REPLAY-1), in the order it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum HistoryEntry {
    /// A delivered user message with its final content.
    User {
        /// Its id.
        #[serde(rename = "messageId")]
        message_id: MessageId,
        /// Its content at delivery.
        content: Vec<ContentBlock>,
    },
    /// A runtime update that is part of the conversation: agent messages and thoughts (upserts,
    /// chunks, clears), tool calls and plans.
    Update {
        /// The update as the runtime reported it.
        update: SessionUpdate,
    },
}
