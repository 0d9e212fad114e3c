//! An agent on the SQLite store, dropped and reopened from the same file, continues where it
//! left off: live sessions with their pending injects in order, turn state, id counters,
//! remembered ids, the session list and the replayable history, all through JSON-RPC lines.

mod common;

use std::num::NonZeroU32;

use acp_inject_core::agent::{Activity, BreakPoint, RuntimeEvent, Turn, DEFAULT_REMEMBER_IDS};
use acp_inject_core::wire::{InjectMode, StopReason};
use acp_inject_store::open_agent;
use common::*;
use serde_json::json;

#[test]
fn a_reopened_agent_continues_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let cfg = || config(DEFAULT_REMEMBER_IDS);

    // ----- first process -----
    {
        let mut a = open_agent(&path, cfg()).unwrap();
        let new = call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
        assert_eq!(answer(&new)["result"]["sessionId"], "sess_1");
        let new = call(&mut a, "c1", 2, "session/new", json!({ "cwd": "/other" }));
        assert_eq!(answer(&new)["result"]["sessionId"], "sess_2");
        let prompt = call(&mut a, "c1", 3, "session/prompt", json!({ "sessionId": "sess_1", "prompt": text("hello") }));
        assert_eq!(answer(&prompt)["result"]["messageId"], "msg_1");
        event(&mut a, "sess_1", chunk("agent_1", "hi "));
        event(&mut a, "sess_1", chunk("agent_1", "there"));
        let inject = |a: &mut _, id, mode: &str, t: &str| {
            let out = call(a, "c1", id, "session/inject", json!({ "sessionId": "sess_1", "mode": mode, "content": text(t) }));
            answer(&out)["result"]["messageId"].as_str().unwrap().to_owned()
        };
        assert_eq!(inject(&mut a, 4, "queue", "q1"), "msg_2");
        assert_eq!(inject(&mut a, 5, "steer", "s1"), "msg_3");
        assert_eq!(inject(&mut a, 6, "queue", "q2"), "msg_4");
        assert_eq!(inject(&mut a, 7, "steer", "s2"), "msg_5");
        assert_eq!(inject(&mut a, 8, "queue", "q3"), "msg_6");
        let out = call(&mut a, "c1", 9, "session/replace_inject", json!({ "sessionId": "sess_1", "messageId": "msg_4", "content": text("q2 replaced") }));
        assert_eq!(reason(answer(&out)), None, "{out:?}");
        let out = call(&mut a, "c1", 10, "session/revoke_inject", json!({ "sessionId": "sess_1", "messageId": "msg_6" }));
        assert_eq!(answer(&out)["result"], json!({}));
        let out = event(&mut a, "sess_1", RuntimeEvent::BreakPoint(BreakPoint::ToolResult));
        assert_eq!(handed(&out), [("msg_3".into(), "s1".into()), ("msg_5".into(), "s2".into())]);
        assert_eq!(inject(&mut a, 11, "steer", "s3"), "msg_7");
        event(&mut a, "sess_1", RuntimeEvent::PermissionRequested);
        let out = call(&mut a, "c1", 12, "session/close", json!({ "sessionId": "sess_2" }));
        assert_eq!(reason(answer(&out)), None, "{out:?}");
    } // dropped: the process is gone, the file stays

    // ----- second process -----
    {
        let mut b = open_agent(&path, cfg()).unwrap();
        assert_eq!(b.session_ids(), ["sess_1"], "closed sessions are not live");
        assert!(b.attached("sess_1").is_empty(), "a restarted process has no connections");
        let pending: Vec<(String, InjectMode, String)> = b
            .pending("sess_1")
            .into_iter()
            .map(|p| (p.message_id.0, p.mode, serde_json::to_value(&p.content).unwrap()[0]["text"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            pending,
            [
                ("msg_7".into(), InjectMode::Steer, "s3".into()),
                ("msg_2".into(), InjectMode::Queue, "q1".into()),
                ("msg_4".into(), InjectMode::Queue, "q2 replaced".into()),
            ]
        );
        assert_eq!(
            b.turn("sess_1"),
            Some(&Turn::RequiresAction { activity: Activity::default(), open: NonZeroU32::MIN, paused: false })
        );

        // Remembered ids: a tombstone revokes idempotently, delivered ids answer already_delivered.
        let revoke = |b: &mut _, id: u64, mid: &str| {
            let out = call(b, "c2", id, "session/revoke_inject", json!({ "sessionId": "sess_1", "messageId": mid }));
            answer(&out).clone()
        };
        assert_eq!(revoke(&mut b, 1, "msg_6")["result"], json!({}));
        assert_eq!(reason(&revoke(&mut b, 2, "msg_3")), Some("already_delivered"));
        assert_eq!(reason(&revoke(&mut b, 3, "msg_1")), Some("already_delivered"), "a delivered prompt is remembered");
        let out = call(&mut b, "c2", 4, "session/replace_inject", json!({ "sessionId": "sess_1", "messageId": "msg_6", "content": text("x") }));
        assert_eq!(reason(answer(&out)), Some("unknown_message_id"));

        // The counters: the next id is new.
        let out = call(&mut b, "c2", 5, "session/inject", json!({ "sessionId": "sess_1", "mode": "queue", "content": text("q4") }));
        assert_eq!(answer(&out)["result"]["messageId"], "msg_8");

        // session/list reads the store: newest first, closed included, cwd filter.
        let out = call(&mut b, "c2", 6, "session/list", json!({}));
        let ids: Vec<&str> = answer(&out)["result"]["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
        assert_eq!(ids, ["sess_2", "sess_1"]);
        let out = call(&mut b, "c2", 7, "session/list", json!({ "cwd": "/other" }));
        assert_eq!(answer(&out)["result"]["sessions"], json!([{ "sessionId": "sess_2", "cwd": "/other" }]));

        // session/resume replays the history from the store, then the turn's state, then answers.
        let out = call(&mut b, "c2", 8, "session/resume", json!({ "sessionId": "sess_1", "cwd": "/work", "replayFrom": { "type": "start" } }));
        let at = out.iter().position(|l| l.get("id").is_some()).unwrap();
        assert_eq!(out[at]["result"], json!({}));
        let replayed = updates(&out[..at]);
        let expected = [
            ("user_message", "msg_1"),
            ("agent_message", "agent_1"),
            ("user_message", "msg_3"),
            ("user_message", "msg_5"),
            ("state_update", "requires_action"),
        ];
        assert_eq!(replayed, expected.map(|(k, d)| (k.to_owned(), d.to_owned())), "{out:?}");
        let folded = json!([{ "type": "text", "text": "hi " }, { "type": "text", "text": "there" }]);
        assert_eq!(out[1]["params"]["update"]["content"], folded, "chunks are folded into one message");
        assert_eq!(b.attached("sess_1"), ["c2"]);

        // The turn goes on: at its end every steer, then every queued inject, in order, with
        // the replaced content.
        event(&mut b, "sess_1", RuntimeEvent::PermissionResolved);
        let out = event(&mut b, "sess_1", RuntimeEvent::TurnEnded { stop_reason: StopReason::EndTurn, usage: None });
        let next = [("msg_7", "s3"), ("msg_2", "q1"), ("msg_4", "q2 replaced"), ("msg_8", "q4")];
        assert_eq!(handed(&out), next.map(|(i, t)| (i.to_owned(), t.to_owned())));

        // A closed session resumes from the store and is live again.
        let out = call(&mut b, "c2", 9, "session/resume", json!({ "sessionId": "sess_2", "cwd": "/other" }));
        assert_eq!(answer(&out)["result"], json!({}));
    }

    // ----- third process -----
    let mut c = open_agent(&path, cfg()).unwrap();
    assert_eq!(c.session_ids(), ["sess_1", "sess_2"]);
    assert!(c.pending("sess_1").is_empty());
    assert_eq!(c.turn("sess_1"), Some(&Turn::started()));
    let out = call(&mut c, "c3", 1, "session/revoke_inject", json!({ "sessionId": "sess_1", "messageId": "msg_2" }));
    assert_eq!(reason(answer(&out)), Some("already_delivered"));
    let out = call(&mut c, "c3", 2, "session/inject", json!({ "sessionId": "sess_1", "mode": "steer", "content": text("s4") }));
    assert_eq!(answer(&out)["result"]["messageId"], "msg_9");
    let out = call(&mut c, "c3", 3, "session/new", json!({ "cwd": "/work" }));
    assert_eq!(answer(&out)["result"]["sessionId"], "sess_3", "session ids are not reused either");
    let history = c.history("sess_1").unwrap();
    assert_eq!(history.len(), 2 + 3 + 4, "two chunks, three user messages, four more delivered");
}
