//! acp-inject-tidy: the repository's tidy rules, checked on every tracked file (`git
//! ls-files`), so `cargo test` fails when one is broken.
//!
//! Each rule is a public function that collects `Finding`s and hands them to `report`, which
//! fails naming every one; `tests/rules.rs` runs each rule as one `#[test]`, and the two rules
//! that need codegen's lists of what it generates ([`every_generated_file_has_the_preamble`],
//! [`no_protocol_literals_outside_tests`]) run in xtask's tests, which have those lists. To add
//! a rule, write a function over `tracked` files, call `report` with its findings, and add
//! its test. A rule whose existing offenders cannot be fixed in the same change lists them in
//! `KNOWN`; `report` fails both on new offenders and on listed ones that are gone (so the
//! list only shrinks).
//!
//! This file spells out the patterns it looks for, so every rule skips it. The rules panic
//! when `git` does not run: they read the repository through it.

use std::collections::BTreeSet;
use std::path::{Component, Path};

use acp_inject_tool_support::{root, Error};

/// One tracked file: its path relative to the repository root and its text (`None` for a file
/// that is not UTF-8, which the text rules skip).
struct Tracked {
    path: String,
    text: Option<String>,
}

/// Every file `git ls-files` lists, with its contents.
fn tracked() -> Vec<Tracked> {
    let root = root();
    let out = std::process::Command::new("git").arg("-C").arg(&root).args(["ls-files", "-z"]).output().expect("git ls-files runs");
    assert!(out.status.success(), "git ls-files: {}", String::from_utf8_lossy(&out.stderr));
    let files: Vec<Tracked> = String::from_utf8(out.stdout)
        .expect("UTF-8 paths")
        .split('\0')
        .filter(|p| !p.is_empty() && *p != SELF)
        // Fuzz inputs are data, whatever bytes the fuzzer wrote, and lockfiles are the package
        // managers' records (a package's own file names among them): no text rule applies.
        .map(|p| Tracked {
            path: p.to_owned(),
            text: if p.starts_with("fuzz/corpus/") || p.starts_with("fuzz/regressions/") || p.ends_with("package-lock.json") {
                None
            } else {
                std::fs::read(root.join(p)).ok().and_then(|b| String::from_utf8(b).ok())
            },
        })
        .collect();
    assert!(files.len() > 100, "expected the repository's files, found {}", files.len());
    files
}

const SELF: &str = "tools/tidy/src/lib.rs";

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
fn report(rule: &str, findings: Vec<Finding>) -> Result<(), Error> {
    let known: BTreeSet<&str> = KNOWN.iter().filter(|(r, _)| *r == rule).map(|(_, f)| *f).collect();
    let offending: BTreeSet<&str> = findings.iter().map(|f| f.path.as_str()).collect();
    let mut problems: Vec<String> = findings
        .iter()
        .filter(|f| !known.contains(f.path.as_str()))
        .map(|f| format!("{}:{}: {}", f.path, f.line, f.message))
        .collect();
    problems.extend(known.difference(&offending).map(|f| format!("{f}: no longer breaks `{rule}`; remove it from KNOWN in {SELF}")));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::msg(format!("tidy rule `{rule}` is broken:\n{}", problems.join("\n"))))
    }
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

/// No path outside the repository (`paths_outside`).
pub fn no_paths_outside_the_repository() -> Result<(), Error> {
    report("no_paths_outside_the_repository", paths_outside(&tracked()))
}

