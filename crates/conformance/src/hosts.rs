//! The two-host crash campaign: two agent hosts on one PostgreSQL store, serving over the
//! network (`--listen`), a client moving between them while one is killed (SIGKILL) or paused
//! (SIGSTOP, then SIGCONT) under load; then everything the clients saw is checked.
//!
//! Each round the client, connected by WebSocket to the host serving the session, pipelines a
//! burst of queue and steer injects, reads for a random few milliseconds, and then the host
//! fails:
//! - **killed**: SIGKILL. The client resumes the session on the other host, retrying while
//!   that host answers "held by another host" (the dead host's lease has to run out). The
//!   killed host is started again under its name.
//! - **paused**: SIGSTOP. The same, and once the other host serves the session the paused one
//!   is woken (SIGCONT) with its old connection still open: it must not deliver anything
//!   (its commit is refused: it lost the lease) and must stop; it is started again.
//!
//! From the clients' own logs (raw JSON-RPC over the socket, not this toolkit's client):
//! - **lost**: an inject whose accept answer a client saw and that is not in the session's
//!   history once the final host is idle (replayed from the start), whether still pending or
//!   gone;
//! - **duplicated** also: an id twice in that history;
//! - **duplicated**: a `user_message` id delivered live more than once;
//! - **served twice**: one delivered live by two hosts.
//!
//! Handoff time is measured from the failure to the other host's resume answer.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use crate::peer::{req, text, Rng};

/// The error code of a session another host serves.
const HELD_ELSEWHERE: i64 = -32030;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The agent's program and arguments; it must accept `--listen HOST:PORT` (printing its
    /// URL first on stdout), `--store URL` and `--delay-ms MS`.
    pub command: Vec<String>,
    /// The PostgreSQL URL both hosts share (a fresh database).
    pub store_url: String,
    /// How many failures (kills and pauses together).
    pub kills: u32,
    /// The seed of every random choice.
    pub seed: u64,
    /// The agent's `--delay-ms`.
    pub delay_ms: u64,
    /// The hosts' lease, in milliseconds.
    pub lease_ms: u64,
}

/// The outcome, with the evidence for every failure.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// Hosts killed.
    pub kills: u32,
    /// Hosts paused.
    pub pauses: u32,
    /// Injects whose accept answer a client saw.
    pub accepted: usize,
    /// Live deliveries seen.
    pub delivered: usize,
    /// Accepted injects the final host does not know.
    pub lost: Vec<String>,
    /// Ids delivered live more than once.
    pub duplicated: Vec<String>,
    /// Ids delivered live by both hosts.
    pub served_twice: Vec<String>,
    /// Failure to resumed-elsewhere times, in milliseconds, in round order.
    pub handoffs_ms: Vec<u64>,
}

impl Report {
    /// Nothing lost, duplicated or served twice.
    pub fn ok(&self) -> bool {
        self.lost.is_empty() && self.duplicated.is_empty() && self.served_twice.is_empty()
    }

    /// The `q`-quantile of the handoff times (0 when there were none).
    pub fn handoff_quantile(&self, q: f64) -> u64 {
        let mut sorted = self.handoffs_ms.clone();
        sorted.sort_unstable();
        match sorted.len() {
            0 => 0,
            n => sorted[((n as f64 - 1.0) * q).round() as usize],
        }
    }
}

/// One agent host process.
struct Host {
    name: String,
    child: Child,
    /// `ws://…/acp`.
    url: String,
}

impl Host {
    fn start(options: &Options, name: &str) -> Result<Host, String> {
        let (program, args) = options.command.split_first().ok_or("empty agent command")?;
        let sep = if options.store_url.contains('?') { '&' } else { '?' };
        let store = format!("{}{sep}acp_host={name}&acp_lease_ms={}", options.store_url, options.lease_ms);
        let mut child = Command::new(program)
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--delay-ms", &options.delay_ms.to_string(), "--store", &store])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first).map_err(|e| format!("host {name}: {e}"))?;
        let url = first.trim().replacen("http", "ws", 1);
        if !url.starts_with("ws://") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("host {name} printed no URL (got {first:?})"));
        }
        Ok(Host { name: name.to_owned(), child, url })
    }

    fn signal(&self, signal: &str) {
        // `kill` keeps this crate free of a signals dependency; the campaign runs on Unix.
        let _ = Command::new("kill").args([&format!("-{signal}"), &self.child.id().to_string()]).stderr(Stdio::null()).status();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits up to `limit` for the process to exit by itself.
    fn exited_within(&mut self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.signal("CONT");
        self.kill();
    }
}

/// A client connection: raw JSON-RPC lines over a WebSocket, everything it read kept.
struct Client {
    ws: WebSocket<TcpStream>,
    host: String,
    seen: Vec<Value>,
    next: i64,
    closed: bool,
}

