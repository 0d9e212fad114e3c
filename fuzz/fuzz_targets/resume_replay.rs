//! Arbitrary sessions, then a resume with `replayFrom: start` from a second connection (after a
//! close, or while live): the replay comes to that connection only, before its answer, and
//! holds exactly the delivered user messages, in delivery order, each once with its final
//! content; pending and revoked injects are not history (R-REPLAY-1, R-RESUME-1).
#![no_main]

#[path = "common.rs"]
mod common;

use std::collections::HashMap;

use acp_inject_core::agent::{BreakPoint, Output, RuntimeEvent};
use acp_inject_core::wire::StopReason;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Some((&first, ops)) = data.split_first() else { return };
    let mut a = common::agent(Default::default());
    let mut accepted: Vec<String> = Vec::new();
    let mut content: HashMap<String, String> = HashMap::new();
    let mut delivered: Vec<String> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let req = i as i64 + 10;
        let text = format!("c{i}");
        let pick = |n: usize| (*op as usize / 16) % n.max(1);
        let line = match op % 12 {
            0..=2 => Some(json!({ "jsonrpc": "2.0", "id": req, "method": "session/inject", "params": { "sessionId": "s1", "mode": if op % 2 == 0 { "queue" } else { "steer" }, "content": [{ "type": "text", "text": text }] } })),
            3 => Some(json!({ "jsonrpc": "2.0", "id": req, "method": "session/prompt", "params": { "sessionId": "s1", "prompt": [{ "type": "text", "text": text }] } })),
            4 if !accepted.is_empty() => Some(json!({ "jsonrpc": "2.0", "id": req, "method": "session/revoke_inject", "params": { "sessionId": "s1", "messageId": accepted[pick(accepted.len())] } })),
            5 if !accepted.is_empty() => Some(json!({ "jsonrpc": "2.0", "id": req, "method": "session/replace_inject", "params": { "sessionId": "s1", "messageId": accepted[pick(accepted.len())], "content": [{ "type": "text", "text": text }] } })),
            6 => Some(json!({ "jsonrpc": "2.0", "method": "session/cancel", "params": { "sessionId": "s1" } })),
            _ => None,
        };
        let target = line.as_ref().and_then(|l| l["params"]["messageId"].as_str().map(str::to_owned));
        let method = line.as_ref().and_then(|l| l["method"].as_str().map(str::to_owned));
        match line {
            Some(l) => a.handle_line("c1", &l.to_string()),
            None => {
                let event = match op % 12 {
                    7 | 8 => RuntimeEvent::BreakPoint(BreakPoint::ToolResult),
                    9 => {
                        let update = json!({ "sessionUpdate": "agent_message_chunk", "messageId": format!("agent_{i}"), "content": { "type": "text", "text": "ok" } });
                        RuntimeEvent::Update(serde_json::from_value(update).expect("an update"))
                    }
                    _ => RuntimeEvent::TurnEnded { stop_reason: StopReason::EndTurn, usage: None },
                };
                let _ = a.runtime_event("s1", event);
            }
        }
        for o in common::drain(&mut a) {
            let Output::Line { line, .. } = o else { continue };
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if v["result"].is_object() {
                match method.as_deref() {
                    Some("session/inject" | "session/prompt") => {
                        let id = v["result"]["messageId"].as_str().expect("an id").to_owned();
                        content.insert(id.clone(), text.clone());
                        accepted.push(id);
                    }
                    Some("session/replace_inject") => {
                        content.insert(target.clone().expect("a target"), text.clone());
                    }
                    _ => {}
                }
            }
            if v["params"]["update"]["sessionUpdate"] == "user_message" {
                delivered.push(v["params"]["update"]["messageId"].as_str().expect("an id").to_owned());
            }
        }
    }
    if first & 1 == 1 {
        a.handle_line("c1", &json!({ "jsonrpc": "2.0", "id": 1, "method": "session/close", "params": { "sessionId": "s1" } }).to_string());
        common::drain(&mut a);
    }
    let resume = json!({ "jsonrpc": "2.0", "id": 2, "method": "session/resume", "params": { "sessionId": "s1", "cwd": "/tmp", "replayFrom": { "type": "start" } } });
    a.handle_line("c2", &resume.to_string());
    let mut replayed: Vec<(String, String)> = Vec::new();
    let mut answered = false;
    for o in common::drain(&mut a) {
        let Output::Line { line, to } = o else { continue };
        if !to.iter().any(|c| c.as_str() == "c2") {
            continue;
        }
        let v: Value = serde_json::from_str(&line).expect("JSON");
        if v["id"] == 2 {
            assert!(v["result"].is_object(), "resume refused: {v}");
            answered = true;
        } else if !answered && v["params"]["update"]["sessionUpdate"] == "user_message" {
            let u = &v["params"]["update"];
            replayed.push((u["messageId"].as_str().expect("an id").to_owned(), u["content"][0]["text"].as_str().unwrap_or_default().to_owned()));
        }
    }
    assert!(answered, "the resume is answered");
    let expected: Vec<(String, String)> = delivered.iter().map(|id| (id.clone(), content[id].clone())).collect();
    assert_eq!(replayed, expected, "the replay is the delivered messages, in order, with final content");
});
