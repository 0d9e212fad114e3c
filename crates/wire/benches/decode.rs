//! Decode (and decode + re-encode) throughput of a recorded-like stream of `session/update`
//! lines, beside plain `serde_json::Value` parsing of the same lines in the same run.
//!
//! The stream is generated deterministically (fixed seed) so runs compare: 12,000 lines mixing
//! chunks, upserts, tool calls, state and usage updates, plans, unknown (open-branch) updates
//! and a few objects whose tag is not the first member (the buffered decode path).
//!
//! `cargo bench -p acp-inject-wire --bench decode` (add `-- --warm-up-time 1 --measurement-time 2`
//! for a quick run). Compare figures within one run only; they drift between processes.

use std::hint::black_box;

use acp_inject_wire::jsonrpc::{self, Frame, Incoming};
use acp_inject_wire::{SessionUpdate, UpdateSessionNotification};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::Value;

const LINES: usize = 12_000;

/// A small deterministic generator (64-bit LCG, high bits).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "the", "parser", "now", "streams", "tokens", "instead", "of", "buffering", "whole", "files", "lexer", "tests",
    "pass", "check", "crates/core", "refactor", "function", "error", "handling", "à", "naïve", "→", "\"quoted\"",
];

fn text(rng: &mut Rng, words: u64) -> String {
    let n = 3 + rng.below(words);
    (0..n).map(|_| rng.pick(WORDS)).collect::<Vec<_>>().join(" ")
}

/// A JSON object with its members in the given order (as a peer writes them: tag first);
/// `serde_json::Value` without `preserve_order` would sort them.
fn obj(members: &[(&str, String)]) -> String {
    let body: Vec<String> = members.iter().map(|(k, v)| format!("{}:{v}", Value::from(*k))).collect();
    format!("{{{}}}", body.join(","))
}

fn s(text: &str) -> String {
    Value::from(text).to_string()
}

fn text_block(rng: &mut Rng, words: u64) -> String {
    obj(&[("type", s("text")), ("text", s(&text(rng, words)))])
}

