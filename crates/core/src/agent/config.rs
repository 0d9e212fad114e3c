//! What an agent advertises and how it behaves: [`AgentConfig`], [`Policy`] and their checks.

use acp_inject_wire::jsonrpc::DEFAULT_MAX_LINE_BYTES;
use acp_inject_wire::{InjectCapabilities, InjectMode, SteerInStream};
use serde::{Deserialize, Serialize};

/// How many queued injects open one turn (R-QUEUE-3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueDrain {
    /// All pending queued injects, each its own `user_message` (the default).
    #[default]
    Batch,
    /// One queued inject per turn.
    OnePerTurn,
}

/// Who may revoke or replace a pending inject (R-ORDER-2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevokeReplace {
    /// Any controller (the default).
    #[default]
    AnyController,
    /// Only the connection that injected it; others get `not_permitted`.
    CreatorOnly,
}

/// The wire form of "clear the current agent message" (C-MSG-2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClearStyle {
    /// The v2 upsert `agent_message` with `content: []` (the default: upstream reserves
    /// unprefixed unknown update names for ACP itself).
    #[default]
    Upsert,
    /// RFD #465's `agent_message_clear`, for peers that asked for it.
    AgentMessageClear,
}

/// Agent-side knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Policy {
    /// How many queued injects open one turn.
    pub queue_drain: QueueDrain,
    /// What the runtime does with a steer mid stream; `interrupt` must be advertised in
    /// `steerInStream` ([`AgentConfig::check`]).
    pub steer_in_stream: SteerInStream,
    /// Who may revoke or replace.
    pub revoke_replace: RevokeReplace,
    /// How many revoked/delivered ids each session remembers (R-REVOKE-2).
    pub remember_ids: u64,
    /// How [`super::RuntimeEvent::ClearAgentMessage`] is written (C-MSG-2).
    pub clear_style: ClearStyle,
    /// Longer client lines are refused (-32600) before they are parsed.
    pub max_line_bytes: u64,
    /// Sessions per `session/list` page.
    pub list_page_size: u64,
    /// Live sessions held at once: one more (`session/new`, or a resume that loads one) is
    /// -32011 `too_many_sessions` (R-LIMIT-1).
    pub max_live_sessions: u64,
    /// Messages waiting in one session, pending injects and held prompts together: one more
    /// is -32011 `too_many_pending` (R-LIMIT-1).
    pub max_pending: u64,
    /// Mint session ids without their random part (`sess_7` rather than `sess_7_` and 24 hex
    /// digits): for tests and reproducible transcripts. A session id is not a credential
    /// (R-TENANT-1), but an agent on a network keeps the default.
    pub sequential_session_ids: bool,
}

/// The default bound on live sessions.
pub const DEFAULT_MAX_LIVE_SESSIONS: u64 = 10_000;

/// The default bound on the messages waiting in one session.
pub const DEFAULT_MAX_PENDING: u64 = 1_000;

/// The default bound on remembered tombstones and delivered ids per session.
pub const DEFAULT_REMEMBER_IDS: u64 = 4096;

/// The default `session/list` page size.
pub const DEFAULT_LIST_PAGE_SIZE: u64 = 50;

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl Policy {
    /// [`Policy::remember_ids`] as a count.
    pub fn remember_bound(&self) -> usize {
        to_usize(self.remember_ids)
    }

    /// [`Policy::max_line_bytes`] as a length.
    pub fn line_limit(&self) -> usize {
        to_usize(self.max_line_bytes)
    }

    /// [`Policy::list_page_size`] as a count.
    pub fn page_size(&self) -> usize {
        to_usize(self.list_page_size)
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            queue_drain: QueueDrain::Batch,
            steer_in_stream: SteerInStream::Finish,
            revoke_replace: RevokeReplace::AnyController,
            remember_ids: DEFAULT_REMEMBER_IDS,
            clear_style: ClearStyle::Upsert,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES as u64,
            list_page_size: DEFAULT_LIST_PAGE_SIZE,
            max_live_sessions: DEFAULT_MAX_LIVE_SESSIONS,
            max_pending: DEFAULT_MAX_PENDING,
            sequential_session_ids: false,
        }
    }
}

/// The agent's name and version, as `initialize` reports them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// A programmatic name.
    pub name: String,
    /// The implementation's version.
    pub version: String,
}

impl Default for AgentInfo {
    fn default() -> Self {
        AgentInfo { name: "acp-inject".into(), version: env!("CARGO_PKG_VERSION").into() }
    }
}