/// A document named in a comment or a doc (`Foo.md`, not part of a path or a URL) is a file of
/// the repository; names of documents that live elsewhere leave the reader with nothing.
fn documents_named(files: &[Tracked]) -> Vec<Finding> {
    let existing: BTreeSet<&str> = files.iter().filter_map(|f| f.path.rsplit('/').next()).collect();
    let mut findings = Vec::new();
    // The vendored upstream schemas are upstream's text: the documents they name (a skill's
    // `SKILL.md`) are not ours.
    for (path, n, line) in lines(files).filter(|(path, _, _)| !path.starts_with("spec/upstream/")) {
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

/// The tracked files and every directory above one, to look a named path up in.
struct Tree {
    files: BTreeSet<String>,
    dirs: BTreeSet<String>,
}

impl Tree {
    fn of(files: &[Tracked]) -> Tree {
        let mut dirs = BTreeSet::new();
        for f in files {
            let mut at = 0;
            while let Some(slash) = f.path[at..].find('/') {
                dirs.insert(f.path[..at + slash].to_owned());
                at += slash + 1;
            }
        }
        Tree { files: files.iter().map(|f| f.path.clone()).collect(), dirs }
    }

    /// A tracked file, or a directory that holds one.
    fn has(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        self.files.contains(path) || self.dirs.contains(path)
    }

    /// The crate a file belongs to: the nearest directory above it, below the root, that holds
    /// a package manifest, when that manifest is a `Cargo.toml` (the TypeScript template in
    /// `codegen/templates/typescript` is a package of its own, not part of the codegen crate).
    fn crate_of<'a>(&self, file: &'a str) -> Option<&'a str> {
        const MANIFESTS: [&str; 5] = ["Cargo.toml", "package.json", "pyproject.toml", "pom.xml", "Package.swift"];
        let mut dir = file;
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if let Some(manifest) = MANIFESTS.iter().find(|m| self.files.contains(&format!("{parent}/{m}"))) {
                return (*manifest == "Cargo.toml").then_some(parent);
            }
            dir = parent;
        }
        None
    }

    /// The top-level directories: a path that starts with one of them (`crates/`, `.ci/`) is
    /// read as a path from the repository root.
    fn top_level(&self) -> impl Iterator<Item = &str> {
        self.dirs.iter().map(String::as_str).filter(|d| !d.contains('/'))
    }
}

/// The parts of a file a reader takes for documentation, each with its 1-based line number:
/// every line of a Markdown file, and the comments (doc comments or not) of Rust, Kotlin,
/// Swift and Python sources: `//` to the end of the line, `/* … */` blocks, Python `#`
/// comments and triple-quoted strings (docstrings). A `//` or `#` inside a string literal is
/// taken for a comment too; what follows it is rarely a path, and the rules below only read
/// paths.
fn doc_text(path: &str, text: &str) -> Vec<(usize, String)> {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        match ext {
            "md" => out.push((n, line.to_owned())),
            "rs" | "kt" | "kts" | "swift" => {
                if in_block {
                    out.push((n, line.to_owned()));
                    in_block = !line.contains("*/");
                } else if let Some(at) = line.find("//") {
                    out.push((n, line[at..].to_owned()));
                } else if let Some(at) = line.find("/*") {
                    out.push((n, line[at..].to_owned()));
                    in_block = !line[at..].contains("*/");
                }
            }
            "py" | "pyi" => {
                let quotes = line.matches("\"\"\"").count();
                if in_block || quotes > 0 {
                    out.push((n, line.to_owned()));
                } else if let Some(at) = line.find('#') {
                    out.push((n, line[at..].to_owned()));
                }
                in_block ^= quotes % 2 == 1;
            }
            _ => return Vec::new(),
        }
    }
    out
}

