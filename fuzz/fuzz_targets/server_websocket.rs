//! The network listener's WebSocket handling, in process: after an upgrade (with the token, or
//! without it), any sequence of frames, made from the input as a client writes them (masked,
//! any opcode, reserved bits, fragmentation, control frames, lengths in all three forms, text
//! that is JSON-RPC or not, UTF-8 or not) or as raw bytes, then the client's end of the
//! socket. The server must: answer the upgrade 101 with the token and 401 without it; write
//! only whole, unmasked frames; close, when it closes with a code, with one the transport
//! documents; and end the connection once the client's bytes end (no hang, no panic). Each
//! input gets an agent of its own.
#![no_main]

use std::sync::{Arc, OnceLock};

use acp_inject_core::agent::UserInput;
use acp_inject_remote::{fuzzing, BearerToken, Limits, ListenOptions};
use acp_inject_transport::{AgentRuntime, TurnContext, TurnEnd};
use libfuzzer_sys::fuzz_target;

const TOKEN: &str = "fuzz-token-0123456789abcdef";
const MAX_MESSAGE: usize = 1024;

/// Turns stream one chunk and end.
struct Brief;

#[async_trait::async_trait]
impl AgentRuntime for Brief {
    async fn run_turn(&self, turn: TurnContext, _input: Vec<UserInput>) -> TurnEnd {
        let id = turn.new_message_id();
        let _ = turn.send_text(&id, "ok");
        TurnEnd::end_turn()
    }
}

/// A fresh agent and listener for each input, so a failing input fails again alone.
fn server() -> fuzzing::Server {
    static AUTH: OnceLock<Arc<BearerToken>> = OnceLock::new();
    let auth = AUTH.get_or_init(|| Arc::new(BearerToken::new(TOKEN).expect("a strong token")));
    let options = ListenOptions {
        auth: Some(Arc::clone(auth) as Arc<dyn acp_inject_remote::Authorize>),
        limits: Limits { max_message_bytes: MAX_MESSAGE, ..Limits::default() },
        ..ListenOptions::default()
    };
    fuzzing::Server::new(Arc::new(Brief), options, true)
}

/// Close codes the transport documents (RFC 6455 7.4.1 and the listener's own).
const DOCUMENTED: [u16; 8] = [1000, 1001, 1002, 1007, 1008, 1009, 1011, 1013];

const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// Lines a client sends, so frames reach the agent's protocol too.
const TEXTS: [&str; 6] = [
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{},"info":{"name":"f","version":"1"}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"hi"}]}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}"#,
    r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_1"}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":"sess_1"}}"#,
];

/// One frame as a client writes it: `head` gives FIN, the reserved bits and the opcode,
/// `payload` is masked (or not, when `unmasked`), its length written in the shortest form or,
/// with `long`, in the 64-bit one.
fn frame(head: u8, payload: &[u8], unmasked: bool, long: bool) -> Vec<u8> {
    let mut out = vec![head];
    let mask_bit = if unmasked { 0 } else { 0x80 };
    match payload.len() {
        n if long => {
            out.push(mask_bit | 127);
            out.extend((n as u64).to_be_bytes());
        }
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xffff => {
            out.push(mask_bit | 126);
            out.extend((n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend((n as u64).to_be_bytes());
        }
    }
    if unmasked {
        out.extend_from_slice(payload);
    } else {
        out.extend(MASK);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let [flags, rest @ ..] = data else { return };
    let authorized = flags & 1 == 0;
    let headers = if authorized { format!("Authorization: Bearer {TOKEN}\r\n") } else { String::new() };
    let bytes = if flags & 2 != 0 {
        // Raw bytes after the upgrade, frames or not.
        rest.to_vec()
    } else {
        // Frames: [head, kind, len] then len payload bytes, kind choosing masking, the length
        // form, and whether the payload is one of the client lines (then len picks which).
        let mut out = Vec::new();
        let mut input = rest;
        while let [head, kind, len, tail @ ..] = input {
            let n = usize::from(*len).min(tail.len());
            let payload: Vec<u8> = if kind & 4 != 0 {
                TEXTS[usize::from(*len) % TEXTS.len()].as_bytes().to_vec()
            } else if kind & 8 != 0 {
                // Larger than the message limit.
                vec![b'x'; MAX_MESSAGE + usize::from(*len)]
            } else {
                tail[..n].to_vec()
            };
            let used = if kind & 4 != 0 { 0 } else { n };
            out.extend(frame(*head, &payload, kind & 1 != 0, kind & 2 != 0));
            input = &tail[used..];
        }
        out
    };
    let run = server().websocket(&headers, &bytes);
    if !authorized {
        assert_eq!(run.status, 401, "an upgrade without the token");
        return;
    }
    assert_eq!(run.status, 101, "an upgrade with the token");
    let frames = run.frames.as_ref().expect("the server writes whole, unmasked frames");
    for (op, _) in frames {
        assert!(matches!(op, 0x1 | 0x8 | 0x9 | 0xa), "the server wrote opcode {op:#x}");
    }
    if let Some(code) = run.close_code() {
        // Or the client's own code, echoed as RFC 6455 5.5.1 has it.
        assert!(DOCUMENTED.contains(&code) || client_close_codes(&bytes).contains(&code), "the server closed with {code}");
    }
});

/// The codes of the close frames in what the client wrote, as far as it parses as frames.
fn client_close_codes(mut bytes: &[u8]) -> Vec<u16> {
    let mut codes = Vec::new();
    while let [b0, b1, rest @ ..] = bytes {
        let (len, rest) = match b1 & 0x7f {
            126 if rest.len() >= 2 => (usize::from(u16::from_be_bytes([rest[0], rest[1]])), &rest[2..]),
            127 if rest.len() >= 8 => {
                let Ok(n) = usize::try_from(u64::from_be_bytes(rest[..8].try_into().expect("8 bytes"))) else { break };
                (n, &rest[8..])
            }
            126 | 127 => break,
            n => (usize::from(n), rest),
        };
        let (key, rest) = if b1 & 0x80 != 0 {
            let Some(key) = rest.get(..4) else { break };
            (Some([key[0], key[1], key[2], key[3]]), &rest[4..])
        } else {
            (None, rest)
        };
        let Some(payload) = rest.get(..len) else { break };
        if b0 & 0x0f == 8 && payload.len() >= 2 {
            let unmask = |i: usize| payload[i] ^ key.map_or(0, |k| k[i % 4]);
            codes.push(u16::from_be_bytes([unmask(0), unmask(1)]));
        }
        bytes = &rest[len..];
    }
    codes
}
