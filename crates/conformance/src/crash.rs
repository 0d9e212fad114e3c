//! The crash campaign: an agent on its durable store under scripted client load, killed with
//! SIGKILL at random (seeded) points and restarted, again and again; then everything the client
//! saw is checked against what the agent finally holds.
//!
//! Each round starts the agent (`--store PATH --delay-ms MS`), resumes every session, pipelines
//! a random burst of prompts, queue and steer injects, revokes, replaces and cancels across the
//! sessions, waits a random few milliseconds and kills the process. A last process runs until
//! nothing more happens (the turns the crashes interrupted end, and what was pending is
//! delivered), and a fresh one replays every session from the start. From the client's own log:
//!
//! - **lost**: a prompt or inject whose accept answer the client saw is missing from the final
//!   history, though no revoke of it was answered `{}` (or sent without an answer);
//! - **duplicated**: a `user_message` id twice in a session's history, or delivered live twice;
//! - **stale**: a delivered message whose content is not the last replace the client saw
//!   succeed (or a replace whose answer it never saw), or one delivered after a revoke the
//!   client saw succeed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::peer::{req, text, Agent, Rng};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The agent's program and arguments; it must accept `--store PATH` and `--delay-ms MS`.
    pub command: Vec<String>,
    /// Where the store file goes.
    pub dir: PathBuf,
    /// How many processes to kill.
    pub kills: u32,
    /// The seed of every random choice (print it: a run reproduces from it).
    pub seed: u64,
    /// Sessions under load at once.
    pub sessions: usize,
    /// The agent's `--delay-ms`.
    pub delay_ms: u64,
}

/// The outcome, with the evidence for every failure.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// Processes killed.
    pub kills: u32,
    /// Prompts and injects whose accept answer the client saw.
    pub accepted: usize,
    /// Revokes the client saw answered `{}`.
    pub revoked: usize,
    /// Replaces the client saw answered with success.
    pub replaced: usize,
    /// Deliveries in the final histories.
    pub delivered: usize,
    /// Accepted messages missing from the final history.
    pub lost: Vec<String>,
    /// Messages delivered twice.
    pub duplicated: Vec<String>,
    /// Messages delivered with superseded content, or after a successful revoke.
    pub stale: Vec<String>,
}

impl Report {
    /// No message lost, duplicated or stale.
    pub fn ok(&self) -> bool {
        self.lost.is_empty() && self.duplicated.is_empty() && self.stale.is_empty()
    }
}

/// What the client knows of an answer.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// Sent, but the process died before the answer reached the client.
    Unknown,
    Ok,
    Refused(String),
}

/// One accepted prompt or inject, as the client knows it.
#[derive(Debug, Clone)]
struct Accepted {
    content: String,
    /// Replaces in the order they were sent: new content and answer.
    replaces: Vec<(String, Answer)>,
    revokes: Vec<Answer>,
}

impl Accepted {
    /// The contents its delivery may carry: the last successful replace (else the original),
    /// or any replace sent after it whose answer is unknown.
    fn allowed_contents(&self) -> BTreeSet<&str> {
        let last_ok = self.replaces.iter().rposition(|(_, a)| *a == Answer::Ok);
        let mut allowed = BTreeSet::new();
        allowed.insert(last_ok.map_or(self.content.as_str(), |i| self.replaces[i].0.as_str()));
        let after = last_ok.map_or(0, |i| i + 1);
        allowed.extend(self.replaces[after..].iter().filter(|(_, a)| *a == Answer::Unknown).map(|(c, _)| c.as_str()));
        allowed
    }

    fn revoked(&self) -> bool {
        self.revokes.contains(&Answer::Ok)
    }

    /// Whether it may be absent from the history: revoked, or a revoke of it was never answered.
    fn may_be_absent(&self) -> bool {
        self.revokes.iter().any(|a| matches!(a, Answer::Ok | Answer::Unknown))
    }
}

/// A request in flight, by JSON-RPC id.
#[derive(Debug, Clone)]
enum Op {
    Accept { session: usize, content: String },
    Revoke { session: usize, id: String, at: usize },
    Replace { session: usize, id: String, at: usize },
    Other,
}

