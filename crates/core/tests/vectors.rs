//! The conformance vectors run in `cargo test`, every rule id is covered, and the runner
//! really fails on a wrong expectation (so a green run means something).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acp_inject_core::vectors::{run_dirs, run_text};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn vector_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for side in ["agent", "client"] {
        for e in std::fs::read_dir(root().join("spec/vectors").join(side)).expect("vector dir") {
            out.push(e.expect("entry").path());
        }
    }
    out.sort();
    out
}

#[test]
fn every_project_vector_passes() {
    let report = run_dirs(&[root().join("spec/vectors")]);
    assert!(report.results.len() >= 90, "expected the project's vectors, found {}", report.results.len());
    assert_eq!(report.failed(), 0, "\n{}", report.render());
}

/// Every R-… and C-… id of `spec/rules.md` is named by at least one vector.
#[test]
fn every_rule_id_is_covered() {
    let semantics = std::fs::read_to_string(root().join("spec/rules.md")).expect("spec/rules.md");
    let mut ids = BTreeSet::new();
    for word in semantics.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        let is_rule = (word.starts_with("R-") || word.starts_with("C-")) && word.chars().last().is_some_and(|c| c.is_ascii_digit());
        if is_rule {
            ids.insert(word.to_owned());
        }
    }
    assert!(ids.len() > 30, "rule ids not found in spec/rules.md: {ids:?}");
    let mut covered = BTreeSet::new();
    for f in vector_files() {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for r in v["rules"].as_array().into_iter().flatten() {
            covered.insert(r.as_str().unwrap_or_default().to_owned());
        }
    }
    let missing: Vec<_> = ids.difference(&covered).collect();
    assert!(missing.is_empty(), "rule ids without a vector: {missing:?}");
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
