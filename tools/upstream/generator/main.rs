//! The generator `cargo xtask upstream bump --crate` builds in a throwaway project in the cache
//! (see `tools/upstream/src/schema_crate.rs`, which writes this file there with its
//! `Cargo.toml`): it prints, as JSON on stdout, the JSON Schema of every ACP message, from
//! agent-client-protocol-schema's own types with their own `schemars` derive. It is not part of
//! the workspace and is never built by it.
//!
//! The crate features pick the protocol version and the unstable surface
//! (`agent-client-protocol-schema/unstable_protocol_v2`, `…/unstable`); this project's own
//! features say which root variants the crate version has, and the bump sets them per file:
//! `v2` (the v2 module), `batch` (v2's JSON-RPC batches), `protocol_level` (`$/` notifications),
//! `proxy` (proxy chains).

#![allow(dead_code, clippy::large_enum_variant)]

#[cfg(not(feature = "v2"))]
use agent_client_protocol_schema::v1 as acp;
#[cfg(feature = "v2")]
use agent_client_protocol_schema::v2 as acp;

use acp::{
    AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest, ClientResponse, JsonRpcMessage, Notification,
    Request, Response,
};
use schemars::generate::SchemaSettings;
use schemars::transform::{RemoveRefSiblings, ReplaceBoolSchemas};
use schemars::JsonSchema;

// The message enums are inlined into the root, so neither their names nor their comments reach
// the schema (comments, not doc comments: a doc comment would become a description).

// An agent's message: a request to the client, a response to one of the client's, or a
// notification.
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
enum ByAgent {
    Request(Request<AgentRequest>),
    Response(Response<AgentResponse>),
    Notification(Notification<AgentNotification>),
}

// A client's message, the same three kinds.
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
enum ByClient {
    Request(Request<ClientRequest>),
    Response(Response<ClientResponse>),
    Notification(Notification<ClientNotification>),
}

// A proxy's message in a proxy chain.
#[cfg(feature = "proxy")]
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
enum ByProxy {
    Request(Request<acp::ProxyRequest>),
    Response(Response<acp::ProxyResponse>),
    Notification(Notification<acp::ProxyNotification>),
}

// What an agent may put in a batch: calls, never responses (those travel in a batch of their
// own).
#[cfg(feature = "batch")]
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
enum AgentBatchEntry {
    Request(Request<AgentRequest>),
    Notification(Notification<AgentNotification>),
    #[cfg(feature = "protocol_level")]
    ProtocolLevelNotification(Notification<acp::ProtocolLevelNotification>),
}

// What a client may put in a batch.
#[cfg(feature = "batch")]
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
enum ClientBatchEntry {
    Request(Request<ClientRequest>),
    Notification(Notification<ClientNotification>),
    #[cfg(feature = "protocol_level")]
    ProtocolLevelNotification(Notification<acp::ProtocolLevelNotification>),
}

// The root: any message of the protocol, one untagged variant per sender (and per batch kind
// in v2), each titled with its variant's name.
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(title = "Agent Client Protocol")]
enum Root {
    Agent(JsonRpcMessage<ByAgent>),
    Client(JsonRpcMessage<ByClient>),
    #[cfg(feature = "batch")]
    AgentBatchCall(acp::JsonRpcBatch<AgentBatchEntry>),
    #[cfg(feature = "batch")]
    AgentBatchResponse(acp::JsonRpcBatch<Response<AgentResponse>>),
    #[cfg(feature = "batch")]
    ClientBatchCall(acp::JsonRpcBatch<ClientBatchEntry>),
    #[cfg(feature = "batch")]
    ClientBatchResponse(acp::JsonRpcBatch<Response<ClientResponse>>),
    #[cfg(feature = "protocol_level")]
    ProtocolLevel(JsonRpcMessage<Notification<acp::ProtocolLevelNotification>>),
    #[cfg(feature = "proxy")]
    Proxy(JsonRpcMessage<ByProxy>),
}

fn main() {
    let mut settings = SchemaSettings::draft2020_12();
    settings.untagged_enum_variant_titles = true;
    let mut booleans = ReplaceBoolSchemas::default();
    booleans.skip_additional_properties = true;
    let schema =
        settings.with_transform(RemoveRefSiblings::default()).with_transform(booleans).into_generator().into_root_schema_for::<Root>();
    // Compact: the bump lays the text out as upstream publishes it.
    println!("{}", serde_json::to_string(&schema).expect("a schema is JSON"));
}
