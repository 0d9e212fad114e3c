//! The conformance vectors run in `cargo test`, every rule id is covered, and the runner
//! really fails on a wrong expectation (so a green run means something).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acp_inject_conformance::{rule_ids, run_dirs, run_text, vector_files};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_project_vector_passes() {
    let report = run_dirs(&[root().join("spec/vectors")]);
    assert!(report.results.len() >= 90, "expected the project's vectors, found {}", report.results.len());
    assert_eq!(report.failed(), 0, "\n{}", report.render());
}

/// Every R-… and C-… id of the rule catalogue is named by at least one vector, and every id a
/// vector names is in the catalogue.
#[test]
fn every_rule_id_is_covered() {
    let catalogue = std::fs::read_to_string(root().join("spec/rules.md")).expect("spec/rules.md");
    let ids = rule_ids(&catalogue);
    assert!(ids.len() > 30, "rule ids not found in spec/rules.md: {ids:?}");
    let mut covered = BTreeSet::new();
    for f in vector_files(&[root().join("spec/vectors")]) {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for r in v["rules"].as_array().into_iter().flatten() {
            covered.insert(r.as_str().unwrap_or_default().to_owned());
        }
    }
    let missing: Vec<_> = ids.difference(&covered).collect();
    assert!(missing.is_empty(), "rule ids without a vector: {missing:?}");
    let unknown: Vec<_> = covered.difference(&ids).collect();
    assert!(unknown.is_empty(), "vectors name rule ids the catalogue does not define: {unknown:?}");
}

