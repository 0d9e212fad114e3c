//! The open branches, the decode-only aliases and the buffered (tag-not-first) path of the
//! generated tagged unions and string enums.

use acp_inject_wire::jsonrpc;
use acp_inject_wire::*;
use serde_json::{json, Value};

fn decode<T: serde::de::DeserializeOwned>(value: &Value) -> T {
    jsonrpc::decode(&value.to_string()).unwrap_or_else(|e| panic!("{value} does not decode: {e}"))
}

fn encode<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("wire types encode")
}

fn update(update: Value) -> Value {
    json!({ "sessionId": "sess_1", "update": update })
}

#[test]
fn unknown_session_update_is_kept_whole() {
    let wire = update(json!({
        "sessionUpdate": "_x.dev/progress",
        "fraction": 0.25,
        "nested": { "files": [1, 2], "note": null }
    }));
    let n: UpdateSessionNotification = decode(&wire);
    let SessionUpdate::Other(unknown) = &n.update else { panic!("decoded as {:?}", n.update) };
    assert_eq!(unknown.tag(SessionUpdate::TAG), Some("_x.dev/progress"));
    assert_eq!(n.update.tag(), "_x.dev/progress");
    assert_eq!(unknown.get("nested"), Some(json!({ "files": [1, 2], "note": null })));
    assert_eq!(encode(&n), wire);
}

#[test]
fn unknown_state_is_kept_whole_inside_state_update() {
    let wire = update(json!({ "sessionUpdate": "state_update", "state": "_paused", "reason": "user" }));
    let n: UpdateSessionNotification = decode(&wire);
    let SessionUpdate::StateUpdate(state) = &n.update else { panic!("decoded as {:?}", n.update) };
    let StateUpdate::Other(unknown) = &**state else { panic!("decoded as {:?}", n.update) };
    assert_eq!(unknown.tag(StateUpdate::TAG), Some("_paused"));
    assert_eq!(unknown.get("reason"), Some(json!("user")));
    assert_eq!(encode(&n), wire);
}

#[test]
fn unknown_stop_reason_is_kept() {
    let wire = update(json!({ "sessionUpdate": "state_update", "state": "idle", "stopReason": "_budget_exhausted" }));
    let n: UpdateSessionNotification = decode(&wire);
    let SessionUpdate::StateUpdate(state) = &n.update else { panic!("decoded as {:?}", n.update) };
    let StateUpdate::Idle(idle) = &**state else { panic!("decoded as {:?}", n.update) };
    assert_eq!(idle.stop_reason, Some(StopReason::Other("_budget_exhausted".into())));
    assert_eq!(encode(&n), wire);
    // Known values still decode to their variant, and the two spellings never mix.
    assert_eq!("end_turn".parse::<StopReason>().unwrap(), StopReason::EndTurn);
    assert_eq!(StopReason::Other("end_turn_".into()).as_str(), "end_turn_");
}

#[test]
fn unknown_content_block_type_is_kept_whole() {
    let block = json!({ "type": "_x.dev/diagram", "source": "graph TD; A-->B", "annotations": { "priority": 1 } });
    let wire = update(json!({ "sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": block }));
    let n: UpdateSessionNotification = decode(&wire);
    let SessionUpdate::AgentMessageChunk(chunk) = &n.update else { panic!("decoded as {:?}", n.update) };
    let ContentBlock::Other(unknown) = &chunk.content else { panic!("decoded as {:?}", chunk.content) };
    assert_eq!(unknown.tag(ContentBlock::TAG), Some("_x.dev/diagram"));
    assert_eq!(encode(&n), wire);
}

#[test]
fn other_open_enums_keep_unknown_values() {
    assert_eq!(decode::<ToolKind>(&json!("other")), ToolKind::Other, "`other` is a known ToolKind");
    assert_eq!(decode::<ToolKind>(&json!("_browse")), ToolKind::Unknown("_browse".into()));
    assert_eq!(encode(&ToolKind::Unknown("_browse".into())), json!("_browse"));
    assert_eq!(decode::<ErrorReason>(&json!("_quota")), ErrorReason::Other("_quota".into()));
    // Upstream 2.4.0: an unknown status is kept (a client reads it as `saved`, C-STATUS-1).
    assert_eq!(decode::<SessionStatus>(&json!("_hibernating")), SessionStatus::Other("_hibernating".into()));
    assert_eq!(encode(&SessionStatus::Other("_hibernating".into())), json!("_hibernating"));
}

