//! Every file of `spec/examples/` against a real JSON Schema validator and the Rust decoders.
//!
//! - valid files validate against the schema (root, and `result` against the method's
//!   `*Response` definition), decode through `jsonrpc::parse_line` plus the typed params or
//!   result, and re-encode to an equal JSON value;
//! - invalid files fail the schema, and fail in Rust at the stage and naming the member listed
//!   in `spec/examples/invalid-members.json` (framing, method check, typed decode, or the `check()` of a rule the types
//!   cannot express).
//!
//! File names follow spec/README.md: `<method>.<kind>[.<case>].json` or `batch.<case>.json` (a
//! JSON-RPC batch, which ACP does not use: every one is invalid).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acp_inject_wire::jsonrpc::{self, Incoming};
use acp_inject_wire::*;
use serde_json::value::RawValue;
use serde_json::Value;

/// Where an invalid example must fail in Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// `jsonrpc::parse_line` → `FrameError`.
    Frame,
    /// `jsonrpc::check_method` → `MethodError`.
    Method,
    /// `jsonrpc::decode`/`decode_params` into the typed params or result → `DecodeError`.
    Decode,
    /// A rule the types cannot express (`InitializeResponse::check`).
    Check,
    /// Decoding succeeds because the member is marked `x-deserialize-default-on-error` or
    /// `x-deserialize-skip-invalid-items` (as upstream marks it), and what was dropped is
    /// reported by `collect_tolerated`.
    Tolerated,
}

/// Every invalid example: the stage it must fail at in Rust, and the member its error must name.
/// The table is `spec/examples/invalid-members.json`, shared with the TypeScript validator test.
fn invalid_table() -> Vec<(String, Stage, String)> {
    let path = spec_dir().join("examples/invalid-members.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let table: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let examples = table["examples"].as_object().expect("invalid-members.json has an `examples` object");
    examples
        .iter()
        .map(|(file, row)| {
            let stage = match row["rustStage"].as_str() {
                Some("frame") => Stage::Frame,
                Some("method") => Stage::Method,
                Some("decode") => Stage::Decode,
                Some("check") => Stage::Check,
                Some("tolerated") => Stage::Tolerated,
                other => panic!("{file}: unknown rustStage {other:?}"),
            };
            let member = row["member"].as_str().unwrap_or_else(|| panic!("{file}: no `member`")).to_owned();
            (file.clone(), stage, member)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Loading examples
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Notification,
    Result,
    Error,
    Batch,
}

struct Example {
    file: String,
    /// The method the file name gives (`/` restored); empty for a batch.
    method: String,
    kind: Kind,
    text: String,
    value: Value,
}

fn spec_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec")
}

fn load(dir: &str) -> Vec<Example> {
    let dir = spec_dir().join("examples").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
            let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file} is not JSON: {e}"));
            let (method, kind) = parse_name(&file);
            Example { file, method, kind, text, value }
        })
        .collect()
}

/// `<method>.<kind>[.<case>].json` or `batch.<case>.json`.
fn parse_name(file: &str) -> (String, Kind) {
    let stem = file.strip_suffix(".json").unwrap_or_else(|| panic!("{file}: not a .json file"));
    if stem.starts_with("batch.") {
        return (String::new(), Kind::Batch);
    }
    let parts: Vec<&str> = stem.split('.').collect();
    let kind_of = |s: &str| match s {
        "request" => Some(Kind::Request),
        "notification" => Some(Kind::Notification),
        "result" => Some(Kind::Result),
        "error" => Some(Kind::Error),
        _ => None,
    };
    // The case has no `.`, so the kind is the last or the second-to-last segment.
    let at = (parts.len().saturating_sub(2)..parts.len())
        .find(|&i| i > 0 && kind_of(parts[i]).is_some())
        .unwrap_or_else(|| panic!("{file}: no <kind> segment (request/notification/result/error)"));
    (parts[..at].join("/"), kind_of(parts[at]).unwrap())
}

