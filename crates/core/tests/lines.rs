//! The JSON line endpoints answer malformed and unknown input with the right JSON-RPC error
//! line (or ignore it, for notifications and stray responses) and change no state.

use acp_inject_core::agent::{Agent, AgentConfig, Output};
use acp_inject_core::client::{ClientConnection, Event};
use acp_inject_core::wire::SessionId;
use serde_json::{json, Value};

fn agent() -> Agent {
    let inject = serde_json::from_value(json!({ "modes": ["queue", "steer"], "steerInStream": ["finish"] })).unwrap();
    let mut a = Agent::new(AgentConfig { inject: Some(inject), ..Default::default() }).unwrap();
    a.create_session(&SessionId("s1".into()), "/work").unwrap();
    a.attach(&"c1".into(), acp_inject_core::agent::ConnectionRole::Controller);
    a.attach_to_session(&"c1".into(), &SessionId("s1".into())).unwrap();
    initialize(&mut a);
    a
}

/// `c1`'s `initialize` (R-INIT-2: nothing else is served before it), its answer drained.
fn initialize(a: &mut Agent) {
    a.handle_line(
        &"c1".into(),
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"0"}}}"#,
    );
    let out = a.drain().unwrap();
    assert!(matches!(&out[..], [Output::Line { line, .. }] if line.contains(r#""result""#)), "{out:?}");
}

/// R-INIT-2: before a successful `initialize` every other request is -32600 naming the method,
/// a notification is ignored, and a failed `initialize` does not count.
#[test]
fn nothing_but_initialize_is_served_before_it() {
    let mut a = Agent::new(AgentConfig::default()).unwrap();
    a.create_session(&SessionId("s1".into()), "/work").unwrap();
    let out = answer(&mut a, br#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work"}}"#);
    assert_eq!(error(&out[0]).0, -32600);
    assert!(out[0]["error"]["data"]["detail"].as_str().unwrap().contains("initialized before `session/new`"), "{}", out[0]);
    assert!(answer(&mut a, br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#).is_empty());
    let out = answer(&mut a, br#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":0}}"#);
    assert_eq!(error(&out[0]).0, -32022);
    let out = answer(&mut a, br#"{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}"#);
    assert_eq!(error(&out[0]).0, -32600);
    initialize(&mut a);
    let out = answer(&mut a, br#"{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}"#);
    assert!(out[0].get("result").is_some(), "{}", out[0]);
}

/// Feeds one line; returns the lines sent back to `c1` (only answers are expected).
fn answer(a: &mut Agent, line: &[u8]) -> Vec<Value> {
    a.handle_bytes(&"c1".into(), line);
    a.drain()
        .unwrap()
        .into_iter()
        .map(|o| match o {
            Output::Line { to, line } if to == ["c1"] && line.contains(r#""id""#) => serde_json::from_str(&line).unwrap(),
            other => panic!("unexpected output {other:?}"),
        })
        .collect()
}

/// A client connection with session `s1` open.
fn client(max_line_bytes: usize) -> ClientConnection {
    let mut c = ClientConnection::new(max_line_bytes);
    c.assume_capabilities(None);
    c.open_session(&SessionId("s1".into()), None);
    c
}

fn error(v: &Value) -> (i64, &str, &Value) {
    (v["error"]["code"].as_i64().unwrap(), v["error"]["message"].as_str().unwrap(), &v["id"])
}

#[test]
fn malformed_lines_get_the_documented_errors() {
    let mut a = agent();
    let before: Value = serde_json::from_str(&a.snapshot()).unwrap();
    let cases: &[(&[u8], i64, &str, Value)] = &[
        (b"{not json", -32700, "Parse error", Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\"", -32700, "Parse error", Value::Null),
        (b"\xff\xfe{}", -32700, "Parse error", Value::Null),
        (b"42", -32600, "Invalid request", Value::Null),
        (b"[]", -32600, "Invalid request", Value::Null),
        (br#"{"jsonrpc":"1.0","id":7,"method":"session/status","params":{"sessionId":"s1"}}"#, -32600, "Invalid request", json!(7)),
        (br#"{"jsonrpc":"2.0","id":{"x":1},"method":"session/status"}"#, -32600, "Invalid request", Value::Null),
        (br#"{"jsonrpc":"2.0","id":8,"method":"session/nope","params":{}}"#, -32601, "Method not found", json!(8)),
        (br#"{"jsonrpc":"2.0","id":"a","method":"_x.dev/thing","params":{}}"#, -32601, "Method not found", json!("a")),
        (br#"{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"s1","prompt":"hi"}}"#, -32602, "Invalid params", json!(9)),
        (br#"{"jsonrpc":"2.0","id":10,"method":"session/inject","params":{"sessionId":"s1","mode":"later","content":[]}}"#, -32602, "Invalid params", json!(10)),
        (br#"{"jsonrpc":"2.0","id":11,"method":"session/prompt","params":"x"}"#, -32600, "Invalid request", json!(11)),
        (br#"{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#, -32602, "Invalid params", json!(12)),
        (br#"{"jsonrpc":"2.0","id":13,"method":"session/inject","params":{"sessionId":"s1","mode":"queue","content":[]}}"#, -32602, "Invalid params", json!(13)),
        (br#"{"jsonrpc":"2.0","id":14,"method":"session/cancel","params":{"sessionId":"s1"}}"#, -32601, "Method not found", json!(14)),
        (br#"{"jsonrpc":"2.0","id":15,"method":"session/new","params":{"cwd":"relative/dir"}}"#, -32602, "Invalid params", json!(15)),
        (br#"{"jsonrpc":"2.0","id":16,"method":"session/list","params":{"cursor":"made-up"}}"#, -32602, "Invalid params", json!(16)),
        (br#"{"jsonrpc":"2.0","id":17,"method":"session/resume","params":{"sessionId":"s1","cwd":"/elsewhere"}}"#, -32602, "Invalid params", json!(17)),
        (br#"{"jsonrpc":"2.0","id":18,"method":"session/resume","params":{"sessionId":"s1","cwd":"/work","replayFrom":{"type":"message"}}}"#, -32602, "Invalid params", json!(18)),
    ];
    for (line, code, message, id) in cases {
        let out = answer(&mut a, line);
        assert_eq!(out.len(), 1, "{}: {out:?}", String::from_utf8_lossy(line));
        assert_eq!(error(&out[0]), (*code, *message, id), "{}", String::from_utf8_lossy(line));
    }
    // Invalid params name the offending member for a person.
    let out = answer(
        &mut a,
        br#"{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text"}]}}"#,
    );
    assert!(out[0]["error"]["data"]["detail"].as_str().unwrap().contains("text"), "{out:?}");
    let out = answer(&mut a, br#"{"jsonrpc":"2.0","id":13,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#);
    assert!(out[0]["error"]["data"]["detail"].as_str().unwrap().contains("prompt"), "empty content names the member: {out:?}");
    let after: Value = serde_json::from_str(&a.snapshot()).unwrap();
    assert_eq!(after, before, "bad input changed the state");
}

#[test]
fn notifications_and_stray_responses_are_ignored() {
    let mut a = agent();
    for line in [
        r#"{"jsonrpc":"2.0","method":"_x.dev/ping","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}"#,
        r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"wrong":1}}"#,
        r#"{"jsonrpc":"2.0","id":99,"result":{}}"#,
    ] {
        assert!(answer(&mut a, line.as_bytes()).is_empty(), "{line}");
    }
    assert!(a.ignored_lines() >= 2);
}

/// R-WIRE-5: a batch's entries are served in order, its answers come back as one array, an
/// invalid entry gets its own -32600 inside it, a batch of notifications gets nothing back, and
/// the connection carries on.
#[test]
fn a_batch_is_served_entry_by_entry_and_answered_as_one_array() {
    let mut a = agent();
    let out = answer(
        &mut a,
        br#"[{"jsonrpc":"2.0","id":1,"method":"session/status","params":{"sessionId":"s1"}}, 5, [1], {"jsonrpc":"2.0","method":"_n"}]"#,
    );
    assert_eq!(out.len(), 1, "{out:?}");
    let answers = out[0].as_array().expect("one array of answers");
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0]["result"]["status"], "open");
    for invalid in &answers[1..] {
        assert_eq!(error(invalid).0, -32600);
        assert!(invalid["id"].is_null());
    }
    assert!(
        answer(&mut a, br#"[{"jsonrpc":"2.0","method":"_n"},{"jsonrpc":"2.0","method":"_m"}]"#).is_empty(),
        "no reply to notifications"
    );
    let out = answer(&mut a, b"[]");
    assert_eq!(error(&out[0]).0, -32600, "an empty batch is one error, not an array");
    let out = answer(&mut a, b"[1, 2");
    assert_eq!(error(&out[0]).0, -32700, "an unfinished array is a parse error");
    let out = answer(&mut a, br#"{"jsonrpc":"2.0","id":2,"method":"session/status","params":{"sessionId":"s1"}}"#);
    assert_eq!(out[0]["result"]["status"], "open");
}

#[test]
fn the_client_connection_ignores_garbage_without_changing_state() {
    let mut c = client(1 << 20);
    let before = c.mirror(&SessionId("s1".into())).unwrap().snapshot();
    for line in [
        "{oops",
        "\u{0}",
        "[]",
        // R-WIRE-5: a batch is read entry by entry, and garbage entries are ignored one by one.
        "[1, [2], null]",
        "17",
        r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"user_message"}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s2","update":{"sessionUpdate":"state_update","state":"running"}}}"#,
    ] {
        c.receive_line(line);
        let events = c.take_events();
        assert!(events.iter().all(|e| matches!(e, Event::Ignored { .. })), "{line}: {events:?}");
    }
    c.receive_bytes(b"\xff\xfe{}\n");
    assert_eq!(c.mirror(&SessionId("s1".into())).unwrap().snapshot(), before);
    assert!(c.ignored_lines() >= 6);
    assert!(c.take_outgoing().is_empty());
}

#[test]
fn agent_requests_the_client_does_not_serve_are_answered_method_not_found() {
    let mut c = client(1 << 20);
    c.receive_line(r#"{"jsonrpc":"2.0","id":"x1","method":"fs/read_text_file","params":{}}"#);
    let out: Vec<Value> = c.take_outgoing().iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(out, [json!({"jsonrpc":"2.0","id":"x1","error":{"code":-32601,"message":"Method not found"}})]);
}

#[test]
fn oversized_lines_are_refused_before_parsing() {
    let inject = serde_json::from_value(json!({ "modes": ["queue"] })).unwrap();
    let policy = acp_inject_core::agent::Policy { max_line_bytes: 64, ..Default::default() };
    let mut a = Agent::new(AgentConfig { inject: Some(inject), policy, ..Default::default() }).unwrap();
    a.create_session(&SessionId("s1".into()), "/work").unwrap();
    a.attach(&"c1".into(), acp_inject_core::agent::ConnectionRole::Controller);
    // Not even valid JSON: refused for its size, so it is never parsed.
    let big = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,{}", "x".repeat(200));
    let out = answer(&mut a, big.as_bytes());
    assert_eq!(error(&out[0]), (-32600, "Invalid request", &Value::Null));
    assert!(out[0]["error"]["data"]["detail"].as_str().unwrap().contains("exceeds the limit of 64 bytes"));

    let mut c = client(64);
    c.receive_line(&big);
    c.receive_bytes(format!("{big}\n").as_bytes());
    assert_eq!(c.ignored_lines(), 2);
}

#[test]
fn deeply_nested_values_are_parse_errors_not_stack_overflows() {
    let mut a = agent();
    for depth in [1_000usize, 100_000] {
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\",\"params\":{{\"sessionId\":\"s1\",\"prompt\":{}{}}}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let out = answer(&mut a, line.as_bytes());
        assert_eq!(out.len(), 1);
        assert!(matches!(error(&out[0]).0, -32700 | -32602), "{depth}: {out:?}");
    }
    let mut c = client(1 << 24);
    let deep = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}}", "{\"a\":".repeat(100_000));
    c.receive_line(&deep);
    assert!(matches!(c.take_events()[..], [Event::Ignored { .. }]));
}

/// JSON-RPC leaves id reuse to the client; the core answers each request on its own, so a
/// reused id gets two answers.
#[test]
fn a_reused_request_id_is_answered_twice() {
    let mut a = agent();
    let p = br#"{"jsonrpc":"2.0","id":1,"method":"session/inject","params":{"sessionId":"s1","mode":"queue","content":[{"type":"text","text":"a"}]}}"#;
    let first = answer_all(&mut a, p);
    let second = answer_all(&mut a, p);
    assert_eq!(first[0]["id"], 1);
    assert_eq!(second[0]["id"], 1);
    assert_ne!(first[0]["result"]["messageId"], second[0]["result"]["messageId"]);
}

fn answer_all(a: &mut Agent, line: &[u8]) -> Vec<Value> {
    a.handle_bytes(&"c1".into(), line);
    a.drain()
        .unwrap()
        .into_iter()
        .filter_map(|o| match o {
            Output::Line { line, .. } if line.contains(r#""id""#) => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        })
        .collect()
}
