//! The network listener's request handling, in process: any method, path, headers and body
//! on its one endpoint, against one agent whose connections and sessions pile up across
//! inputs. Every request is answered (no panic, no hang) with a status the transport
//! documents; without the token nothing gets past authentication but a browser's preflight;
//! a `POST` whose body is over the limit is 413. Headers the fuzzer may reach: the
//! connection and session ids (taken from earlier answers' shapes), `Last-Event-ID`,
//! `Accept`, `Content-Type`, `Origin`, `Upgrade`.
#![no_main]

use std::sync::{Arc, OnceLock};

use acp_inject_core::agent::UserInput;
use acp_inject_remote::{fuzzing, BearerToken, Limits, ListenOptions};
use acp_inject_transport::{AgentRuntime, TurnContext, TurnEnd};
use libfuzzer_sys::fuzz_target;

const TOKEN: &str = "fuzz-token-0123456789abcdef";
const ORIGIN: &str = "https://app.example";
const MAX_BODY: usize = 512;

/// Turns end at once.
struct Quiet;

#[async_trait::async_trait]
impl AgentRuntime for Quiet {
    async fn run_turn(&self, _turn: TurnContext, _input: Vec<UserInput>) -> TurnEnd {
        TurnEnd::end_turn()
    }
}

fn server() -> &'static fuzzing::Server {
    static SERVER: OnceLock<fuzzing::Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let options = ListenOptions {
            auth: Some(Arc::new(BearerToken::new(TOKEN).expect("a strong token"))),
            allowed_origins: vec![ORIGIN.to_owned()],
            limits: Limits { max_message_bytes: MAX_BODY, ..Limits::default() },
            ..ListenOptions::default()
        };
        fuzzing::Server::new(Arc::new(Quiet), options, false)
    })
}

/// Every status the transport's documentation names, and axum's own for a path it does not
/// route (404) and a WebSocket upgrade it refuses (426 for a version it does not speak).
const DOCUMENTED: [u16; 22] =
    [200, 202, 204, 400, 401, 403, 404, 405, 406, 408, 409, 410, 413, 415, 421, 426, 429, 431, 500, 501, 503, 101];

const METHODS: [&[u8]; 8] = [b"GET", b"POST", b"DELETE", b"OPTIONS", b"PUT", b"CONNECT", b"PATCH", b"HEAD"];

fuzz_target!(|data: &[u8]| {
    let [method, flags, rest @ ..] = data else { return };
    let method = METHODS[usize::from(*method) % METHODS.len()];
    let authorized = flags & 1 != 0;
    let path = if flags & 2 != 0 { "/acp" } else { "/elsewhere" };
    // The rest: header lines `name: value` up to an empty line, then the body.
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&rest[..at], rest[at + 2..].to_vec()),
        None => (rest, Vec::new()),
    };
    let mut headers: Vec<(Vec<u8>, Vec<u8>)> = head
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let at = line.iter().position(|b| *b == b':')?;
            Some((line[..at].to_ascii_lowercase(), line[at + 1..].trim_ascii().to_vec()))
        })
        .filter(|(name, _)| name.as_slice() != b"authorization")
        .collect();
    if authorized {
        headers.push((b"authorization".to_vec(), format!("Bearer {TOKEN}").into_bytes()));
    }
    if flags & 4 != 0 {
        headers.push((b"content-type".to_vec(), b"application/json".to_vec()));
    }
    let has = |name: &[u8]| headers.iter().any(|(n, _)| n == name);
    let origin = has(b"origin");
    let body_len = body.len();
    let Some(status) = server().request(method, path, &headers, body) else { return };
    assert!(DOCUMENTED.contains(&status), "{} {path} answered {status}", String::from_utf8_lossy(method));
    if path == "/acp" && !authorized && !origin && method != b"OPTIONS" {
        assert_eq!(status, 401, "{} without the token", String::from_utf8_lossy(method));
    }
    // (Below libFuzzer's default input cap, 4,096 bytes, so the fuzzer reaches it.)
    let one_content_type = headers.iter().filter(|(n, _)| n == b"content-type").count() == 1;
    if path == "/acp" && authorized && !origin && method == b"POST" && body_len > MAX_BODY && flags & 4 != 0 && one_content_type {
        assert_eq!(status, 413, "a body of {body_len} bytes");
    }
});