#[derive(Default)]
struct Log {
    /// Per session: accepted message id → what the client knows.
    accepted: Vec<BTreeMap<String, Accepted>>,
    /// Per session: accepted ids in the order their answers arrived.
    order: Vec<Vec<String>>,
    /// Per session: live `user_message` deliveries by id.
    live: Vec<BTreeMap<String, u32>>,
}

impl Log {
    /// Reads one process's lines in order: answers settle the requests of `ops`, live
    /// `user_message`s count as deliveries.
    fn read(&mut self, seen: &[Value], ops: &BTreeMap<i64, Op>, sessions: &[String]) {
        for v in seen {
            if v["method"] == "session/update" {
                let update = &v["params"]["update"];
                if update["sessionUpdate"] == "user_message" {
                    let Some(s) = sessions.iter().position(|s| v["params"]["sessionId"] == json!(s)) else { continue };
                    if let Some(id) = update["messageId"].as_str() {
                        *self.live[s].entry(id.to_owned()).or_default() += 1;
                    }
                }
                continue;
            }
            let (Some(id), None) = (v["id"].as_i64(), v.get("method")) else { continue };
            let answer = match (v.get("result"), v["error"]["data"]["reason"].as_str()) {
                (Some(_), _) => Answer::Ok,
                (None, reason) => Answer::Refused(reason.unwrap_or("error").to_owned()),
            };
            match ops.get(&id) {
                Some(Op::Accept { session, content }) => {
                    if let Some(m) = v["result"]["messageId"].as_str() {
                        let entry = Accepted { content: content.clone(), replaces: Vec::new(), revokes: Vec::new() };
                        self.accepted[*session].insert(m.to_owned(), entry);
                        self.order[*session].push(m.to_owned());
                    }
                }
                Some(Op::Revoke { session, id, at }) => {
                    if let Some(a) = self.accepted[*session].get_mut(id) {
                        a.revokes[*at] = answer;
                    }
                }
                Some(Op::Replace { session, id, at }) => {
                    if let Some(a) = self.accepted[*session].get_mut(id) {
                        a.replaces[*at].1 = answer;
                    }
                }
                Some(Op::Other) | None => {}
            }
        }
    }
}

