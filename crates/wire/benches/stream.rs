//! The recorded-like `session/update` stream the decode benchmarks share (the wire crate's
//! criterion bench and the comparison with the official crate in `bench/`): deterministic
//! (fixed seed) so runs compare, mixing every update kind of the vendored draft (chunks, upserts,
//! tool calls, terminals, state and usage updates, plans, commands, config options, notices,
//! compactions, subagents, session messages, replay markers, prompt suggestions, cursors), extension (open-branch) updates and a few objects
//! whose tag is not the first member.

use serde_json::Value;

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
    "the",
    "parser",
    "now",
    "streams",
    "tokens",
    "instead",
    "of",
    "buffering",
    "whole",
    "files",
    "lexer",
    "tests",
    "pass",
    "check",
    "crates/core",
    "refactor",
    "function",
    "error",
    "handling",
    "à",
    "naïve",
    "→",
    "\"quoted\"",
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
///
/// Every `sessionUpdate` kind of the vendored draft (`spec/upstream/v2/schema.unstable.json`,
/// `SessionUpdate`) occurs, in a recorded-like mix (chunks dominate): the kinds our schema
/// types, and the others (`agent_thought`, `terminal_update`, `terminal_output_chunk`,
/// `plan_removed`, `available_commands_update`, `config_option_update`, `notice`,
/// `compaction_update`, `compaction_summary_chunk`, `subagent_update`, `session_message`,
/// `session_message_chunk`), which we read through the open `other` branch. Plus an
/// extension kind, our `_agent_message_clear`, and tag-last objects (about 5%, as before the
/// draft's newer kinds were added).
fn update(rng: &mut Rng, i: usize) -> String {
    let msg = s(&format!("msg_{:04}", i / 40));
    let call = s(&format!("call_{:03}", i / 25));
    let tag = |t: &str| ("sessionUpdate", s(t));
    let roll = rng.below(115);
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
        72..=75 => {
            obj(&[tag("agent_message"), ("messageId", msg), ("content", format!("[{},{}]", text_block(rng, 24), text_block(rng, 8)))])
        }
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
        83..=86 => obj(&[tag("usage_update"), ("used", (40_000 + rng.below(100_000)).to_string()), ("size", "200000".into())]),
        87 => obj(&[
            tag("usage_update"),
            ("used", (40_000 + rng.below(100_000)).to_string()),
            ("size", "200000".into()),
            ("cost", obj(&[("amount", "0.42".into()), ("currency", s("USD"))])),
        ]),
        88..=89 => {
            let entry = |rng: &mut Rng, priority: &str, status: &str| {
                obj(&[("content", s(&text(rng, 6))), ("priority", s(priority)), ("status", s(status))])
            };
            let entries = format!("[{},{}]", entry(rng, "high", "completed"), entry(rng, "medium", "in_progress"));
            obj(&[tag("plan_update"), ("plan", obj(&[("type", s("items")), ("planId", s("plan_1")), ("entries", entries)]))])
        }
        90..=91 => obj(&[
            tag("terminal_update"),
            ("terminalId", s("term_1")),
            ("command", s("cargo test")),
            ("cwd", s("/home/user/project")),
            ("exitStatus", r#"{"exitCode":0}"#.to_owned()),
        ]),
        92 => obj(&[tag("_x.dev/progress"), ("fraction", "0.5".into()), ("label", s(&text(rng, 3)))]),
        93 => obj(&[tag("_agent_message_clear"), ("messageId", msg)]),
        94 => obj(&[tag("user_message_chunk"), ("messageId", msg), ("content", text_block(rng, 10))]),
        95 => obj(&[tag("agent_thought"), ("messageId", msg), ("content", format!("[{}]", text_block(rng, 16)))]),
        96 => obj(&[tag("state_update"), ("state", s("requires_action"))]),
        97..=98 => obj(&[tag("terminal_output_chunk"), ("terminalId", s("term_1")), ("data", s("cnVubmluZyAxMiB0ZXN0cwo="))]),
        99 => obj(&[tag("plan_removed"), ("planId", s("plan_1"))]),
        100 => {
            let command = |name: &str, hint: &str| {
                obj(&[
                    ("type", s("command")),
                    ("name", s(name)),
                    ("description", s(&format!("Runs {name}"))),
                    ("input", obj(&[("type", s("text")), ("hint", s(hint))])),
                ])
            };
            obj(&[
                tag("available_commands_update"),
                ("availableCommands", format!("[{},{}]", command("test", "a test filter"), command("review", "a path"))),
            ])
        }
        101 => obj(&[
            tag("config_option_update"),
            (
                "configOptions",
                format!(
                    "[{},{}]",
                    obj(&[
                        ("type", s("select")),
                        ("configId", s("model")),
                        ("name", s("Model")),
                        ("category", s("model")),
                        ("currentValue", s("fast")),
                        (
                            "options",
                            format!(
                                "[{},{}]",
                                obj(&[("value", s("fast")), ("name", s("Fast"))]),
                                obj(&[("value", s("deep")), ("name", s("Deep"))])
                            ),
                        ),
                    ]),
                    obj(&[("type", s("boolean")), ("configId", s("web")), ("name", s("Web search")), ("currentValue", "true".into())]),
                ),
            ),
        ]),
        102 => obj(&[tag("session_info_update"), ("title", s(&text(rng, 4))), ("updatedAt", s("2026-05-01T12:00:00Z"))]),
        103 => obj(&[
            tag("notice"),
            ("severity", s(rng.pick(&["info", "warning", "error"]))),
            ("title", s(&text(rng, 4))),
            ("description", s(&text(rng, 10))),
        ]),
        104 => obj(&[tag("compaction_update"), ("compactionId", s("cmp_1")), ("status", s(rng.pick(&["in_progress", "completed"])))]),
        105 => obj(&[tag("compaction_summary_chunk"), ("compactionId", s("cmp_1")), ("content", text_block(rng, 12))]),
        106 => obj(&[
            tag("subagent_update"),
            ("sessionId", s("sess_child1")),
            ("title", s("Explore the parser")),
            ("state", obj(&[("state", s("running"))])),
        ]),
        107 => obj(&[
            tag("session_message"),
            ("messageId", msg),
            ("senderSessionId", s("sess_child1")),
            ("content", format!("[{}]", text_block(rng, 12))),
        ]),
        108 => obj(&[tag("session_message_chunk"), ("messageId", msg), ("content", text_block(rng, 12))]),
        // The kinds the crate's 1.20.0 draft added (taken from the tail of the buffered case).
        109 => obj(&[tag("replay_complete")]),
        110 => obj(&[
            tag("prompt_suggestions_update"),
            ("suggestions", format!("[{}]", obj(&[("prompt", format!("[{}]", text_block(rng, 8)))]))),
        ]),
        111 => obj(&[
            tag("cursor_update"),
            ("cursorId", s("cur_1")),
            ("anchor", obj(&[("type", s("user_message")), ("messageId", msg), ("position", s("after"))])),
            ("capabilities", obj(&[("fork", "{}".into())])),
        ]),
        // The tag after the body: exercises the buffered path.
        _ => obj(&[("messageId", msg), ("content", text_block(rng, 12)), tag("agent_message_chunk")]),
    };
    obj(&[("sessionId", s("sess_abc123")), ("update", update)])
}

/// The recorded stream: one `session/update` notification per line.
pub fn stream(lines: usize) -> Vec<String> {
    let mut rng = Rng(0x5eed_ac91);
    (0..lines).map(|i| obj(&[("jsonrpc", s("2.0")), ("method", s("session/update")), ("params", update(&mut rng, i))])).collect()
}
