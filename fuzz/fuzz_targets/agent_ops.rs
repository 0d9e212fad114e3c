//! Arbitrary interleavings of client requests and runtime events, checked against the core's
//! invariants: delivered at most once, never after a successful revoke, with the latest
//! replaced content, and every accepted inject delivered, revoked or handed back at close.
#![no_main]

#[path = "common.rs"]
mod common;

use std::collections::{HashMap, HashSet};

use acp_inject_core::agent::{BreakPoint, Output, RuntimeAction, RuntimeEvent};
use acp_inject_core::wire::StopReason;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let mut policy = acp_inject_core::agent::Policy::default();
    if data.first().is_some_and(|b| b & 1 == 1) {
        policy.queue_drain = acp_inject_core::agent::QueueDrain::OnePerTurn;
    }
    let mut a = common::agent(policy);
    let mut accepted: Vec<String> = Vec::new();
    let mut content: HashMap<String, String> = HashMap::new();
    let mut revoked: HashSet<String> = HashSet::new();
    let mut delivered: HashSet<String> = HashSet::new();
    let mut req = 0i64;
    for (i, op) in data.iter().enumerate().skip(1) {
        req += 1;
        let pick = |n: usize| (*op as usize / 16) % n.max(1);
        let text = format!("c{i}");
        let line = match op % 16 {
            0..=3 => Some(json!({ "jsonrpc": "2.0", "id": req, "method": "session/inject", "params": { "sessionId": "s1", "mode": if op % 2 == 0 { "queue" } else { "steer" }, "content": [{ "type": "text", "text": text }] } })),
            4 => Some(json!({ "jsonrpc": "2.0", "id": req, "method": "session/prompt", "params": { "sessionId": "s1", "prompt": [{ "type": "text", "text": text }] } })),
            5 if !accepted.is_empty() => Some(json!({ "jsonrpc": "2.0", "id": req, "method": "session/revoke_inject", "params": { "sessionId": "s1", "messageId": accepted[pick(accepted.len())] } })),
            6 if !accepted.is_empty() => Some(json!({ "jsonrpc": "2.0", "id": req, "method": "session/replace_inject", "params": { "sessionId": "s1", "messageId": accepted[pick(accepted.len())], "content": [{ "type": "text", "text": text }] } })),
            7 => Some(json!({ "jsonrpc": "2.0", "method": "session/cancel", "params": { "sessionId": "s1" } })),
            _ => None,
        };
        let target = line.as_ref().and_then(|l| l["params"]["messageId"].as_str().map(str::to_owned));
        let method = line.as_ref().and_then(|l| l["method"].as_str().map(str::to_owned));
        match line {
            Some(l) => a.handle_line("c1", &l.to_string()),
            None => {
                let ev = match op % 16 {
                    8 | 9 => RuntimeEvent::BreakPoint(if op % 2 == 0 { BreakPoint::ToolResult } else { BreakPoint::ModelStep }),
                    10 => RuntimeEvent::StreamStarted,
                    11 => RuntimeEvent::StreamFinished,
                    12 => RuntimeEvent::PermissionRequested,
                    13 => RuntimeEvent::PermissionResolved,
                    14 => if op & 0x80 == 0 { RuntimeEvent::Paused } else { RuntimeEvent::Resumed },
                    _ if op & 0x40 == 0 => RuntimeEvent::TurnStarted,
                    _ => RuntimeEvent::TurnEnded { stop_reason: StopReason::EndTurn, usage: None },
                };
                let _ = a.runtime_event("s1", ev);
            }
        }
        for o in common::drain(&mut a) {
            match o {
                Output::Line { line, .. } => {
                    let v: Value = serde_json::from_str(&line).unwrap();
                    if v["result"].is_object() {
                        match method.as_deref() {
                            Some("session/inject" | "session/prompt") => {
                                let id = v["result"]["messageId"].as_str().unwrap().to_owned();
                                content.insert(id.clone(), text.clone());
                                accepted.push(id);
                            }
                            Some("session/revoke_inject") => {
                                revoked.insert(target.clone().unwrap());
                            }
                            Some("session/replace_inject") => {
                                content.insert(target.clone().unwrap(), text.clone());
                            }
                            _ => {}
                        }
                    }
                    if v["params"]["update"]["sessionUpdate"] == "user_message" {
                        let id = v["params"]["update"]["messageId"].as_str().unwrap().to_owned();
                        assert!(!revoked.contains(&id), "{id} delivered after revoke");
                        assert!(delivered.insert(id.clone()), "{id} delivered twice");
                        assert_eq!(v["params"]["update"]["content"][0]["text"].as_str(), content.get(&id).map(String::as_str), "{id}: stale content");
                    }
                }
                Output::Action { action: RuntimeAction::Closed { .. }, .. } => unreachable!("no close in this target"),
                Output::Action { .. } => {}
            }
        }
    }
    let pending: HashSet<String> = a.pending("s1").into_iter().map(|d| d.message_id.to_string()).collect();
    for id in &accepted {
        let fates = [delivered.contains(id), revoked.contains(id), pending.contains(id)];
        assert_eq!(fates.iter().filter(|f| **f).count(), 1, "{id}: {fates:?}");
    }
});
