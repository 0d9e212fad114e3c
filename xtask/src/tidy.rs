//! Tidy tests: repository rules checked on every tracked file (`git ls-files`), so
//! `cargo test` fails when one is broken.
//!
//! Each rule is one `#[test]` that collects [`Finding`]s and hands them to [`report`]. To add a
//! rule, write a function over [`tracked`] files and call `report` with its findings. A rule
//! whose existing offenders cannot be fixed in the same change lists them in [`KNOWN`]; `report`
//! fails both on new offenders and on listed ones that are gone (so the list only shrinks).
//!
//! This file spells out the patterns it looks for, so every rule skips it.

use std::collections::BTreeSet;
use std::path::{Component, Path};

/// One tracked file: its path relative to the repository root and its text (`None` for a file
/// that is not UTF-8, which the text rules skip).
struct Tracked {
    path: String,
    text: Option<String>,
}

/// Every file `git ls-files` lists, with its contents.
fn tracked() -> Vec<Tracked> {
    let root = crate::root();
    let out = std::process::Command::new("git").arg("-C").arg(&root).args(["ls-files", "-z"]).output().expect("git ls-files runs");
    assert!(out.status.success(), "git ls-files: {}", String::from_utf8_lossy(&out.stderr));
    let files: Vec<Tracked> = String::from_utf8(out.stdout)
        .expect("UTF-8 paths")
        .split('\0')
        .filter(|p| !p.is_empty() && *p != SELF)
        // Fuzz inputs are data, whatever bytes the fuzzer wrote: no text rule applies to them.
        .map(|p| Tracked {
            path: p.to_owned(),
            text: if p.starts_with("fuzz/corpus/") {
                None
            } else {
                std::fs::read(root.join(p)).ok().and_then(|b| String::from_utf8(b).ok())
            },
        })
        .collect();
    assert!(files.len() > 100, "expected the repository's files, found {}", files.len());
    files
}

const SELF: &str = "xtask/src/tidy.rs";

/// A broken rule: where, and what.
struct Finding {
    path: String,
    line: usize,
    message: String,
}

/// Offenders that predate a rule and belong to code being rewritten elsewhere: (rule, file).
/// Each entry must still offend; remove it once the file is fixed.
const KNOWN: &[(&str, &str)] = &[];

/// Fails with every finding that is not known, and with every known entry that no longer
/// offends.
fn report(rule: &str, findings: Vec<Finding>) {
    let known: BTreeSet<&str> = KNOWN.iter().filter(|(r, _)| *r == rule).map(|(_, f)| *f).collect();
    let offending: BTreeSet<&str> = findings.iter().map(|f| f.path.as_str()).collect();
    let mut problems: Vec<String> = findings
        .iter()
        .filter(|f| !known.contains(f.path.as_str()))
        .map(|f| format!("{}:{}: {}", f.path, f.line, f.message))
        .collect();
    problems.extend(known.difference(&offending).map(|f| format!("{f}: no longer breaks `{rule}`; remove it from KNOWN in {SELF}")));
    assert!(problems.is_empty(), "tidy rule `{rule}` is broken:\n{}", problems.join("\n"));
}

/// Every line of every text file, with its 1-based number.
fn lines(files: &[Tracked]) -> impl Iterator<Item = (&str, usize, &str)> {
    files
        .iter()
        .filter_map(|f| f.text.as_deref().map(|t| (f.path.as_str(), t)))
        .flat_map(|(path, text)| text.lines().enumerate().map(move |(i, line)| (path, i + 1, line)))
}

/// Where a relative path written in `file` points when resolved from the file's directory:
/// `None` when it climbs above the repository root.
fn resolve_from(file: &str, relative: &str) -> Option<Vec<String>> {
    let mut dir: Vec<String> = Path::new(file).parent().map_or(Vec::new(), |p| {
        p.components().filter(|c| matches!(c, Component::Normal(_))).map(|c| c.as_os_str().to_string_lossy().into_owned()).collect()
    });
    for part in relative.split('/') {
        match part {
            ".." => {
                dir.pop()?;
            }
            "" | "." => {}
            other => dir.push(other.to_owned()),
        }
    }
    Some(dir)
}

