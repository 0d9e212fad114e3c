//! SIGKILL at random points while a child process accepts injects: every inject whose accept
//! answer left the child is in the store afterwards, once.
//!
//! The child is this test binary run again with `ACP_STORE_KILL_CHILD` set; it prints each
//! accept answer's message id as it releases it. Not the crash campaign (that drives the
//! reference agent); a check that answers never run ahead of commits.

mod common;

use acp_inject_core::wire::SessionId;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use acp_inject_core::agent::{RuntimeEvent, DEFAULT_REMEMBER_IDS};
use acp_inject_store::open_agent;
use common::*;
use serde_json::json;

const CHILD: &str = "ACP_STORE_KILL_CHILD";
const TEST: &str = "killed_at_random_points_loses_no_answered_inject";

/// The child: open the store, make sure `sess_1` is in a turn, then accept injects forever in
/// batches of 1–4, printing each answered id after the drain that released it.
fn child(path: &str, seed: u64) -> ! {
    let mut a = open_agent(path, config(DEFAULT_REMEMBER_IDS)).expect("open");
    initialize(&mut a, "c1");
    if a.session_ids().is_empty() {
        call(&mut a, "c1", 1, "session/new", json!({ "cwd": "/work" }));
        call(&mut a, "c1", 2, "session/prompt", json!({ "sessionId": "sess_1", "prompt": text("go") }));
    }
    let mut out = std::io::stdout().lock();
    let mut n = seed;
    for req in 10u64.. {
        n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        for k in 0..1 + (n >> 60) % 4 {
            let params = json!({ "sessionId": "sess_1", "mode": if k % 2 == 0 { "queue" } else { "steer" }, "content": text("x") });
            a.handle_line(&"c1".into(), &request(req * 10 + k, "session/inject", params));
        }
        if (n >> 40).is_multiple_of(7) {
            // Some history too, so the kill also lands in other writes.
            a.runtime_event(&SessionId("sess_1".into()), chunk("agent_1", "y")).expect("chunk");
        }
        for line in lines_to("c1", a.drain().expect("drain")) {
            if let Some(id) = line["result"]["messageId"].as_str() {
                writeln!(out, "accepted {id}").and_then(|()| out.flush()).expect("stdout");
            }
        }
    }
    unreachable!("the loop ends by SIGKILL")
}

#[test]
fn killed_at_random_points_loses_no_answered_inject() {
    if let (Ok(path), Ok(seed)) = (std::env::var(CHILD), std::env::var("ACP_STORE_KILL_SEED")) {
        child(&path, seed.parse().unwrap_or(1));
    }
    let seed = std::env::var("ACP_STORE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64));
    println!("kill test seed {seed} (ACP_STORE_SEED={seed} replays the kill points)");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.sqlite3");
    let mut answered: HashSet<String> = HashSet::new();
    let mut n = seed;
    for round in 0..6 {
        n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let kill_after = 1 + (n >> 33) % 120;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(CHILD, &path)
            .env("ACP_STORE_KILL_SEED", (n ^ round).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        for line in lines.by_ref() {
            if let Some(id) = line.unwrap().strip_prefix("accepted ") {
                assert!(answered.insert(id.to_owned()), "round {round}: id {id} answered twice (seed {seed})");
                seen += 1;
                if seen == kill_after {
                    child.kill().unwrap(); // SIGKILL
                    break;
                }
            }
        }
        // Answers printed before the kill landed still count.
        for line in lines {
            if let Some(id) = line.unwrap().strip_prefix("accepted ") {
                assert!(answered.insert(id.to_owned()), "round {round}: id {id} answered twice (seed {seed})");
            }
        }
        child.wait().unwrap();

        let mut a = open_agent(&path, config(DEFAULT_REMEMBER_IDS)).unwrap();
        let pending: Vec<String> = a.pending(&SessionId("sess_1".into())).into_iter().map(|p| p.message_id.0).collect();
        let stored: HashSet<String> = pending.iter().cloned().collect();
        assert_eq!(stored.len(), pending.len(), "an id is pending twice (seed {seed})");
        let lost: Vec<&String> = answered.difference(&stored).collect();
        assert!(lost.is_empty(), "round {round}: answered but not stored: {lost:?} (seed {seed})");
        // The store still works after the kill.
        a.runtime_event(&SessionId("sess_1".into()), RuntimeEvent::StreamStarted).unwrap();
        a.drain().unwrap();
    }
    assert!(answered.len() >= 6, "the children answered too little to test anything");
}
