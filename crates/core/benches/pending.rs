//! Agent-core costs: inject→deliver cycles, revoke and replace with 1k / 10k / 100k injects
//! pending (the cost must stay flat: no scan by `messageId`), and heap bytes per pending inject.
//!
//! `cargo bench -p acp-inject-core --bench pending`. Everything goes through the JSON line
//! endpoint, as a host would drive it, so each figure includes one line parse and the encoding
//! of the outputs; compare the rows with each other, not with other machines.

// The counting allocator below is the one use of `unsafe` in the crate: a `GlobalAlloc` cannot
// be written without it, and it only forwards to the system allocator.
#![allow(unsafe_code)]

use acp_inject_core::wire::SessionId;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use acp_inject_core::agent::{Agent, AgentConfig, BreakPoint, Output, RuntimeEvent};
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use serde_json::json;

/// Counts live heap bytes, for the bytes-per-pending figure.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn running_agent() -> Agent {
    let inject = serde_json::from_value(json!({
        "modes": ["queue", "steer"], "pending": { "replace": true }, "steerInStream": ["finish"]
    }))
    .expect("capabilities");
    let config = AgentConfig { inject: Some(inject), ..Default::default() };
    let mut a = Agent::new(config).expect("a valid configuration");
    a.create_session(&SessionId("s1".into()), "/work").unwrap();
    a.attach_to_session(&"c1".into(), &SessionId("s1".into())).unwrap();
    // R-INIT-2: nothing but `initialize` is served before it.
    a.handle_line(
        &"c1".into(),
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":2,"info":{"name":"bench","version":"0"}}}"#,
    );
    a.handle_line(&"c1".into(), &prompt_line(0));
    drain(&mut a);
    a
}

/// The outputs so far (the memory store cannot fail to commit).
fn drain(a: &mut Agent) -> Vec<Output> {
    a.drain().expect("the memory store commits")
}

fn prompt_line(id: u64) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": { "sessionId": "s1", "prompt": [{ "type": "text", "text": "start" }] } })
    .to_string()
}

fn inject_line(id: u64, mode: &str) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": "session/inject",
            "params": { "sessionId": "s1", "mode": mode, "content": [{ "type": "text", "text": "check the tests too" }] } })
    .to_string()
}

/// Injects and returns the minted id.
fn inject(a: &mut Agent, id: u64, mode: &str) -> String {
    a.handle_line(&"c1".into(), &inject_line(id, mode));
    let mut minted = String::new();
    for o in drain(a) {
        if let Output::Line { line, .. } = o {
            let v: serde_json::Value = serde_json::from_str(&line).expect("json");
            if let Some(m) = v["result"]["messageId"].as_str() {
                minted = m.to_owned();
            }
        }
    }
    minted
}

fn with_pending(n: usize) -> (Agent, Vec<String>) {
    let mut a = running_agent();
    let ids = (0..n).map(|i| inject(&mut a, 10 + i as u64, "queue")).collect();
    (a, ids)
}

fn cycles(c: &mut Criterion) {
    let mut g = c.benchmark_group("inject_deliver");
    g.throughput(Throughput::Elements(1));
    g.bench_function("steer_then_break_point", |b| {
        let mut a = running_agent();
        let mut id = 1_000_000u64;
        b.iter(|| {
            id += 1;
            a.handle_line(&"c1".into(), &inject_line(id, "steer"));
            a.runtime_event(&SessionId("s1".into()), RuntimeEvent::BreakPoint(BreakPoint::ToolResult)).expect("turn in progress");
            drain(&mut a).len()
        });
    });
    g.finish();
}

fn revoke_replace(c: &mut Criterion) {
    let mut g = c.benchmark_group("pending_ops");
    g.throughput(Throughput::Elements(1));
    for n in [1_000usize, 10_000, 100_000] {
        // inject + revoke keeps the pending count at n.
        g.bench_with_input(BenchmarkId::new("inject_then_revoke", n), &n, |b, &n| {
            let (mut a, _) = with_pending(n);
            let mut id = 10_000_000u64;
            b.iter(|| {
                id += 2;
                let m = inject(&mut a, id, "queue");
                a.handle_line(
                    &"c1".into(),
                    &json!({ "jsonrpc": "2.0", "id": id + 1, "method": "session/revoke_inject",
                             "params": { "sessionId": "s1", "messageId": m } })
                    .to_string(),
                );
                drain(&mut a).len()
            });
        });
        // replace of ids spread over the whole queue.
        g.bench_with_input(BenchmarkId::new("replace", n), &n, |b, &n| {
            let (mut a, ids) = with_pending(n);
            let mut k = 0usize;
            b.iter(|| {
                k = (k + 7919) % ids.len();
                a.handle_line(
                    &"c1".into(),
                    &json!({ "jsonrpc": "2.0", "id": k, "method": "session/replace_inject",
                             "params": { "sessionId": "s1", "messageId": ids[k],
                                         "content": [{ "type": "text", "text": "edited" }] } })
                    .to_string(),
                );
                drain(&mut a).len()
            });
        });
    }
    g.finish();
}

/// Heap bytes one pending inject costs, beyond its content (printed, not timed).
fn bytes_per_pending() {
    for n in [1_000usize, 100_000] {
        let mut a = running_agent();
        let before = LIVE.load(Ordering::Relaxed);
        for i in 0..n {
            inject(&mut a, 10 + i as u64, "queue");
        }
        let after = LIVE.load(Ordering::Relaxed);
        let per = (after - before) as f64 / n as f64;
        // The content: one text block (the Vec's element, the boxed TextContent, the text).
        let content = "check the tests too".len()
            + std::mem::size_of::<acp_inject_core::wire::ContentBlock>()
            + std::mem::size_of::<acp_inject_core::wire::TextContent>();
        println!("bytes per pending inject at {n}: {per:.0} total, of which ~{content} content");
        drop(a);
    }
}

criterion_group!(benches, cycles, revoke_replace);

fn main() {
    bytes_per_pending();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
