//! `acp-inject-agent`: a real ACP v2 agent over stdio, built on the agent server of
//! `acp-inject-transport`, whose "model" is deterministic and scripted: no network, no LLM.
//!
//! Each turn the model streams `--chunks` agent message chunks, then runs `--tools` tool
//! calls (`tool_call_update` pending → in progress → completed, each completion a real
//! `tool_result` break-point where pending steers are delivered; optionally a
//! `session/request_permission` before tool `--permission-on-tool`), then streams a closing
//! chunk and ends the turn. Every step waits `--delay-ms`, so queue, steer, permission holds,
//! cancel and interrupt/finish are observable from a client. The core decides every delivery
//! and serves the whole session surface; this program only plays the model.

use std::sync::Arc;
use std::time::Duration;

use acp_inject_core::agent::{
    AgentConfig, AgentInfo, BreakPoint, PendingInject, PermissionAsk, Policy, QueueDrain, SetupSupport, UserInput,
};
use acp_inject_core::wire::{
    ContentBlock, InjectCapabilities, InjectMode, PendingCapabilities, PermissionOption, PermissionOptionId, PermissionOptionKind,
    RequestPermissionOutcome, SessionId, SteerInStream, StopReason, TextContent, ToolCallContent, ToolCallContentBlock, ToolCallId,
    ToolCallStatus, ToolCallUpdate, ToolKind, Usage,
};
use acp_inject_remote::{listen, BearerToken, ListenOptions, RemoteError, TlsIdentity};
use acp_inject_transport::{AgentRuntime, AgentServer, ServeOptions, TurnContext, TurnEnd};
use clap::{Parser, ValueEnum};

mod heap;

#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

/// A scripted ACP v2 agent with session/inject, over stdio (newline-delimited JSON-RPC) or,
/// with `--listen`, over the network (Streamable HTTP and WebSocket).
#[derive(Parser, Debug, Clone)]
#[command(version, about)]
struct Options {
    /// Tool calls per turn.
    #[arg(long, default_value_t = 2)]
    tools: u32,
    /// Agent message chunks streamed before the tools.
    #[arg(long, default_value_t = 3)]
    chunks: u32,
    /// Pad each agent message chunk after the first to this many bytes (a model that writes
    /// a lot: load tests).
    #[arg(long = "chunk-bytes", default_value_t = 0)]
    chunk_bytes: usize,
    /// Delay before each step of the model, in milliseconds.
    #[arg(long = "delay-ms", default_value_t = 100)]
    delay_ms: u64,
    /// Ask permission before this tool (0-based); off when absent.
    #[arg(long = "permission-on-tool")]
    permission_on_tool: Option<u32>,
    /// How many queued injects open one turn.
    #[arg(long, value_enum, default_value_t = Drain::Batch)]
    drain: Drain,
    /// What a steer does mid model stream (advertised as the only value).
    #[arg(long = "steer-in-stream", value_enum, default_value_t = InStream::Finish)]
    steer_in_stream: InStream,
    /// Keep sessions in a store, so they outlive the process: a SQLite file's path, which the
    /// agent processes of this machine share (each serves the sessions it holds a lease on;
    /// `sqlite:PATH?acp_host=NAME&acp_lease_ms=N` names this process and sets its lease,
    /// default 10000 ms; `sqlite:PATH?acp_mode=exclusive` holds the file alone), or a
    /// PostgreSQL URL shared by several agent hosts
    /// (`postgres://USER@HOST/DB?acp_host=NAME&acp_lease_ms=N`; each host its own NAME,
    /// default the machine's host name; lease default 10000 ms).
    #[arg(long, value_name = "PATH|URL")]
    store: Option<String>,
    /// Serve over the network instead of stdio: the Streamable HTTP & WebSocket transport on
    /// `http://HOST:PORT/acp` (port 0 picks a free one). The URL is printed on stdout.
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// With `--listen`: require `Authorization: Bearer <token>`, the token read from this
    /// environment variable (required to listen on anything but loopback).
    #[arg(long = "token-env", value_name = "VAR", requires = "listen")]
    token_env: Option<String>,
    /// With `--listen`: principal NAME's bearer token, read from the environment variable VAR
    /// (repeatable): each client sees the sessions its principal created and no other; with
    /// `--token-env` beside them, that shared token sees the sessions created without one.
    #[arg(long = "principal-token-env", value_name = "NAME=VAR", requires = "listen")]
    principal_token_env: Vec<String>,
    /// With `--listen`: a browser origin allowed to call (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
    allow_origin: Vec<String>,
    /// With `--listen`: serve TLS (`https://`, `wss://`; HTTP/2 by ALPN) with this certificate
    /// chain (PEM).
    #[arg(long = "tls-cert", value_name = "PEM", requires_all = ["listen", "tls_key"])]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key of `--tls-cert` (PEM).
    #[arg(long = "tls-key", value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// With `--listen`: the process's memory budget (its heap, counted by the allocator), e.g.
    /// `512MiB`, a ceiling: from half of it, new connections and large messages are
    /// refused with 503 (close 1013 over WebSocket) and the connections holding unread output
    /// are ended (their clients resume later).
    #[arg(long = "max-memory", value_name = "SIZE", requires = "listen", value_parser = heap::parse_size)]
    max_memory: Option<usize>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Drain {
    Batch,
    OnePerTurn,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum InStream {
    Finish,
    Interrupt,
}

struct Scripted {
    opts: Options,
}

fn text(t: String) -> ContentBlock {
    ContentBlock::Text(Box::new(TextContent::new(t)))
}

fn summary(inputs: &[UserInput]) -> Vec<String> {
    inputs
        .iter()
        .map(|u| {
            let parts: Vec<String> = u
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(t) => t.text.clone(),
                    other => format!(
                        "[{}]",
                        serde_json::to_value(other).ok().and_then(|v| v["type"].as_str().map(str::to_owned)).unwrap_or_default()
                    ),
                })
                .collect();
            format!("\"{}\"", parts.join(" "))
        })
        .collect()
}

