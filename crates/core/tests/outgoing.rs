//! The agent core owns its requests to clients (R-PERM-2) and frames each connection's bytes:
//! what the vectors cannot express (byte chunking, connections going away, snapshots, stores
//! without controllers) is checked here.

use acp_inject_core::agent::{
    Agent, AgentConfig, ConnectionRole, MemoryStore, Output, PermissionAsk, RuntimeAction, RuntimeEvent, Turn,
};
use acp_inject_core::wire::SessionId;
use acp_inject_core::wire::{RequestId, RequestPermissionOutcome};
use serde_json::{json, Value};

fn ask() -> PermissionAsk {
    serde_json::from_value(
        json!({ "title": "run the tests?", "options": [{ "optionId": "allow", "name": "Allow", "kind": "allow_once" }] }),
    )
    .unwrap()
}

/// An agent with session `s1` in a turn, `c1` (and `c2` when asked) attached as controllers.
fn agent_in_turn(controllers: &[&str]) -> Agent {
    let mut a = Agent::new(AgentConfig::default()).unwrap();
    a.create_session(&SessionId("s1".into()), "/work").unwrap();
    for c in controllers {
        let c = &acp_inject_core::agent::ConnId::from(*c);
        a.attach(c, ConnectionRole::Controller);
        a.attach_to_session(c, &SessionId("s1".into())).unwrap();
        // R-INIT-2: nothing but `initialize` is served before it.
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": 2, "info": { "name": "t", "version": "0" } } });
        a.handle_line(c, &init.to_string());
    }
    a.runtime_event(&SessionId("s1".into()), RuntimeEvent::TurnStarted).unwrap();
    a.drain().unwrap();
    a
}

fn answer_line(id: &RequestId, option: &str) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "result": { "outcome": { "outcome": "selected", "optionId": option } } }).to_string()
}

/// The permission answers among the outputs: (id, outcome tag, option chosen).
fn answers(outputs: &[Output]) -> Vec<(RequestId, String, Option<String>)> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Action { action: RuntimeAction::PermissionAnswered { request_id, outcome }, .. } => {
                let option = match outcome {
                    RequestPermissionOutcome::Selected(s) => Some(s.option_id.0.clone()),
                    _ => None,
                };
                Some((request_id.clone(), outcome.tag().to_owned(), option))
            }
            _ => None,
        })
        .collect()
}

fn lines(outputs: &[Output]) -> Vec<(Vec<String>, Value)> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Line { to, line } => Some((to.iter().map(ToString::to_string).collect(), serde_json::from_str(line).unwrap())),
            Output::Action { .. } | Output::Call { .. } => None,
        })
        .collect()
}

#[test]
fn an_answer_split_across_reads_reaches_the_runtime_once() {
    let mut a = agent_in_turn(&["c1"]);
    let id = a.request_permission(&SessionId("s1".into()), ask()).unwrap();
    let out = a.drain().unwrap();
    let sent = lines(&out);
    assert_eq!(sent.last().unwrap().1["method"], "session/request_permission");
    assert_eq!(sent.last().unwrap().1["id"], json!(id));
    assert!(matches!(a.turn(&SessionId("s1".into())), Some(Turn::RequiresAction { .. })));

    let line = format!("{}\n", answer_line(&id, "allow"));
    let (head, tail) = line.as_bytes().split_at(17);
    a.receive_bytes(&"c1".into(), head);
    assert!(a.drain().unwrap().is_empty(), "a partial line waits");
    a.receive_bytes(&"c1".into(), tail);
    let out = a.drain().unwrap();
    assert_eq!(answers(&out), [(id.clone(), "selected".to_owned(), Some("allow".to_owned()))]);
    assert!(matches!(a.turn(&SessionId("s1".into())), Some(Turn::Running { .. })));
    assert!(a.open_requests().is_empty());

    // The same answer again is ignored and counted.
    let ignored = a.ignored_lines();
    a.receive_bytes(&"c1".into(), line.as_bytes());
    assert!(a.drain().unwrap().is_empty());
    assert_eq!(a.ignored_lines(), ignored + 1);
}

#[test]
fn a_last_line_without_newline_is_applied_at_the_end_of_the_stream() {
    let mut a = agent_in_turn(&["c1"]);
    let id = a.request_permission(&SessionId("s1".into()), ask()).unwrap();
    a.drain().unwrap();
    a.receive_bytes(&"c1".into(), answer_line(&id, "allow").as_bytes());
    assert!(a.drain().unwrap().is_empty());
    a.receive_end(&"c1".into());
    assert_eq!(answers(&a.drain().unwrap()).len(), 1);
}

