//! `cargo xtask test`: every test in every language, then one summary table.
//!
//! Each stage runs even when an earlier one failed, so one run shows everything that is
//! broken; the exit status is non-zero when any stage failed. Toolchains and packages a stage
//! needs are installed on first use into a cache outside the repository
//! (`$ACP_INJECT_CACHE`, else `$XDG_CACHE_HOME/acp-inject`, else `~/.cache/acp-inject`) and
//! reused afterwards.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

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
    let mut rows = vec![
        rust(),
        codegen_check(),
        python(),
        kotlin(),
        swift(),
        typescript(),
        consumer("python (wheel)", crate::consumers::python),
        consumer("kotlin (jar)", crate::consumers::kotlin),
        consumer("swift (package)", crate::consumers::swift),
    ];
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
        .unwrap_or_else(std::env::temp_dir);
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
    let (ok, text) = run_logged(Command::new(crate::cargo()).args(["test", "--workspace"]));
    let (mut passed, mut failed) = (0, 0);
    for line in text.lines().filter(|l| l.starts_with("test result:")) {
        passed += count_before(line, "passed").unwrap_or(0);
        failed += count_before(line, "failed").unwrap_or(0);
    }
    let (vectors_ok, text) = run_logged(Command::new(crate::cargo()).args([
        "run",
        "-p",
        "acp-inject-conformance",
        "--bin",
        "acp-inject-conformance",
    ]));
    let counts = vector_counts(&text);
    let vectors_ok = vectors_ok && counts.is_some_and(|(p, f)| p > 0 && f == 0);
    Row {
        language: "rust",
        tests: Some((passed, failed)),
        vectors: counts,
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
    let py = match crate::pyenv::python_with_package("[test]") {
        Ok(py) => py,
        Err(e) => {
            row.note = e;
            return row;
        }
    };
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

/// The directory holding a fresh `libacp_inject_ffi.so` for the Kotlin and Swift stages:
/// `cargo build -p acp-inject-ffi`, in the target directory `cargo metadata` reports.
fn ffi_lib_dir() -> Result<PathBuf, String> {
    let (ok, _) = run_logged(Command::new(crate::cargo()).args(["build", "--quiet", "-p", "acp-inject-ffi"]));
    if !ok {
        return Err("cargo build -p acp-inject-ffi failed".into());
    }
    Ok(crate::target_dir()?.join("debug"))
}

/// What the Kotlin and Swift stages need built: the cdylib's directory and the agent binary.
fn library_and_agent() -> Result<(PathBuf, PathBuf), String> {
    Ok((ffi_lib_dir()?, reference_agent()?))
}

/// The reference agent for the Kotlin and Swift end-to-end tests (passed as
/// `ACP_INJECT_AGENT`): built once per run (`cargo build -p acp-inject-reference-agent`), by
/// whichever stage asks first, so each stage still works alone.
fn reference_agent() -> Result<PathBuf, String> {
    static AGENT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    AGENT
        .get_or_init(|| {
            eprintln!("+ cargo build -p acp-inject-reference-agent");
            crate::pyenv::cargo_bin("acp-inject-reference-agent", "acp-inject-agent")
        })
        .clone()
}

/// `apt-get install`s Debian packages (after one `apt-get update` per run).
fn apt_install(packages: &[&str]) -> bool {
    static UPDATED: AtomicBool = AtomicBool::new(false);
    if !UPDATED.load(Ordering::Relaxed) {
        let (ok, _) = run_logged(Command::new("apt-get").arg("update"));
        if !ok {
            return false;
        }
        UPDATED.store(true, Ordering::Relaxed);
    }
    let (ok, _) = run_logged(
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    );
    ok
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).output().is_ok_and(|o| o.status.success())
}

/// The number after `word` on the line: `Tests run: 12,` → 12.
fn count_after(line: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> = line.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    words.windows(2).find(|w| w[0] == word).and_then(|w| w[1].parse().ok())
}