/// The path-like token that starts at byte `at` of `line`.
fn token(line: &str, at: usize) -> &str {
    let rest = &line[at..];
    let end = rest.find(|c: char| c.is_whitespace() || "\"'`()[]<>{},;|*".contains(c)).unwrap_or(rest.len());
    &rest[..end]
}

/// Everything the build, the tests and the docs use is inside the repository: no reference
/// to a directory beside it (the parent's `shared` folder), no relative path that climbs above
/// the root from the file that holds it, no absolute path into the machine the work was done on.
fn paths_outside(files: &[Tracked]) -> Vec<Finding> {
    let beside = concat!("..", "/shared");
    let machine = concat!("/", "work", "/");
    let mut findings = Vec::new();
    for (path, n, line) in lines(files) {
        let mut found = |message: String| findings.push(Finding { path: path.to_owned(), line: n, message });
        if line.contains(beside) {
            found(format!("refers to `{beside}`, a directory beside the repository that a clone does not have"));
            continue;
        }
        for (at, _) in line.match_indices(machine) {
            let before = line[..at].chars().next_back();
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || "._-/~$".contains(c)) {
                found(format!("absolute path `{}` into a developer's machine", token(line, at)));
            }
        }
        for (at, _) in line.match_indices("../") {
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || "._-/".contains(c)) {
                continue; // the middle of a longer path (`a/../b`), or a `$VAR/../` expansion handled below
            }
            let relative = token(line, at);
            if resolve_from(path, relative).is_none() {
                found(format!("`{relative}` climbs above the repository root from {path}"));
            }
        }
    }
    findings
}

#[test]
fn no_paths_outside_the_repository() {
    report("no_paths_outside_the_repository", paths_outside(&tracked()));
}

/// A document named in a comment or a doc (`Foo.md`, not part of a path or a URL) is a file of
/// the repository; names of documents that live elsewhere leave the reader with nothing.
fn documents_named(files: &[Tracked]) -> Vec<Finding> {
    let existing: BTreeSet<&str> = files.iter().filter_map(|f| f.path.rsplit('/').next()).collect();
    let mut findings = Vec::new();
    for (path, n, line) in lines(files) {
        for (at, _) in line.match_indices(".md") {
            let after = line[at + 3..].chars().next();
            if after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue; // `.mdx`, `.md_x`
            }
            let start = line[..at].rfind(|c: char| !(c.is_ascii_alphanumeric() || "_-".contains(c))).map_or(0, |i| i + 1);
            let name = &line[start..at + 3];
            let before = line[..start].chars().next_back();
            let in_path_or_url = before.is_some_and(|c| c == '/' || c == '.' || c == ':');
            if start == at || in_path_or_url || existing.contains(name) {
                continue;
            }
            findings.push(Finding {
                path: path.to_owned(),
                line: n,
                message: format!("names `{name}`, which is not a file of this repository"),
            });
        }
    }
    findings
}

#[test]
fn documents_named_exist() {
    report("documents_named_exist", documents_named(&tracked()));
}

/// The member names of `v` (when it is an object), as `what`.
fn names_of_keys(v: &serde_json::Value, what: &'static str, names: &mut BTreeSet<(String, &'static str)>) {
    for k in v.as_object().into_iter().flat_map(|o| o.keys()) {
        names.insert((k.clone(), what));
    }
}

/// `v` itself (when it is a string), as `what`.
fn name_of_value(v: &serde_json::Value, what: &'static str, names: &mut BTreeSet<(String, &'static str)>) {
    if let Some(s) = v.as_str() {
        names.insert((s.to_owned(), what));
    }
}

