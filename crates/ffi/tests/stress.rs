//! One session driven from 8 threads through the object the bindings use (`AgentCore`):
//! no deadlock within a bounded time, no lost or duplicated delivery, and outputs consistent
//! with a serial order. The core holds one lock per call, so every run is some serial order of
//! the calls; what the test checks are the properties every serial order must have:
//! delivered ⊆ accepted, at most once, never after a successful revoke, with the replaced
//! content, FIFO per mode and connection, and every accepted inject delivered, revoked or
//! still pending at the end.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use acp_inject_core::agent::{BreakPoint, HistoryEntry, Output, RuntimeAction, RuntimeEvent};
use acp_inject_core::wire::{ContentBlock, PendingInject, StopReason};
use acp_inject_ffi::codec::{decode, encode};
use acp_inject_ffi::AgentCore;
use serde_json::{json, Value};

const THREADS: usize = 8;
const OPS: usize = 400;

#[derive(Default)]
struct Log {
    /// id → (thread, mode is steer, accept index within its thread, final content)
    accepted: BTreeMap<String, (usize, bool, usize, String)>,
    revoked: BTreeSet<String>,
    /// (id, content) in output order as each thread saw them.
    delivered: Vec<(String, String)>,
}

fn text_of(content: &[ContentBlock]) -> String {
    match content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        _ => String::new(),
    }
}

fn record(log: &Mutex<Log>, outputs: &[Output]) {
    let mut log = log.lock().unwrap();
    for o in outputs {
        if let Output::Action { action: RuntimeAction::StartTurn(messages) | RuntimeAction::Deliver(messages), .. } = o {
            for m in messages {
                log.delivered.push((m.message_id.to_string(), text_of(&m.content)));
            }
        }
    }
}

/// The response to `request` among the outputs: addressed to `conn` only.
fn answer(outputs: &[Output], conn: &str, request: i64) -> Value {
    outputs
        .iter()
        .find_map(|o| match o {
            Output::Line { to, line } if to.iter().map(|c| c.as_str()).eq([conn]) => {
                let v: Value = serde_json::from_str(line).unwrap();
                (v["id"] == request).then_some(v)
            }
            _ => None,
        })
        .expect("every request is answered to its connection")
}

fn worker(core: Arc<AgentCore>, log: Arc<Mutex<Log>>, t: usize) {
    let conn = format!("c{t}");
    let mut seed = 0x2545_F491_4F6C_DD1D_u64 ^ (t as u64 * 0x9E37_79B9);
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut mine: Vec<String> = Vec::new();
    let mut accepted_here = 0;
    for i in 0..OPS {
        let req = (t * 1_000_000 + i) as i64;
        match rnd(10) {
            0..=3 => {
                let steer = rnd(2) == 0;
                let text = format!("t{t}-{i}");
                let line = json!({ "jsonrpc": "2.0", "id": req, "method": "session/inject",
                    "params": { "sessionId": "s1", "mode": if steer { "steer" } else { "queue" }, "content": [{ "type": "text", "text": text }] } });
                let out: Vec<Output> = decode(&core.handle_line(conn.as_str().into(), line.to_string()).unwrap()).unwrap();
                // Record the accept before the deliveries it may cause (a queue inject on an
                // idle session starts a turn at once).
                let a = answer(&out, &conn, req);
                if let Some(id) = a["result"]["messageId"].as_str() {
                    log.lock().unwrap().accepted.insert(id.to_owned(), (t, steer, accepted_here, text));
                    accepted_here += 1;
                    mine.push(id.to_owned());
                } else {
                    assert_eq!(a["error"]["data"]["reason"], "no_running_turn", "{a}");
                }
                record(&log, &out);
            }
            4 | 5 if !mine.is_empty() => {
                let id = mine[rnd(mine.len() as u64) as usize].clone();
                let replace = rnd(2) == 0;
                let text = format!("t{t}-{i}-edited");
                let line = if replace {
                    json!({ "jsonrpc": "2.0", "id": req, "method": "session/replace_inject",
                        "params": { "sessionId": "s1", "messageId": id, "content": [{ "type": "text", "text": text }] } })
                } else {
                    json!({ "jsonrpc": "2.0", "id": req, "method": "session/revoke_inject", "params": { "sessionId": "s1", "messageId": id } })
                };
                let out: Vec<Output> = decode(&core.handle_line(conn.as_str().into(), line.to_string()).unwrap()).unwrap();
                let a = answer(&out, &conn, req);
                let mut l = log.lock().unwrap();
                if a.get("result").is_some() {
                    if replace {
                        l.accepted.get_mut(&id).unwrap().3 = text;
                    } else {
                        l.revoked.insert(id);
                    }
                } else {
                    let reason = a["error"]["data"]["reason"].as_str().unwrap_or("");
                    assert!(["already_delivered", "unknown_message_id"].contains(&reason), "{a}");
                }
                drop(l);
                record(&log, &out);
            }
            6 | 7 => {
                if let Ok(out) = core.runtime_event("s1".into(), encode(&RuntimeEvent::BreakPoint(BreakPoint::ToolResult))) {
                    record(&log, &decode::<Vec<Output>>(&out).unwrap());
                }
            }
            _ => {
                let ended = RuntimeEvent::TurnEnded { stop_reason: StopReason::EndTurn, usage: None, error: None };
                if let Ok(out) = core.runtime_event("s1".into(), encode(&ended)) {
                    record(&log, &decode::<Vec<Output>>(&out).unwrap());
                }
            }
        }
    }
}

