//! R-TENANT-1: a connection speaking for a principal sees the sessions that principal created
//! and no other; another principal's session is answered exactly as one the agent never had.
//! (The vectors have no principals: this is the core's own test of every session method.)

use acp_inject_core::agent::{Agent, AgentConfig, ConnId, ConnectionRole, Output};
use serde_json::{json, Value};

/// The answer lines `conn` got since the last drain, as JSON.
fn answers(agent: &mut Agent, conn: &ConnId) -> Vec<Value> {
    agent
        .drain()
        .unwrap()
        .into_iter()
        .filter_map(|o| match o {
            Output::Line { to, line } if to.contains(conn) => Some(serde_json::from_str::<Value>(&line).unwrap()),
            _ => None,
        })
        .filter(|v| v.get("id").is_some() && v.get("method").is_none())
        .collect()
}

fn call(agent: &mut Agent, conn: &ConnId, id: u64, method: &str, params: Value) -> Value {
    agent.handle_line(conn, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
    let mut got = answers(agent, conn);
    assert_eq!(got.len(), 1, "{method}: {got:?}");
    got.remove(0)
}

fn open(agent: &mut Agent, name: &str, principal: Option<&str>) -> ConnId {
    let conn = ConnId::from(name);
    agent.attach_as(&conn, ConnectionRole::Controller, principal.map(str::to_owned));
    let init = call(agent, &conn, 0, "initialize", json!({"protocolVersion": 2, "info": {"name": name, "version": "1"}}));
    assert!(init.get("result").is_some(), "{init}");
    conn
}

#[test]
fn another_principals_session_is_unknown_to_every_method() {
    let mut agent = Agent::new(AgentConfig::default()).unwrap();
    let alice = open(&mut agent, "alice", Some("alice"));
    let bob = open(&mut agent, "bob", Some("bob"));
    let nobody = open(&mut agent, "stdio", None);
    let created = call(&mut agent, &alice, 1, "session/new", json!({"cwd": "/a"}));
    let theirs = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let prompt =
        call(&mut agent, &alice, 2, "session/prompt", json!({"sessionId": theirs, "prompt": [{"type": "text", "text": "hi"}]}));
    let message = prompt["result"]["messageId"].as_str().unwrap().to_owned();

    for (conn, n) in [(&bob, 10), (&nobody, 30)] {
        // What a session the agent never had gets, with its id in place of the foreign one's.
        let unknown = |v: &Value, id: &str| v.to_string().replace(id, "ID");
        let asks: Vec<(&str, Value)> = vec![
            ("session/resume", json!({"sessionId": "SID", "cwd": "/a"})),
            ("session/resume", json!({"sessionId": "SID", "cwd": "/a", "replayFrom": {"type": "start"}})),
            ("session/status", json!({"sessionId": "SID"})),
            ("session/prompt", json!({"sessionId": "SID", "prompt": [{"type": "text", "text": "x"}]})),
            ("session/inject", json!({"sessionId": "SID", "mode": "queue", "content": [{"type": "text", "text": "x"}]})),
            ("session/revoke_inject", json!({"sessionId": "SID", "messageId": message})),
            ("session/replace_inject", json!({"sessionId": "SID", "messageId": message, "content": [{"type": "text", "text": "x"}]})),
            ("session/close", json!({"sessionId": "SID"})),
        ];
        for (i, (method, params)) in asks.iter().enumerate() {
            let with = |sid: &str| serde_json::from_str::<Value>(&params.to_string().replace("SID", sid)).unwrap();
            let id = n + 2 * i as u64;
            let foreign = call(&mut agent, conn, id, method, with(&theirs));
            let never = call(&mut agent, conn, id, method, with("sess_never"));
            assert_eq!(unknown(&foreign, &theirs), unknown(&never, "sess_never"), "{conn:?} {method}");
        }
        // Its cancel is ignored; its list shows none of alice's.
        agent.handle_line(conn, &json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": theirs}}).to_string());
        let listed = call(&mut agent, conn, n + 100, "session/list", json!({}));
        assert_eq!(listed["result"]["sessions"], json!([]), "{conn:?}");
    }
    // Alice's session is as she left it: running, her prompt delivered, listed for her.
    let status = call(&mut agent, &alice, 3, "session/status", json!({"sessionId": theirs}));
    assert_eq!(status["result"], json!({"status": "open", "state": {"state": "running"}}));
    let listed = call(&mut agent, &alice, 4, "session/list", json!({}));
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], json!(theirs));
    assert_eq!(listed["result"]["sessions"].as_array().unwrap().len(), 1);
    // A session bob creates is his.
    let his = call(&mut agent, &bob, 200, "session/new", json!({"cwd": "/b"}));
    let his = his["result"]["sessionId"].as_str().unwrap().to_owned();
    let listed = call(&mut agent, &bob, 201, "session/list", json!({}));
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], json!(his));
    let foreign = call(&mut agent, &alice, 5, "session/status", json!({"sessionId": his}));
    assert_eq!(foreign["error"]["code"], json!(-32002));
}

/// A session id carries 96 random bits after its ordinal, so knowing one id (or how many
/// sessions there are) does not tell another; `policy.sequentialSessionIds` leaves them out.
#[test]
fn session_ids_cannot_be_guessed_unless_the_policy_says_sequential() {
    let first_session = |config: AgentConfig| {
        let mut agent = Agent::new(config).unwrap();
        let conn = open(&mut agent, "c1", None);
        let new = call(&mut agent, &conn, 1, "session/new", json!({"cwd": "/work"}));
        new["result"]["sessionId"].as_str().expect("a session id").to_owned()
    };
    let (a, b) = (first_session(AgentConfig::default()), first_session(AgentConfig::default()));
    for id in [&a, &b] {
        let random = id.strip_prefix("sess_1_").unwrap_or_else(|| panic!("the ordinal, then the random part: {id}"));
        assert!(random.len() == 24 && random.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{id}");
    }
    assert_ne!(a, b, "two agents' first sessions differ");
    let mut sequential = AgentConfig::default();
    sequential.policy.sequential_session_ids = true;
    assert_eq!(first_session(sequential), "sess_1");
}