/// Whether a named path is a placeholder or a pattern rather than one file: a glob, a
/// `<name>`, `{a,b}` or `$VAR` part, an elided `…` part, or an all-capitals part without a
/// file ending (`DIR`, `ABSOLUTE/PATH`; `README.md` is a file).
fn is_placeholder(path: &str) -> bool {
    path.contains(['*', '<', '>', '{', '}', '$', '…', '?'])
        || path.split('/').any(|part| part.len() > 1 && part.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
}

/// File endings that make a backquoted relative path (`src/replay.rs`) a file name rather than
/// a method (`session/prompt`) or a media type.
const FILE_ENDINGS: &[&str] = &[".rs", ".py", ".pyi", ".kt", ".swift", ".md", ".json", ".toml", ".ts", ".sh", ".h", ".xml"];

/// Paths the documentation names are files or directories of the repository (`git ls-files`):
///
/// - a path from the root (starting with a top-level directory: `crates/core/README.md`,
///   `.ci/run`), anywhere in a Markdown file or a source comment, backquoted or not;
/// - a relative Markdown link target (`[rules](../rules.md)`), from the file's directory;
/// - a backquoted relative path with a file ending (`` `src/replay.rs` ``): it resolves from
///   the file's directory; else, in a crate's Markdown (its README), from the crate's root,
///   the way the Rust crate registry shows it; else, anywhere else, some tracked file ends with it. That
///   last is weaker (the text around it says which crate it means, a README at the root naming
///   `src/replay.rs` of `crates/conformance`), but it still catches a file that was deleted
///   or renamed.
///
/// URLs, `#anchors`, placeholders and patterns ([`is_placeholder`]) are not paths, and neither
/// is anything git ignores (`made_at_run_time`: `fuzz/target`, `dist/`, the Python package's
/// native library), which builds and commands create and a clone does not have.
fn paths_named(files: &[Tracked], made_at_run_time: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let tree = Tree::of(files);
    let tops: Vec<String> = tree.top_level().map(|d| format!("{d}/")).collect();
    let ends = |c: char| c.is_whitespace() || "\"'`()[]|,;".contains(c);
    let clean = |p: &str| p.split('#').next().unwrap_or_default().trim_end_matches(['.', ':']).to_owned();
    let nowhere =
        |verb: &str, path: &str| (path.to_owned(), format!("{verb} `{path}`, which is not a file or directory of this repository"));
    let mut findings = Vec::new();
    for file in files {
        let Some(text) = file.text.as_deref() else { continue };
        let markdown = file.path.ends_with(".md");
        for (n, line) in doc_text(&file.path, text) {
            // (the path as named or resolved, what the finding says about it)
            let mut missing: Vec<(String, String)> = Vec::new();
            for top in &tops {
                for (at, _) in line.match_indices(top.as_str()) {
                    let before = line[..at].chars().next_back();
                    if before.is_some_and(|c| c.is_ascii_alphanumeric() || "_.-/~$:@".contains(c)) {
                        continue; // the middle of a longer path, a URL or a `$VAR/` expansion
                    }
                    let path = clean(line[at..].split(ends).next().unwrap_or_default());
                    if !is_placeholder(&path) && !tree.has(&path) {
                        missing.push(nowhere("names", &path));
                    }
                }
            }
            if markdown {
                for (at, _) in line.match_indices("](") {
                    let target = clean(line[at + 2..].split([')', ' ']).next().unwrap_or_default());
                    if target.is_empty() || target.contains(':') || is_placeholder(&target) {
                        continue; // an anchor in the same file, a URL, `mailto:`
                    }
                    // Above the root: the rule `no_paths_outside_the_repository` reports it.
                    let Some(parts) = resolve_from(&file.path, &target) else { continue };
                    let resolved = parts.join("/");
                    if !tree.has(&resolved) {
                        missing.push(nowhere("links to", &resolved));
                    }
                }
            }
            for span in line.split('`').skip(1).step_by(2) {
                let relative = span.contains('/')
                    && !span.starts_with('/')
                    && !tops.iter().any(|t| span.starts_with(t.as_str()))
                    && span.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
                    && FILE_ENDINGS.iter().any(|e| span.ends_with(e));
                if !relative {
                    continue;
                }
                if resolve_from(&file.path, span).is_some_and(|parts| tree.has(&parts.join("/"))) {
                    continue;
                }
                let plain = span.trim_start_matches("./");
                match tree.crate_of(&file.path).filter(|_| markdown) {
                    Some(krate) if !tree.has(&format!("{krate}/{plain}")) => {
                        missing.push((span.to_owned(), format!("names `{span}`, which is not a file of its crate ({krate}/{plain})")));
                    }
                    None if !tree.files.iter().any(|f| f.ends_with(&format!("/{plain}"))) => missing.push(nowhere("names", span)),
                    _ => {}
                }
            }
            for (path, message) in missing {
                if !made_at_run_time(&path) {
                    findings.push(Finding { path: file.path.clone(), line: n, message });
                }
            }
        }
    }
    findings
}

/// Whether git ignores a path: the build, the tests or a command make it, and it is never
/// tracked (`fuzz/target/`, `dist/`, what `maturin develop` writes into the Python package).
fn ignored_by_git(path: &str) -> bool {
    let mut git = std::process::Command::new("git");
    git.arg("-C").arg(root()).args(["check-ignore", "-q", "--no-index", "--", path]);
    git.status().expect("git check-ignore runs").success()
}

/// Documents and paths that docs and comments name exist: a `Foo.md` named alone
/// (`documents_named`), and repository paths and relative links (`paths_named`).
pub fn documents_named_exist() -> Result<(), Error> {
    let files = tracked();
    let mut findings = documents_named(&files);
    findings.extend(paths_named(&files, &ignored_by_git));
    report("documents_named_exist", findings)
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

/// Every name a vector uses is described (`vector_names_undocumented`).
pub fn the_vector_format_describes_what_vectors_use() -> Result<(), Error> {
    report("the_vector_format_describes_what_vectors_use", vector_names_undocumented(&tracked()))
}

/// Every test runs: no `#[ignore]`.
pub fn no_ignored_tests() -> Result<(), Error> {
    let files = tracked();
    let rust: Vec<Tracked> = files.into_iter().filter(|f| f.path.ends_with(".rs")).collect();
    let findings = lines(&rust)
        .filter(|(_, _, l)| l.trim_start().starts_with(concat!("#[", "ignore")))
        .map(|(path, line, _)| Finding { path: path.to_owned(), line, message: "an ignored test never runs".into() })
        .collect();
    report("no_ignored_tests", findings)
}

/// Everything in `generated/`, and every generated file beside the code using it
/// (`beside_code`: codegen's `BESIDE_CODE`), is written by the pipeline and says so in its
/// first lines: one of `preambles` (`.mvn/maven.config`, which Maven splits at whitespace,
/// spells it with underscores for spaces).
pub fn every_generated_file_has_the_preamble(beside_code: &[&str], preambles: &[String]) -> Result<(), Error> {
    let files = tracked();
    let mut generated: Vec<Tracked> = files.into_iter().filter(|f| f.path.starts_with("generated/")).collect();
    assert!(generated.len() >= 10, "generated/ holds only {} files", generated.len());
    // Read from disk: a file codegen has just started writing is not tracked yet.
    let beside = beside_code.iter().map(|p| Tracked { path: (*p).to_owned(), text: std::fs::read_to_string(root().join(p)).ok() });
    generated.extend(beside);
    let findings = generated
        .into_iter()
        .filter(|f| !f.text.as_deref().is_some_and(|t| t.lines().take(3).any(|l| preambles.iter().any(|p| l.contains(p.as_str())))))
        .map(|f| Finding { path: f.path.clone(), line: 1, message: "lacks the generated-file preamble (or is missing)".into() })
        .collect();
    report("every_generated_file_has_the_preamble", findings)
}

/// `allow(clippy::all)` only on generated code (`generated/`, and the line of xtask's codegen
/// that writes it), never on hand-written modules.
pub fn clippy_all_only_on_generated_code() -> Result<(), Error> {
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
    report("clippy_all_only_on_generated_code", findings)
}

/// The method names of the schema (`x-method`), read from `spec/`.
fn schema_methods() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("spec/acp-inject.schema.json")).expect("the schema");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    let defs = schema["$defs"].as_object().expect("$defs");
    defs.values().filter_map(|d| d["x-method"].as_str().map(str::to_owned)).collect()
}

