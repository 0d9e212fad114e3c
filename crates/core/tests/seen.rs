//! Which sessions a batch touched ([`Seen`]), as a host whose store commits on several lanes
//! gets them from [`Agent::drain_submit`]: a batch about one session waits only for that
//! session's lane, a batch about none waits for nothing, and a batch that walks every session
//! waits for all.

use std::sync::{Arc, Mutex};

use acp_inject_core::agent::{
    Agent, AgentConfig, Change, Committed, ConnId, ConnectionRole, HistoryEntry, Lanes, MemoryStore, Output, Seen, SessionPage,
    SessionRecord, Store, StoreError,
};
use acp_inject_core::wire::{MessageId, SessionId};
use serde_json::{json, Value};

/// A memory store with one lane per session, in the order the test names them (shared with
/// the test), that commits at once.
struct Lanes2 {
    inner: MemoryStore,
    order: Arc<Mutex<Vec<SessionId>>>,
}

impl Store for Lanes2 {
    fn record(&mut self, change: Change<'_>) {
        self.inner.record(change);
    }
    fn list(&self, cwd: Option<&str>, principal: Option<&str>, before: Option<u64>, limit: usize) -> Result<SessionPage, StoreError> {
        self.inner.list(cwd, principal, before, limit)
    }
    fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        self.inner.session(id)
    }
    fn history(&self, id: &SessionId) -> Result<Vec<HistoryEntry>, StoreError> {
        self.inner.history(id)
    }
    fn message_for_key(&self, id: &SessionId, key: &str) -> Result<Option<MessageId>, StoreError> {
        self.inner.message_for_key(id, key)
    }
    fn lanes(&self) -> usize {
        8
    }
    fn lanes_of(&self, seen: &Seen) -> Lanes {
        let order = self.order.lock().unwrap();
        match seen {
            Seen::All => Lanes::all(8),
            Seen::Sessions(set) => {
                Lanes(set.iter().map(|s| order.iter().position(|o| o == s).map_or(1 << 7, |i| 1 << i)).fold(0, |a, b| a | b))
            }
        }
    }
    fn submit(&mut self, done: Committed) -> Result<Lanes, StoreError> {
        done(Ok(()));
        Ok(Lanes::NONE)
    }
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Handles `line` from `conn` as one batch: its answer to `conn`, and the lanes it waits for.
fn batch(agent: &mut Agent, conn: &ConnId, line: &str) -> (Value, Lanes) {
    agent.handle_line(conn, line);
    let (outputs, lanes) = agent.drain_submit(Box::new(|r| r.unwrap())).unwrap();
    let answer = outputs
        .into_iter()
        .filter_map(|o| match o {
            Output::Line { to, line } if to.contains(conn) => serde_json::from_str::<Value>(&line).ok(),
            _ => None,
        })
        .find(|v| v.get("id").is_some() && v.get("method").is_none())
        .unwrap_or(Value::Null);
    (answer, lanes)
}

#[test]
fn a_batch_waits_for_the_lanes_of_the_sessions_it_touched_only() {
    let order = Arc::new(Mutex::new(Vec::new()));
    let store = Lanes2 { inner: MemoryStore::new(), order: Arc::clone(&order) };
    let mut agent = Agent::with_store(AgentConfig::default(), Box::new(store)).unwrap();
    let (c1, c2) = (ConnId::from("c1"), ConnId::from("c2"));
    agent.attach_as(&c1, ConnectionRole::Controller, None);
    let init = json!({"protocolVersion": 2, "info": {"name": "t", "version": "1"}});
    let (_, lanes) = batch(&mut agent, &c1, &request(0, "initialize", init.clone()));
    assert_eq!(lanes, Lanes::NONE, "initialize is about no session");
    let mut ids = Vec::new();
    for id in 1..=2 {
        let (created, _) = batch(&mut agent, &c1, &request(id, "session/new", json!({"cwd": "/w"})));
        ids.push(SessionId(created["result"]["sessionId"].as_str().unwrap().to_owned()));
    }
    order.lock().unwrap().extend(ids.iter().cloned());
    let (a, b) = (&ids[0], &ids[1]);
    let text = json!([{"type": "text", "text": "hi"}]);

    let (answer, lanes) = batch(&mut agent, &c1, &request(3, "session/prompt", json!({"sessionId": a, "prompt": text})));
    assert!(answer["result"]["messageId"].is_string(), "{answer}");
    assert_eq!(lanes, Lanes(0b01), "a prompt is about its session");
    let (_, lanes) = batch(&mut agent, &c1, &request(4, "session/status", json!({"sessionId": b})));
    assert_eq!(lanes, Lanes(0b10), "a status is about its session");
    let (_, lanes) = batch(&mut agent, &c1, &request(5, "session/inject", json!({"sessionId": a, "mode": "queue", "content": text})));
    assert_eq!(lanes, Lanes(0b01));
    let (_, lanes) = batch(&mut agent, &c1, &request(6, "session/list", json!({})));
    assert_eq!(lanes, Lanes::NONE, "a list is what the store committed");

    // A second connection attached to `b` only: its end is about `b`.
    agent.attach_as(&c2, ConnectionRole::Controller, None);
    batch(&mut agent, &c2, &request(0, "initialize", init));
    let (resumed, lanes) = batch(&mut agent, &c2, &request(1, "session/resume", json!({"sessionId": b, "cwd": "/w"})));
    assert!(resumed.get("result").is_some(), "{resumed}");
    assert_eq!(lanes, Lanes(0b10));
    agent.detach(&c2);
    let (_, lanes) = agent.drain_submit(Box::new(|r| r.unwrap())).unwrap();
    assert_eq!(lanes, Lanes(0b10), "a connection's end is about the sessions it was attached to");

    // The live state walks every session.
    let _ = agent.live_state();
    let (_, lanes) = agent.drain_submit(Box::new(|r| r.unwrap())).unwrap();
    assert_eq!(lanes, Lanes::all(8));
}
