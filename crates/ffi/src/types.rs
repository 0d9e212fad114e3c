//! The core's and the transport's own types, exported as they are:
//! `#[uniffi::remote]` declarations (checked by the compiler against the real types), not
//! copies with conversions.

use acp_inject_core::agent::{
    Activity, AgentConfig, AgentInfo, BreakPoint, ClearStyle, ConnId, ConnectionRole, HistoryEntry, HostError, Output, PermissionAsk,
    Policy, QueueDrain, RevokeReplace, RuntimeAction, RuntimeEvent, SessionSetup, SetupSupport, Stream, Turn, UserInput,
};
use acp_inject_core::client::{
    Affordances, Answer, CallRejected, Event, ItemMode, ItemStatus, MessageRole, MirrorSnapshot, PendingItem, ProtocolError,
    RequestKind, SessionEvent, SteerFallback, TranscriptEntry, TurnState, Violation,
};
use acp_inject_core::wire::{
    ContentBlock, ErrorReason, InitializeResponse, InjectCapabilities, McpServer, MessageId, PendingInject, PermissionOption,
    RequestId, RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionInfo, SessionStatus, SessionUpdate, StateUpdate,
    SteerInStream, StopReason, TurnFailure, Usage,
};
use acp_inject_transport::{SessionActivity, TurnEnd};

// ----- agent side -----

/// What an agent advertises and how it behaves.
#[uniffi::remote(Record)]
pub struct AgentConfig {
    pub inject: Option<InjectCapabilities>,
    pub policy: Policy,
    pub info: AgentInfo,
    pub setup: SetupSupport,
}

/// Agent-side knobs.
#[uniffi::remote(Record)]
pub struct Policy {
    pub queue_drain: QueueDrain,
    pub steer_in_stream: SteerInStream,
    pub revoke_replace: RevokeReplace,
    pub remember_ids: u64,
    pub clear_style: ClearStyle,
    pub max_line_bytes: u64,
    pub list_page_size: u64,
}

/// The agent's name and version.
#[uniffi::remote(Record)]
pub struct AgentInfo {
    pub name: String,
    pub version: String,
}

/// Session-setup features of the host.
#[uniffi::remote(Record)]
pub struct SetupSupport {
    pub mcp_stdio: bool,
    pub mcp_http: bool,
    pub additional_directories: bool,
}

/// How many queued injects open one turn (R-QUEUE-3).
#[uniffi::remote(Enum)]
pub enum QueueDrain {
    Batch,
    OnePerTurn,
}

/// Who may revoke or replace a pending inject (R-ORDER-2).
#[uniffi::remote(Enum)]
pub enum RevokeReplace {
    AnyController,
    CreatorOnly,
}

/// How "clear the current agent message" is written (C-MSG-2).
#[uniffi::remote(Enum)]
pub enum ClearStyle {
    Upsert,
    AgentMessageClear,
}

/// A connection's role (R-ORDER-2).
#[uniffi::remote(Enum)]
pub enum ConnectionRole {
    Controller,
    Observer,
}

/// A safe break-point of the agent loop.
#[uniffi::remote(Enum)]
pub enum BreakPoint {
    ToolResult,
    ModelStep,
}

/// A message handed to the runtime.
#[uniffi::remote(Record)]
pub struct UserInput {
    pub message_id: MessageId,
    pub content: Vec<ContentBlock>,
}

/// The parameters of `session/new` or `session/resume`.
#[uniffi::remote(Record)]
pub struct SessionSetup {
    pub cwd: String,
    pub additional_directories: Vec<String>,
    pub mcp_servers: Vec<McpServer>,
}

/// What the runtime must do.
#[uniffi::remote(Enum)]
pub enum RuntimeAction {
    SessionOpened(SessionSetup),
    SessionResumed(SessionSetup),
    StartTurn(Vec<UserInput>),
    Deliver(Vec<UserInput>),
    InterruptStream,
    CancelTurn,
    PermissionAnswered { request_id: RequestId, outcome: RequestPermissionOutcome },
    Closed { dropped: Vec<PendingInject>, turn_cancelled: bool },
}

// A connection's id: a string in every language.
uniffi::custom_type!(ConnId, String, {
    remote,
    lower: |v| v.into(),
    try_lift: |v| Ok(ConnId::from(v)),
});

/// One output of the agent core, in order.
#[uniffi::remote(Enum)]
pub enum Output {
    Line { to: Vec<ConnId>, line: String },
    Action { session: SessionId, action: RuntimeAction },
}

/// What the agent runtime reports.
#[uniffi::remote(Enum)]
pub enum RuntimeEvent {
    BreakPoint(BreakPoint),
    StreamStarted,
    StreamFinished,
    RequestPermission(PermissionAsk),
    WithdrawPermission {
        request_id: RequestId,
    },
    Paused,
    Resumed,
    TurnStarted,
    TurnEnded {
        stop_reason: StopReason,
        #[uniffi(default = None)]
        usage: Option<Usage>,
        #[uniffi(default = None)]
        error: Option<TurnFailure>,
    },
    Close,
    Update(SessionUpdate),
    ClearAgentMessage {
        message_id: MessageId,
    },
}

