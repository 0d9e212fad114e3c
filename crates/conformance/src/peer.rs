//! An agent process driven over its stdio with raw JSON-RPC lines: what the black-box suite and
//! the crash campaign share.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A running agent process, its stdin, and what it wrote.
pub(crate) struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) lines: Receiver<String>,
    /// Every line read so far, as JSON.
    pub(crate) seen: Vec<Value>,
}

impl Agent {
    /// Starts `command` with `--delay-ms` (and `--store`), reading its stdout on a thread.
    pub(crate) fn spawn(command: &[String], delay_ms: u64, store: Option<&OsStr>) -> Result<Agent, String> {
        let (program, args) = command.split_first().ok_or("empty agent command")?;
        let mut cmd = Command::new(program);
        cmd.args(args).arg("--delay-ms").arg(delay_ms.to_string());
        if let Some(s) = store {
            cmd.arg("--store").arg(s);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Agent { child, stdin, lines, seen: Vec::new() })
    }

    pub(crate) fn send(&mut self, v: Value) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "{v}").and_then(|_| stdin.flush()).map_err(|e| format!("writing to the agent: {e}"))
    }

    pub(crate) fn send_raw(&mut self, line: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(line).and_then(|_| stdin.write_all(b"\n")).and_then(|_| stdin.flush()).map_err(|e| format!("writing: {e}"))
    }

    /// Reads lines until `pred` matches one; permission requests met on the way are allowed.
    pub(crate) fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Result<Value, String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).map_err(|_| {
                let last: Vec<String> = self.seen.iter().rev().take(4).map(Value::to_string).collect();
                format!("timed out waiting for {what}; last lines: {last:#?}")
            })?;
            let v: Value = serde_json::from_str(&line).map_err(|e| format!("the agent wrote a line that is not JSON: {line}: {e}"))?;
            self.seen.push(v.clone());
            if pred(&v) {
                return Ok(v);
            }
            self.allow_permission(&v)?;
        }
    }

    /// Answers a permission request with its first option.
    fn allow_permission(&mut self, v: &Value) -> Result<(), String> {
        if v["method"] != "session/request_permission" {
            return Ok(());
        }
        let allow = v["params"]["options"].as_array().and_then(|o| o.first()).map(|o| o["optionId"].clone()).unwrap_or(json!("allow"));
        self.send(json!({ "jsonrpc": "2.0", "id": v["id"], "result": { "outcome": { "outcome": "selected", "optionId": allow } } }))
    }

    pub(crate) fn answer(&mut self, id: i64) -> Result<Value, String> {
        self.until(&format!("the answer to request {id}"), |v| v["id"] == json!(id) && v.get("method").is_none())
    }

    pub(crate) fn result(&mut self, id: i64) -> Result<Value, String> {
        let v = self.answer(id)?;
        match v.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(format!("request {id} was refused: {v}")),
        }
    }

    /// Everything the agent wrote until it exits.
    pub(crate) fn drain_to_exit(&mut self) {
        self.stdin = None;
        let _ = self.child.wait();
        self.read_to_end();
    }

    /// Reads what is still in the pipe after the process ended, until the reader thread sees
    /// the end of it (or, if something else holds the pipe open, for at most 5 s): the last
    /// lines an agent writes before it exits are read too.
    fn read_to_end(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while let Ok(line) = self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if let Ok(v) = serde_json::from_str(&line) {
                self.seen.push(v);
            }
        }
    }

    /// Reads lines for `ms` milliseconds, or until the process's output ends (answering
    /// permission requests, as [`Agent::until`] does).
    pub(crate) fn settle(&mut self, ms: u64) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_millis(ms);
        while let Ok(line) = self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            let v: Value = serde_json::from_str(&line).map_err(|e| format!("the agent wrote a line that is not JSON: {line}: {e}"))?;
            self.seen.push(v.clone());
            self.allow_permission(&v)?;
        }
        Ok(())
    }

    /// The process's resident memory in KiB (Linux `/proc`), while it runs.
    pub(crate) fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.read_to_end();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A JSON-RPC request.
pub(crate) fn req(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// One text content block, as a content array.
pub(crate) fn text(s: &str) -> Value {
    json!([{ "type": "text", "text": s }])
}

/// A tiny deterministic generator (xorshift) for the campaigns, so every choice reproduces
/// from the seed. A dependency would buy nothing here: the sequence only has to vary and
/// repeat.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator from `seed` (zero, which xorshift never leaves, counts as one).
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// A number below `n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}
