//! `cargo xtask test`: every test in every language, then one summary table.
//!
//! Each stage runs even when an earlier one failed, so one run shows everything that is
//! broken; the exit status is non-zero when any stage failed. Toolchains and packages a stage
//! needs are installed on first use into a cache outside the repository
//! (`$ACP_INJECT_CACHE`, else `$XDG_CACHE_HOME/acp-inject`, else `~/.cache/acp-inject`) and
//! reused afterwards.

use std::path::PathBuf;
use std::process::Command;

use crate::root;

/// One row of the summary.
struct Row {
    language: &'static str,
    tests: Option<(u64, u64)>,
    vectors: Option<(u64, u64)>,
    ok: bool,
    note: String,
}

pub fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask test".into());
    }
    let mut rows = vec![rust(), codegen_check(), python()];
    print_summary(&mut rows);
    let failed = rows.iter().filter(|r| !r.ok).count();
    if failed == 0 { Ok(()) } else { Err(format!("{failed} stage(s) failed")) }
}

pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ACP_INJECT_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| std::env::temp_dir());
    base.join("acp-inject")
}

/// Runs a command in the repository, echoing its output; returns success and the output.
fn run_logged(cmd: &mut Command) -> (bool, String) {
    if cmd.get_current_dir().is_none() {
        cmd.current_dir(root());
    }
    eprintln!("+ {cmd:?}");
    match cmd.output() {
        Ok(out) => {
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            print!("{text}");
            (out.status.success(), text)
        }
        Err(e) => (false, format!("cannot run: {e}")),
    }
}

/// Numbers before `word` on the line: `12 passed` → 12.
fn count_before(line: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> = line.split(|c: char| c.is_whitespace() || c == ',' || c == ';').filter(|w| !w.is_empty()).collect();
    words.windows(2).find(|w| w[1].starts_with(word)).and_then(|w| w[0].parse().ok())
}

/// `N passed, N failed` closing lines of the vector runners.
fn vector_counts(text: &str) -> Option<(u64, u64)> {
    text.lines()
        .rev()
        .find(|l| l.trim_end().ends_with("failed") && l.contains(" passed, ") && !l.contains("test result"))
        .and_then(|l| Some((count_before(l, "passed")?, count_before(l, "failed")?)))
}

fn rust() -> Row {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let (ok, text) = run_logged(Command::new(&cargo).args(["test", "--workspace"]));
    let (mut passed, mut failed) = (0, 0);
    for line in text.lines().filter(|l| l.starts_with("test result:")) {
        passed += count_before(line, "passed").unwrap_or(0);
        failed += count_before(line, "failed").unwrap_or(0);
    }
    let report = acp_inject_core::vectors::run_dirs(&[root().join("spec/vectors")]);
    print!("{}", report.render());
    let vectors_ok = report.failed() == 0 && !report.results.is_empty();
    Row {
        language: "rust",
        tests: Some((passed, failed)),
        vectors: Some((report.passed() as u64, report.failed() as u64)),
        ok: ok && vectors_ok,
        note: if ok { String::new() } else { "cargo test failed".into() },
    }
}

fn codegen_check() -> Row {
    use crate::codegen::{bindings, generate, Mode};
    let stale = generate(Mode::Check).and_then(|mut s| {
        s.extend(bindings(Mode::Check)?);
        Ok(s)
    });
    let (ok, note) = match stale {
        Ok(s) if s.is_empty() => (true, String::new()),
        Ok(s) => (false, format!("stale: {s:?}; run `cargo xtask codegen`")),
        Err(e) => (false, e),
    };
    Row { language: "codegen --check", tests: None, vectors: None, ok, note }
}

/// The Python package: a venv in the cache, `pip install bindings/python[test]`, pytest
/// (vectors included) and mypy over the tests.
fn python() -> Row {
    let mut row = Row { language: "python", tests: None, vectors: None, ok: false, note: String::new() };
    let venv = cache_dir().join("venv");
    let py = venv.join("bin/python");
    if !py.exists() {
        let (ok, _) = run_logged(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        if !ok {
            row.note = "cannot create the venv".into();
            return row;
        }
    }
    let (ok, _) = run_logged(Command::new(&py).args(["-m", "pip", "install", "--quiet", "bindings/python[test]"]));
    if !ok {
        row.note = "pip install bindings/python failed".into();
        return row;
    }
    let (tests_ok, text) = run_logged(Command::new(&py).args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "bindings/python"]));
    let closing = text.lines().rev().find(|l| l.contains(" passed") || l.contains(" failed") || l.contains("error"));
    if let Some(l) = closing {
        row.tests = Some((count_before(l, "passed").unwrap_or(0), count_before(l, "failed").unwrap_or(0)));
    }
    row.vectors = vector_counts(&text);
    let (types_ok, _) = run_logged(Command::new(&py).args(["-m", "mypy"]).current_dir(root().join("bindings/python")));
    row.ok = tests_ok && types_ok && row.vectors.is_some_and(|(_, f)| f == 0);
    if !types_ok {
        row.note = "mypy found type errors".into();
    }
    row
}

fn print_summary(rows: &mut [Row]) {
    let cell = |c: Option<(u64, u64)>| c.map_or("-".to_owned(), |(p, f)| format!("{p} passed, {f} failed"));
    println!("\n== summary ==");
    println!("{:<16} {:<26} {:<26} {}", "stage", "tests", "vectors", "result");
    for r in rows.iter() {
        println!(
            "{:<16} {:<26} {:<26} {}{}",
            r.language,
            cell(r.tests),
            cell(r.vectors),
            if r.ok { "ok" } else { "FAILED" },
            if r.note.is_empty() { String::new() } else { format!(" ({})", r.note) }
        );
    }
    let failed = rows.iter().filter(|r| !r.ok).count();
    println!("stages: {} passed, {} failed", rows.len() - failed, failed);
}