/// One `session/update` params object.
fn update(rng: &mut Rng, i: usize) -> String {
    let msg = s(&format!("msg_{:04}", i / 40));
    let call = s(&format!("call_{:03}", i / 25));
    let tag = |t: &str| ("sessionUpdate", s(t));
    let roll = rng.below(100);
    let update = match roll {
        0..=39 => obj(&[tag("agent_message_chunk"), ("messageId", msg), ("content", text_block(rng, 12))]),
        40..=49 => obj(&[tag("agent_thought_chunk"), ("messageId", msg), ("content", text_block(rng, 20))]),
        50..=61 => obj(&[
            tag("tool_call_update"),
            ("toolCallId", call),
            ("title", s(&format!("Run {}", rng.pick(&["cargo test", "rg parser", "cat src/lib.rs"])))),
            ("kind", s(rng.pick(&["execute", "read", "search", "edit"]))),
            ("status", s(rng.pick(&["pending", "in_progress", "completed"]))),
            ("rawInput", r#"{"command":["cargo","test","-p","core"],"cwd":"/home/user/project"}"#.to_owned()),
        ]),
        62..=67 => obj(&[
            tag("tool_call_content_chunk"),
            ("toolCallId", call),
            ("content", obj(&[("type", s("content")), ("content", text_block(rng, 16))])),
        ]),
        68..=71 => obj(&[tag("user_message"), ("messageId", msg), ("content", format!("[{}]", text_block(rng, 10)))]),
        72..=75 => obj(&[
            tag("agent_message"),
            ("messageId", msg),
            ("content", format!("[{},{}]", text_block(rng, 24), text_block(rng, 8))),
        ]),
        76..=79 => obj(&[tag("state_update"), ("state", s("running"))]),
        80..=82 => obj(&[
            tag("state_update"),
            ("state", s("idle")),
            ("stopReason", s(rng.pick(&["end_turn", "cancelled", "max_tokens"]))),
            (
                "usage",
                obj(&[
                    ("totalTokens", (1530 + rng.below(5000)).to_string()),
                    ("inputTokens", "1200".into()),
                    ("outputTokens", "300".into()),
                    ("thoughtTokens", "30".into()),
                ]),
            ),
        ]),
        83..=87 => obj(&[tag("usage_update"), ("used", (40_000 + rng.below(100_000)).to_string()), ("size", "200000".into())]),
        88..=89 => {
            let entry = |rng: &mut Rng, priority: &str, status: &str| {
                obj(&[("content", s(&text(rng, 6))), ("priority", s(priority)), ("status", s(status))])
            };
            let entries = format!("[{},{}]", entry(rng, "high", "completed"), entry(rng, "medium", "in_progress"));
            obj(&[tag("plan_update"), ("plan", obj(&[("type", s("items")), ("planId", s("plan_1")), ("entries", entries)]))])
        }
        90..=91 => obj(&[tag("terminal_update"), ("terminalId", s("term_1")), ("exitStatus", r#"{"exitCode":0}"#.to_owned())]),
        92 => obj(&[tag("_x.dev/progress"), ("fraction", "0.5".into()), ("label", s(&text(rng, 3)))]),
        93 => obj(&[tag("agent_message_clear"), ("messageId", msg)]),
        // The tag after the body: exercises the buffered path.
        _ => obj(&[("messageId", msg), ("content", text_block(rng, 12)), tag("agent_message_chunk")]),
    };
    obj(&[("sessionId", s("sess_abc123")), ("update", update)])
}

/// The recorded stream: one `session/update` notification per line.
fn stream() -> Vec<String> {
    let mut rng = Rng(0x5eed_ac91);
    (0..LINES)
        .map(|i| obj(&[("jsonrpc", s("2.0")), ("method", s("session/update")), ("params", update(&mut rng, i))]))
        .collect()
}

/// Typed decode of one line, the way the client mirror reads it (one pass for updates).
fn decode(line: &str) -> UpdateSessionNotification {
    match jsonrpc::parse_agent_line(line).expect("a message") {
        jsonrpc::AgentLine::Update(u) => u,
        jsonrpc::AgentLine::Other(Frame::Single(Incoming::Notification { params, .. })) => {
            jsonrpc::decode_params(params).expect("decodes")
        }
        other => panic!("not a notification: {other:?}"),
    }
}

fn bench(c: &mut Criterion) {
    let lines = stream();
    let bytes: usize = lines.iter().map(String::len).sum();

    // The benchmarks below must measure successful decodes: check the stream once.
    let mut other = 0;
    for line in &lines {
        let n = decode(line);
        other += matches!(n.update, SessionUpdate::Other(_)) as usize;
        let again: Value = serde_json::from_str(&jsonrpc::notification_line("session/update", &n)).unwrap();
        assert_eq!(again, serde_json::from_str::<Value>(line).unwrap(), "round trip of {line}");
    }
    eprintln!(
        "stream: {} lines, {} bytes ({} B/line), {} unknown (open-branch) updates",
        lines.len(),
        bytes,
        bytes / lines.len(),
        other
    );

    let mut group = c.benchmark_group("session_update_stream");
    group.throughput(Throughput::ElementsAndBytes { elements: lines.len() as u64, bytes: bytes as u64 });
    // One iteration is the whole stream (~10 ms); ten samples keep a quick run quick.
    group.sample_size(10);

    group.bench_function("serde_json::Value parse", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(serde_json::from_str::<Value>(black_box(line)).unwrap());
            }
        })
    });
    group.bench_function("serde_json::Value parse + encode", |b| {
        b.iter(|| {
            for line in &lines {
                let v: Value = serde_json::from_str(black_box(line)).unwrap();
                black_box(serde_json::to_string(&v).unwrap());
            }
        })
    });
    // The framing alone (`parse_line` keeps `params` as a raw slice): the share of "typed
    // decode" spent before the params are decoded.
    group.bench_function("framing only (parse_line)", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(jsonrpc::parse_line(black_box(line)).unwrap());
            }
        })
    });
    group.bench_function("typed decode", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(decode(black_box(line)));
            }
        })
    });
    group.bench_function("typed decode + encode", |b| {
        b.iter(|| {
            for line in &lines {
                let n = decode(black_box(line));
                black_box(jsonrpc::notification_line("session/update", &n));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