/// Whether a file is hand-written product code that sends or reads protocol messages: the
/// Rust crates' sources and the bindings' package code (not tests, examples, benches, fuzz
/// targets, xtask or generated files: `generated_rust`, codegen's Rust outputs inside the
/// crates). `crates/conformance` is left out: the vector format it reads embeds JSON-RPC
/// messages by definition.
fn is_product_source(path: &str, generated_rust: &[&str]) -> bool {
    let rust =
        path.starts_with("crates/") && path.contains("/src/") && path.ends_with(".rs") && !path.starts_with("crates/conformance/");
    let generated = generated_rust.contains(&path);
    let python = path.starts_with("bindings/python/python/acp_inject/") && path.ends_with(".py") && !path.contains("acp_inject_ffi");
    let kotlin = path.starts_with("bindings/kotlin/src/main/") && path.ends_with(".kt");
    // The Swift package's library targets; its benchmark executables and their recorded
    // stream fixture are not product code, and a link into generated/ (the generated values and
    // UniFFI's module) is generated code.
    let swift = path.starts_with("bindings/swift/Sources/")
        && path.ends_with(".swift")
        && !path.contains("Bench")
        && !path.contains("RecordedStream")
        && !std::fs::symlink_metadata(root().join(path)).is_ok_and(|m| m.file_type().is_symlink());
    ((rust || python) && !generated) || kotlin || swift
}

