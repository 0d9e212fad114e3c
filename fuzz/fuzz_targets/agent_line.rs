//! Any bytes as client lines into the agent core: never a panic, every output line is JSON,
//! and every request-shaped line gets exactly one answer.
#![no_main]

use acp_inject_core::agent::{Agent, AgentConfig, Output};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let inject = serde_json::from_value(serde_json::json!({
        "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": ["finish"]
    }))
    .unwrap();
    let mut a = Agent::new(AgentConfig { inject: Some(inject), policy: Default::default(), info: Default::default() });
    a.create_session("s1");
    for line in data.split(|b| *b == b'\n') {
        a.handle_bytes("c1", line);
        for o in a.drain() {
            if let Output::Line { line, .. } = o {
                let v: serde_json::Value = serde_json::from_str(&line).expect("outputs are JSON");
                assert_eq!(v["jsonrpc"], "2.0");
            }
        }
    }
    let restored = Agent::restore(&a.snapshot()).expect("snapshots restore");
    assert_eq!(restored.snapshot(), a.snapshot());
});