#[test]
fn closed_enums_reject_unknown_values() {
    let err = jsonrpc::decode::<InjectMode>("\"later\"").unwrap_err();
    assert!(err.to_string().contains("later"), "{err}");
    assert!(jsonrpc::decode::<SteerInStream>("\"pause\"").is_err());
}

#[test]
fn state_change_decodes_as_state_update_and_encodes_upstream_spelling() {
    let rfd = update(json!({ "sessionUpdate": "state_change", "state": "running" }));
    let upstream = update(json!({ "sessionUpdate": "state_update", "state": "running" }));
    let n: UpdateSessionNotification = decode(&rfd);
    assert!(matches!(&n.update, SessionUpdate::StateUpdate(s) if matches!(**s, StateUpdate::Running(_))), "decoded as {:?}", n.update);
    assert_eq!(n.update.tag(), "state_update");
    assert_eq!(encode(&n), upstream);
    assert_eq!(n, decode::<UpdateSessionNotification>(&upstream));
}

#[test]
fn steer_in_stream_decodes_as_alias_and_encodes_upstream_spelling() {
    let rfd = json!({ "modes": ["queue", "steer"], "steer_in_stream": ["finish"] });
    let upstream = json!({ "modes": ["queue", "steer"], "steerInStream": ["finish"] });
    let caps: InjectCapabilities = decode(&rfd);
    assert_eq!(caps.steer_in_stream, Some(vec![SteerInStream::Finish]));
    assert_eq!(encode(&caps), upstream);
    assert_eq!(caps, decode::<InjectCapabilities>(&upstream));
    // The alias satisfies the steer ⇒ steerInStream rule on the Rust side (spec/README.md).
    caps.check().expect("the alias counts");
}

#[test]
fn steer_without_steer_in_stream_fails_the_check_naming_the_member() {
    let caps: InjectCapabilities = decode(&json!({ "modes": ["queue", "steer"] }));
    let err = caps.check().unwrap_err();
    assert_eq!(err.path, "steerInStream");
    let queue_only: InjectCapabilities = decode(&json!({ "modes": ["queue"] }));
    queue_only.check().expect("queue alone needs no steerInStream");
}

