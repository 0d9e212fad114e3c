//! The SQLite and PostgreSQL stores against the in-memory one, through the agent as a host
//! drives it.
//!
//! - `accept`: inject accepts per second, each drained alone (one commit, one WAL fsync each)
//!   and 100 per drain (one commit per 100), on `MemoryStore`, on `SqliteStore` in memory (the
//!   store's CPU cost), on `SqliteStore` on a file (durable; held by one process, and shared:
//!   `sqlite-shared`, which also checks and renews the session's lease in every commit) and,
//!   when `ACP_INJECT_POSTGRES_URL` names a server, on `PgStore` (durable: PostgreSQL commits
//!   with its WAL flushed).
//! - `history`: the cost of one operation (an accept, a history append) on a session with 10
//!   and with 10,000 history entries. It should be flat: every change is an append or a keyed
//!   update.
//!
//! The database files go to a temporary directory under `ACP_STORE_BENCH_DIR` (default: the
//! system's temporary directory). Put it on the disk you deploy on: the fsync is most of the
//! durable cost, and a tmpfs makes it free. `cargo xtask bench` starts a PostgreSQL server of
//! its own (its cluster in the cache directory, on the same disk).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use acp_inject_core::agent::{Agent, AgentConfig, MemoryStore, Output, RuntimeEvent, Store};
use acp_inject_core::wire::SessionUpdate;
use acp_inject_store::postgres::{PgOptions, PgStore};
use acp_inject_store::{SqliteOptions, SqliteStore};
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

/// An agent with one session in a running turn (so injects stay pending), and that session.
struct Running {
    agent: Agent,
    session: String,
    /// A queue inject into the session.
    inject: String,
}

fn running_agent(store: Box<dyn Store>) -> Running {
    let mut a = Agent::with_store(config(), store).unwrap();
    // R-INIT-2: nothing but `initialize` is served before it.
    a.handle_line(
        &"c1".into(),
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":2,"info":{"name":"bench","version":"0"}}}"#,
    );
    a.handle_line(&"c1".into(), r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work"}}"#);
    let out = a.drain().unwrap();
    // A shared store's ids carry the host's name (`sess_<host>-1`): read it from the answer.
    let session = out
        .iter()
        .find_map(|o| match o {
            Output::Line { line, .. } => {
                serde_json::from_str::<serde_json::Value>(line).ok()?["result"]["sessionId"].as_str().map(str::to_owned)
            }
            Output::Action { .. } | Output::Call { .. } => None,
        })
        .expect("session/new answered");
    let prompt = json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":session,"prompt":[{"type":"text","text":"go"}]}});
    a.handle_line(&"c1".into(), &prompt.to_string());
    a.drain().unwrap();
    let inject = json!({"jsonrpc":"2.0","id":3,"method":"session/inject","params":{"sessionId":session,"mode":"queue","content":[{"type":"text","text":"also check the tests"}]}});
    Running { agent: a, session, inject: inject.to_string() }
}

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
    /// `SqliteStore` on a file shared with other processes (none here): the same, with leases.
    SqliteShared,
    /// `SqliteStore` in memory: the store's own CPU cost, without the file and the fsync.
    SqliteInMemory,
    /// `PgStore` on a fresh database of the server `ACP_INJECT_POSTGRES_URL` names.
    Postgres,
}

/// The backends to measure: PostgreSQL too when a server is named.
fn backends(all: &[Backend]) -> Vec<Backend> {
    all.iter().copied().filter(|b| !matches!(b, Backend::Postgres) || std::env::var_os("ACP_INJECT_POSTGRES_URL").is_some()).collect()
}

/// A fresh database on the server of `ACP_INJECT_POSTGRES_URL`, named after a counter.
fn fresh_database() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let url = std::env::var("ACP_INJECT_POSTGRES_URL").expect("ACP_INJECT_POSTGRES_URL");
    let name = format!("acp_bench_{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect to ACP_INJECT_POSTGRES_URL");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).expect("drop a database");
    admin.batch_execute(&format!("CREATE DATABASE {name}")).expect("create a database");
    let base = url.rsplit_once('/').map_or(url.as_str(), |(base, _)| base);
    format!("{base}/{name}")
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Sqlite => "sqlite",
            Backend::SqliteShared => "sqlite-shared",
            Backend::SqliteInMemory => "sqlite-in-memory",
            Backend::Postgres => "postgres",
        }
    }

    /// A fresh agent (and the directory its database lives in, kept until dropped).
    fn agent(self) -> (Running, Option<tempfile::TempDir>) {
        match self {
            Backend::Memory => (running_agent(Box::new(MemoryStore::new())), None),
            Backend::Sqlite => {
                let dir = bench_dir();
                let store = SqliteStore::open(dir.path().join("agent.sqlite3")).unwrap();
                (running_agent(Box::new(store)), Some(dir))
            }
            Backend::SqliteShared => {
                let dir = bench_dir();
                let store = SqliteStore::open_shared(dir.path().join("agent.sqlite3"), SqliteOptions::default()).unwrap();
                (running_agent(Box::new(store)), Some(dir))
            }
            Backend::SqliteInMemory => (running_agent(Box::new(SqliteStore::open_in_memory().unwrap())), None),
            Backend::Postgres => {
                let store = PgStore::connect(&fresh_database(), PgOptions::new("bench")).unwrap();
                (running_agent(Box::new(store)), None)
            }
        }
    }
}

fn accept(c: &mut Criterion) {
    let mut g = c.benchmark_group("accept");
    g.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    for batch in [1u64, 100] {
        g.throughput(Throughput::Elements(batch));
        for backend in backends(&[Backend::Memory, Backend::SqliteInMemory, Backend::Sqlite, Backend::SqliteShared, Backend::Postgres])
        {
            let id = BenchmarkId::new(backend.name(), format!("{batch}-per-drain"));
            // A fresh agent per sample, so the pending queue does not grow across samples.
            g.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let (mut r, _dir) = backend.agent();
                    let start = Instant::now();
                    for _ in 0..iters {
                        for _ in 0..batch {
                            r.agent.handle_line(&"c1".into(), &r.inject);
                        }
                        r.agent.drain().unwrap();
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
    for backend in backends(&[Backend::SqliteInMemory, Backend::Sqlite, Backend::SqliteShared, Backend::Postgres]) {
        for entries in [10usize, 10_000] {
            let (r, _dir) = backend.agent();
            let Running { agent: mut a, session, inject } = r;
            let session = acp_inject_core::wire::SessionId(session);
            for _ in 0..entries.saturating_sub(1) {
                a.runtime_event(&session, chunk()).unwrap();
            }
            a.drain().unwrap();
            assert_eq!(a.history(&session).unwrap().len(), entries, "the prompt plus the chunks");
            let name = |op: &str| BenchmarkId::new(format!("{}/{op}", backend.name()), entries);
            g.bench_function(name("inject+drain"), |b| {
                b.iter(|| {
                    a.handle_line(&"c1".into(), &inject);
                    a.drain().unwrap()
                })
            });
            g.bench_function(name("append+drain"), |b| {
                b.iter(|| {
                    a.runtime_event(&session, chunk()).unwrap();
                    a.drain().unwrap()
                })
            });
            g.bench_function(name("100-injects+drain"), |b| {
                b.iter(|| {
                    for _ in 0..100 {
                        a.handle_line(&"c1".into(), &inject);
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