/// Runs the campaign; `progress` is called after every kill with the count so far.
pub fn run(options: &Options, mut progress: impl FnMut(u32)) -> Result<Report, String> {
    std::fs::create_dir_all(&options.dir).map_err(|e| format!("cannot create {}: {e}", options.dir.display()))?;
    let store = options.dir.join("crash.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
    }
    let mut rng = Rng::new(options.seed);
    let mut log = Log {
        accepted: vec![BTreeMap::new(); options.sessions],
        order: vec![Vec::new(); options.sessions],
        live: vec![BTreeMap::new(); options.sessions],
    };
    let mut sessions: Vec<String> = Vec::new();
    let mut counter = 0u64;
    for kill in 0..options.kills {
        let mut a = start(options, &store)?;
        if sessions.is_empty() {
            for i in 0..options.sessions {
                a.send(req(1 + i as i64, "session/new", json!({ "cwd": "/tmp" })))?;
                let r = a.result(1 + i as i64)?;
                sessions.push(r["sessionId"].as_str().ok_or("session/new gave no sessionId")?.to_owned());
            }
        } else {
            resume_all(&mut a, &sessions, false)?;
        }
        let mut ops: BTreeMap<i64, Op> = BTreeMap::new();
        let mut next = 1000i64;
        let mut read = 0;
        for _ in 0..3 + rng.below(14) {
            next += 1;
            let s = rng.below(sessions.len() as u64) as usize;
            let sid = &sessions[s];
            counter += 1;
            let content = format!("k{kill}-{counter}");
            // Mostly one of the newest accepted ids (likely still pending), sometimes any.
            let known = &log.order[s];
            let pick = |rng: &mut Rng| {
                let from = if rng.below(4) == 0 { 0 } else { known.len().saturating_sub(3) };
                known.get(from + rng.below((known.len() - from) as u64) as usize).cloned()
            };
            let (line, op) = match rng.below(100) {
                0..=9 => (
                    req(next, "session/prompt", json!({ "sessionId": sid, "prompt": text(&content) })),
                    Op::Accept { session: s, content },
                ),
                10..=39 => (
                    req(next, "session/inject", json!({ "sessionId": sid, "mode": "queue", "content": text(&content) })),
                    Op::Accept { session: s, content },
                ),
                40..=69 => (
                    req(next, "session/inject", json!({ "sessionId": sid, "mode": "steer", "content": text(&content) })),
                    Op::Accept { session: s, content },
                ),
                70..=79 => match pick(&mut rng) {
                    Some(id) => {
                        let entry = log.accepted[s].get_mut(&id).ok_or("picked an unknown id")?;
                        entry.revokes.push(Answer::Unknown);
                        let at = entry.revokes.len() - 1;
                        (
                            req(next, "session/revoke_inject", json!({ "sessionId": sid, "messageId": id })),
                            Op::Revoke { session: s, id, at },
                        )
                    }
                    None => (req(next, "session/status", json!({ "sessionId": sid })), Op::Other),
                },
                80..=94 => match pick(&mut rng) {
                    Some(id) => {
                        let content = format!("{content}-edit");
                        let entry = log.accepted[s].get_mut(&id).ok_or("picked an unknown id")?;
                        entry.replaces.push((content.clone(), Answer::Unknown));
                        let at = entry.replaces.len() - 1;
                        let params = json!({ "sessionId": sid, "messageId": id, "content": text(&content) });
                        (req(next, "session/replace_inject", params), Op::Replace { session: s, id, at })
                    }
                    None => (req(next, "session/status", json!({ "sessionId": sid })), Op::Other),
                },
                _ => (json!({ "jsonrpc": "2.0", "method": "session/cancel", "params": { "sessionId": sid } }), Op::Other),
            };
            ops.insert(next, op);
            a.send(line)?;
            // Read what has arrived, so later operations can revoke or replace what this
            // round accepted while it is still pending.
            let until = Instant::now() + Duration::from_millis(rng.below(4));
            while let Ok(line) = a.lines.recv_timeout(until.saturating_duration_since(Instant::now())) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    a.seen.push(v);
                }
            }
            log.read(&a.seen[read..], &ops, &sessions);
            read = a.seen.len();
        }
        std::thread::sleep(Duration::from_millis(rng.below(25)));
        a.kill();
        log.read(&a.seen[read..], &ops, &sessions);
        progress(kill + 1);
    }

    // Let the agent finish what the crashes interrupted, then read every history.
    let mut a = start(options, &store)?;
    if !sessions.is_empty() {
        resume_all(&mut a, &sessions, false)?;
    }
    settle(&mut a, Duration::from_millis(1500), Duration::from_secs(120))?;
    a.drain_to_exit();
    log.read(&a.seen, &BTreeMap::new(), &sessions);
    let mut a = start(options, &store)?;
    let histories = if sessions.is_empty() { Vec::new() } else { resume_all(&mut a, &sessions, true)? };
    a.drain_to_exit();
    Ok(judge(&log, &histories, options.kills))
}

/// Compares the client's log with the final histories.
fn judge(log: &Log, histories: &[Vec<(String, String)>], kills: u32) -> Report {
    let mut r = Report { kills, ..Report::default() };
    for (s, history) in histories.iter().enumerate() {
        let mut seen: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (id, content) in history {
            seen.entry(id.as_str()).or_default().push(content.as_str());
        }
        r.delivered += history.len();
        for (id, contents) in &seen {
            if contents.len() > 1 {
                r.duplicated.push(format!("session {s}: {id} is in the history {} times", contents.len()));
            }
        }
        for (id, n) in &log.live[s] {
            if *n > 1 {
                r.duplicated.push(format!("session {s}: {id} was delivered live {n} times"));
            }
        }
        for (id, accepted) in &log.accepted[s] {
            r.accepted += 1;
            r.revoked += usize::from(accepted.revoked());
            r.replaced += accepted.replaces.iter().filter(|(_, a)| *a == Answer::Ok).count();
            match seen.get(id.as_str()) {
                None if !accepted.may_be_absent() => {
                    r.lost.push(format!("session {s}: {id} ({:?}) was accepted but never delivered", accepted.content))
                }
                None => {}
                Some(_) if accepted.revoked() => r.stale.push(format!("session {s}: {id} was delivered after its revoke succeeded")),
                Some(contents) => {
                    let allowed = accepted.allowed_contents();
                    if let Some(bad) = contents.iter().find(|c| !allowed.contains(*c)) {
                        r.stale.push(format!("session {s}: {id} delivered as {bad:?}; allowed: {allowed:?}"));
                    }
                }
            }
        }
    }
    r
}

