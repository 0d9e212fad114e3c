//! The SQLite store against the in-memory one, through the agent as a host drives it.
//!
//! - `accept`: inject accepts per second, each drained alone (one commit, one WAL fsync each)
//!   and 100 per drain (one commit per 100), on `MemoryStore`, on `SqliteStore` in memory (the
//!   store's CPU cost) and on `SqliteStore` on a file (durable).
//! - `history`: the cost of one operation (an accept, a history append) on a session with 10
//!   and with 10,000 history entries. It should be flat: every change is an append or a keyed
//!   update.
//!
//! The database files go to a temporary directory under `ACP_STORE_BENCH_DIR` (default: the
//! system's temporary directory). Put it on the disk you deploy on: the fsync is most of the
//! durable cost, and a tmpfs makes it free.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use acp_inject_core::agent::{Agent, AgentConfig, MemoryStore, RuntimeEvent, Store};
use acp_inject_core::wire::SessionUpdate;
use acp_inject_store::SqliteStore;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::json;

fn config() -> AgentConfig {
    let inject = serde_json::from_value(json!({ "modes": ["queue", "steer"], "steerInStream": ["finish"] })).unwrap();
    AgentConfig { inject: Some(inject), ..Default::default() }
}

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("ACP_STORE_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(PathBuf::from(dir)).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

/// The session `sess_1` in a running turn, so injects stay pending.
fn running_agent(store: Box<dyn Store>) -> Agent {
    let mut a = Agent::with_store(config(), store).unwrap();
    // R-INIT-2: nothing but `initialize` is served before it.
    a.handle_line(
        "c1",
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":2,"info":{"name":"bench","version":"0"}}}"#,
    );
    a.handle_line("c1", r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work"}}"#);
    a.handle_line(
        "c1",
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"go"}]}}"#,
    );
    a.drain().unwrap();
    a
}

const INJECT: &str = r#"{"jsonrpc":"2.0","id":3,"method":"session/inject","params":{"sessionId":"sess_1","mode":"queue","content":[{"type":"text","text":"also check the tests"}]}}"#;

fn chunk() -> RuntimeEvent {
    let update: SessionUpdate = serde_json::from_value(json!({
        "sessionUpdate": "agent_message_chunk", "messageId": "agent_1", "content": { "type": "text", "text": "some streamed words" }
    }))
    .unwrap();
    RuntimeEvent::Update(update)
}

#[derive(Clone, Copy)]
enum Backend {
    /// `MemoryStore`: nothing durable.
    Memory,
    /// `SqliteStore` on a file: WAL, one fsync per commit.
    Sqlite,
    /// `SqliteStore` in memory: the store's own CPU cost, without the file and the fsync.
    SqliteInMemory,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Sqlite => "sqlite",
            Backend::SqliteInMemory => "sqlite-in-memory",
        }
    }

    /// A fresh agent (and the directory its database lives in, kept until dropped).
    fn agent(self) -> (Agent, Option<tempfile::TempDir>) {
        match self {
            Backend::Memory => (running_agent(Box::new(MemoryStore::new())), None),
            Backend::Sqlite => {
                let dir = bench_dir();
                let store = SqliteStore::open(dir.path().join("agent.sqlite3")).unwrap();
                (running_agent(Box::new(store)), Some(dir))
            }
            Backend::SqliteInMemory => (running_agent(Box::new(SqliteStore::open_in_memory().unwrap())), None),
        }
    }
}

fn accept(c: &mut Criterion) {
    let mut g = c.benchmark_group("accept");
    g.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    for batch in [1u64, 100] {
        g.throughput(Throughput::Elements(batch));
        for backend in [Backend::Memory, Backend::SqliteInMemory, Backend::Sqlite] {
            let id = BenchmarkId::new(backend.name(), format!("{batch}-per-drain"));
            // A fresh agent per sample, so the pending queue does not grow across samples.
            g.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let (mut a, _dir) = backend.agent();
                    let start = Instant::now();
                    for _ in 0..iters {
                        for _ in 0..batch {
                            a.handle_line("c1", INJECT);
                        }
                        a.drain().unwrap();
                    }
                    start.elapsed()
                })
            });
        }
    }
    g.finish();
}

fn history(c: &mut Criterion) {
    let mut g = c.benchmark_group("history");
    g.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    for backend in [Backend::SqliteInMemory, Backend::Sqlite] {
        for entries in [10usize, 10_000] {
            let (mut a, _dir) = backend.agent();
            for _ in 0..entries.saturating_sub(1) {
                a.runtime_event("sess_1", chunk()).unwrap();
            }
            a.drain().unwrap();
            assert_eq!(a.history("sess_1").unwrap().len(), entries, "the prompt plus the chunks");
            let name = |op: &str| BenchmarkId::new(format!("{}/{op}", backend.name()), entries);
            g.bench_function(name("inject+drain"), |b| {
                b.iter(|| {
                    a.handle_line("c1", INJECT);
                    a.drain().unwrap()
                })
            });
            g.bench_function(name("append+drain"), |b| {
                b.iter(|| {
                    a.runtime_event("sess_1", chunk()).unwrap();
                    a.drain().unwrap()
                })
            });
            g.bench_function(name("100-injects+drain"), |b| {
                b.iter(|| {
                    for _ in 0..100 {
                        a.handle_line("c1", INJECT);
                    }
                    a.drain().unwrap()
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, accept, history);
criterion_main!(benches);
