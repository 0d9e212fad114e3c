//! `acp-inject-bench`: medians of interleaved runs, printed as JSON for `cargo xtask bench`.
//!
//! - Rust decode: the shared 100,000-line `session/update` stream decoded (and re-encoded)
//!   with our generated types, with the official `agent-client-protocol-schema` v2 types, and
//!   into `serde_json::Value` (the floor), each the way a client reads a whole line.
//! - Core: agent-side operations per second at 1k and 100k pending injects.
//!
//! Each round runs every contender once, in turn, so machine noise hits all of them alike;
//! figures are medians over the rounds and ratios are taken from the medians of one process.

use acp_inject_core::wire::SessionId;
use std::hint::black_box;
use std::time::Instant;

use acp_inject_core::agent::{Agent, AgentConfig, BreakPoint, ConnId, RuntimeEvent};
use acp_inject_core::wire::jsonrpc;
use agent_client_protocol_schema::v2;
use agent_client_protocol_schema::v2::{JsonRpcMessage, Notification};
use serde_json::{json, Value};

#[path = "../../crates/wire/benches/stream.rs"]
mod stream;

/// One way of handling the whole stream, run once per round.
type Contender<'a> = Box<dyn FnMut() + 'a>;

type Official = JsonRpcMessage<Notification<v2::UpdateSessionNotification>>;