fn tool_call(id: &ToolCallId, status: ToolCallStatus) -> ToolCallUpdate {
    ToolCallUpdate::new(id.clone()).status(status)
}

/// The turn was cancelled while the model waited.
struct Cancelled;

impl Scripted {
    /// Waits one step; a cancel ends the wait early. A steer's interrupt request does not: the
    /// stream loop checks it between chunks.
    async fn step(&self, turn: &TurnContext) -> Result<(), Cancelled> {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(self.opts.delay_ms)) => Ok(()),
            () = turn.cancelled() => Err(Cancelled),
        }
    }

    async fn turn(&self, turn: &TurnContext, input: Vec<UserInput>) -> Result<TurnEnd, Cancelled> {
        let mut heard = summary(&input);
        let message = turn.new_message_id();
        let send = |t: String| {
            // The core refuses an update only once the session is closed; the turn then ends.
            let _ = turn.send_text(&message, &t);
        };
        let noted = |heard: &mut Vec<String>, delivered: Vec<UserInput>| {
            let new = summary(&delivered);
            if !new.is_empty() {
                let _ = turn.send_text(&message, &format!("(noted: {}) ", new.join("; ")));
                heard.extend(new);
            }
        };

        let _ = turn.stream_started();
        for i in 0..self.opts.chunks {
            self.step(turn).await?;
            if turn.interrupt_requested() {
                // Cut the stream; the steer is delivered at the model-step break-point.
                let _ = turn.stream_finished();
                noted(&mut heard, turn.break_point(BreakPoint::ModelStep).unwrap_or_default());
                let _ = turn.stream_started();
            }
            send(if i == 0 {
                format!("Working on: {}. ", heard.join("; "))
            } else {
                let mut step = format!("step {} of my plan. ", i + 1);
                let pad = self.opts.chunk_bytes.saturating_sub(step.len());
                step.extend(std::iter::repeat_n('.', pad));
                step
            });
        }
        let _ = turn.stream_finished();

        for tool in 0..self.opts.tools {
            self.step(turn).await?;
            let id = ToolCallId(format!("call_{}_{tool}", message.0));
            let mut pending = tool_call(&id, ToolCallStatus::Pending);
            pending.title = Some(format!("Run step {}", tool + 1));
            pending.kind = Some(ToolKind::Execute);
            let _ = turn.send(pending.into());
            if self.opts.permission_on_tool == Some(tool) {
                let options = vec![
                    PermissionOption::new(PermissionOptionId("allow".into()), "Allow", PermissionOptionKind::AllowOnce),
                    PermissionOption::new(PermissionOptionId("reject".into()), "Reject", PermissionOptionKind::RejectOnce),
                ];
                // The subject names the tool call (a v1 client gets it as the request's `toolCall`).
                let subject = PermissionAsk::tool_call_subject(&ToolCallUpdate::new(id.clone()));
                let outcome = turn.request_permission(&format!("Allow step {}?", tool + 1), None, options, Some(subject)).await;
                let allowed = matches!(&outcome, Ok(RequestPermissionOutcome::Selected(s)) if s.option_id.0 == "allow");
                if turn.is_cancelled() {
                    return Err(Cancelled);
                }
                if !allowed {
                    let _ = turn.send(tool_call(&id, ToolCallStatus::Failed).into());
                    continue;
                }
            }
            let _ = turn.send(tool_call(&id, ToolCallStatus::InProgress).into());
            self.step(turn).await?;
            let mut done = tool_call(&id, ToolCallStatus::Completed);
            done.content =
                Some(vec![ToolCallContent::Content(Box::new(ToolCallContentBlock::new(text(format!("step {} done", tool + 1)))))]);
            let _ = turn.send(done.into());
            noted(&mut heard, turn.break_point(BreakPoint::ToolResult).unwrap_or_default());
        }

        self.step(turn).await?;
        send(format!("Done ({} message(s) handled this turn).", heard.len()));
        let n = heard.len() as u64;
        let usage = Usage::new(100 * n + 50, 100 * n, 50);
        Ok(TurnEnd { stop_reason: StopReason::EndTurn, usage: Some(usage), error: None })
    }
}