#[test]
fn min_items_is_enforced_on_decode() {
    let err = jsonrpc::decode::<PromptRequest>(r#"{"sessionId": "s1", "prompt": []}"#).unwrap_err();
    assert_eq!(err.path, "prompt", "{err}");
    let err = jsonrpc::decode::<RequestPermissionRequest>(r#"{"sessionId": "s1", "title": "t", "options": []}"#).unwrap_err();
    assert_eq!(err.path, "options", "{err}");
}

/// On a tolerant member `minItems` is validation only: ACP PR #2043 keeps the inject lists
/// open, so a list whose values this version does not know decodes to what it knows, possibly
/// nothing, and `steerInStream` may be absent or `null`.
#[test]
fn the_inject_lists_are_tolerant() {
    let caps = jsonrpc::decode::<InjectCapabilities>(r#"{"modes": ["_acme_later"], "steerInStream": []}"#).unwrap();
    assert!(caps.modes.is_empty());
    assert_eq!(caps.steer_in_stream, Some(vec![]));
    let caps = jsonrpc::decode::<InjectCapabilities>(r#"{"modes": ["queue"], "steerInStream": null}"#).unwrap();
    assert_eq!((caps.modes, caps.steer_in_stream), (vec![InjectMode::Queue], None));
    let caps = jsonrpc::decode::<InjectCapabilities>(r#"{"modes": ["queue"], "pending": {}}"#).unwrap();
    assert!(!caps.pending.unwrap().replace, "an omitted replace is false");
}

#[test]
fn optional_empty_array_is_not_conflated_with_absent() {
    let with_empty = json!({ "cwd": "/p", "mcpServers": [] });
    let without = json!({ "cwd": "/p" });
    assert_eq!(encode(&decode::<NewSessionRequest>(&with_empty)), with_empty);
    assert_eq!(encode(&decode::<NewSessionRequest>(&without)), without);
}

/// Members before the tag are buffered and replayed: same value as the tag-first order.
#[test]
fn tag_after_other_members_still_decodes() {
    let late = update(json!({
        "messageId": "m1",
        "content": [{ "text": "hi", "type": "text" }],
        "sessionUpdate": "user_message"
    }));
    let n: UpdateSessionNotification = decode(&late);
    let SessionUpdate::UserMessage(m) = &n.update else { panic!("decoded as {:?}", n.update) };
    assert_eq!(m.message_id.0, "m1");
    let Patch::Value(content) = &m.content else { panic!("content is {:?}", m.content) };
    assert!(matches!(&content[..], [ContentBlock::Text(t)] if t.text == "hi"));
    assert_eq!(encode(&n), late, "re-encodes to the same JSON value (tag first)");

    // The nested union: `state` before `sessionUpdate`, and both after a body member.
    let nested = update(json!({ "stopReason": "cancelled", "state": "idle", "sessionUpdate": "state_update" }));
    let n: UpdateSessionNotification = decode(&nested);
    let SessionUpdate::StateUpdate(state) = &n.update else { panic!("decoded as {:?}", n.update) };
    let StateUpdate::Idle(idle) = &**state else { panic!("decoded as {:?}", n.update) };
    assert_eq!(idle.stop_reason, Some(StopReason::Cancelled));
    assert_eq!(encode(&n), nested);

    // An unknown tag met late keeps the buffered members too.
    let unknown = update(json!({ "a": 1, "b": [true], "sessionUpdate": "_late" }));
    let n: UpdateSessionNotification = decode(&unknown);
    let SessionUpdate::Other(u) = &n.update else { panic!("decoded as {:?}", n.update) };
    assert_eq!(u.object().len(), 3);
    // The tag first, then the members in the order they came, each as written.
    assert_eq!(u.json(), r#"{"sessionUpdate":"_late","a":1,"b":[true]}"#);
    assert_eq!(encode(&n), unknown);
}

/// An unknown member is kept as its text: spacing and order inside values survive, its own
/// `Serialize` writes it unchanged, and it parses when asked.
#[test]
fn an_unknown_member_keeps_its_text() {
    let line = r#"{"sessionUpdate":"_x.dev/progress","nested": {"z": 1, "a": [1.50, "é"]},"n":1e3}"#;
    let update: SessionUpdate = serde_json::from_str(line).unwrap();
    let SessionUpdate::Other(u) = &update else { panic!("decoded as {update:?}") };
    assert_eq!(u.json(), r#"{"sessionUpdate":"_x.dev/progress","nested":{"z": 1, "a": [1.50, "é"]},"n":1e3}"#);
    assert_eq!(serde_json::to_string(&update).unwrap(), u.json());
    assert_eq!(u.tag(SessionUpdate::TAG), Some("_x.dev/progress"));
    assert_eq!(u.get("n"), Some(json!(1000.0)));
    // Decoded from a `Value` too (a translation step may hold the update as one).
    let from_value: SessionUpdate = serde_json::from_value(serde_json::from_str(line).unwrap()).unwrap();
    assert_eq!(from_value, update, "equal members, whatever their spacing");
    assert!(Unknown::from_json("[1]").is_err() && Unknown::from_json("{").is_err());
    // Members met before the tag keep their text too (they are held as text, not as trees).
    let late: SessionUpdate = serde_json::from_str(r#"{"nested": {"z": 1, "a": [1.50]},"sessionUpdate":"_late","n":1e3}"#).unwrap();
    let SessionUpdate::Other(u) = &late else { panic!("decoded as {late:?}") };
    assert_eq!(u.json(), r#"{"sessionUpdate":"_late","nested":{"z": 1, "a": [1.50]},"n":1e3}"#);
}

#[test]
fn buffered_members_are_still_type_checked() {
    let bad = update(json!({ "messageId": 7, "sessionUpdate": "user_message" }));
    let err = jsonrpc::decode::<UpdateSessionNotification>(&bad.to_string()).unwrap_err();
    assert_eq!(err.path, "update");
    assert!(err.message.contains("member `messageId`") && err.message.contains("expected a string"), "{err}");
}

#[test]
fn a_missing_tag_names_the_tag() {
    let err = jsonrpc::decode::<ContentBlock>(r#"{"text": "hi"}"#).unwrap_err();
    assert!(err.to_string().contains("`type`"), "{err}");
}

#[test]
fn numbers_in_pass_through_values_survive_decode_and_encode_exactly() {
    // Found by the wire_decode fuzz target: without serde_json's `float_roundtrip` this
    // number came back one ulp off after a decode, encode and decode.
    let line = r#"{"sessionId":"sess_1","update":{"sessionUpdate":"some_future_update","usage":{"inputTokens":1.1111111111111112e+139,"totalTokens":-0.0,"x":0.30000000000000004}}}"#;
    let once: UpdateSessionNotification = jsonrpc::decode(line).expect("decodes");
    let text = serde_json::to_string(&once).expect("encodes");
    let twice: UpdateSessionNotification = jsonrpc::decode(&text).expect("decodes again");
    assert_eq!(once, twice);
    assert!(text.contains("1.1111111111111112e139") || text.contains("1.1111111111111112e+139"), "{text}");
}