/// Session-setup features the agent's host supports, advertised in `initialize`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetupSupport {
    /// stdio MCP servers (`session.mcp.stdio`).
    pub mcp_stdio: bool,
    /// HTTP MCP servers (`session.mcp.http`).
    pub mcp_http: bool,
    /// `additionalDirectories` on `session/new` and `session/resume`.
    pub additional_directories: bool,
}

/// Authentication the agent offers (R-AUTH-1 … R-AUTH-3).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AuthSupport {
    /// The `authMethods` of the `initialize` answer. An `agent` method is checked by the host
    /// when a client logs in with it ([`super::HostCall::Authenticate`]); a `terminal` method
    /// is run by the client, never sent.
    pub methods: Vec<acp_inject_wire::AuthMethod>,
    /// Every request of a connection but `initialize`, `auth/login` and `auth/logout` is
    /// answered -32000 (Authentication required) until the connection logged in.
    pub required: bool,
}

/// What the agent advertises and how it behaves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfig {
    /// `session.inject`; `None` means inject is not supported.
    pub inject: Option<InjectCapabilities>,
    /// Behaviour knobs.
    #[serde(default)]
    pub policy: Policy,
    /// Name and version.
    #[serde(default)]
    pub info: AgentInfo,
    /// Session-setup features of the host.
    #[serde(default)]
    pub setup: SetupSupport,
    /// Authentication.
    #[serde(default)]
    pub auth: AuthSupport,
    /// The extension methods (`_…`) the host serves, requests and notifications
    /// ([`super::HostCall::Extension`]); any other `_` method is -32601 (R-EXT-2).
    #[serde(default)]
    pub extensions: Vec<String>,
}

/// A configuration the core refuses to run with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The advertised inject capabilities break a schema rule (`modes` empty, `steer` without
    /// `steerInStream`, …).
    #[error("the advertised inject capabilities are invalid: {0}")]
    Capabilities(String),
    /// The policy's `steerInStream` behaviour is not among the advertised values, so clients
    /// would be told one thing while the agent does another.
    #[error("policy.steerInStream is {policy:?} but the agent advertises steerInStream {advertised:?}")]
    SteerInStreamNotAdvertised {
        /// The policy's value.
        policy: SteerInStream,
        /// What `session.inject.steerInStream` advertises.
        advertised: Vec<SteerInStream>,
    },
    /// A policy value that cannot work (a zero page size or line limit).
    #[error("policy.{0} must be at least 1")]
    Zero(&'static str),
    /// Authentication required without a method a client could log in with.
    #[error("auth.required needs at least one `agent` method in auth.methods to log in with")]
    AuthWithoutMethods,
    /// An extension method whose name does not start with `_`.
    #[error("extension method {0:?}: extension methods start with `_`")]
    NotAnExtension(String),
}

impl AgentConfig {
    /// Checks the configuration before an agent is built from it.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.policy.list_page_size == 0 {
            return Err(ConfigError::Zero("listPageSize"));
        }
        if self.policy.max_line_bytes == 0 {
            return Err(ConfigError::Zero("maxLineBytes"));
        }
        if self.policy.max_live_sessions == 0 {
            return Err(ConfigError::Zero("maxLiveSessions"));
        }
        if self.policy.max_pending == 0 {
            return Err(ConfigError::Zero("maxPending"));
        }
        let loggable = self.auth.methods.iter().any(|m| matches!(m, acp_inject_wire::AuthMethod::Agent(_)));
        if self.auth.required && !loggable {
            return Err(ConfigError::AuthWithoutMethods);
        }
        if let Some(m) = self.extensions.iter().find(|m| !m.starts_with('_')) {
            return Err(ConfigError::NotAnExtension(m.clone()));
        }
        let Some(caps) = &self.inject else { return Ok(()) };
        if caps.modes.is_empty() {
            return Err(ConfigError::Capabilities("`modes` must name at least one mode".into()));
        }
        caps.check().map_err(|e| ConfigError::Capabilities(e.to_string()))?;
        // The policy matters only where steers exist; there it must be what clients are told.
        let steers = caps.modes.contains(&InjectMode::Steer);
        let advertised = caps.steer_in_stream.clone().unwrap_or_default();
        if steers && !advertised.contains(&self.policy.steer_in_stream) {
            return Err(ConfigError::SteerInStreamNotAdvertised { policy: self.policy.steer_in_stream, advertised });
        }
        Ok(())
    }

    /// Whether the core asks the runtime to cut a stream for a steer (R-STEER-3).
    pub(crate) fn interrupts_streams(&self) -> bool {
        self.policy.steer_in_stream == SteerInStream::Interrupt
            && self.inject.as_ref().and_then(|c| c.steer_in_stream.as_ref()).is_some_and(|s| s.contains(&SteerInStream::Interrupt))
    }
}