#[async_trait::async_trait]
impl AgentRuntime for Scripted {
    async fn run_turn(&self, turn: TurnContext, input: Vec<UserInput>) -> TurnEnd {
        self.turn(&turn, input).await.unwrap_or_else(|Cancelled| TurnEnd::cancelled())
    }

    async fn session_closed(&self, session: &SessionId, dropped: Vec<PendingInject>) {
        for d in dropped {
            let content = serde_json::to_string(&d.content).unwrap_or_default();
            eprintln!("acp-inject-agent: session {session} closed with {} pending ({:?}): {content}", d.message_id, d.mode);
        }
    }
}

fn config(opts: &Options) -> AgentConfig {
    let in_stream = match opts.steer_in_stream {
        InStream::Finish => SteerInStream::Finish,
        InStream::Interrupt => SteerInStream::Interrupt,
    };
    let inject = InjectCapabilities::new(vec![InjectMode::Queue, InjectMode::Steer])
        .pending(PendingCapabilities::new().replace(true))
        .steer_in_stream(vec![in_stream]);
    let queue_drain = match opts.drain {
        Drain::Batch => QueueDrain::Batch,
        Drain::OnePerTurn => QueueDrain::OnePerTurn,
    };
    AgentConfig {
        inject: Some(inject),
        policy: Policy { queue_drain, steer_in_stream: in_stream, ..Policy::default() },
        info: AgentInfo { name: "acp-inject-reference-agent".into(), version: env!("CARGO_PKG_VERSION").into() },
        setup: SetupSupport { mcp_stdio: true, mcp_http: true, additional_directories: true },
        auth: Default::default(),
        extensions: Vec::new(),
    }
}