/// A vector copied anywhere runs from there; the same vector with one expected value changed
/// fails with a mismatch that names the step and shows expected and actual.
#[test]
fn runner_accepts_any_directory_and_reports_mismatches() {
    let src = root().join("spec/vectors/agent/steer-delivered-at-tool-result.json");
    let text = std::fs::read_to_string(&src).unwrap();
    let dir = std::env::temp_dir().join(format!("acp-inject-vectors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("copy.json"), &text).unwrap();
    let report = run_dirs(&[&dir]);
    assert_eq!((report.passed(), report.failed()), (1, 0), "{}", report.render());

    let broken = text.replacen("use auth_v2", "use auth_v3", 1);
    assert_ne!(broken, text, "the fixture must contain the text we change");
    std::fs::write(dir.join("copy.json"), &broken).unwrap();
    let report = run_dirs(&[&dir]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(report.failed(), 1);
    let rendered = report.render();
    assert!(rendered.contains("1 failed") && rendered.contains("step") && rendered.contains("auth_v3"), "{rendered}");
}

#[test]
fn malformed_vectors_fail_cleanly() {
    assert!(run_text("not json").mismatch.is_some());
    assert!(run_text(r#"{"name":"x","side":"sideways","steps":[]}"#).mismatch.is_some());
    let unbound = r#"{"name":"x","side":"agent","steps":[{"client":{"jsonrpc":"2.0","id":1,"method":"session/revoke_inject","params":{"sessionId":"s1","messageId":"$nope"}}}]}"#;
    assert!(run_text(unbound).mismatch.unwrap().contains("before it is bound"));
}

/// The extension methods, which the upstream schema does not know (spec/README.md, the
/// deviation table), with the definitions of their params and result in this toolkit's own
/// schema (`spec/acp-inject.schema.json`), which checks their requests and answers instead.
const EXTENSION_METHODS: [(&str, &str, &str); 4] = [
    ("session/inject", "InjectRequest", "InjectResponse"),
    ("session/revoke_inject", "RevokeInjectRequest", "RevokeInjectResponse"),
    ("session/replace_inject", "ReplaceInjectRequest", "ReplaceInjectResponse"),
    ("_session/steering", "SteeringRequest", "SteeringResponse"),
];

fn extension(method: &str) -> Option<(&'static str, &'static str)> {
    EXTENSION_METHODS.iter().find(|(m, _, _)| *m == method).map(|(_, params, result)| (*params, *result))
}

/// The upstream definition of a method's params and of its result, as the official SDK's
/// validators pick them (interop/typescript-sdk/validate.mjs does the same on live lines).
fn upstream_defs(method: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match method {
        "initialize" => ("InitializeRequest", Some("InitializeResponse")),
        "session/new" => ("NewSessionRequest", Some("NewSessionResponse")),
        "session/prompt" => ("PromptRequest", Some("PromptResponse")),
        "session/list" => ("ListSessionsRequest", Some("ListSessionsResponse")),
        "session/resume" => ("ResumeSessionRequest", Some("ResumeSessionResponse")),
        "session/close" => ("CloseSessionRequest", Some("CloseSessionResponse")),
        "session/status" => ("SessionStatusRequest", Some("SessionStatusResponse")),
        "session/cancel" => ("CancelSessionNotification", None),
        "$/cancel_request" => ("CancelRequestNotification", None),
        "session/update" => ("UpdateSessionNotification", None),
        "session/request_permission" => ("RequestPermissionRequest", Some("RequestPermissionResponse")),
        "auth/login" => ("LoginAuthRequest", Some("LoginAuthResponse")),
        "auth/logout" => ("LogoutAuthRequest", Some("LogoutAuthResponse")),
        _ => return None,
    })
}

/// The same for ACP v1 (`spec/upstream/v1/schema.json`), for the lines of a v1 connection.
fn upstream_v1_defs(method: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match method {
        "session/load" => ("LoadSessionRequest", Some("LoadSessionResponse")),
        "session/cancel" => ("CancelNotification", None),
        "session/update" => ("SessionNotification", None),
        "session/status" => return None,
        "authenticate" => ("AuthenticateRequest", Some("AuthenticateResponse")),
        other => upstream_defs(other)?,
    })
}

/// Every message our side emits in a vector (an agent's `expect` lines, a client's `sends`)
/// validates against the vendored upstream v2 draft schema, `spec/upstream/v2/schema.unstable.json`
/// (a line to a connection that negotiated v1: the v1 schema, `spec/upstream/v1/schema.json`):
/// the envelope, then the params by method and a result by the method it answers, errors as
/// upstream's `Error`, each with the upstream definition the official SDK validates it with.
/// What carries or answers an extension method ([`EXTENSION_METHODS`]) is counted apart and
/// checked against this toolkit's schema; `_`-prefixed updates are upstream's own extension
/// form and are checked as they are.
#[test]
fn emitted_messages_validate_against_the_vendored_upstream_schema() {
    use serde_json::{json, Value};
    let read = |path: &str| -> Value {
        let text = std::fs::read_to_string(root().join(path)).expect("the vendored schema");
        serde_json::from_str(&text).expect("JSON")
    };
    let (upstream, upstream_v1) = (read("spec/upstream/v2/schema.unstable.json"), read("spec/upstream/v1/schema.json"));
    let ours = read("spec/acp-inject.schema.json");
    let mut extension_validators = std::collections::HashMap::new();
    // An extension's params or result, against this toolkit's schema.
    let mut valid_extension = |def: &str, value: &Value| -> Vec<String> {
        let v = extension_validators.entry(def.to_owned()).or_insert_with(|| {
            let schema = json!({ "$ref": format!("#/$defs/{def}"), "$defs": ours["$defs"].clone() });
            jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{def} does not compile: {e}"))
        });
        v.iter_errors(value).map(|e| format!("ours {def}: {e} at {}", e.instance_path())).take(3).collect::<Vec<_>>()
    };
    let mut validators = std::collections::HashMap::new();
    // `v1`: the line is one of a v1 connection's, checked against the v1 schema.
    let mut valid = |v1: bool, def: &str, value: &Value| -> Vec<String> {
        let v = validators.entry((v1, def.to_owned())).or_insert_with(|| {
            let defs = if v1 { &upstream_v1["$defs"] } else { &upstream["$defs"] };
            let schema = json!({ "$ref": format!("#/$defs/{def}"), "$defs": defs.clone() });
            jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{def} does not compile: {e}"))
        });
        let version = if v1 { "v1 " } else { "" };
        v.iter_errors(value).map(|e| format!("{version}{def}: {e} at {}", e.instance_path())).take(3).collect()
    };
    // One message: its envelope, then what its method (or the method it answers) says.
    let mut check = |message: &Value, answered: Option<&str>, v1: bool| -> Result<bool, Vec<String>> {
        let defs = if v1 { upstream_v1_defs } else { upstream_defs };
        if message["jsonrpc"] != "2.0" {
            return Err(vec!["jsonrpc is not \"2.0\"".into()]);
        }
        if let Some(method) = message["method"].as_str() {
            if let Some((params, _)) = extension(method) {
                let errors = valid_extension(params, &message["params"]);
                return if errors.is_empty() { Ok(false) } else { Err(errors) };
            }
            let (params, _) = defs(method).ok_or_else(|| vec![format!("no upstream definition for {method}")])?;
            if message.get("id").is_some() && !(message["id"].is_string() || message["id"].is_i64()) {
                return Err(vec!["a request id that is not a string or an integer".into()]);
            }
            let errors = valid(v1, params, &message["params"]);
            return if errors.is_empty() { Ok(true) } else { Err(errors) };
        }
        let Some(answered) = answered else { return Err(vec!["a response to no request of the vector".into()]) };
        // An application's own extension (a host call's answer): its shape is the app's.
        if answered.starts_with('_') && extension(answered).is_none() {
            return Ok(false);
        }
        if let Some((_, result)) = extension(answered) {
            let errors = match (message.get("result"), message.get("error")) {
                (Some(r), None) => valid_extension(result, r),
                (None, Some(error)) => valid(v1, "Error", error),
                _ => vec!["a response needs exactly one of result and error".into()],
            };
            return if errors.is_empty() { Ok(false) } else { Err(errors) };
        }
        let errors = match (message.get("result"), message.get("error")) {
            (Some(result), None) => match defs(answered).and_then(|d| d.1) {
                Some(def) => valid(v1, def, result),
                None => vec![format!("no upstream result definition for {answered}")],
            },
            (None, Some(error)) => valid(v1, "Error", error),
            _ => vec!["a response needs exactly one of result and error".into()],
        };
        if errors.is_empty() {
            Ok(true)
        } else {
            Err(errors)
        }
    };
    // The check can fail: messages upstream refuses are refused.
    for (bad, answered) in [
        (
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}),
            None,
        ),
        (
            json!({"jsonrpc":"2.0","id":null,"method":"session/request_permission","params":{"sessionId":"s1","title":"t","options":[]}}),
            None,
        ),
        (json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}), Some("session/prompt")),
        (json!({"jsonrpc":"1.0","method":"session/update","params":{}}), None),
    ] {
        assert!(check(&bad, answered, false).is_err(), "accepted: {bad}");
    }
    // And a v1 line is held to v1: a v2 prompt answer or a v2 update is refused.
    for (bad, answered) in [
        (json!({"jsonrpc":"2.0","id":1,"result":{"messageId":"m1"}}), Some("session/prompt")),
        (
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle"}}}),
            None,
        ),
    ] {
        assert!(check(&bad, answered, true).is_err(), "accepted as v1: {bad}");
    }

    let (mut checked, mut extension, mut problems, mut v1_checked) = (0usize, 0usize, Vec::new(), 0usize);
    for file in vector_files(&[root().join("spec/vectors")]) {
        let vector: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
        // What each request id asked, from either side, and which connection asked it: what a
        // response answers, and to whom. The connections that initialized with version 1.
        let mut asked = std::collections::HashMap::new();
        let mut v1_connections = std::collections::HashSet::new();
        // A client-side vector's client talks to a version 1 agent: all it sends is v1.
        let client_v1 = vector["side"] == "client" && vector["protocolVersion"] == 1;
        for step in vector["steps"].as_array().into_iter().flatten() {
            let from = step["from"].as_str().unwrap_or("c1").to_owned();
            for key in ["client", "receive", "sends"] {
                // A batch's requests are asked one by one.
                let messages: Vec<&Value> = match &step[key] {
                    Value::Array(entries) => entries.iter().collect(),
                    other => vec![other],
                };
                for message in messages {
                    let Some(method) = message["method"].as_str() else { continue };
                    if message.get("id").is_some() {
                        asked.insert(message["id"].to_string(), (method.to_owned(), from.clone()));
                    }
                    if key == "client" && method == "initialize" {
                        if message["params"]["protocolVersion"] == 1 {
                            v1_connections.insert(from.clone());
                        } else {
                            v1_connections.remove(&from);
                        }
                    }
                }
            }
            let emitted: Vec<&Value> = match (step.get("expect").or(step.get("expectSent")), step.get("sends")) {
                // A batch of answers is checked entry by entry.
                (Some(Value::Array(out)), _) => out
                    .iter()
                    .flat_map(|o| match o {
                        Value::Array(entries) => entries.iter().collect::<Vec<_>>(),
                        single => vec![single],
                    })
                    .filter(|o| o.get("jsonrpc").is_some())
                    .collect(),
                // A call that sends several lines lists them (a client sends no batches).
                (_, Some(Value::Array(sent))) => sent.iter().collect(),
                (_, Some(sent)) => vec![sent],
                _ => Vec::new(),
            };
            for message in emitted {
                let mut message = message.clone();
                // The recipient: the one `to` names, else (a response) the connection that asked.
                let to = match message.as_object_mut().and_then(|o| o.remove("to")) {
                    Some(Value::String(to)) => Some(to),
                    Some(Value::Array(to)) => to.first().and_then(Value::as_str).map(str::to_owned),
                    _ if message.get("method").is_none() => asked.get(&message["id"].to_string()).map(|(_, from)| from.clone()),
                    _ => None,
                };
                let v1 = client_v1 || to.is_some_and(|to| v1_connections.contains(&to));
                if let Some(method) = message["method"].as_str() {
                    if message.get("id").is_some() {
                        asked.insert(message["id"].to_string(), (method.to_owned(), String::new()));
                    }
                }
                // An answer to a line the agent could not read (id null) answers no method.
                let answered = asked.get(&message["id"].to_string()).map(|(method, _)| method.as_str());
                let answered = if message.get("method").is_none() && message["id"].is_null() { Some("") } else { answered };
                if v1 {
                    v1_checked += 1;
                }
                match check(&message, answered, v1) {
                    Ok(true) => checked += 1,
                    Ok(false) => extension += 1,
                    Err(errors)
                        if answered == Some("")
                            && message.get("error").is_some()
                            && errors.iter().all(|e| e.contains("no upstream")) =>
                    {
                        checked += 1
                    }
                    Err(errors) => problems.push(format!("{name}: {message}\n    {}", errors.join("\n    "))),
                }
            }
        }
    }
    println!("{checked} emitted messages valid per the upstream schema ({v1_checked} of them v1 lines, per the v1 schema), {extension} extension messages");
    assert!(checked > 500, "only {checked} messages checked");
    assert!(v1_checked > 20, "only {v1_checked} v1 lines checked");
    assert!(extension > 0, "no extension message seen");
    assert!(
        problems.is_empty(),
        "{} of {checked} emitted messages fail the upstream schema:\n{}",
        problems.len(),
        problems.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
}