#[test]
fn file_names_parse() {
    assert_eq!(parse_name("session.prompt.request.json"), ("session/prompt".into(), Kind::Request));
    assert_eq!(parse_name("$.cancel_request.notification.json"), ("$/cancel_request".into(), Kind::Notification));
    assert_eq!(parse_name("session.revoke_inject.error.already_delivered.json"), ("session/revoke_inject".into(), Kind::Error));
    assert_eq!(parse_name("initialize.result.queue-only.json"), ("initialize".into(), Kind::Result));
    assert_eq!(parse_name("batch.empty.json"), (String::new(), Kind::Batch));
}

#[test]
fn example_directories_are_not_empty() {
    let valid = load("valid");
    let invalid = load("invalid");
    assert!(valid.len() >= 20, "only {} valid examples", valid.len());
    assert!(invalid.len() >= 20, "only {} invalid examples", invalid.len());
    // Every kind is exercised, so no branch of the dispatch below is dead; batches are never
    // valid (ACP does not use them) and are refused.
    for kind in [Kind::Request, Kind::Notification, Kind::Result, Kind::Error] {
        assert!(valid.iter().any(|e| e.kind == kind), "no valid {kind:?} example");
    }
    assert!(!valid.iter().any(|e| e.kind == Kind::Batch), "a valid batch example: ACP does not use batches");
    assert!(invalid.iter().any(|e| e.kind == Kind::Batch), "no invalid batch example");
}

// ---------------------------------------------------------------------------------------------
// (a) The JSON Schema validator
// ---------------------------------------------------------------------------------------------

struct Schema {
    root: Value,
    validator: jsonschema::Validator,
}

impl Schema {
    fn load() -> Schema {
        let text = std::fs::read_to_string(spec_dir().join("acp-inject.schema.json")).expect("schema");
        let root: Value = serde_json::from_str(&text).expect("schema JSON");
        let validator = jsonschema::draft202012::new(&root).expect("the schema compiles");
        Schema { root, validator }
    }

    /// The `*Response` definition of a method: the def with that `x-method` whose name ends in
    /// `Response` (spec/README.md).
    fn response_def(&self, method: &str) -> String {
        let defs = self.root["$defs"].as_object().expect("$defs");
        let found: Vec<&String> =
            defs.iter().filter(|(name, def)| name.ends_with("Response") && def["x-method"] == method).map(|(name, _)| name).collect();
        match found[..] {
            [one] => one.clone(),
            _ => panic!("method {method:?} has {} `*Response` definitions", found.len()),
        }
    }

    /// A validator for one definition: the whole document with the root replaced by a `$ref`.
    fn def_validator(&self, def: &str) -> jsonschema::Validator {
        let mut schema = self.root.clone();
        let obj = schema.as_object_mut().unwrap();
        obj.remove("anyOf");
        obj.insert("$ref".into(), Value::String(format!("#/$defs/{def}")));
        jsonschema::draft202012::new(&schema).expect("the definition compiles")
    }

    /// `Ok` when the example passes every check spec/README.md asks for; otherwise the errors.
    fn check(&self, ex: &Example) -> Result<(), String> {
        let errors: Vec<String> = self.validator.iter_errors(&ex.value).map(|e| format!("{e} at {}", e.instance_path())).collect();
        if !errors.is_empty() {
            return Err(format!("root: {}", errors.join("; ")));
        }
        if ex.kind == Kind::Result {
            let def = self.response_def(&ex.method);
            let result = ex.value.get("result").ok_or("a result file without `result`")?;
            let errors: Vec<String> =
                self.def_validator(&def).iter_errors(result).map(|e| format!("{e} at {}", e.instance_path())).collect();
            if !errors.is_empty() {
                return Err(format!("{def}: {}", errors.join("; ")));
            }
        }
        Ok(())
    }
}

