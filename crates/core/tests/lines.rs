//! The JSON line endpoints answer malformed and unknown input with the right JSON-RPC error
//! line (or ignore it, for notifications and stray responses) and change no state.

use acp_inject_core::agent::{Agent, AgentConfig, Output, Recipient};
use acp_inject_core::client::ClientMirror;
use serde_json::{json, Value};

fn agent() -> Agent {
    let inject = serde_json::from_value(json!({ "modes": ["queue", "steer"], "steerInStream": ["finish"] })).unwrap();
    let mut a = Agent::new(AgentConfig { inject: Some(inject), policy: Default::default(), info: Default::default() });
    a.create_session("s1");
    a.attach("c1", acp_inject_core::agent::Role::Controller);
    a
}

/// Feeds one line; returns the lines sent back to `c1`.
fn answer(a: &mut Agent, line: &[u8]) -> Vec<Value> {
    a.handle_bytes("c1", line);
    a.drain()
        .into_iter()
        .map(|o| match o {
            Output::Line { to: Recipient::One(c), line } if c == "c1" => serde_json::from_str(&line).unwrap(),
            other => panic!("unexpected output {other:?}"),
        })
        .collect()
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
    ];
    for (line, code, message, id) in cases {
        let out = answer(&mut a, line);
        assert_eq!(out.len(), 1, "{}: {out:?}", String::from_utf8_lossy(line));
        assert_eq!(error(&out[0]), (*code, *message, id), "{}", String::from_utf8_lossy(line));
    }
    // Invalid params name the offending member for a person.
    let out = answer(&mut a, br#"{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text"}]}}"#);
    assert!(out[0]["error"]["data"]["detail"].as_str().unwrap().contains("text"), "{out:?}");
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
    assert!(a.ignored_notifications >= 2);
}

#[test]
fn batches_answer_each_request_and_report_bad_elements() {
    let mut a = agent();
    let out = answer(
        &mut a,
        br#"[{"jsonrpc":"2.0","id":1,"method":"session/status","params":{"sessionId":"s1"}}, 5, [1], {"jsonrpc":"2.0","method":"_n"}]"#,
    );
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(out[0]["result"]["status"], "live");
    assert_eq!(error(&out[1]).0, -32600);
    assert_eq!(error(&out[2]).0, -32600);
}

#[test]
fn the_client_mirror_ignores_garbage_without_changing_state() {
    let mut m = ClientMirror::new("s1", None);
    let before = m.snapshot_json();
    for line in ["{oops", "\u{0}", "[]", "17", r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
                 r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"user_message"}}}"#] {
        assert!(m.receive(line).is_none(), "{line}");
    }
    assert_eq!(m.snapshot_json(), before);
    assert!(m.ignored_lines >= 5);
}

#[test]
fn oversized_lines_are_refused_before_parsing() {
    let inject = serde_json::from_value(json!({ "modes": ["queue"] })).unwrap();
    let mut policy = acp_inject_core::agent::Policy::default();
    policy.max_line_bytes = 64;
    let mut a = Agent::new(AgentConfig { inject: Some(inject), policy, info: Default::default() });
    a.create_session("s1");
    a.attach("c1", acp_inject_core::agent::Role::Controller);
    // Not even valid JSON: refused for its size, so it is never parsed.
    let big = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,{}", "x".repeat(200));
    let out = answer(&mut a, big.as_bytes());
    assert_eq!(error(&out[0]), (-32600, "Invalid request", &Value::Null));
    assert!(out[0]["error"]["data"]["detail"].as_str().unwrap().contains("exceeds the limit of 64 bytes"));

    let mut m = ClientMirror::new("s1", None);
    m.max_line_bytes = 64;
    assert!(m.receive(&big).is_none());
    assert_eq!(m.ignored_lines, 1);
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
    let mut m = ClientMirror::new("s1", None);
    let deep = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}}", "{\"a\":".repeat(100_000));
    assert!(m.receive(&deep).is_none());
}

/// JSON-RPC leaves id reuse to the client; the core answers each request on its own, so a
/// reused id gets two answers (the second prompt, arriving while a turn runs, is queued).
#[test]
fn a_reused_request_id_is_answered_twice() {
    let mut a = agent();
    let p = br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"a"}]}}"#;
    let first = answer_all(&mut a, p);
    let second = answer_all(&mut a, p);
    assert_eq!(first[0]["id"], 1);
    assert_eq!(second[0]["id"], 1);
    assert_ne!(first[0]["result"]["messageId"], second[0]["result"]["messageId"]);
}

fn answer_all(a: &mut Agent, line: &[u8]) -> Vec<Value> {
    a.handle_bytes("c1", line);
    a.drain()
        .into_iter()
        .filter_map(|o| match o {
            Output::Line { to: Recipient::One(_), line } => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        })
        .collect()
}
