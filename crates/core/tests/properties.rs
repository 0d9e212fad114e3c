//! Property tests: random operation sequences against the agent core, checking the invariants
//! of spec/rules.md (R-DELIV-2, R-REVOKE-1, R-QUEUE-1, R-STEER-1/4, R-ORDER-1/2, R-REPLACE-1/2,
//! R-CLOSE-1) and that snapshot + restore at any step changes no future output.

use acp_inject_core::wire::SessionId;
use std::collections::{HashMap, HashSet};

use acp_inject_core::agent::{Agent, AgentConfig, BreakPoint, MemoryStore, Output, Policy, QueueDrain, RuntimeAction, RuntimeEvent};
use acp_inject_core::wire::StopReason;
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Clone, Debug)]
enum Op {
    Prompt,
    Inject { steer: bool, conn: u8 },
    Revoke { pick: usize, conn: u8 },
    Replace { pick: usize, conn: u8 },
    Break,
    StreamStarted,
    StreamFinished,
    PermRequested,
    PermResolved,
    Pause,
    Resume,
    TurnEnded,
    Cancel,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Prompt),
        4 => (any::<bool>(), 0u8..2).prop_map(|(steer, conn)| Op::Inject { steer, conn }),
        2 => (any::<usize>(), 0u8..2).prop_map(|(pick, conn)| Op::Revoke { pick, conn }),
        2 => (any::<usize>(), 0u8..2).prop_map(|(pick, conn)| Op::Replace { pick, conn }),
        3 => Just(Op::Break),
        1 => Just(Op::StreamStarted),
        1 => Just(Op::StreamFinished),
        1 => Just(Op::PermRequested),
        1 => Just(Op::PermResolved),
        1 => Just(Op::Pause),
        1 => Just(Op::Resume),
        2 => Just(Op::TurnEnded),
        1 => Just(Op::Cancel),
    ]
}

fn agent(drain: QueueDrain) -> Agent {
    let inject = serde_json::from_value(json!({
        "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": ["interrupt", "finish"]
    }))
    .unwrap();
    let mut a = Agent::new(config(inject, drain)).unwrap();
    a.create_session(&SessionId("s1".into()), "/work").unwrap();
    for c in ["c1", "c2"] {
        a.attach_to_session(&c.into(), &SessionId("s1".into())).unwrap();
    }
    a
}

fn config(inject: acp_inject_core::wire::InjectCapabilities, drain: QueueDrain) -> AgentConfig {
    AgentConfig { inject: Some(inject), policy: Policy { queue_drain: drain, ..Policy::default() }, ..Default::default() }
}

/// Everything observed while driving one sequence.
#[derive(Default)]
struct Model {
    req: i64,
    /// Accepted id → (mode is steer, connection, accept order, current content text).
    accepted: HashMap<String, (bool, u8, usize, String)>,
    accepted_order: Vec<String>,
    revoked: HashSet<String>,
    delivered: Vec<(String, String)>,
    transcript: Vec<String>,
}

fn conn_name(c: u8) -> &'static str {
    if c == 0 {
        "c1"
    } else {
        "c2"
    }
}