impl Client {
    fn connect(host: &Host) -> Result<Client, String> {
        let addr = host.url.trim_start_matches("ws://").split('/').next().unwrap_or_default().to_owned();
        let stream = TcpStream::connect(&addr).map_err(|e| format!("connect to host {}: {e}", host.name))?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
        let (ws, _) = tungstenite::client(host.url.as_str(), stream).map_err(|e| format!("WebSocket to host {}: {e}", host.name))?;
        ws.get_ref().set_read_timeout(Some(Duration::from_millis(20))).map_err(|e| e.to_string())?;
        let mut c = Client { ws, host: host.name.clone(), seen: Vec::new(), next: 1, closed: false };
        let init = c.request("initialize", json!({ "protocolVersion": 2, "info": { "name": "two-host crash", "version": "1" } }))?;
        if init.get("result").is_none() {
            return Err(format!("initialize on host {}: {init}", host.name));
        }
        Ok(c)
    }

    fn send(&mut self, method: &str, params: Value) -> Result<i64, String> {
        let id = self.next;
        self.next += 1;
        self.ws.send(Message::text(req(id, method, params).to_string())).map_err(|e| format!("send to host {}: {e}", self.host))?;
        Ok(id)
    }

    /// Reads what arrives for `dur` (or until the connection ends).
    fn poll(&mut self, dur: Duration) {
        let until = Instant::now() + dur;
        while !self.closed && Instant::now() < until {
            self.read_one();
        }
    }

    fn read_one(&mut self) -> Option<usize> {
        match self.ws.read() {
            Ok(Message::Text(t)) => {
                self.seen.push(serde_json::from_str(t.as_str()).unwrap_or(Value::Null));
                Some(self.seen.len() - 1)
            }
            Ok(_) => None,
            Err(tungstenite::Error::Io(e)) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                None
            }
            Err(_) => {
                self.closed = true;
                None
            }
        }
    }

    /// Sends a request and waits (up to 10 s) for its answer.
    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send(method, params)?;
        self.answer(id, Duration::from_secs(10))
    }

    fn answer(&mut self, id: i64, limit: Duration) -> Result<Value, String> {
        if let Some(v) = self.seen.iter().find(|v| v["id"] == json!(id) && v.get("method").is_none()) {
            return Ok(v.clone());
        }
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if self.closed {
                return Err(format!("host {} closed the connection before answering {id}", self.host));
            }
            if let Some(i) = self.read_one() {
                let v = &self.seen[i];
                if v["id"] == json!(id) && v.get("method").is_none() {
                    return Ok(v.clone());
                }
            }
        }
        Err(format!("host {} did not answer request {id} within {limit:?}", self.host))
    }

    /// Closes the connection (the host detaches it) and reads to its end (a dead host's last
    /// lines included), keeping what it read.
    fn finish(mut self) -> Log {
        let _ = self.ws.close(None);
        self.poll(Duration::from_secs(2));
        Log { host: self.host, seen: self.seen }
    }

    /// Reads until the session's last state is `idle` (or `unknown`: a turn cut off on another
    /// host, with nothing left to open the next one) and nothing came for `quiet`, or `limit`.
    fn settle(&mut self, quiet: Duration, limit: Duration) {
        let until = Instant::now() + limit;
        let mut last = Instant::now();
        while !self.closed && Instant::now() < until {
            if self.read_one().is_some() {
                last = Instant::now();
            }
            let idle = self
                .seen
                .iter()
                .rev()
                .find(|v| v["params"]["update"]["sessionUpdate"] == "state_update")
                .is_some_and(|v| matches!(v["params"]["update"]["state"].as_str(), Some("idle" | "unknown")));
            if idle && last.elapsed() >= quiet {
                return;
            }
        }
    }
}

/// What one connection read, and from which host.
struct Log {
    host: String,
    seen: Vec<Value>,
}

impl Log {
    /// The live `user_message` ids this connection saw (it never asks for a replay).
    fn delivered(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter(|v| v["method"] == "session/update" && v["params"]["update"]["sessionUpdate"] == "user_message")
            .filter_map(|v| v["params"]["update"]["messageId"].as_str().map(str::to_owned))
            .collect()
    }

    /// Accept answers seen: message ids.
    fn accepted(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter(|v| v.get("id").is_some() && v.get("method").is_none())
            .filter_map(|v| v["result"]["messageId"].as_str().map(str::to_owned))
            .collect()
    }
}

/// Resumes `session` on `host`, retrying while another host holds it; returns the client.
fn take_over(host: &Host, session: &str, limit: Duration) -> Result<Client, String> {
    take_over_with(host, limit, json!({ "sessionId": session, "cwd": "/tmp/hosts" }))
}

/// [`take_over`] with these `session/resume` params.
fn take_over_with(host: &Host, limit: Duration, params: Value) -> Result<Client, String> {
    let until = Instant::now() + limit;
    let mut client = Client::connect(host)?;
    loop {
        let answer = client.request("session/resume", params.clone())?;
        if answer.get("result").is_some() {
            return Ok(client);
        }
        if answer["error"]["code"] != json!(HELD_ELSEWHERE) {
            return Err(format!("resume on host {}: {answer}", host.name));
        }
        if Instant::now() >= until {
            return Err(format!("host {} could not take the session over within {limit:?}: {answer}", host.name));
        }
        let wait = answer["error"]["data"]["retryAfterMs"].as_u64().unwrap_or(50).clamp(10, 200);
        std::thread::sleep(Duration::from_millis(wait));
    }
}