/// Outside tests, protocol messages are built and read through the generated types and method
/// constants, never as JSON literals: no `json!` macro, no string literal naming a method of the
/// schema or the `sessionUpdate` tag, no raw JSON object literal carrying `jsonrpc`. A schema
/// rename then fails to compile instead of breaking the wire. Comments (doc examples included)
/// and a Rust file's trailing `#[cfg(test)]` module are not product code.
fn protocol_literals(files: &[Tracked], methods: &BTreeSet<String>, generated_rust: &[&str]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let json_macro = concat!("json", "!(");
    let tag = concat!("\"session", "Update\"");
    let envelope = concat!("\"json", "rpc\":");
    for file in files.iter().filter(|f| is_product_source(&f.path, generated_rust)) {
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

/// No protocol JSON written by hand outside tests (`protocol_literals`); `generated_rust`:
/// codegen's Rust outputs inside the crates, which are not hand-written.
pub fn no_protocol_literals_outside_tests(generated_rust: &[&str]) -> Result<(), Error> {
    report("no_protocol_literals_outside_tests", protocol_literals(&tracked(), &schema_methods(), generated_rust))
}

/// The conformance harness (the vector engine `VectorRun`, `acp-inject-conformance` and what it
/// links) never ships. The bindings' test suites get it from the test-only component
/// `crates/ffi-conformance`; `crates/ffi`, which the wheel, the jar and the Swift package are
/// built from, does not depend on it, and neither the shipped bindings (`generated/python`,
/// `generated/kotlin`, `generated/swift`) nor the packages' own sources name it. (`cargo xtask
/// dist` checks the built artifacts themselves: their file lists and their libraries' symbols.)
fn conformance_in_shipped_sources(files: &[Tracked]) -> Vec<Finding> {
    let shipped = |path: &str| {
        let python = path.starts_with("bindings/python/python/")
            // The stub of the test package's module, which bindings/python/pyproject.toml excludes.
            && !path.ends_with("/acp_inject_ffi_conformance.pyi");
        let others =
            ["generated/python/", "generated/kotlin/", "generated/swift/", "bindings/kotlin/src/main/", "bindings/swift/dist/"];
        let swift_library = path.starts_with("bindings/swift/Sources/AcpInject/");
        python || swift_library || others.iter().any(|d| path.starts_with(d))
    };
    let sources: Vec<&Tracked> = files.iter().filter(|f| shipped(&f.path)).collect();
    let mut findings: Vec<Finding> = sources
        .iter()
        .flat_map(|f| f.text.as_deref().map(|t| (f.path.as_str(), t)))
        .flat_map(|(path, text)| text.lines().enumerate().map(move |(i, l)| (path, i + 1, l)))
        .filter(|(_, _, l)| l.contains("VectorRun"))
        .map(|(path, line, _)| Finding {
            path: path.to_owned(),
            line,
            message: "names the conformance engine (`VectorRun`), which does not ship".into(),
        })
        .collect();
    let manifest = "crates/ffi/Cargo.toml";
    if let Some(text) = files.iter().find(|f| f.path == manifest).and_then(|f| f.text.as_deref()) {
        for (i, l) in text.lines().enumerate() {
            if l.trim_start().starts_with("acp-inject-conformance") {
                findings.push(Finding {
                    path: manifest.into(),
                    line: i + 1,
                    message: "acp-inject-ffi depends on the conformance harness; it belongs to crates/ffi-conformance".into(),
                });
            }
        }
    }
    findings
}

/// No shipped source names the conformance harness (`conformance_in_shipped_sources`).
pub fn the_shipped_bindings_carry_no_conformance_harness() -> Result<(), Error> {
    report("the_shipped_bindings_carry_no_conformance_harness", conformance_in_shipped_sources(&tracked()))
}

/// Hand-written binding code (the packages' layers, their tests and examples under
/// `bindings/`) reaches UniFFI's generated code through its public surface only: no name of its
/// private runtime (`_Uniffi…`, `FfiConverter…`, a tuple variant's `_values`), and no attribute
/// set on a generated class or module (which the next UniFFI release may break or silently
/// undo). The values are the packages' own, generated from the model; UniFFI carries objects.
fn uniffi_privates_in_bindings(files: &[Tracked]) -> Vec<Finding> {
    let hand_written = |path: &str| {
        path.starts_with("bindings/")
            && [".py", ".kt", ".swift"].iter().any(|e| path.ends_with(e))
            // Written by `cargo xtask codegen` (every_generated_file_has_the_preamble checks it says so).
            && path != "bindings/python/python/acp_inject/values.py"
            // A link into generated/ (the Swift package's sources) is generated code, not a copy.
            && !std::fs::symlink_metadata(root().join(path)).is_ok_and(|m| m.file_type().is_symlink())
    };
    let private = |line: &str| -> Option<&'static str> {
        let idents = line.split(|c: char| !(c.is_alphanumeric() || c == '_'));
        for word in idents {
            if word.starts_with("_Uniffi") || word.starts_with("_UniFFI") {
                return Some("names UniFFI's private runtime (`_Uniffi…`)");
            }
            if word.starts_with("FfiConverter") {
                return Some("names UniFFI's private converters (`FfiConverter…`)");
            }
        }
        if line.contains("._values") {
            return Some("reads a generated variant's private `_values`");
        }
        let assigns = |target: &str| {
            let t = line.trim_start();
            t.starts_with(target)
                && t[target.len()..].contains('.')
                && t.split_once('=').is_some_and(|(lhs, rhs)| {
                    !lhs.contains('(') && !lhs.trim_end().ends_with(['=', '!', '<', '>']) && !rhs.starts_with('=')
                })
        };
        if line.contains("setattr(_ffi") || line.contains("setattr(generated") || assigns("_ffi.") || assigns("generated.") {
            return Some("sets an attribute of a generated class or module");
        }
        None
    };
    files
        .iter()
        .filter(|f| hand_written(&f.path))
        .flat_map(|f| f.text.as_deref().map(|t| (f.path.as_str(), t)))
        .flat_map(|(path, text)| text.lines().enumerate().map(move |(i, l)| (path, i + 1, l)))
        .filter_map(|(path, line, l)| private(l).map(|m| Finding { path: path.to_owned(), line, message: m.to_owned() }))
        .collect()
}

/// No hand-written binding code names a UniFFI private or patches a generated class
/// (`uniffi_privates_in_bindings`).
pub fn the_bindings_use_uniffis_public_surface_only() -> Result<(), Error> {
    report("the_bindings_use_uniffis_public_surface_only", uniffi_privates_in_bindings(&tracked()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uniffi_privates_rule_catches_what_it_should() {
        let file = |path: &str, text: &str| Tracked { path: path.into(), text: Some(text.into()) };
        let found = uniffi_privates_in_bindings(&[
            file(
                "bindings/python/python/acp_inject/_core.py",
                "x = _ffi._UniffiConverterString.lift(b)
ok = _ffi.AgentCore(config)",
            ),
            file(
                "bindings/python/python/acp_inject/_repr.py",
                "    cls.__repr__ = f\n_ffi.Usage.__repr__ = show\nsetattr(_ffi.Usage, 'x', 1)",
            ),
            file("bindings/python/tests/test_x.py", "first = variant._values[0]\nif generated.AgentCore == other: pass"),
            file("bindings/kotlin/src/main/kotlin/dev/acpinject/Lines.kt", "FfiConverterSequenceTypeEvent.read(buf)"),
            file("bindings/swift/Sources/AcpInject/Client.swift", "let v = try FfiConverterTypeEvent.lift(b)"),
            file("bindings/python/python/acp_inject/values.py", "_UniffiLib = 1"),
            file("crates/ffi/src/lib.rs", "FfiConverter"),
        ]);
        let found: Vec<(&str, usize)> = found.iter().map(|f| (f.path.as_str(), f.line)).collect();
        assert_eq!(
            found,
            [
                ("bindings/python/python/acp_inject/_core.py", 1),
                ("bindings/python/python/acp_inject/_repr.py", 2),
                ("bindings/python/python/acp_inject/_repr.py", 3),
                ("bindings/python/tests/test_x.py", 1),
                ("bindings/kotlin/src/main/kotlin/dev/acpinject/Lines.kt", 1),
                ("bindings/swift/Sources/AcpInject/Client.swift", 1),
            ]
        );
    }

    #[test]
    fn the_conformance_rule_catches_what_it_should() {
        let file = |path: &str, text: &str| Tracked { path: path.into(), text: Some(text.into()) };
        let engine = concat!("Vector", "Run");
        let found = conformance_in_shipped_sources(&[
            file("generated/kotlin/dev/acpinject/acp_inject_ffi.kt", &format!("class AgentCore\nclass {engine}")),
            file("bindings/swift/Sources/AcpInject/Conformance.swift", &format!("let run = {engine}()")),
            file("bindings/python/python/acp_inject/_errors.py", engine),
            file("bindings/python/python/acp_inject/acp_inject_ffi/acp_inject_ffi_conformance.pyi", engine),
            file("generated/conformance/kotlin/dev/acpinject/conformance/acp_inject_ffi_conformance.kt", engine),
            file("bindings/kotlin/src/test/kotlin/dev/acpinject/conformance/Conformance.kt", engine),
            file("crates/ffi/Cargo.toml", "[dependencies]\nacp-inject-core.workspace = true\nacp-inject-conformance.workspace = true"),
        ]);
        let found: Vec<(&str, usize)> = found.iter().map(|f| (f.path.as_str(), f.line)).collect();
        assert_eq!(
            found,
            [
                ("generated/kotlin/dev/acpinject/acp_inject_ffi.kt", 2),
                ("bindings/swift/Sources/AcpInject/Conformance.swift", 1),
                ("bindings/python/python/acp_inject/_errors.py", 1),
                ("crates/ffi/Cargo.toml", 3)
            ]
        );
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

        let named = paths_named(
        &[
            file("crates/core/src/lib.rs", "//! See `crates/core/src/gone.rs`, crates/core/src/lib.rs and crates/core/src.\nlet p = \"crates/x\";"),
            file("crates/conformance/src/replay.rs", "/* crates/old/x.rs\n   `tests/vectors.rs` */ code(); // crates/core/, fuzz/target/debug"),
            file("crates/conformance/tests/vectors.rs", "// `src/replay.rs`, `src/gone.rs`, `agent/x.json` (vectors), `session/prompt`"),
            file("bindings/python/bench/b.py", "\"\"\"Stream of bindings/python/bench/gone.py.\n\nbindings/python/bench/b.py\"\"\"\nx = 'crates/code'  # crates/nope"),
            file("spec/vectors/agent/x.json", "{\"cwd\": \"crates/not-a-doc\"}"),
            file(
                "spec/README.md",
                "[r](rules.md) [v](vectors/README.md#top) [gone](../crates/gone.md) [a](#anchor) [u](https://h/crates/x) \
                 `crates/*/src` `spec/vectors/DIR` `crates/<name>` `generated/kotlin/…/x.kt` `$ROOT/crates/x` see crates/core/src/lib.rs.",
            ),
            file("spec/rules.md", "x"),
            file("spec/vectors/README.md", "x"),
            file("fuzz/Cargo.toml", "x"),
            file("crates/core/Cargo.toml", "x"),
            file("crates/core/README.md", "The crate docs (`src/lib.rs`); coverage: `tests/vectors.rs`."),
        ],
        &|p| p.starts_with("fuzz/target"),
    );
        assert_eq!(
            named.iter().map(|f| (f.path.as_str(), f.line, f.message.split(", which").next().unwrap_or_default())).collect::<Vec<_>>(),
            [
                ("crates/core/src/lib.rs", 1, "names `crates/core/src/gone.rs`"),
                ("crates/conformance/src/replay.rs", 1, "names `crates/old/x.rs`"),
                ("crates/conformance/tests/vectors.rs", 1, "names `src/gone.rs`"),
                ("bindings/python/bench/b.py", 1, "names `bindings/python/bench/gone.py`"),
                ("bindings/python/bench/b.py", 4, "names `crates/nope`"),
                ("spec/README.md", 1, "links to `crates/gone.md`"),
                ("crates/core/README.md", 1, "names `tests/vectors.rs`"),
            ]
        );

        let methods: BTreeSet<String> = ["session/prompt".to_owned()].into();
        let literals = protocol_literals(
            &[
                file(
                    "crates/core/src/a.rs",
                    concat!("let m = \"session", "/prompt\";\n// \"session", "/prompt\" in a comment is fine"),
                ),
                file(
                    "crates/core/src/b.rs",
                    concat!("let v = serde_json::json", "!({});\n#[cfg(test)]\nmod tests { fn t() { json", "!({}); } }"),
                ),
                file("crates/core/tests/c.rs", concat!("let m = \"session", "/prompt\";")),
                file("bindings/python/python/acp_inject/d.py", concat!("x = {\"json", "rpc\": \"2.0\"}")),
                file("crates/wire/src/generated.rs", concat!("const M: &str = \"session", "/prompt\";")),
            ],
            &methods,
            &["crates/wire/src/generated.rs"],
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
}