/// What a runtime asks the user (`session/request_permission` without the session and id).
#[uniffi::remote(Record)]
pub struct PermissionAsk {
    pub title: String,
    pub description: Option<String>,
    pub options: Vec<PermissionOption>,
    pub subject: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A runtime event the core cannot apply.
#[uniffi::remote(Enum)]
pub enum HostError {
    NoTurnInProgress,
    TurnInProgress,
    NoPermissionOptions,
    UnknownRequest,
    SessionClosed,
    ReservedUpdate,
    ReservedMessageId(String),
}

/// One entry of a session's history.
#[uniffi::remote(Enum)]
pub enum HistoryEntry {
    User { message_id: MessageId, content: Vec<ContentBlock> },
    Update { update: SessionUpdate },
}

/// A session's turn (R-TURN-1).
#[uniffi::remote(Enum)]
pub enum Turn {
    Idle,
    Running { activity: Activity },
    RequiresAction { activity: Activity, open: std::num::NonZeroU32, paused: bool },
    Paused { activity: Activity },
}

/// What an in-progress turn carries.
#[uniffi::remote(Record)]
pub struct Activity {
    pub stream: Stream,
    pub cancel_requested: bool,
}

/// The model stream of a running turn.
#[uniffi::remote(Enum)]
pub enum Stream {
    Idle,
    Active,
    InterruptRequested,
}

/// How a turn ended, as the runtime reports it.
#[uniffi::remote(Record)]
pub struct TurnEnd {
    pub stop_reason: StopReason,
    #[uniffi(default = None)]
    pub usage: Option<Usage>,
    #[uniffi(default = None)]
    pub error: Option<TurnFailure>,
}

// ----- client side -----

/// Everything a client UI renders for one session.
#[uniffi::remote(Record)]
pub struct MirrorSnapshot {
    pub state: TurnState,
    pub stop_reason: Option<StopReason>,
    pub usage: Option<Usage>,
    pub pending: Vec<PendingItem>,
    pub transcript: Vec<TranscriptEntry>,
    pub violations: Vec<Violation>,
    pub affordances: Affordances,
    pub agent_pending: Option<Vec<PendingInject>>,
    pub closed: bool,
    pub tolerated: u64,
}

/// One of the client's own prompts or injects.
#[uniffi::remote(Record)]
pub struct PendingItem {
    pub message_id: Option<MessageId>,
    pub mode: ItemMode,
    pub status: ItemStatus,
    pub content: Vec<ContentBlock>,
    pub superseded: Vec<Vec<ContentBlock>>,
    pub held: bool,
}

/// A message of the transcript.
#[uniffi::remote(Record)]
pub struct TranscriptEntry {
    pub role: MessageRole,
    pub message_id: MessageId,
    pub content: Vec<ContentBlock>,
}

/// A protocol violation the mirror detected.
#[uniffi::remote(Record)]
pub struct Violation {
    pub rule: String,
    pub message_id: MessageId,
}

/// What the UI may offer (C-PEND-3).
#[uniffi::remote(Record)]
pub struct Affordances {
    pub steer: bool,
    pub edit_pending: bool,
    pub revoke: bool,
}

/// The turn state as the client knows it (C-STATE-1).
#[uniffi::remote(Enum)]
pub enum TurnState {
    Idle,
    Running,
    RequiresAction,
    Unknown,
}

/// How an item was sent.
#[uniffi::remote(Enum)]
pub enum ItemMode {
    Prompt,
    Queue,
    Steer,
}

/// Where one of the client's items is (C-PEND-1).
#[uniffi::remote(Enum)]
pub enum ItemStatus {
    Sending,
    Pending,
    Delivered,
    Revoked,
    Failed,
}

/// Who a transcript entry is from.
#[uniffi::remote(Enum)]
pub enum MessageRole {
    User,
    Agent,
    Thought,
}

/// A call the client refused without sending anything.
#[uniffi::remote(Enum)]
pub enum CallRejected {
    ModeNotSupported,
    ReplaceNotSupported,
    UnknownMessageId,
    UnknownSession,
    InvalidArguments(String),
    SteerNotSupported,
}

/// What to do with a steer when the agent takes no injects (C-HELD-3).
#[uniffi::remote(Enum)]
pub enum SteerFallback {
    Queue,
    CancelAndResend,
}

/// An error the agent answered to one of this client's requests.
#[uniffi::remote(Record)]
pub struct ProtocolError {
    pub code: i64,
    pub message: String,
    pub reason: Option<ErrorReason>,
    pub message_id: Option<MessageId>,
    pub detail: Option<String>,
}

/// What a request was.
#[uniffi::remote(Enum)]
pub enum RequestKind {
    Initialize,
    NewSession,
    ListSessions,
    Resume,
    Prompt,
    Inject,
    Revoke,
    Replace,
    Close,
    Status,
}

/// The answer to a request.
#[uniffi::remote(Enum)]
pub enum Answer {
    Failed(ProtocolError),
    Initialized(Box<InitializeResponse>),
    SessionCreated { session_id: SessionId },
    Sessions { sessions: Vec<SessionInfo>, next_cursor: Option<String> },
    Resumed,
    Accepted { message_id: Option<MessageId> },
    Revoked,
    Replaced,
    Closed,
    Status { status: SessionStatus, state: Option<StateUpdate> },
}

/// Something that happened in one session.
#[uniffi::remote(Enum)]
pub enum SessionEvent {
    Update(SessionUpdate),
    Item(PendingItem),
    Violation(Violation),
    Closed,
    Tolerated(Vec<String>),
}

/// One thing a client connection reports.
#[uniffi::remote(Enum)]
pub enum Event {
    Answered { request: RequestId, kind: RequestKind, session_id: Option<SessionId>, outcome: Answer },
    Session { session_id: SessionId, event: SessionEvent },
    PermissionRequested { request: RequestId, params: Box<RequestPermissionRequest> },
    Ignored { detail: String },
}

/// Something that happened in a session, as its event stream delivers it.
#[uniffi::remote(Enum)]
pub enum SessionActivity {
    Event(SessionEvent),
    PermissionRequested { request: RequestId, params: Box<RequestPermissionRequest> },
}