fn apply(a: &mut Agent, m: &mut Model, op: &Op, counter: &mut usize) -> Vec<String> {
    let send = |a: &mut Agent, m: &mut Model, conn: u8, method: &str, params: Value| {
        m.req += 1;
        let line = json!({ "jsonrpc": "2.0", "id": m.req, "method": method, "params": params }).to_string();
        a.handle_line(&conn_name(conn).into(), &line);
    };
    *counter += 1;
    let text = format!("t{counter}");
    match op {
        Op::Prompt => send(a, m, 0, "session/prompt", json!({ "sessionId": "s1", "prompt": [{ "type": "text", "text": text }] })),
        Op::Inject { steer, conn } => send(
            a,
            m,
            *conn,
            "session/inject",
            json!({ "sessionId": "s1", "mode": if *steer { "steer" } else { "queue" }, "content": [{ "type": "text", "text": text }] }),
        ),
        Op::Revoke { pick, conn } if !m.accepted_order.is_empty() => {
            let id = m.accepted_order[pick % m.accepted_order.len()].clone();
            send(a, m, *conn, "session/revoke_inject", json!({ "sessionId": "s1", "messageId": id }))
        }
        Op::Replace { pick, conn } if !m.accepted_order.is_empty() => {
            let id = m.accepted_order[pick % m.accepted_order.len()].clone();
            send(
                a,
                m,
                *conn,
                "session/replace_inject",
                json!({ "sessionId": "s1", "messageId": id, "content": [{ "type": "text", "text": text }] }),
            )
        }
        Op::Revoke { .. } | Op::Replace { .. } => {}
        Op::Cancel => {
            // A cancel withdraws the session's held prompts (R-PROMPT-2): what leaves the queue
            // here is revoked, and answered -32800.
            let before: Vec<String> = a.pending(&SessionId("s1".into())).into_iter().map(|p| p.message_id.0).collect();
            a.handle_line(&"c1".into(), r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#);
            let after: Vec<String> = a.pending(&SessionId("s1".into())).into_iter().map(|p| p.message_id.0).collect();
            m.revoked.extend(before.into_iter().filter(|id| !after.contains(id)));
        }
        Op::PermResolved => {
            // The client answers the agent's oldest open request (R-PERM-2), or a stale id.
            let id = a.open_requests().first().map_or(json!("permission-0"), |r| json!(r.id));
            let line = json!({ "jsonrpc": "2.0", "id": id, "result": { "outcome": { "outcome": "selected", "optionId": "allow" } } });
            a.handle_line(&"c1".into(), &line.to_string());
        }
        other => {
            let ev = match other {
                Op::Break => RuntimeEvent::BreakPoint(BreakPoint::ToolResult),
                Op::StreamStarted => RuntimeEvent::StreamStarted,
                Op::StreamFinished => RuntimeEvent::StreamFinished,
                Op::PermRequested => RuntimeEvent::RequestPermission(
                    serde_json::from_value(json!({
                        "title": "run the tests?",
                        "options": [{ "optionId": "allow", "name": "Allow", "kind": "allow_once" }],
                    }))
                    .unwrap(),
                ),
                Op::Pause => RuntimeEvent::Paused,
                Op::Resume => RuntimeEvent::Resumed,
                _ => RuntimeEvent::TurnEnded { stop_reason: StopReason::EndTurn, usage: None, error: None },
            };
            let _ = a.runtime_event(&SessionId("s1".into()), ev);
        }
    }
    observe(a, m, op, &text)
}

/// Drains outputs, records what they mean, returns them as text (for the restore comparison).
fn observe(a: &mut Agent, m: &mut Model, op: &Op, text: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for out in a.drain().unwrap() {
        match &out {
            Output::Line { line, .. } => {
                let v: Value = serde_json::from_str(line).unwrap();
                if let Some(mid) = v["result"]["messageId"].as_str() {
                    let steer = matches!(op, Op::Inject { steer: true, .. });
                    let conn = match op {
                        Op::Inject { conn, .. } => *conn,
                        _ => 0,
                    };
                    if !m.accepted.contains_key(mid) {
                        m.accepted.insert(mid.to_owned(), (steer, conn, m.accepted_order.len(), text.to_owned()));
                        m.accepted_order.push(mid.to_owned());
                    } else if let Op::Replace { .. } = op {
                        m.accepted.get_mut(mid).unwrap().3 = text.to_owned();
                    }
                }
                if v["result"].is_object() && v["result"].as_object().unwrap().is_empty() {
                    if let Op::Revoke { pick, .. } = op {
                        let id = m.accepted_order[pick % m.accepted_order.len()].clone();
                        m.revoked.insert(id);
                    }
                }
                if v["params"]["update"]["sessionUpdate"] == "user_message" {
                    let id = v["params"]["update"]["messageId"].as_str().unwrap().to_owned();
                    let content = v["params"]["update"]["content"][0]["text"].as_str().unwrap().to_owned();
                    m.delivered.push((id, content));
                }
            }
            Output::Action { action: RuntimeAction::StartTurn(inputs), .. } => {
                // Steers before queued at a turn end (R-STEER-4, R-ORDER-1).
                let kinds: Vec<bool> = inputs.iter().filter_map(|i| m.accepted.get(&i.message_id.0).map(|a| a.0)).collect();
                let first_queue = kinds.iter().position(|s| !s).unwrap_or(kinds.len());
                assert!(kinds[first_queue..].iter().all(|s| !s), "a steer after a queued inject in one turn start: {inputs:?}");
            }
            _ => {}
        }
        seen.push(format!("{out:?}"));
    }
    // A prompt during a turn is held (R-PROMPT-2): no answer yet, but it is in the queue with an
    // id; it counts as accepted from now on, in arrival order.
    if matches!(op, Op::Prompt) {
        for p in a.pending(&SessionId("s1".into())) {
            if !m.accepted.contains_key(&p.message_id.0) {
                m.accepted.insert(p.message_id.0.clone(), (false, 0, m.accepted_order.len(), text.to_owned()));
                m.accepted_order.push(p.message_id.0);
            }
        }
    }
    m.transcript.extend(seen.iter().cloned());
    seen
}

fn check(m: &Model, dropped: &[String]) {
    // Delivered at most once (R-DELIV-2).
    let mut once = HashSet::new();
    for (id, _) in &m.delivered {
        assert!(once.insert(id.clone()), "{id} delivered twice");
        assert!(!m.revoked.contains(id), "{id} delivered after a successful revoke");
    }
    // Every accepted inject ends delivered, revoked or handed back at close.
    for id in &m.accepted_order {
        let fates = [once.contains(id), m.revoked.contains(id), dropped.contains(id)];
        assert_eq!(fates.iter().filter(|f| **f).count(), 1, "{id}: delivered/revoked/dropped = {fates:?}");
    }
    // The delivered content is the last successful replacement (R-REPLACE-1/2).
    for (id, content) in &m.delivered {
        if let Some(a) = m.accepted.get(id) {
            assert_eq!(&a.3, content, "{id} delivered with stale content");
        }
    }
    // FIFO within a mode and connection (R-ORDER-2).
    for steer in [true, false] {
        for conn in [0u8, 1] {
            let order: Vec<usize> = m
                .delivered
                .iter()
                .filter_map(|(id, _)| m.accepted.get(id))
                .filter(|a| a.0 == steer && a.1 == conn)
                .map(|a| a.2)
                .collect();
            assert!(order.windows(2).all(|w| w[0] < w[1]), "not FIFO (steer={steer}, conn={conn}): {order:?}");
        }
    }
}

fn run(ops: &[Op], drain: QueueDrain, restore_at: Option<usize>) -> (Model, Vec<String>) {
    let mut a = agent(drain);
    let mut m = Model::default();
    let mut counter = 0;
    for (i, op) in ops.iter().enumerate() {
        if restore_at == Some(i) {
            a = Agent::restore(a.config().clone(), &a.snapshot(), Box::new(MemoryStore::new())).expect("snapshot restores");
        }
        apply(&mut a, &mut m, op, &mut counter);
    }
    let pending: Vec<String> = a.pending(&SessionId("s1".into())).into_iter().map(|d| d.message_id.0).collect();
    a.runtime_event(&SessionId("s1".into()), RuntimeEvent::Close).unwrap();
    let outputs = a.drain().unwrap();
    // Held prompts are answered -32800 (R-PROMPT-2); every other pending inject is handed back.
    let cancelled = outputs.iter().filter(|o| matches!(o, Output::Line { line, .. } if line.contains("-32800"))).count();
    let handed_back: Vec<String> = outputs
        .into_iter()
        .filter_map(|o| match o {
            Output::Action { action: RuntimeAction::Closed { dropped, .. }, .. } => {
                Some(dropped.into_iter().map(|d| d.message_id.0).collect::<Vec<_>>())
            }
            _ => None,
        })
        .flatten()
        .collect();
    let held: Vec<&String> = pending.iter().filter(|id| !handed_back.contains(id)).collect();
    assert_eq!(held.len(), cancelled, "every pending message not handed back is a held prompt, answered -32800: {held:?}");
    let others: Vec<String> = pending.iter().filter(|id| handed_back.contains(id)).cloned().collect();
    assert_eq!(others, handed_back, "close hands back exactly the pending injects, in delivery order");
    // Handed back or cancelled: either way the message's fate at close.
    (m, pending)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold(ops in prop::collection::vec(op(), 1..40), one_per_turn in any::<bool>()) {
        let drain = if one_per_turn { QueueDrain::OnePerTurn } else { QueueDrain::Batch };
        let (m, dropped) = run(&ops, drain, None);
        check(&m, &dropped);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn snapshot_restore_changes_nothing(ops in prop::collection::vec(op(), 1..40), at in any::<usize>()) {
        let (plain, _) = run(&ops, QueueDrain::Batch, None);
        let (restored, _) = run(&ops, QueueDrain::Batch, Some(at % ops.len()));
        prop_assert_eq!(plain.transcript, restored.transcript);
    }
}
