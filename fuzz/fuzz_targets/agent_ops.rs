//! Arbitrary interleavings of client requests and runtime events, checked against the core's
//! invariants: delivered at most once, never after a successful revoke, with the latest
//! replaced content, and every accepted inject delivered, revoked or handed back at close.
#![no_main]

#[path = "common.rs"]
mod common;

use acp_inject_core::wire::SessionId;
use std::collections::{HashMap, HashSet};

use acp_inject_core::agent::{BreakPoint, Output, PermissionAsk, RuntimeAction, RuntimeEvent};
use acp_inject_core::wire::{PermissionOption, PermissionOptionId, PermissionOptionKind, StopReason};
use libfuzzer_sys::fuzz_target;

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
        let target = match op % 16 {
            5 | 6 if !accepted.is_empty() => Some(accepted[pick(accepted.len())].clone()),
            _ => None,
        };
        let call = match (op % 16, &target) {
            (0..=3, _) => Some(common::Call::Inject { steer: op % 2 == 1 }),
            (4, _) => Some(common::Call::Prompt),
            (5, Some(t)) => Some(common::Call::Revoke(t)),
            (6, Some(t)) => Some(common::Call::Replace(t)),
            (7, _) => Some(common::Call::Cancel),
            _ => None,
        };
        let (method, line) = common::maybe_call_line(req, call, &text);
        match line {
            Some(l) => a.handle_line(&"c1".into(), &l),
            None => {
                let ev = match op % 16 {
                    8 | 9 => RuntimeEvent::BreakPoint(if op % 2 == 0 { BreakPoint::ToolResult } else { BreakPoint::ModelStep }),
                    10 => RuntimeEvent::StreamStarted,
                    11 => RuntimeEvent::StreamFinished,
                    12 => RuntimeEvent::RequestPermission(PermissionAsk {
                        title: "run it?".into(),
                        description: None,
                        options: vec![PermissionOption::new(
                            PermissionOptionId("allow".into()),
                            "Allow",
                            PermissionOptionKind::AllowOnce,
                        )],
                        subject: None,
                    }),
                    // The host withdraws the oldest open request (its timeout), if any.
                    13 => match a.open_requests().first() {
                        Some(r) => RuntimeEvent::WithdrawPermission { request_id: r.id.clone() },
                        None => RuntimeEvent::Resumed,
                    },
                    14 => {
                        if op & 0x80 == 0 {
                            RuntimeEvent::Paused
                        } else {
                            RuntimeEvent::Resumed
                        }
                    }
                    _ if op & 0x40 == 0 => RuntimeEvent::TurnStarted,
                    _ => RuntimeEvent::TurnEnded { stop_reason: StopReason::EndTurn, usage: None, error: None },
                };
                let _ = a.runtime_event(&SessionId("s1".into()), ev);
            }
        }
        for o in common::drain(&mut a) {
            match o {
                Output::Line { line, .. } => {
                    let v = common::Line::parse(&line);
                    if v.succeeded() {
                        match method {
                            "session/inject" | "session/prompt" => {
                                let id = v.answered_id().expect("an accept answer carries the id");
                                content.insert(id.clone(), text.clone());
                                accepted.push(id);
                            }
                            "session/revoke_inject" => {
                                revoked.insert(target.clone().expect("a revoke names its target"));
                            }
                            "session/replace_inject" => {
                                content.insert(target.clone().expect("a replace names its target"), text.clone());
                            }
                            _ => {}
                        }
                    }
                    if let Some((id, text)) = v.user_message() {
                        assert!(!revoked.contains(&id), "{id} delivered after revoke");
                        assert!(delivered.insert(id.clone()), "{id} delivered twice");
                        assert_eq!(text.as_deref(), content.get(&id).map(String::as_str), "{id}: stale content");
                    }
                }
                Output::Action { action: RuntimeAction::Closed { .. }, .. } => unreachable!("no close in this target"),
                Output::Action { .. } => {}
                // No auth method or extension is configured: the host is never called.
                Output::Call { call, .. } => unreachable!("a host call with nothing configured for one: {call:?}"),
            }
        }
    }
    let pending: HashSet<String> = a.pending(&SessionId("s1".into())).into_iter().map(|d| d.message_id.to_string()).collect();
    for id in &accepted {
        let fates = [delivered.contains(id), revoked.contains(id), pending.contains(id)];
        assert_eq!(fates.iter().filter(|f| **f).count(), 1, "{id}: {fates:?}");
    }
});