/// Runs the campaign; `progress` is called after each failure with the count so far.
pub fn run(options: &Options, mut progress: impl FnMut(u32)) -> Result<Report, String> {
    let mut rng = Rng::new(options.seed);
    let names = ["h1", "h2"];
    let mut hosts = [Host::start(options, names[0])?, Host::start(options, names[1])?];
    let mut report = Report::default();
    // What every finished connection read, with the host it was on.
    let mut done: Vec<Log> = Vec::new();
    let mut current = 0;
    let mut client = Client::connect(&hosts[current])?;
    let created = client.request("session/new", json!({ "cwd": "/tmp/hosts" }))?;
    let session = created["result"]["sessionId"].as_str().ok_or_else(|| format!("session/new: {created}"))?.to_owned();
    let handoff_limit = Duration::from_millis(options.lease_ms * 4 + 5_000);

    for round in 0..options.kills {
        // Load: a burst of injects, some answers read, a random moment.
        for _ in 0..3 + rng.below(6) {
            let mode = if rng.below(3) == 0 { "steer" } else { "queue" };
            client.send("session/inject", json!({ "sessionId": session, "mode": mode, "content": text("work") }))?;
        }
        client.poll(Duration::from_millis(rng.below(options.delay_ms * 4 + 20)));

        let pause = rng.below(3) == 0;
        let failed_at = Instant::now();
        let other = 1 - current;
        if pause {
            hosts[current].signal("STOP");
            report.pauses += 1;
        } else {
            hosts[current].kill();
            report.kills += 1;
        }
        let next = take_over(&hosts[other], &session, handoff_limit).map_err(|e| format!("round {round}: {e}"))?;
        report.handoffs_ms.push(u64::try_from(failed_at.elapsed().as_millis()).unwrap_or(u64::MAX));
        let mut old = std::mem::replace(&mut client, next);
        if pause {
            // Woken with its connection still open: it lost the lease, so it must deliver
            // nothing more and stop.
            hosts[current].signal("CONT");
            old.poll(Duration::from_millis(300));
            if !hosts[current].exited_within(Duration::from_millis(options.lease_ms + 3_000)) {
                return Err(format!("round {round}: host {} went on serving after losing its lease", names[current]));
            }
        }
        done.push(old.finish());
        hosts[current] = Host::start(options, names[current])?;
        current = other;
        progress(round + 1);
    }

    // Let the last host deliver everything pending and go idle, then ask about every accepted
    // id: each must have been delivered (pending now would be an inject stuck for good).
    client.settle(Duration::from_millis(options.delay_ms * 10 + 300), Duration::from_secs(20));
    done.push(client.finish());
    let accepted: BTreeSet<String> = done.iter().flat_map(Log::accepted).collect();
    // The session's history, replayed: every accepted inject must be in it, once. (The
    // remembered-id window is bounded, so the history is the record, not a revoke's answer.)
    let replay = json!({ "sessionId": session, "cwd": "/tmp/hosts", "replayFrom": { "type": "start" } });
    let mut checker = take_over_with(&hosts[current], handoff_limit, replay)?;
    let answered = checker.seen.iter().rposition(|v| v.get("id").is_some() && v.get("method").is_none()).unwrap_or(0);
    let replayed: Vec<Value> = checker.seen.drain(..answered + 1).collect();
    let mut history: BTreeMap<String, u32> = BTreeMap::new();
    for id in (Log { host: String::new(), seen: replayed }).delivered() {
        *history.entry(id).or_default() += 1;
    }
    for id in &accepted {
        match history.get(id) {
            Some(1) => {}
            Some(n) => report.duplicated.push(format!("{id} is in the history {n} times")),
            None => {
                let v = checker.request("session/revoke_inject", json!({ "sessionId": session, "messageId": id }))?;
                let what = if v["result"] == json!({}) { "still pending after the last host went idle" } else { "not in the history" };
                report.lost.push(format!("{id}: {what}: {v}"));
            }
        }
    }
    done.push(checker.finish());

    let mut by_id: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in &done {
        for id in c.delivered() {
            by_id.entry(id).or_default().push(c.host.clone());
        }
    }
    report.accepted = accepted.len();
    report.delivered = by_id.values().map(Vec::len).sum();
    for (id, hosts) in &by_id {
        if hosts.len() > 1 {
            report.duplicated.push(format!("{id} delivered {} times (by {hosts:?})", hosts.len()));
        }
        if hosts.iter().collect::<BTreeSet<_>>().len() > 1 {
            report.served_twice.push(format!("{id} served by {hosts:?}"));
        }
    }
    Ok(report)
}