/// The Kotlin package (bindings/kotlin): Maven + JUnit 5 over the generated Kotlin, loading the
/// cdylib through JNA; the end-to-end test starts the reference agent (`ACP_INJECT_AGENT`).
/// Maven and a JDK come from apt when missing; dependencies land in ~/.m2.
fn kotlin() -> Row {
    let started = Instant::now();
    let mut row = Row { language: "kotlin", tests: None, vectors: None, ok: false, note: String::new() };
    let have_maven = runs("java", "-version") && runs("mvn", "-v");
    if !have_maven && !apt_install(&["maven", "default-jdk-headless"]) {
        row.note = "cannot install maven and a JDK (apt-get)".into();
        return row;
    }
    let (lib, agent) = match library_and_agent() {
        Ok(built) => built,
        Err(e) => {
            row.note = e;
            return row;
        }
    };
    let (ok, text) = run_logged(
        Command::new("mvn")
            .args(["-B", "-ntp", "test", "-Dacp.skipCargo=true"])
            .arg(format!("-Dacp.lib.dir={}", lib.display()))
            .env("ACP_INJECT_AGENT", &agent)
            .current_dir(root().join("bindings/kotlin")),
    );
    // Surefire's closing `Tests run: N, Failures: N, Errors: N, Skipped: N` (no `Time elapsed`).
    let closing = text.lines().rev().find(|l| l.contains("Tests run:") && !l.contains("Time elapsed"));
    if let Some(l) = closing {
        let n = |w| count_after(l, w).unwrap_or(0);
        let failed = n("Failures:") + n("Errors:");
        row.tests = Some((n("run:").saturating_sub(failed + n("Skipped:")), failed));
    }
    row.vectors = vector_counts(&text);
    row.ok = ok && row.tests.is_some_and(|(_, f)| f == 0) && row.vectors.is_some_and(|(p, f)| p > 0 && f == 0);
    if !ok {
        row.note = "mvn test failed".into();
    }
    eprintln!("kotlin stage: {:.1} s", started.elapsed().as_secs_f64());
    row
}

/// The Swift package (bindings/swift): `swift test` through bindings/swift/swiftw, which runs
/// Swift 6.0.3 in a Debian trixie chroot kept in the cache dir (created on first use); the
/// end-to-end test starts the host-built reference agent inside it (`ACP_INJECT_AGENT`).
fn swift() -> Row {
    let started = Instant::now();
    let mut row = Row { language: "swift", tests: None, vectors: None, ok: false, note: String::new() };
    let (lib, agent) = match library_and_agent() {
        Ok(built) => built,
        Err(e) => {
            row.note = e;
            return row;
        }
    };
    let (ok, text) = run_logged(
        Command::new(root().join("bindings/swift/swiftw"))
            .arg("test")
            .env("ACP_INJECT_CACHE", cache_dir())
            .env("ACP_INJECT_LIB_DIR", &lib)
            .env("ACP_INJECT_AGENT", &agent),
    );
    // XCTest's closing `Executed N tests, with N failures (N unexpected) in …` is the total.
    let closing = text.lines().rev().find(|l| l.trim_start().starts_with("Executed ") && l.contains(" failure"));
    if let Some(l) = closing {
        let (run, failed) = (count_before(l, "test").unwrap_or(0), count_before(l, "failure").unwrap_or(0));
        row.tests = Some((run.saturating_sub(failed), failed));
    }
    row.vectors = vector_counts(&text);
    row.ok = ok && row.tests.is_some_and(|(_, f)| f == 0) && row.vectors.is_some_and(|(p, f)| p > 0 && f == 0);
    if !ok {
        row.note = "swiftw test failed".into();
    }
    eprintln!("swift stage: {:.1} s", started.elapsed().as_secs_f64());
    row
}

/// The generated TypeScript package (see `crate::typescript`).
fn typescript() -> Row {
    let o = crate::typescript::stage();
    Row { language: "typescript", tests: o.tests, vectors: o.vectors, ok: o.ok, note: o.note }
}

/// A consumer stage (xtask/src/consumers.rs): an artifact of `cargo xtask dist`, used as a
/// user of that language would.
fn consumer(language: &'static str, stage: fn() -> Result<String, String>) -> Row {
    let (ok, note) = match stage() {
        Ok(used) => (true, used),
        Err(e) => (false, e),
    };
    Row { language, tests: None, vectors: None, ok, note }
}

fn print_summary(rows: &mut [Row]) {
    let cell = |c: Option<(u64, u64)>| c.map_or("-".to_owned(), |(p, f)| format!("{p} passed, {f} failed"));
    println!("\n== summary ==");
    println!("{:<16} {:<26} {:<26} result", "stage", "tests", "vectors");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_closing_counts_of_each_runner() {
        let surefire = "[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 1.1 s - in dev.acpinject.X\n\
                        [ERROR] Tests run: 116, Failures: 1, Errors: 2, Skipped: 3";
        let closing = surefire.lines().rev().find(|l| l.contains("Tests run:") && !l.contains("Time elapsed")).unwrap();
        assert_eq!(["run:", "Failures:", "Errors:", "Skipped:"].map(|w| count_after(closing, w)), [Some(116), Some(1), Some(2), Some(3)]);

        let xctest = "\t Executed 19 tests, with 2 failures (0 unexpected) in 1.893 (1.893) seconds";
        assert_eq!((count_before(xctest, "test"), count_before(xctest, "failure")), (Some(19), Some(2)));

        let out = "Test Case 'A.b' passed (0.1 seconds)\n97 passed, 0 failed\n✔ Test run with 0 tests passed after 0.001 seconds.";
        assert_eq!(vector_counts(out), Some((97, 0)));
    }
}