fn ours(line: &str) -> acp_inject_core::wire::UpdateSessionNotification {
    match jsonrpc::parse_agent_line(line) {
        Ok(jsonrpc::AgentLine::Update(u)) => u,
        other => panic!("not an update: {other:?}"),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn time(f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

fn decode(rounds: usize, lines: usize) -> Value {
    let all = stream::stream(lines);
    // Compare on the lines both sides decode (the official crate rejects some open-branch
    // shapes); count what was left out.
    let mut left_out_kinds: std::collections::BTreeMap<String, usize> = Default::default();
    let both: Vec<String> = all
        .iter()
        .filter(|l| {
            let ok = serde_json::from_str::<Official>(l).is_ok();
            if !ok {
                let v: Value = serde_json::from_str(l).unwrap();
                *left_out_kinds.entry(v["params"]["update"]["sessionUpdate"].as_str().unwrap_or("?").to_owned()).or_default() += 1;
            }
            ok
        })
        .cloned()
        .collect();
    let left_out = all.len() - both.len();
    for (kind, n) in &left_out_kinds {
        eprintln!("bench: left out {n} `{kind}` lines, which the official crate rejects");
    }
    let n = both.len() as f64;
    let bytes: usize = both.iter().map(String::len).sum();
    for l in &both {
        ours(l); // every line decodes on our side too
    }
    // Each contender handles every line once per round.
    let lines = &both;
    let each = |f: fn(&str)| -> Contender { Box::new(move || lines.iter().for_each(|l| f(l))) };
    let mut contenders: Vec<(&str, Contender)> = vec![
        (
            "value_parse",
            each(|l| {
                black_box(serde_json::from_str::<Value>(l).unwrap());
            }),
        ),
        (
            "official_decode",
            each(|l| {
                black_box(serde_json::from_str::<Official>(l).unwrap());
            }),
        ),
        (
            "ours_decode",
            each(|l| {
                black_box(ours(l));
            }),
        ),
        (
            "value_roundtrip",
            each(|l| {
                black_box(serde_json::to_string(&serde_json::from_str::<Value>(l).unwrap()).unwrap());
            }),
        ),
        (
            "official_roundtrip",
            each(|l| {
                black_box(serde_json::to_string(&serde_json::from_str::<Official>(l).unwrap()).unwrap());
            }),
        ),
        (
            "ours_roundtrip",
            each(|l| {
                black_box(jsonrpc::notification_line(&ours(l)));
            }),
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
    for r in 0..rounds {
        eprintln!("bench: decode round {}/{rounds} ({} lines, {} contenders)", r + 1, both.len(), contenders.len());
        for (i, (_, f)) in contenders.iter_mut().enumerate() {
            times[i].push(time(f.as_mut()));
        }
    }
    let mut out = serde_json::Map::new();
    for ((name, _), t) in contenders.iter().zip(times) {
        out.insert((*name).into(), json!({ "lines_per_s": n / median(t.clone()), "mb_per_s": bytes as f64 / 1e6 / median(t) }));
    }
    json!({ "lines": both.len(), "left_out": left_out, "left_out_kinds": left_out_kinds, "bytes_per_line": bytes / both.len(), "rounds": rounds, "results": out })
}

/// The outputs so far (the in-memory store cannot fail).
fn drain(a: &mut Agent) -> Vec<acp_inject_core::agent::Output> {
    a.drain().expect("the memory store commits")
}

fn line(id: u64, method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

fn running(pending: usize) -> (Agent, Vec<String>) {
    let inject =
        serde_json::from_value(json!({ "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": ["finish"] }))
            .unwrap();
    let config = AgentConfig { inject: Some(inject), ..Default::default() };
    let mut a = Agent::new(config).expect("a valid configuration");
    a.create_session(&SessionId("s1".into()), "/work").unwrap();
    a.attach_to_session(&"c1".into(), &SessionId("s1".into())).unwrap();
    // R-INIT-2: nothing but `initialize` is served before it.
    a.handle_line(
        &"c1".into(),
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":2,"info":{"name":"bench","version":"0"}}}"#,
    );
    a.handle_line(
        &"c1".into(),
        &line(0, "session/prompt", json!({ "sessionId": "s1", "prompt": [{ "type": "text", "text": "go" }] })),
    );
    drain(&mut a);
    let mut ids = Vec::with_capacity(pending);
    for i in 0..pending {
        a.handle_line(
            &"c1".into(),
            &line(
                i as u64 + 1,
                "session/inject",
                json!({ "sessionId": "s1", "mode": "queue", "content": [{ "type": "text", "text": "q" }] }),
            ),
        );
        for o in drain(&mut a) {
            if let acp_inject_core::agent::Output::Line { line, .. } = o {
                let v: Value = serde_json::from_str(&line).unwrap();
                if let Some(m) = v["result"]["messageId"].as_str() {
                    ids.push(m.to_owned());
                }
            }
        }
    }
    (a, ids)
}

fn core_ops(rounds: usize) -> Value {
    const OPS: usize = 20_000;
    let mut out = serde_json::Map::new();
    for pending in [1_000usize, 100_000] {
        let (mut a, ids) = running(pending);
        let inject_lines: Vec<String> = (0..OPS)
            .map(|i| {
                line(
                    10_000_000 + i as u64,
                    "session/inject",
                    json!({ "sessionId": "s1", "mode": "queue", "content": [{ "type": "text", "text": "x" }] }),
                )
            })
            .collect();
        let mut samples: [Vec<f64>; 4] = Default::default();
        let c1 = ConnId::from("c1");
        for r in 0..rounds {
            eprintln!("bench: core round {}/{rounds} with {pending} pending", r + 1);
            // inject: OPS more injects, then revoke them (so the pending count stays `pending`).
            let mut minted = Vec::with_capacity(OPS);
            samples[0].push(time(&mut || {
                for l in &inject_lines {
                    a.handle_line(&c1, l);
                    for o in drain(&mut a) {
                        if let acp_inject_core::agent::Output::Line { line, .. } = o {
                            if let Some(i) = line.find("\"messageId\":\"") {
                                let rest = &line[i + 13..];
                                minted.push(rest[..rest.find('"').unwrap()].to_owned());
                            }
                        }
                    }
                }
            }));
            let revokes: Vec<String> = minted
                .iter()
                .enumerate()
                .map(|(i, m)| line(20_000_000 + i as u64, "session/revoke_inject", json!({ "sessionId": "s1", "messageId": m })))
                .collect();
            samples[1].push(time(&mut || {
                for l in &revokes {
                    a.handle_line(&c1, l);
                    black_box(drain(&mut a));
                }
            }));
            let replaces: Vec<String> = (0..OPS).map(|i| line(30_000_000 + i as u64, "session/replace_inject", json!({ "sessionId": "s1", "messageId": ids[(i * 7919 + r) % ids.len()], "content": [{ "type": "text", "text": "edited" }] }))).collect();
            samples[2].push(time(&mut || {
                for l in &replaces {
                    a.handle_line(&c1, l);
                    black_box(drain(&mut a));
                }
            }));
            // deliver: a steer and the break-point that delivers it.
            let steers: Vec<String> = (0..OPS)
                .map(|i| {
                    line(
                        40_000_000 + i as u64,
                        "session/inject",
                        json!({ "sessionId": "s1", "mode": "steer", "content": [{ "type": "text", "text": "s" }] }),
                    )
                })
                .collect();
            samples[3].push(time(&mut || {
                for l in &steers {
                    a.handle_line(&c1, l);
                    a.runtime_event(&SessionId("s1".into()), RuntimeEvent::BreakPoint(BreakPoint::ToolResult)).unwrap();
                    black_box(drain(&mut a));
                }
            }));
        }
        let ops = |t: &Vec<f64>| OPS as f64 / median(t.clone());
        out.insert(
            pending.to_string(),
            json!({ "inject": ops(&samples[0]), "revoke": ops(&samples[1]), "replace": ops(&samples[2]), "steer_and_deliver": ops(&samples[3]) }),
        );
    }
    Value::Object(out)
}

/// Typed decode per update kind (a tag-last object counts apart): the time per line on our
/// side and the official crate's, and their ratio, for finding where the whole-stream ratio
/// comes from.
fn kinds(rounds: usize, lines: usize) -> Value {
    let mut groups: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for l in stream::stream(lines) {
        if serde_json::from_str::<Official>(&l).is_err() {
            continue;
        }
        let update_at = l.find("\"update\":{").expect("an update") + 9;
        let v: Value = serde_json::from_str(&l).unwrap();
        let kind = v["params"]["update"]["sessionUpdate"].as_str().unwrap_or("?").to_owned();
        let first = l[update_at..].starts_with("{\"sessionUpdate\"");
        groups.entry(if first { kind } else { format!("{kind} (tag last)") }).or_default().push(l);
    }
    let total: usize = groups.values().map(Vec::len).sum();
    let mut out = serde_json::Map::new();
    for (kind, ls) in &groups {
        let (mut o, mut t) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            o.push(time(&mut || ls.iter().for_each(|l| drop(black_box(ours(l))))));
            t.push(time(&mut || ls.iter().for_each(|l| drop(black_box(serde_json::from_str::<Official>(l).unwrap())))));
        }
        let (o, t) = (median(o) / ls.len() as f64, median(t) / ls.len() as f64);
        out.insert(
            kind.clone(),
            json!({ "share": ls.len() as f64 / total as f64, "ours_ns": o * 1e9, "official_ns": t * 1e9, "ratio": t / o }),
        );
    }
    Value::Object(out)
}

/// `acp-inject-bench [ROUNDS] [decode|kinds]`: with `decode`, only the decode comparison (no
/// core operations), for measuring the decoders quickly; with `kinds`, typed decode per kind.
fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(7);
    let report = match std::env::args().nth(2).as_deref() {
        Some("decode") => json!({ "decode": decode(rounds, 100_000) }),
        Some("kinds") => json!({ "kinds": kinds(rounds, 100_000) }),
        _ => json!({ "decode": decode(rounds, 100_000), "core": core_ops(rounds.min(5)) }),
    };
    println!("{report}");
}