/// The vector format (`spec/vectors/README.md`) is the whole format: every name a vector uses
/// as a field, step, runtime event, host error, action, call operation, rejection, snapshot
/// field, item status or policy value is mentioned there, as `` `name` `` or `"name"`.
fn vector_names_undocumented(files: &[Tracked]) -> Vec<Finding> {
    const FORMAT: &str = "spec/vectors/README.md";
    let format = files.iter().find(|f| f.path == FORMAT).and_then(|f| f.text.as_deref()).unwrap_or_default();
    let mentioned = |name: &str| format.contains(&format!("`{name}`")) || format.contains(&format!("\"{name}\""));
    let mut findings = Vec::new();
    for file in files.iter().filter(|f| f.path.starts_with("spec/vectors/") && f.path.ends_with(".json")) {
        let Some(vector) = file.text.as_deref().and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()) else { continue };
        let mut names: BTreeSet<(String, &'static str)> = BTreeSet::new();
        names_of_keys(&vector, "top-level field", &mut names);
        names_of_keys(&vector["capabilities"], "capabilities field", &mut names);
        names_of_keys(&vector["setup"], "setup field", &mut names);
        names_of_keys(&vector["policy"], "policy field", &mut names);
        for v in vector["policy"].as_object().into_iter().flat_map(|o| o.values()) {
            name_of_value(v, "policy value", &mut names);
        }
        for step in vector["steps"].as_array().into_iter().flatten() {
            names_of_keys(step, "step member", &mut names);
            names_of_keys(&step["runtime"], "runtime member", &mut names);
            name_of_value(&step["runtime"]["event"], "runtime event", &mut names);
            name_of_value(&step["runtime"]["kind"], "break-point kind", &mut names);
            name_of_value(&step["hostError"], "host error", &mut names);
            names_of_keys(&step["call"], "call member", &mut names);
            name_of_value(&step["call"]["op"], "call op", &mut names);
            name_of_value(&step["rejects"], "rejection", &mut names);
            names_of_keys(&step["expectState"], "snapshot field", &mut names);
            names_of_keys(&step["expectError"], "expectError member", &mut names);
            names_of_keys(&step["expectItem"], "expectItem member", &mut names);
            name_of_value(&step["expectItem"]["status"], "item status", &mut names);
            for out in step["expect"].as_array().into_iter().flatten() {
                if out.get("action").is_some() {
                    names_of_keys(out, "action member", &mut names);
                    name_of_value(&out["action"], "action", &mut names);
                } else if out.get("to").is_some() {
                    names.insert(("to".to_owned(), "expected-message member"));
                }
            }
        }
        for (name, what) in names.into_iter().filter(|(name, _)| !mentioned(name)) {
            findings.push(Finding {
                path: file.path.clone(),
                line: 1,
                message: format!("uses the {what} `{name}`, which {FORMAT} does not describe"),
            });
        }
    }
    findings
}

#[test]
fn the_vector_format_describes_what_vectors_use() {
    report("the_vector_format_describes_what_vectors_use", vector_names_undocumented(&tracked()));
}

/// Every test runs: no `#[ignore]`.
#[test]
fn no_ignored_tests() {
    let files = tracked();
    let rust: Vec<Tracked> = files.into_iter().filter(|f| f.path.ends_with(".rs")).collect();
    let findings = lines(&rust)
        .filter(|(_, _, l)| l.trim_start().starts_with(concat!("#[", "ignore")))
        .map(|(path, line, _)| Finding { path: path.to_owned(), line, message: "an ignored test never runs".into() })
        .collect();
    report("no_ignored_tests", findings);
}