fn main() -> std::process::ExitCode {
    let opts = Options::parse();
    // A parent may start this process with signals blocked (a spawned process inherits the
    // mask: Foundation's `Process` on Linux does this), and a blocked SIGTERM would never stop
    // `--listen`. Unblocked here, before the runtime's threads inherit the mask.
    #[cfg(unix)]
    {
        use nix::sys::signal::{SigSet, Signal};
        let mut stop = SigSet::empty();
        stop.add(Signal::SIGINT);
        stop.add(Signal::SIGTERM);
        let _ = stop.thread_unblock();
    }
    if opts.max_memory.is_some() {
        heap::one_arena();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("acp-inject-agent: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let remember_ids = config(&opts).policy.remember_ids;
    let store = match &opts.store {
        Some(location) => match acp_inject_store::open(location, remember_ids) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("acp-inject-agent: cannot open the store {}: {e}", acp_inject_store::shown(location));
                return std::process::ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let auth = match authentication(&opts) {
        Ok(auth) => auth,
        Err(e) => {
            eprintln!("acp-inject-agent: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result: Result<(), Box<dyn std::error::Error>> = runtime.block_on(async {
        let server = AgentServer::new(Arc::new(Scripted { opts: opts.clone() }), ServeOptions { config: config(&opts), store })?;
        match &opts.listen {
            None => Ok(server.run_stdio().await?),
            Some(addr) => {
                let tls = match (&opts.tls_cert, &opts.tls_key) {
                    (Some(cert), Some(key)) => {
                        let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
                        Some(TlsIdentity::from_pem(&read(cert)?, &read(key)?)?)
                    }
                    _ => None,
                };
                let mut options = ListenOptions { auth, allowed_origins: opts.allow_origin.clone(), tls, ..Default::default() };
                if let Some(max) = opts.max_memory {
                    options.limits.max_memory = max;
                    options.limits.memory_gauge = Some(heap::in_use);
                }
                let listener = listen(server.clone(), addr, options).await.map_err(|e| match e {
                    RemoteError::Unauthenticated { .. } => {
                        format!("{e}\n(pass --token-env VAR, with the token in the environment variable VAR)").into()
                    }
                    other => Box::<dyn std::error::Error>::from(other),
                })?;
                let url = listener.url()?;
                println!("{url}");
                let ws = url.replacen("http", "ws", 1);
                eprintln!("acp-inject-agent: serving ACP on {url} and {ws}");
                // A store failure (on a shared store: a session taken over by another host
                // while this one was paused) ends the host; its clients resume elsewhere.
                let stopped = server.clone();
                let failure = std::sync::Arc::new(std::sync::Mutex::new(None));
                let seen = failure.clone();
                listener
                    .serve(async move {
                        tokio::select! {
                            () = stop_signal() => {}
                            reason = stopped.stopped() => {
                                *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason);
                            }
                        }
                    })
                    .await?;
                server.shutdown().await;
                let failure = failure.lock().unwrap_or_else(|e| e.into_inner()).take();
                match failure {
                    Some(reason) => Err(format!("stopped serving: {reason}").into()),
                    None => Ok(()),
                }
            }
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("acp-inject-agent: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// SIGINT or SIGTERM (Ctrl-C elsewhere).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The listener's authentication from `--token-env` and `--principal-token-env`, tokens read
/// from the environment.
fn authentication(opts: &Options) -> Result<Option<Arc<dyn acp_inject_remote::Authorize>>, String> {
    let read = |flag: &str, var: &str| std::env::var(var).map_err(|_| format!("{flag} {var}: the environment variable is unset"));
    if opts.principal_token_env.is_empty() {
        return match &opts.token_env {
            Some(var) => {
                let token = BearerToken::new(read("--token-env", var)?).map_err(|e| format!("--token-env {var}: {e}"))?;
                Ok(Some(Arc::new(token)))
            }
            None => Ok(None),
        };
    }
    let mut tokens = acp_inject_remote::BearerTokens::new();
    for given in &opts.principal_token_env {
        let Some((name, var)) = given.split_once('=') else {
            return Err(format!("--principal-token-env {given}: expected NAME=VAR"));
        };
        let flag = format!("--principal-token-env {given}:");
        tokens = tokens.principal(name, read("--principal-token-env", var)?).map_err(|e| format!("{flag} {e}"))?;
    }
    if let Some(var) = &opts.token_env {
        tokens = tokens.shared(read("--token-env", var)?).map_err(|e| format!("--token-env {var}: {e}"))?;
    }
    Ok(Some(Arc::new(tokens)))
}