fn start(options: &Options, store: &Path) -> Result<Agent, String> {
    let mut a = Agent::spawn(&options.command, options.delay_ms, Some(store.as_os_str()))?;
    a.send(req(0, "initialize", json!({ "protocolVersion": 2, "info": { "name": "crash-campaign", "version": "1" } })))?;
    a.result(0)?;
    Ok(a)
}

/// Resumes every session; with `replay`, returns each session's replayed user messages (id and
/// text) in order.
fn resume_all(a: &mut Agent, sessions: &[String], replay: bool) -> Result<Vec<Vec<(String, String)>>, String> {
    let mut histories = Vec::new();
    for (i, sid) in sessions.iter().enumerate() {
        let id = 500 + i as i64;
        let mut params = json!({ "sessionId": sid, "cwd": "/tmp" });
        if replay {
            params["replayFrom"] = json!({ "type": "start" });
        }
        let from = a.seen.len();
        a.send(req(id, "session/resume", params))?;
        a.result(id)?;
        let history = a.seen[from..]
            .iter()
            .filter(|v| v["params"]["sessionId"] == json!(sid) && v["params"]["update"]["sessionUpdate"] == "user_message")
            .map(|v| {
                let u = &v["params"]["update"];
                let text = u["content"][0]["text"].as_str().unwrap_or_default().to_owned();
                (u["messageId"].as_str().unwrap_or_default().to_owned(), text)
            })
            .collect();
        histories.push(history);
    }
    Ok(histories)
}

/// Reads (answering permission requests) until the agent is quiet for `quiet`.
fn settle(a: &mut Agent, quiet: Duration, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        if Instant::now() > deadline {
            return Err(format!("the agent did not settle within {} s", limit.as_secs()));
        }
        match a.lines.recv_timeout(quiet) {
            Ok(line) => {
                let v: Value = serde_json::from_str(&line).map_err(|e| format!("not JSON: {line}: {e}"))?;
                if v["method"] == "session/request_permission" {
                    let option = v["params"]["options"][0]["optionId"].clone();
                    a.send(json!({ "jsonrpc": "2.0", "id": v["id"], "result": { "outcome": { "outcome": "selected", "optionId": option } } }))?;
                }
                a.seen.push(v);
            }
            Err(_) => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(replaces: &[(&str, Answer)], revokes: &[Answer]) -> Accepted {
        Accepted {
            content: "orig".into(),
            replaces: replaces.iter().map(|(c, a)| ((*c).to_owned(), a.clone())).collect(),
            revokes: revokes.to_vec(),
        }
    }

    #[test]
    fn the_last_successful_replace_wins_unless_a_later_one_is_unknown() {
        let a = accepted(&[("a", Answer::Ok), ("b", Answer::Refused("x".into())), ("c", Answer::Unknown)], &[]);
        assert_eq!(a.allowed_contents(), ["a", "c"].into());
        assert_eq!(accepted(&[], &[]).allowed_contents(), ["orig"].into());
        assert_eq!(accepted(&[("a", Answer::Unknown)], &[]).allowed_contents(), ["a", "orig"].into());
    }

    #[test]
    fn the_judge_finds_lost_duplicated_and_stale_messages() {
        let mut log = Log { accepted: vec![BTreeMap::new()], order: vec![Vec::new()], live: vec![BTreeMap::new()] };
        log.accepted[0].insert("m1".into(), accepted(&[], &[]));
        log.accepted[0].insert("m2".into(), accepted(&[("new", Answer::Ok)], &[]));
        log.accepted[0].insert("m3".into(), accepted(&[], &[Answer::Ok]));
        log.accepted[0].insert("m4".into(), accepted(&[], &[Answer::Unknown]));
        log.live[0].insert("m2".into(), 2);
        let history = vec![("m2".to_owned(), "orig".to_owned()), ("m3".to_owned(), "orig".to_owned())];
        let r = judge(&log, &[history], 1);
        assert_eq!(r.lost.len(), 1, "{r:?}"); // m1; m4's revoke may have succeeded
        assert_eq!(r.duplicated.len(), 1, "{r:?}"); // m2 twice live
        assert_eq!(r.stale.len(), 2, "{r:?}"); // m2 old content, m3 after its revoke
        assert!(!r.ok());
    }
}
