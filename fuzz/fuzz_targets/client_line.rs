//! Any bytes as agent lines into the client mirror: never a panic; the snapshot stays JSON.
#![no_main]

use acp_inject_core::client::ClientMirror;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let caps = serde_json::from_value(serde_json::json!({
        "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": ["finish"]
    }))
    .unwrap();
    let mut m = ClientMirror::new("s1", Some(caps));
    // Give the mirror pending items for responses to refer to.
    let _ = m.prompt(vec![]);
    let _ = m.inject(acp_inject_core::wire::InjectMode::Queue, vec![]);
    for line in data.split(|b| *b == b'\n') {
        if let Ok(text) = std::str::from_utf8(line) {
            let _ = m.receive(text);
        }
    }
    let snap = m.snapshot_json();
    assert!(snap.is_object());
});
