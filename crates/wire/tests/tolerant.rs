//! Tolerant members (`x-deserialize-default-on-error`, `x-deserialize-skip-invalid-items`)
//! decode the same whichever way their value reaches them: lent as JSON text by serde_json
//! reading a line (the fast path), or as a tree (decoding from a `Value`, or members buffered
//! before a union's tag).

use acp_inject_wire::__de::{collect_tolerated, Held};
use acp_inject_wire::SessionUpdate;
use serde_json::Value;

/// Updates with members a tolerant decoder must drop, members it must keep, and edge shapes.
const UPDATES: &[&str] = &[
    r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":42,"kind":"execute","content":[{"type":"content"},{"type":"content","content":{"type":"text","text":"ok"}},7]}"#,
    r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","content":null,"locations":"nowhere"}"#,
    r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","content":{"not":"an array"},"rawInput":{"a":[1,2.5,"é\n"]}}"#,
    r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","content":[{"type":"content","content":{"type":"text","text":"a","text":"b"}}]}"#,
    r#"{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","usage":{"totalTokens":"many"}}"#,
    r#"{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","usage":{"totalTokens":12,"inputTokens":5,"outputTokens":7}}"#,
    r#"{"sessionUpdate":"user_message","messageId":"m_1","content":[{"type":"text","text":"go"},{"type":"image","data":17},{"type":"_x.dev/widget","size":3}]}"#,
    r#"{"sessionUpdate":"state_update","state":"running","_meta":7}"#,
    // Inside an untagged union (serde buffers the resource first): `mimeType` and `_meta`
    // are held as trees there.
    r#"{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"resource","resource":{"uri":"file:///a","text":"x","mimeType":5,"_meta":7}}}"#,
    // Scalar members (read in place) given values of every other kind, free-form `_meta`
    // given non-objects, and members of any value.
    r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":{"a":[1,{"b":null}]},"name":[1,"x"],"kind":1.5,"status":true,"rawInput":[1,{"a":"é"}],"rawOutput":null,"_meta":"m"}"#,
    r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"T\u00e9\"q","name":null,"kind":"_x.dev/kind","status":18446744073709551615,"_meta":[{"a":1}]}"#,
    r#"{"sessionUpdate":"session_info_update","title":-3,"updatedAt":null,"_meta":{"a":{"b":[1,2]},"a":2}}"#,
    r#"{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":"x","currency":"USD"},"_meta":null}"#,
    r#"{"sessionUpdate":"state_update","state":"idle","stopReason":{"x":1},"usage":{"totalTokens":1,"inputTokens":1,"outputTokens":1,"thoughtTokens":-1}}"#,
    // The tag after the members: they are buffered as a tree before the variant decodes.
    r#"{"toolCallId":"t1","status":42,"content":[{"type":"content"},{"type":"content","content":{"type":"text","text":"ok"}}],"sessionUpdate":"tool_call_update"}"#,
];

fn from_text(line: &str) -> (Result<Value, String>, Vec<String>) {
    let (r, t) = collect_tolerated(|| serde_json::from_str::<SessionUpdate>(line));
    (r.map(|u| serde_json::to_value(u).unwrap()).map_err(|e| e.to_string()), t)
}

fn from_tree(line: &str) -> (Result<Value, String>, Vec<String>) {
    let value: Value = serde_json::from_str(line).unwrap();
    let (r, t) = collect_tolerated(|| serde_json::from_value::<SessionUpdate>(value));
    (r.map(|u| serde_json::to_value(u).unwrap()).map_err(|e| e.to_string()), t)
}

#[test]
fn text_and_tree_decode_to_the_same_update_and_drop_the_same_members() {
    for line in UPDATES {
        let (text, mut text_dropped) = from_text(line);
        let (tree, mut tree_dropped) = from_tree(line);
        // A tree holds its members in key order, the text in the order sent.
        text_dropped.sort();
        tree_dropped.sort();
        assert!(text.is_ok(), "{line}: {text:?}");
        assert_eq!(text, tree, "{line}");
        assert_eq!(text_dropped, tree_dropped, "{line}");
    }
}

