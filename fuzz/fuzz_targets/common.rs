// Shared by the fuzz targets (each includes it with `#[path]`): an agent with inject advertised,
// one session, and a connection attached to it.

use acp_inject_core::agent::{Agent, AgentConfig, Output, Policy};
use acp_inject_core::wire::SessionId;
use acp_inject_core::wire::{InjectCapabilities, InjectMode, PendingCapabilities, SteerInStream};

#[allow(dead_code)]
pub fn agent(policy: Policy) -> Agent {
    let inject = InjectCapabilities::new(vec![InjectMode::Queue, InjectMode::Steer])
        .pending(PendingCapabilities::new().replace(true))
        .steer_in_stream(vec![SteerInStream::Interrupt, SteerInStream::Finish]);
    let config = AgentConfig { inject: Some(inject), policy, ..Default::default() };
    let mut a = Agent::new(config).expect("a valid configuration");
    a.create_session(&SessionId("s1".into()), "/tmp").unwrap();
    a.attach_to_session(&"c1".into(), &SessionId("s1".into())).unwrap();
    // R-INIT-2: nothing but `initialize` is served before it; its answer is dropped.
    a.handle_line(
        &"c1".into(),
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":2,"info":{"name":"fuzz","version":"0"}}}"#,
    );
    a.drain().expect("drain");
    a
}

#[allow(dead_code)]
pub fn drain(a: &mut Agent) -> Vec<Output> {
    a.drain().expect("the memory store commits")
}

// The operation targets write their requests with `format!` and read the agent's lines into the
// few typed fields they check: a `serde_json::Value` round trip per operation cost most of an
// execution, and every execution spent in the harness is one the core is not fuzzed.

/// A request line on session `s1` (`params` is the JSON text after `"sessionId":"s1"`).
#[allow(dead_code)]
pub fn request(id: i64, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"sessionId":"s1"{params}}}}}"#)
}

/// `"content":[{"type":"text","text":TEXT}]` for a harness-made text (no characters to escape).
#[allow(dead_code)]
fn text_content(key: &str, text: &str) -> String {
    format!(r#","{key}":[{{"type":"text","text":"{text}"}}]"#)
}

/// A client call the operation targets make on `s1` (each target maps its op bytes to these
/// its own way).
#[allow(dead_code)]
pub enum Call<'a> {
    Inject { steer: bool },
    Prompt,
    Revoke(&'a str),
    Replace(&'a str),
    Cancel,
}

/// The call's method and line; `text` is the content an inject, prompt or replace carries.
#[allow(dead_code)]
pub fn call_line(id: i64, call: Call<'_>, text: &str) -> (&'static str, String) {
    match call {
        Call::Inject { steer } => {
            let mode = if steer { "steer" } else { "queue" };
            ("session/inject", request(id, "session/inject", &format!(r#","mode":"{mode}"{}"#, text_content("content", text))))
        }
        Call::Prompt => ("session/prompt", request(id, "session/prompt", &text_content("prompt", text))),
        Call::Revoke(t) => ("session/revoke_inject", request(id, "session/revoke_inject", &format!(r#","messageId":"{t}""#))),
        Call::Replace(t) => {
            let params = format!(r#","messageId":"{t}"{}"#, text_content("content", text));
            ("session/replace_inject", request(id, "session/replace_inject", &params))
        }
        Call::Cancel => ("session/cancel", r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#.to_owned()),
    }
}

/// What the targets read from an agent line.
#[allow(dead_code)]
#[derive(serde::Deserialize)]
pub struct Line<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    params: Option<Params<'a>>,
}

#[derive(serde::Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    update: Option<Update<'a>>,
}

#[derive(serde::Deserialize)]
struct Update<'a> {
    #[serde(rename = "sessionUpdate")]
    kind: &'a str,
    #[serde(rename = "messageId", default)]
    message_id: Option<String>,
    #[serde(borrow, default)]
    content: Option<&'a serde_json::value::RawValue>,
}

#[derive(serde::Deserialize)]
struct Answer {
    #[serde(rename = "messageId", default)]
    message_id: Option<String>,
}

#[derive(serde::Deserialize)]
struct Block {
    #[serde(default)]
    text: Option<String>,
}

#[allow(dead_code)]
impl<'a> Line<'a> {
    pub fn parse(line: &'a str) -> Line<'a> {
        serde_json::from_str(line).unwrap_or_else(|e| panic!("the agent wrote a line that is not JSON-RPC ({e}): {line}"))
    }

    /// A success answer (`result` is an object).
    pub fn succeeded(&self) -> bool {
        self.result.is_some_and(|r| r.get().starts_with('{'))
    }

    /// The `messageId` of a success answer.
    pub fn answered_id(&self) -> Option<String> {
        let r = self.result.filter(|_| self.succeeded())?;
        serde_json::from_str::<Answer>(r.get()).expect("an answer object").message_id
    }

    /// A `user_message` update: its id and the text of its first block.
    pub fn user_message(&self) -> Option<(String, Option<String>)> {
        let u = self.params.as_ref()?.update.as_ref().filter(|u| u.kind == "user_message")?;
        let blocks: Vec<Block> = u.content.map(|c| serde_json::from_str(c.get()).expect("content blocks")).unwrap_or_default();
        Some((u.message_id.clone().expect("a user_message has an id"), blocks.into_iter().next().and_then(|b| b.text)))
    }
}

/// [`call_line`] for an operation that may make no call (then `("", None)`).
#[allow(dead_code)]
pub fn maybe_call_line(id: i64, call: Option<Call<'_>>, text: &str) -> (&'static str, Option<String>) {
    match call {
        Some(call) => {
            let (method, line) = call_line(id, call, text);
            (method, Some(line))
        }
        None => ("", None),
    }
}
