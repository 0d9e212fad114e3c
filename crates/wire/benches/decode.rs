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

use acp_inject_wire::jsonrpc::{self, Incoming};
use acp_inject_wire::{SessionUpdate, UpdateSessionNotification};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::Value;

const LINES: usize = 12_000;

mod stream;
use stream::stream;

/// Typed decode of one line, the way the client mirror reads it (one pass for updates).
fn decode(line: &str) -> UpdateSessionNotification {
    match jsonrpc::parse_agent_line(line).expect("a message") {
        jsonrpc::AgentLine::Update(u) => u,
        jsonrpc::AgentLine::Other(Incoming::Notification { params, .. }) => jsonrpc::decode_params(params).expect("decodes"),
        other => panic!("not a notification: {other:?}"),
    }
}

fn bench(c: &mut Criterion) {
    let lines = stream(LINES);
    let bytes: usize = lines.iter().map(String::len).sum();

    // The benchmarks below must measure successful decodes: check the stream once.
    let mut other = 0;
    for line in &lines {
        let n = decode(line);
        other += matches!(n.update, SessionUpdate::Other(_)) as usize;
        let again: Value = serde_json::from_str(&jsonrpc::notification_line(&n)).unwrap();
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
                black_box(jsonrpc::notification_line(&n));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