#[test]
fn what_is_dropped_is_named() {
    let (update, dropped) = from_text(UPDATES[0]);
    let update = update.unwrap();
    assert_eq!(update["content"].as_array().map(Vec::len), Some(1), "{update}");
    assert!(update.get("status").is_none(), "{update}");
    assert_eq!(dropped.len(), 3, "{dropped:?}");
    assert!(dropped.iter().any(|d| d.starts_with("ToolCallUpdate.status")), "{dropped:?}");
    assert!(dropped.iter().any(|d| d.starts_with("ToolCallUpdate.content: item 0 dropped")), "{dropped:?}");
    assert!(dropped.iter().any(|d| d.starts_with("ToolCallUpdate.content: item 2 dropped")), "{dropped:?}");
    // A repeated member keeps its last value, as in a tree.
    let (update, dropped) = from_text(UPDATES[3]);
    assert_eq!(update.unwrap()["content"][0]["content"]["text"], "b");
    assert!(dropped.is_empty(), "{dropped:?}");
}

#[test]
fn malformed_json_in_a_tolerant_member_still_fails_the_message() {
    for line in [
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","content":[{"type":"content",}]}"#,
        r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":tru}"#,
        r#"{"sessionUpdate":"state_update","state":"idle","usage":{"totalTokens":1"#,
    ] {
        assert!(from_text(line).0.is_err(), "{line}");
    }
}

#[test]
fn scalar_members_read_in_place_keep_or_drop_what_they_did_when_held() {
    // title: an object, name: an array, kind: a number, status: a boolean, _meta: a string.
    let (update, dropped) = from_text(UPDATES[9]);
    let update = update.unwrap();
    for member in ["title", "name", "kind", "status", "_meta"] {
        assert!(update.get(member).is_none(), "{member}: {update}");
        let owner = format!("ToolCallUpdate.{member}: invalid type");
        assert!(dropped.iter().any(|d| d.starts_with(&owner)), "{member}: {dropped:?}");
    }
    assert_eq!(update["rawInput"], serde_json::json!([1, {"a": "é"}]));
    assert_eq!(dropped.len(), 5, "{dropped:?}");
    // Escapes, an open enum's unknown value, a number a status cannot be.
    let (update, dropped) = from_text(UPDATES[10]);
    let update = update.unwrap();
    assert_eq!(update["title"], "Té\"q");
    assert_eq!(update["kind"], "_x.dev/kind");
    assert!(update.get("status").is_none() && update.get("_meta").is_none(), "{update}");
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    // A repeated member of a free-form object keeps its last value.
    let (update, _) = from_text(UPDATES[11]);
    assert_eq!(update.unwrap()["_meta"], serde_json::json!({"a": 2}));
}

#[test]
fn what_items_of_a_malformed_array_dropped_is_not_reported() {
    // Item 0 is dropped before the array turns out to be malformed: the message fails, and
    // nothing is reported as tolerated, as when the array was checked whole first.
    let line = r#"{"sessionUpdate":"agent_message","messageId":"m","content":[1,{"type":"text","text":"a"},]}"#;
    let (update, dropped) = from_text(line);
    assert!(update.is_err(), "{update:?}");
    assert!(dropped.is_empty(), "{dropped:?}");
}

#[test]
fn serde_json_lends_the_text_and_a_tree_is_held_as_a_tree() {
    // The fast path is taken: were serde_json to stop lending text under this name, decoding
    // would stay correct (through a tree) but slower, and this test says so.
    match serde_json::from_str::<Held>(r#" [1, {"a": "b"}] "#) {
        Ok(Held::Text(text)) => assert_eq!(text, r#"[1, {"a": "b"}]"#),
        Ok(Held::Value(v)) => panic!("serde_json no longer lends raw text: held {v}"),
        Err(e) => panic!("{e}"),
    }
    let tree: Value = serde_json::json!({"a": [1, 2]});
    match <Held as serde::Deserialize>::deserialize(&tree) {
        Ok(Held::Text(text)) => assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), tree),
        Ok(Held::Value(v)) => assert_eq!(v, tree),
        Err(e) => panic!("{e}"),
    }
}
