//! Any bytes, in any chunking, as the agent's side of one client connection with two sessions
//! and requests in flight: never a panic, every event typed, and the connection keeps working
//! (a later well-formed answer still reaches its request).
#![no_main]

use acp_inject_core::client::{ClientConnection, Event};
use acp_inject_core::wire::{ContentBlock, InitializeResponse, InjectMode, SessionId, TextContent};
use libfuzzer_sys::fuzz_target;

fn sid(s: &str) -> SessionId {
    SessionId(s.into())
}

fn text(s: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(Box::new(TextContent::new(s)))]
}

fuzz_target!(|data: &[u8]| {
    let mut c = ClientConnection::new(1 << 16);
    let agent: InitializeResponse = serde_json::from_str(
        r#"{"protocolVersion":2,"info":{"name":"agent","version":"1"},"capabilities":{"session":{"inject":{"modes":["queue","steer"],"pending":{"replace":true},"steerInStream":["finish"]}}}}"#,
    )
    .expect("an initialize result");
    c.assume_initialized(agent);
    c.open_session(&sid("s1"), None);
    c.open_session(&sid("s2"), None);
    let _ = c.prompt(&sid("s1"), text("a"));
    let _ = c.inject(&sid("s2"), InjectMode::Queue, text("b"));
    let _ = c.inject(&sid("s1"), InjectMode::Steer, text("c"));
    let _ = c.take_outgoing();
    // The first byte picks the chunk size, so line breaks land anywhere.
    let step = usize::from(data.first().copied().unwrap_or(1)).max(1);
    for chunk in data.get(1..).unwrap_or_default().chunks(step) {
        c.receive_bytes(chunk);
    }
    c.finish();
    let _ = c.take_events();
    for id in c.session_ids() {
        let snap = c.mirror(&id).expect("an open session has a mirror").snapshot();
        let _ = snap.pending.len();
    }
    // Still routing: a status request and its answer.
    let req = c.status(&sid("s1"));
    let _ = c.take_outgoing();
    c.receive_line(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"status":"live"}}}}"#, serde_json::to_string(&req).unwrap()));
    let answered = c.take_events().into_iter().any(|e| matches!(e, Event::Answered { request, .. } if request == req));
    assert!(answered, "a well-formed answer after fuzzed input is routed to its request");
});