/// Everything in `generated/` is written by the pipeline and says so in its first lines.
#[test]
fn every_generated_file_has_the_preamble() {
    let files = tracked();
    let generated: Vec<&Tracked> = files.iter().filter(|f| f.path.starts_with("generated/")).collect();
    assert!(generated.len() >= 10, "generated/ holds only {} files", generated.len());
    let findings = generated
        .into_iter()
        .filter(|f| !f.text.as_deref().is_some_and(|t| t.lines().take(3).any(|l| l.contains(crate::codegen::PREAMBLE))))
        .map(|f| Finding { path: f.path.clone(), line: 1, message: "lacks the generated-file preamble".into() })
        .collect();
    report("every_generated_file_has_the_preamble", findings);
}

/// `allow(clippy::all)` only on generated code (`generated/`, and the line of xtask's codegen
/// that writes it), never on hand-written modules.
#[test]
fn clippy_all_only_on_generated_code() {
    let files = tracked();
    let rust: Vec<Tracked> = files
        .into_iter()
        .filter(|f| f.path.ends_with(".rs") && !f.path.starts_with("generated/") && f.path != "xtask/src/codegen.rs")
        .collect();
    let pattern = concat!("allow(clippy::", "all)");
    let findings = lines(&rust)
        .filter(|(_, _, l)| l.contains(pattern))
        .map(|(path, line, _)| Finding { path: path.to_owned(), line, message: format!("`{pattern}` on hand-written code") })
        .collect();
    report("clippy_all_only_on_generated_code", findings);
}

/// The method names of the schema (`x-method`), read from `spec/`.
fn schema_methods() -> BTreeSet<String> {
    let text = std::fs::read_to_string(crate::root().join("spec/acp-inject.schema.json")).expect("the schema");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    let defs = schema["$defs"].as_object().expect("$defs");
    defs.values().filter_map(|d| d["x-method"].as_str().map(str::to_owned)).collect()
}

/// Whether a file is hand-written product code that sends or reads protocol messages: the
/// Rust crates' sources and the bindings' package code (not tests, examples, benches, fuzz
/// targets, xtask or generated files). `crates/conformance` is left out: the vector format it
/// reads embeds JSON-RPC messages by definition.
fn is_product_source(path: &str) -> bool {
    let rust =
        path.starts_with("crates/") && path.contains("/src/") && path.ends_with(".rs") && !path.starts_with("crates/conformance/");
    let generated = ["crates/wire/src/generated.rs", "crates/ffi/src/wire.rs"].contains(&path);
    let python = path.starts_with("bindings/python/python/acp_inject/") && path.ends_with(".py") && !path.contains("acp_inject_ffi");
    let kotlin = path.starts_with("bindings/kotlin/src/main/") && path.ends_with(".kt");
    // The Swift package's library targets; its benchmark executables and their recorded
    // stream fixture are not product code.
    let swift = path.starts_with("bindings/swift/Sources/")
        && path.ends_with(".swift")
        && !path.contains("Bench")
        && !path.contains("RecordedStream");
    (rust && !generated) || python || kotlin || swift
}

/// Outside tests, protocol messages are built and read through the generated types and method
/// constants, never as JSON literals: no `json!` macro, no string literal naming a method of the
/// schema or the `sessionUpdate` tag, no raw JSON object literal carrying `jsonrpc`. A schema
/// rename then fails to compile instead of breaking the wire. Comments (doc examples included)
/// and a Rust file's trailing `#[cfg(test)]` module are not product code.
fn protocol_literals(files: &[Tracked], methods: &BTreeSet<String>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let json_macro = concat!("json", "!(");
    let tag = concat!("\"session", "Update\"");
    let envelope = concat!("\"json", "rpc\":");
    for file in files.iter().filter(|f| is_product_source(&f.path)) {
        let Some(text) = file.text.as_deref() else { continue };
        let text = text.find("#[cfg(test)]").map_or(text, |at| &text[..at]);
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") || code.starts_with('#') && file.path.ends_with(".py") || code.starts_with("///") {
                continue;
            }
            let mut found = |message: String| findings.push(Finding { path: file.path.clone(), line: i + 1, message });
            if code.contains(json_macro) {
                found(format!("`{json_macro}…)` builds protocol JSON by hand; use the wire types"));
            }
            if code.contains(tag) || code.contains(envelope) {
                found("a protocol JSON literal; use the wire types and builders".into());
            }
            for m in methods {
                if code.contains(&format!("\"{m}\"")) {
                    found(format!("the method name \"{m}\" as a literal; use the `methods::` constant or a typed builder"));
                }
            }
        }
    }
    findings
}