#[test]
fn each_connection_has_its_own_framer() {
    let mut a = agent_in_turn(&["c1", "c2"]);
    let id = a.request_permission(&SessionId("s1".into()), ask()).unwrap();
    let out = a.drain().unwrap();
    assert_eq!(lines(&out).last().unwrap().0, ["c1", "c2"], "sent to every controller");
    // c2 starts a line, c1 sends a whole answer: c2's fragment does not corrupt c1's line.
    a.receive_bytes(&"c2".into(), br#"{"jsonrpc":"2.0","#);
    a.receive_bytes(&"c1".into(), format!("{}\n", answer_line(&id, "allow")).as_bytes());
    assert_eq!(answers(&a.drain().unwrap())[0].2.as_deref(), Some("allow"));
    // c2 completes its line: an answer to a request no longer open, ignored.
    a.receive_bytes(&"c2".into(), br#""id":"permission-1","result":{"outcome":{"outcome":"cancelled"}}}"#);
    a.receive_bytes(&"c2".into(), b"\n");
    assert!(a.drain().unwrap().is_empty());
}

#[test]
fn invalid_utf8_and_oversized_lines_get_errors_and_the_stream_goes_on() {
    let mut a = Agent::new(AgentConfig::default()).unwrap();
    a.receive_bytes(&"c1".into(), b"\xff\xfe\n");
    let out = lines(&a.drain().unwrap());
    assert_eq!(out[0].1["error"]["code"], -32700);
    let limit = a.config().policy.line_limit();
    let long = vec![b'x'; limit + 10];
    a.receive_bytes(&"c1".into(), &long);
    a.receive_bytes(&"c1".into(), b"\n");
    let out = lines(&a.drain().unwrap());
    assert_eq!(out[0].1["error"]["code"], -32600);
    a.receive_bytes(&"c1".into(), b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":2,\"info\":{\"name\":\"t\",\"version\":\"0\"}}}\n");
    a.receive_bytes(&"c1".into(), b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/w\"}}\n");
    let out = lines(&a.drain().unwrap());
    assert!(out[1].1["result"]["sessionId"].is_string(), "{out:?}");
}

#[test]
fn a_request_only_a_departed_connection_could_answer_is_cancelled() {
    let mut a = agent_in_turn(&["c1", "c2"]);
    let id = a.request_permission(&SessionId("s1".into()), ask()).unwrap();
    a.drain().unwrap();
    a.detach(&"c1".into());
    assert!(answers(&a.drain().unwrap()).is_empty(), "c2 can still answer");
    a.detach(&"c2".into());
    let out = a.drain().unwrap();
    assert_eq!(answers(&out), [(id, "cancelled".to_owned(), None)]);
    assert!(matches!(a.turn(&SessionId("s1".into())), Some(Turn::Running { .. })));
}

#[test]
fn with_no_controller_attached_the_request_is_cancelled_at_once() {
    let mut a = agent_in_turn(&[]);
    a.attach(&"o1".into(), ConnectionRole::Observer);
    a.attach_to_session(&"o1".into(), &SessionId("s1".into())).unwrap();
    let id = a.request_permission(&SessionId("s1".into()), ask()).unwrap();
    let out = a.drain().unwrap();
    assert_eq!(answers(&out), [(id, "cancelled".to_owned(), None)]);
    assert!(lines(&out).iter().all(|(_, l)| l["method"] != "session/request_permission"), "nothing is sent to observers");
    assert!(matches!(a.turn(&SessionId("s1".into())), Some(Turn::Running { .. })));
}

#[test]
fn a_snapshot_keeps_open_requests_and_ids_are_never_reused() {
    let mut a = agent_in_turn(&["c1"]);
    let first = a.request_permission(&SessionId("s1".into()), ask()).unwrap();
    a.drain().unwrap();
    let mut b = Agent::restore(AgentConfig::default(), &a.snapshot(), Box::new(MemoryStore::new())).unwrap();
    assert_eq!(b.open_requests(), a.open_requests());
    assert!(matches!(b.turn(&SessionId("s1".into())), Some(Turn::RequiresAction { .. })));
    let second = b.request_permission(&SessionId("s1".into()), ask()).unwrap();
    assert_ne!(first, second);
    b.drain().unwrap();
    b.handle_line(&"c1".into(), &answer_line(&first, "allow"));
    let out = b.drain().unwrap();
    assert_eq!(answers(&out), [(first, "selected".to_owned(), Some("allow".to_owned()))]);
    assert!(matches!(b.turn(&SessionId("s1".into())), Some(Turn::RequiresAction { .. })), "the second is still open");
}

#[test]
fn runtime_misuse_is_a_host_error() {
    let mut a = Agent::new(AgentConfig::default()).unwrap();
    a.create_session(&SessionId("s1".into()), "/work").unwrap();
    assert_eq!(a.request_permission(&SessionId("s1".into()), ask()).unwrap_err().kind(), "no_turn_in_progress");
    assert_eq!(a.request_permission(&SessionId("nope".into()), ask()).unwrap_err().kind(), "session_closed");
    let mut empty = ask();
    empty.options.clear();
    assert_eq!(a.request_permission(&SessionId("s1".into()), empty).unwrap_err().kind(), "no_permission_options");
    let stale = RequestId::Str("permission-7".into());
    assert_eq!(a.withdraw_request(&SessionId("s1".into()), &stale).unwrap_err().kind(), "unknown_request");
    assert!(a.drain().unwrap().is_empty());
}

#[test]
fn an_answer_that_does_not_decode_counts_as_cancelled() {
    let mut a = agent_in_turn(&["c1"]);
    let id = a.request_permission(&SessionId("s1".into()), ask()).unwrap();
    a.drain().unwrap();
    a.handle_line(&"c1".into(), &json!({ "jsonrpc": "2.0", "id": id, "result": { "outcome": "yes" } }).to_string());
    assert_eq!(answers(&a.drain().unwrap()), [(id, "cancelled".to_owned(), None)]);
    assert!(matches!(a.turn(&SessionId("s1".into())), Some(Turn::Running { .. })));
}