#[test]
fn eight_threads_one_session() {
    let core = AgentCore::new(acp_inject_ffi::default_agent_config()).unwrap();
    assert!(core.create_session("s1".into(), "/work".into()).unwrap());
    for t in 0..THREADS {
        assert!(core.attach_to_session(format!("c{t}"), "s1".into()).unwrap());
        // R-INIT-2: nothing but `initialize` is served before it.
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": 2, "info": { "name": "stress", "version": "0" } } });
        core.handle_line(format!("c{t}"), init.to_string()).unwrap();
    }
    let log = Arc::new(Mutex::new(Log::default()));
    let (done_tx, done) = mpsc::channel();
    for t in 0..THREADS {
        let (core, log, done_tx) = (core.clone(), log.clone(), done_tx.clone());
        std::thread::spawn(move || {
            worker(core, log, t);
            done_tx.send(()).unwrap();
        });
    }
    for _ in 0..THREADS {
        done.recv_timeout(Duration::from_secs(120)).expect("a thread did not finish: deadlock or livelock");
    }

    let log = log.lock().unwrap();
    let pending: Vec<PendingInject> = decode(&core.pending("s1".into()).unwrap()).unwrap();
    let pending: BTreeSet<String> = pending.into_iter().map(|p| p.message_id.to_string()).collect();
    let mut once = BTreeSet::new();
    for (id, content) in &log.delivered {
        assert!(once.insert(id.clone()), "{id} delivered twice");
        assert!(!log.revoked.contains(id), "{id} delivered after a successful revoke");
        let a = log.accepted.get(id).unwrap_or_else(|| panic!("{id} delivered but never accepted"));
        assert_eq!(&a.3, content, "{id} delivered with superseded content");
    }
    for id in log.accepted.keys() {
        let fates = [once.contains(id), log.revoked.contains(id), pending.contains(id)];
        assert_eq!(fates.iter().filter(|f| **f).count(), 1, "{id}: delivered/revoked/pending = {fates:?}");
    }
    // The threads logged their outputs in whatever order they got to it; the core's history is
    // the serial order it actually delivered in. Same set, and FIFO in that order.
    let history: Vec<HistoryEntry> = decode(&core.history("s1".into()).unwrap()).unwrap();
    let history: Vec<String> = history
        .into_iter()
        .filter_map(|e| match e {
            HistoryEntry::User { message_id, .. } => Some(message_id.to_string()),
            HistoryEntry::Update { .. } => None,
        })
        .collect();
    assert_eq!(history.iter().cloned().collect::<BTreeSet<_>>(), once, "history and outputs disagree");
    assert_eq!(history.len(), once.len());
    for t in 0..THREADS {
        for steer in [false, true] {
            let order: Vec<usize> =
                history.iter().filter_map(|id| log.accepted.get(id)).filter(|a| a.0 == t && a.1 == steer).map(|a| a.2).collect();
            assert!(order.windows(2).all(|w| w[0] < w[1]), "thread {t} steer={steer}: not FIFO {order:?}");
        }
    }
    assert!(log.accepted.len() > THREADS * OPS / 5, "too few accepted injects: {}", log.accepted.len());
    assert!(!log.delivered.is_empty() && !log.revoked.is_empty());
}