#[test]
fn valid_examples_pass_the_schema() {
    let schema = Schema::load();
    let failures: Vec<String> =
        load("valid").iter().filter_map(|ex| schema.check(ex).err().map(|e| format!("{}: {e}", ex.file))).collect();
    assert!(failures.is_empty(), "valid examples rejected by the schema:\n{}", failures.join("\n"));
}

#[test]
fn invalid_examples_fail_the_schema() {
    let schema = Schema::load();
    let accepted: Vec<String> = load("invalid").iter().filter(|ex| schema.check(ex).is_ok()).map(|ex| ex.file.clone()).collect();
    assert!(accepted.is_empty(), "invalid examples accepted by the schema: {accepted:?}");
}

/// The response check is what rejects an envelope-valid result (spec/README.md): prove it is
/// the second check, not the root, that catches this file.
#[test]
fn result_files_are_checked_against_the_method_response() {
    let schema = Schema::load();
    let ex = load("invalid")
        .into_iter()
        .find(|e| e.file == "initialize.result.steer-without-steer-in-stream.json")
        .expect("the example exists");
    assert!(schema.validator.is_valid(&ex.value), "the envelope alone is valid");
    let err = schema.check(&ex).expect_err("the InitializeResponse check rejects it");
    assert!(err.starts_with("InitializeResponse:"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// (b, c) The Rust decoders
// ---------------------------------------------------------------------------------------------

/// A failure in Rust: the stage and the error's text.
#[derive(Debug)]
struct Failure {
    stage: Stage,
    error: String,
}

fn fail(stage: Stage, error: impl std::fmt::Display) -> Failure {
    Failure { stage, error: error.to_string() }
}

/// One decoded message: the JSON it came from and the JSON its typed value re-encodes to.
struct RoundTrip {
    original: Value,
    reencoded: Value,
}

fn line_value(line: &str) -> Value {
    serde_json::from_str(line).expect("the encoders write JSON")
}

fn request<T: Request>(id: &RequestId, params: Option<&RawValue>) -> Result<Value, Failure> {
    let typed: T = jsonrpc::decode_params(params).map_err(|e| fail(Stage::Decode, e))?;
    Ok(line_value(&jsonrpc::request_line(id, &typed)))
}

fn notification<T: Notification>(params: Option<&RawValue>) -> Result<Value, Failure> {
    let typed: T = jsonrpc::decode_params(params).map_err(|e| fail(Stage::Decode, e))?;
    Ok(line_value(&jsonrpc::notification_line(&typed)))
}

fn result<T: Method + serde::Serialize + serde::de::DeserializeOwned>(id: &RequestId, raw: &RawValue) -> Result<(T, Value), Failure> {
    let typed: T = jsonrpc::decode(raw.get()).map_err(|e| fail(Stage::Decode, e))?;
    let line = line_value(&jsonrpc::result_line(id, &typed));
    Ok((typed, line))
}

/// Typed params of a request, by method. Extension methods have no type.
fn decode_request(id: &RequestId, method: &str, params: Option<&RawValue>) -> Result<Value, Failure> {
    match method {
        methods::INITIALIZE => request::<InitializeRequest>(id, params),
        methods::SESSION_NEW => request::<NewSessionRequest>(id, params),
        methods::SESSION_PROMPT => request::<PromptRequest>(id, params),
        methods::SESSION_INJECT => request::<InjectRequest>(id, params),
        methods::SESSION_REVOKE_INJECT => request::<RevokeInjectRequest>(id, params),
        methods::SESSION_REPLACE_INJECT => request::<ReplaceInjectRequest>(id, params),
        methods::SESSION_CLOSE => request::<CloseSessionRequest>(id, params),
        methods::SESSION_STATUS => request::<SessionStatusRequest>(id, params),
        methods::SESSION_REQUEST_PERMISSION => request::<RequestPermissionRequest>(id, params),
        other => panic!("no typed request for {other:?} (check_method let it through)"),
    }
}

fn decode_notification(method: &str, params: Option<&RawValue>) -> Result<Value, Failure> {
    match method {
        methods::SESSION_CANCEL => notification::<CancelSessionNotification>(params),
        methods::CANCEL_REQUEST => notification::<CancelRequestNotification>(params),
        methods::SESSION_UPDATE => notification::<UpdateSessionNotification>(params),
        other => panic!("no typed notification for {other:?} (check_method let it through)"),
    }
}

/// Typed result of the request `method` answers, plus the checks the types cannot express.
fn decode_result(id: &RequestId, method: &str, raw: &RawValue) -> Result<Value, Failure> {
    match method {
        methods::INITIALIZE => {
            let (typed, line) = result::<InitializeResponse>(id, raw)?;
            typed.check().map_err(|e| fail(Stage::Check, e))?;
            Ok(line)
        }
        methods::SESSION_NEW => result::<NewSessionResponse>(id, raw).map(|r| r.1),
        methods::SESSION_PROMPT => result::<PromptResponse>(id, raw).map(|r| r.1),
        methods::SESSION_INJECT => result::<InjectResponse>(id, raw).map(|r| r.1),
        methods::SESSION_REVOKE_INJECT => result::<RevokeInjectResponse>(id, raw).map(|r| r.1),
        methods::SESSION_REPLACE_INJECT => result::<ReplaceInjectResponse>(id, raw).map(|r| r.1),
        methods::SESSION_CLOSE => result::<CloseSessionResponse>(id, raw).map(|r| r.1),
        methods::SESSION_STATUS => result::<SessionStatusResponse>(id, raw).map(|r| r.1),
        methods::SESSION_REQUEST_PERMISSION => result::<RequestPermissionResponse>(id, raw).map(|r| r.1),
        other => panic!("no typed result for {other:?}"),
    }
}

/// An error response: the `ErrorObject`, and its `data` as a typed `ErrorData` when present.
fn decode_error(id: &RequestId, error: &ErrorObject) -> Result<Value, Failure> {
    let mut line = line_value(&jsonrpc::error_line(id, error));
    if let Some(data) = &error.data {
        let typed: ErrorData = jsonrpc::decode(&data.to_string()).map_err(|e| fail(Stage::Decode, e))?;
        line["error"]["data"] = serde_json::to_value(&typed).expect("ErrorData encodes");
    }
    Ok(line)
}

/// Decodes one message through the whole Rust pipeline. A response answers the method its file
/// name gives.
fn decode_message(message: Incoming<'_>, original: &Value, answered: &str) -> Result<RoundTrip, Failure> {
    jsonrpc::check_method(&message).map_err(|e| fail(Stage::Method, e))?;
    let reencoded = match &message {
        Incoming::Request { id, method, params } => decode_request(id, method, *params)?,
        Incoming::Notification { method, params } => decode_notification(method, *params)?,
        Incoming::Response { id, outcome: Ok(raw) } => decode_result(id, answered, raw)?,
        Incoming::Response { id, outcome: Err(error) } => decode_error(id, error)?,
    };
    Ok(RoundTrip { original: original.clone(), reencoded })
}

/// The whole Rust pipeline for one example file; a decode that had to tolerate something is a
/// [`Stage::Tolerated`] failure naming what was dropped.
fn decode_example(ex: &Example) -> Result<Vec<RoundTrip>, Failure> {
    let (result, tolerated) = collect_tolerated(|| decode_strict(ex));
    match result {
        Ok(_) if !tolerated.is_empty() => Err(fail(Stage::Tolerated, tolerated.join("; "))),
        other => other,
    }
}

fn decode_strict(ex: &Example) -> Result<Vec<RoundTrip>, Failure> {
    let message = jsonrpc::parse_line(&ex.text).map_err(|e| fail(Stage::Frame, e))?;
    assert!(ex.kind != Kind::Batch, "{}: a batch file framed as a message", ex.file);
    Ok(vec![decode_message(message, &ex.value, &ex.method)?])
}

/// The framing classifies the message as its file name says.
fn framed_kind(ex: &Example) -> Option<Kind> {
    match jsonrpc::parse_line(&ex.text).ok()? {
        Incoming::Request { .. } => Some(Kind::Request),
        Incoming::Notification { .. } => Some(Kind::Notification),
        Incoming::Response { outcome: Ok(_), .. } => Some(Kind::Result),
        Incoming::Response { outcome: Err(_), .. } => Some(Kind::Error),
    }
}

#[test]
fn valid_examples_decode_and_reencode_unchanged() {
    let mut failures = Vec::new();
    let mut messages = 0;
    for ex in load("valid") {
        assert_eq!(framed_kind(&ex), Some(ex.kind), "{}: framed as another kind", ex.file);
        match decode_example(&ex) {
            Err(f) => failures.push(format!("{}: rejected at {:?}: {}", ex.file, f.stage, f.error)),
            Ok(trips) => {
                for t in trips {
                    messages += 1;
                    if t.original != t.reencoded {
                        failures.push(format!(
                            "{}: re-encodes differently\n  original:   {}\n  re-encoded: {}",
                            ex.file, t.original, t.reencoded
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} valid example(s) do not round-trip:\n{}", failures.len(), failures.join("\n"));
    assert!(messages >= 60, "only {messages} messages decoded");
}

/// `member` occurs in `text` as a whole name, not inside a longer one (`id` in `sessionId`).
fn names_member(text: &str, member: &str) -> bool {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(member).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + member.len()..].chars().next();
        !before.is_some_and(is_name) && !after.is_some_and(is_name)
    })
}

#[test]
fn names_member_matches_whole_names_only() {
    assert!(names_member("at `update.messageId`: invalid type", "messageId"));
    assert!(names_member("missing field `id`", "id"));
    assert!(!names_member("missing field `sessionId`", "id"));
    assert!(!names_member("at `update.content[0].type`", "content[0].typ"));
}

#[test]
fn invalid_examples_fail_in_rust_naming_the_member() {
    let examples = load("invalid");
    let invalid = invalid_table();
    let files: BTreeSet<&str> = examples.iter().map(|e| e.file.as_str()).collect();
    let table: BTreeSet<&str> = invalid.iter().map(|(f, _, _)| f.as_str()).collect();
    let unlisted: Vec<&&str> = files.difference(&table).collect();
    let stale: Vec<&&str> = table.difference(&files).collect();
    assert!(unlisted.is_empty(), "invalid examples missing from invalid-members.json (add member + rustStage): {unlisted:?}");
    assert!(stale.is_empty(), "invalid-members.json lists files that do not exist: {stale:?}");

    let mut problems = Vec::new();
    for ex in &examples {
        let (_, stage, member) = invalid.iter().find(|(f, _, _)| *f == ex.file).unwrap();
        match decode_example(ex) {
            Ok(_) => problems.push(format!("{}: accepted by Rust", ex.file)),
            Err(f) if f.stage != *stage => {
                problems.push(format!("{}: failed at {:?}, expected {stage:?}: {}", ex.file, f.stage, f.error))
            }
            Err(f) if !names_member(&f.error, member) => {
                problems.push(format!("{}: the error does not name `{member}`: {}", ex.file, f.error))
            }
            Err(_) => {}
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

/// Prints each invalid example's Rust error, for review (`cargo test -- --nocapture`).
#[test]
fn invalid_example_errors_are_readable() {
    for ex in load("invalid") {
        let f = decode_example(&ex).err().unwrap_or_else(|| panic!("{} accepted", ex.file));
        assert!(!f.error.is_empty() && f.error.len() < 600, "{}: error text of {} bytes", ex.file, f.error.len());
        println!("{:<75} {:?}: {}", ex.file, f.stage, f.error);
    }
}