#[test]
fn no_protocol_literals_outside_tests() {
    report("no_protocol_literals_outside_tests", protocol_literals(&tracked(), &schema_methods()));
}

#[test]
fn the_rules_catch_what_they_should() {
    let file = |path: &str, text: &str| Tracked { path: path.into(), text: Some(text.into()) };
    let outside = paths_outside(&[
        // Split, so that `git grep` for these patterns finds nothing in the repository.
        file("xtask/src/a.rs", concat!(r#"root.join(".."#, r#"/shared/X.md")"#)),
        file("spec/vectors/README.md", "[rules](../rules.md) [cov](../../generated/docs/x.md) [up](../../../x.md)"),
        file("README.md", concat!("see /", "work/main/x and https://h/", "work/y")),
        file("bindings/kotlin/pom.xml", "${project.basedir}/../.. and a/../b"),
    ]);
    let found: Vec<(&str, usize)> = outside.iter().map(|f| (f.path.as_str(), f.line)).collect();
    assert_eq!(
        found,
        [("xtask/src/a.rs", 1), ("spec/vectors/README.md", 1), ("README.md", 1)],
        "{:?}",
        outside.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    assert!(outside[1].message.contains("../../../x.md"));

    let docs = documents_named(&[
        file("spec/rules.md", "x"),
        file("a.rs", "//! format: `RULES.md`, see spec/rules.md, rules.md, file:///home/NOTES.md, x.mdx"),
    ]);
    assert_eq!(
        docs.iter().map(|f| f.message.as_str()).collect::<Vec<_>>(),
        ["names `RULES.md`, which is not a file of this repository"]
    );

    let methods: BTreeSet<String> = ["session/prompt".to_owned()].into();
    let literals = protocol_literals(
        &[
            file("crates/core/src/a.rs", concat!("let m = \"session", "/prompt\";\n// \"session", "/prompt\" in a comment is fine")),
            file(
                "crates/core/src/b.rs",
                concat!("let v = serde_json::json", "!({});\n#[cfg(test)]\nmod tests { fn t() { json", "!({}); } }"),
            ),
            file("crates/core/tests/c.rs", concat!("let m = \"session", "/prompt\";")),
            file("bindings/python/python/acp_inject/d.py", concat!("x = {\"json", "rpc\": \"2.0\"}")),
            file("crates/wire/src/generated.rs", concat!("const M: &str = \"session", "/prompt\";")),
        ],
        &methods,
    );
    let found: Vec<(&str, usize)> = literals.iter().map(|f| (f.path.as_str(), f.line)).collect();
    assert_eq!(found, [("crates/core/src/a.rs", 1), ("crates/core/src/b.rs", 1), ("bindings/python/python/acp_inject/d.py", 1)]);

    let undocumented = vector_names_undocumented(&[
        file("spec/vectors/README.md", "`side`, `steps`, `runtime`, \"event\": \"break_point\""),
        file("spec/vectors/agent/a.json", r#"{"side": "agent", "steps": [{"runtime": {"event": "break_point", "kind": "nap"}}]}"#),
    ]);
    assert_eq!(
        undocumented.iter().map(|f| f.message.as_str()).collect::<Vec<_>>(),
        [
            "uses the runtime member `kind`, which spec/vectors/README.md does not describe",
            "uses the break-point kind `nap`, which spec/vectors/README.md does not describe",
        ]
    );
}
