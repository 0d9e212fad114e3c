//! The memory budget: a connection that stops reading is shed once the server is past its
//! budget, one that reads keeps being served, and every byte comes back to the budget.

use std::sync::Arc;
use std::time::Duration;

use acp_inject_core::agent::{AgentConfig, UserInput};
use acp_inject_transport::budget::SHED_ABOVE;
use acp_inject_transport::{AgentRuntime, AgentServer, Lines, MemoryBudget, ServeOptions, TurnContext, TurnEnd};

/// Streams 64 chunks of 4 KiB a turn: 256 KiB of output, more than [`SHED_ABOVE`]. In the
/// session `paced` names, each chunk waits for a permit of `read` (the client that reads says
/// it read one), so how far the reader falls behind does not depend on the machine's load.
struct Talkative {
    paced: std::sync::Mutex<Option<String>>,
    read: tokio::sync::Semaphore,
}

#[async_trait::async_trait]
impl AgentRuntime for Talkative {
    async fn run_turn(&self, turn: TurnContext, _input: Vec<UserInput>) -> TurnEnd {
        let reply = turn.new_message_id();
        let chunk = "x".repeat(4096);
        for _ in 0..64 {
            let paced = self.paced.lock().unwrap().as_deref() == Some(turn.session_id().0.as_str());
            if paced {
                self.read.acquire().await.expect("open").forget();
            }
            if turn.send_text(&reply, &chunk).is_err() {
                break;
            }
            tokio::task::yield_now().await;
        }
        TurnEnd::end_turn()
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{},"info":{"name":"t","version":"1"}}}"#;

fn new_session(id: u32) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"/home/dev","mcpServers":[]}}}}"#)
}

fn prompt(id: u32, session: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"go"}}]}}}}"#
    )
}

/// Reads lines until one holds `needle`; the lines read.
async fn read_until(lines: &mut Lines, needle: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(line) = lines.next().await {
            let hit = line.contains(needle);
            seen.push(line);
            if hit {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "no line with {needle:?} in {seen:?}");
    seen
}

fn session_id(lines: &[String]) -> String {
    let answer = lines.iter().find(|l| l.contains("\"sessionId\"")).expect("the session/new answer");
    let v: serde_json::Value = serde_json::from_str(answer).unwrap();
    v["result"]["sessionId"].as_str().expect("a session id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_budget_the_connection_that_does_not_read_is_shed_and_the_reader_goes_on() {
    let talkative = Arc::new(Talkative { paced: std::sync::Mutex::new(None), read: tokio::sync::Semaphore::new(0) });
    let agent = AgentServer::new(
        Arc::clone(&talkative) as Arc<dyn AgentRuntime>,
        ServeOptions { config: AgentConfig::default(), store: None },
    )
    .unwrap();
    let budget = MemoryBudget::new(128 * 1024);
    agent.limit_memory(Arc::clone(&budget));
    let limit = 64 * 1024 * 1024;
    let (reader, mut reader_lines) = agent.connect("reader".into(), limit);
    let (idle, mut idle_lines) = agent.connect("idle".into(), limit);
    for (link, lines) in [(&reader, &mut reader_lines), (&idle, &mut idle_lines)] {
        link.receive_message(INIT.as_bytes()).unwrap();
        read_until(lines, r#""id":0"#).await;
        link.receive_message(new_session(1).as_bytes()).unwrap();
    }
    let reader_session = session_id(&read_until(&mut reader_lines, r#""id":1"#).await);
    let idle_session = session_id(&read_until(&mut idle_lines, r#""id":1"#).await);

    // The idle client's turn first: it queues its 256 KiB unread, past the 128 KiB budget.
    idle.receive_message(prompt(2, &idle_session).as_bytes()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !idle_lines.shed() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the connection holding the most unread output is shed");
    assert!(idle_lines.next().await.is_none(), "a shed connection gets no more lines");
    assert!(!idle_lines.overflowed(), "shed for the budget, not for its own limit");
    assert!(budget.held() < SHED_ABOVE + 8 * 1024, "the shed queue was not kept: {} bytes held", budget.held());

    // The reader's turn streams its 256 KiB too, at most two chunks ahead of its reading: it
    // never holds much, and is served whole.
    *talkative.paced.lock().unwrap() = Some(reader_session.clone());
    talkative.read.add_permits(2);
    reader.receive_message(prompt(2, &reader_session).as_bytes()).unwrap();
    let mut seen = Vec::new();
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(line) = reader_lines.next().await {
            if line.contains("agent_message_chunk") {
                talkative.read.add_permits(1);
            }
            let idle = line.contains(r#""state":"idle""#);
            seen.push(line);
            if idle {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(done, Ok(true), "the reader's turn reached its end: {} lines", seen.len());
    let chunks = seen.iter().filter(|l| l.contains("agent_message_chunk")).count();
    assert_eq!(chunks, 64, "every chunk reached the client that reads");
    assert!(!reader_lines.shed());

    drop(idle_lines);
    assert_eq!(budget.held(), reader_lines.queued(), "every byte not queued for the reader came back to the budget");
    agent.shutdown().await;
}
