//! Arbitrary sessions, then a resume with `replayFrom: start` from a second connection (after a
//! close, or while live): the replay comes to that connection only, before its answer, and
//! holds exactly the delivered user messages, in delivery order, each once with its final
//! content; pending and revoked injects are not history (R-REPLAY-1, R-RESUME-1).
#![no_main]

#[path = "common.rs"]
mod common;

use acp_inject_core::wire::SessionId;
use std::collections::HashMap;

use acp_inject_core::agent::{BreakPoint, Output, RuntimeEvent};
use acp_inject_core::wire::StopReason;
use libfuzzer_sys::fuzz_target;

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
        let target = match op % 12 {
            4 | 5 if !accepted.is_empty() => Some(accepted[pick(accepted.len())].clone()),
            _ => None,
        };
        let call = match (op % 12, &target) {
            (0..=2, _) => Some(common::Call::Inject { steer: op % 2 == 1 }),
            (3, _) => Some(common::Call::Prompt),
            (4, Some(t)) => Some(common::Call::Revoke(t)),
            (5, Some(t)) => Some(common::Call::Replace(t)),
            (6, _) => Some(common::Call::Cancel),
            _ => None,
        };
        let (method, line) = common::maybe_call_line(req, call, &text);
        match line {
            Some(l) => a.handle_line(&"c1".into(), &l),
            None => {
                let event = match op % 12 {
                    7 | 8 => RuntimeEvent::BreakPoint(BreakPoint::ToolResult),
                    9 => {
                        let update = format!(
                            r#"{{"sessionUpdate":"agent_message_chunk","messageId":"agent_{i}","content":{{"type":"text","text":"ok"}}}}"#
                        );
                        RuntimeEvent::Update(serde_json::from_str(&update).expect("an update"))
                    }
                    _ => RuntimeEvent::TurnEnded { stop_reason: StopReason::EndTurn, usage: None, error: None },
                };
                let _ = a.runtime_event(&SessionId("s1".into()), event);
            }
        }
        for o in common::drain(&mut a) {
            let Output::Line { line, .. } = o else { continue };
            let v = common::Line::parse(&line);
            if v.succeeded() {
                match method {
                    "session/inject" | "session/prompt" => {
                        let id = v.answered_id().expect("an accept answer carries the id");
                        content.insert(id.clone(), text.clone());
                        accepted.push(id);
                    }
                    "session/replace_inject" => {
                        content.insert(target.clone().expect("a replace names its target"), text.clone());
                    }
                    _ => {}
                }
            }
            if let Some((id, _)) = v.user_message() {
                delivered.push(id);
            }
        }
    }
    if first & 1 == 1 {
        a.handle_line(&"c1".into(), &common::request(1, "session/close", ""));
        common::drain(&mut a);
    }
    a.handle_line(&"c2".into(), &common::request(2, "session/resume", r#","cwd":"/tmp","replayFrom":{"type":"start"}"#));
    let mut replayed: Vec<(String, String)> = Vec::new();
    let mut answered = false;
    for o in common::drain(&mut a) {
        let Output::Line { line, to } = o else { continue };
        if !to.iter().any(|c| c.as_str() == "c2") {
            continue;
        }
        let v = common::Line::parse(&line);
        if v.id.is_some_and(|id| id.get() == "2") {
            assert!(v.succeeded(), "resume refused: {line}");
            answered = true;
        } else if let Some(message) = v.user_message().filter(|_| !answered) {
            replayed.push((message.0, message.1.unwrap_or_default()));
        }
    }
    assert!(answered, "the resume is answered");
    let expected: Vec<(String, String)> = delivered.iter().map(|id| (id.clone(), content[id].clone())).collect();
    assert_eq!(replayed, expected, "the replay is the delivered messages, in order, with final content");
});
