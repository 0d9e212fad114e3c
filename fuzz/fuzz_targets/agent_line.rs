//! Any bytes as client lines into the agent core: never a panic, every output line is JSON-RPC,
//! and the live state snapshots and restores to itself.
#![no_main]

#[path = "common.rs"]
mod common;

use acp_inject_core::agent::{Agent, MemoryStore, Output};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut a = common::agent(Default::default());
    for line in data.split(|b| *b == b'\n') {
        a.handle_bytes(&"c1".into(), line);
        for o in common::drain(&mut a) {
            if let Output::Line { line, .. } = o {
                let v: serde_json::Value = serde_json::from_str(&line).expect("outputs are JSON");
                assert_eq!(v["jsonrpc"], "2.0");
            }
        }
    }
    let snapshot = a.snapshot();
    let config = common::agent(Default::default()).config().clone();
    let restored = Agent::restore(config, &snapshot, Box::new(MemoryStore::new())).expect("snapshots restore");
    assert_eq!(restored.snapshot(), snapshot);
});
