//! `cargo xtask test`: the tidy gates and every test in every language, then one summary table.
//!
//! Each stage runs even when an earlier one failed, so one run shows everything that is
//! broken; the exit status is non-zero when any stage failed. Each stage prints a header
//! saying what it runs, streams its commands' output, and ends with its time. Toolchains and
//! packages a stage needs are installed on first use into the cache (see [`acp_inject_tool_support::cache_dir`])
//! and reused afterwards; the stage says what it installs and how big it is.
//!
//! Test counts come from the runners' machine-readable reports: JUnit XML from pytest
//! (`--junitxml`), Maven Surefire (`target/surefire-reports`) and SwiftPM (`--xunit-output`,
//! which covers XCTest only in `--parallel` runs). Python and Kotlin run one test case per
//! vector; Swift replays them all in one case, so its vector count is the number of vector
//! files that case replayed when it passed.
//! The Rust stage is the exception: libtest's JSON and JUnit formats are unstable (they need
//! `-Z unstable-options`, and `RUSTC_BOOTSTRAP` would rebuild every crate whose build script
//! watches it), so it adds up the `test result:` summary line libtest prints for each test
//! binary, a format that has not changed since Rust 1.0 and that CI systems read as well.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use clap::ValueEnum;

use acp_inject_benchmarks::crash;
use acp_inject_release::consumers;
use acp_inject_tool_support::disk;
pub use acp_inject_tool_support::reports::Counts;
use acp_inject_tool_support::reports::{count, libtest_summary, read_reports, Case};

use crate::process::{self, human, size_of, Echo};
use crate::{cache_dir, cargo, cargo_bin, root, target_dir, Error};

#[derive(clap::Args)]
pub struct Args {
    /// Run only these stages, in the usual order (repeat the flag or separate by commas)
    #[arg(long = "stage", value_name = "STAGE", value_enum, value_delimiter = ',')]
    stages: Vec<Stage>,
    /// Leave these stages out (the names of --stage)
    #[arg(long, value_name = "STAGE", value_enum, value_delimiter = ',', hide_possible_values = true)]
    skip: Vec<Stage>,
}

/// The stages, in the order they run.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Stage {
    /// cargo fmt --check (the workspace and bench/)
    Fmt,
    /// cargo clippy -- -D warnings over the workspace, fuzz/ and bench/
    Clippy,
    /// cargo test --workspace (tidy tests included; the PostgreSQL store's on a private server), then the vectors through the Rust core
    Rust,
    /// cargo doc --workspace --no-deps with RUSTDOCFLAGS="-D warnings"
    Doc,
    /// cargo xtask codegen --check: nothing in generated/ is stale
    Codegen,
    /// a clone of HEAD with nothing beside it passes cargo xtask codegen --check (own target dir; a checkout that is itself alone and clean, where codegen --check passed, is not cloned again)
    Newcomer,
    /// pytest (vectors included) and mypy for bindings/python, in the cached venv
    Python,
    /// mvn test for bindings/kotlin (JUnit 5, every vector)
    Kotlin,
    /// swift test for bindings/swift, in a Debian trixie chroot (needs root)
    Swift,
    /// the black-box stdio suite (acp-inject-blackbox) against every agent (the reference agent and the example agents), on SQLite and on PostgreSQL
    Blackbox,
    /// short crash campaigns: 50 SIGKILLs of the reference agent under load, then kills and pauses of two hosts on PostgreSQL (reference, Python and Kotlin agents); nothing lost, duplicated or served twice
    Crash,
    /// the generated TypeScript package: tsc, then every example and vector message through its validators
    Typescript,
    /// the official TypeScript SDK's v2 and v1 clients (pinned, interop/typescript-sdk) drive every agent, each line checked by the SDK's schemas; the side-by-side examples (side-by-side/), each client against each agent
    Interop,
    /// cargo xtask dist's wheel, installed in a fresh venv and used against the reference agent
    PythonWheel,
    /// cargo xtask dist's jar, resolved from its Maven repository by a fresh project
    KotlinJar,
    /// cargo xtask dist's Swift package, depended on by a fresh SwiftPM project
    SwiftPackage,
    /// cargo xtask docs into `<target>/xtask-docs`: the four API references and the guide with its recorded timeline; fails on any part that failed or any broken link
    Docs,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Fmt => "fmt",
            Stage::Clippy => "clippy",
            Stage::Rust => "rust",
            Stage::Doc => "doc",
            Stage::Codegen => "codegen --check",
            Stage::Newcomer => "newcomer",
            Stage::Python => "python",
            Stage::Kotlin => "kotlin",
            Stage::Swift => "swift",
            Stage::Blackbox => "blackbox",
            Stage::Crash => "crash",
            Stage::Typescript => "typescript",
            Stage::Interop => "interop",
            Stage::PythonWheel => "python (wheel)",
            Stage::KotlinJar => "kotlin (jar)",
            Stage::SwiftPackage => "swift (package)",
            Stage::Docs => "docs",
        }
    }

    fn run(self) -> Row {
        match self {
            Stage::Fmt => fmt(),
            Stage::Clippy => clippy(),
            Stage::Rust => rust(),
            Stage::Doc => gate(
                Command::new(cargo()).args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings"),
                "rustdoc found problems",
            ),
            Stage::Codegen => {
                let row = Row::of(crate::codegen::run(crate::codegen::Mode::Check).map(|()| String::new()));
                CODEGEN_CHECKED.store(row.ok, Ordering::Relaxed);
                row
            }
            Stage::Newcomer => crate::newcomer::stage(CODEGEN_CHECKED.load(Ordering::Relaxed)),
            Stage::Python => python(),
            Stage::Kotlin => kotlin(),
            Stage::Swift => swift(),
            Stage::Blackbox => blackbox(),
            Stage::Crash => crash(),
            Stage::Typescript => crate::typescript::stage(),
            Stage::Interop => interop(),
            // The consumer stages: an artifact of `cargo xtask dist`, used as a user of that language would.
            Stage::PythonWheel => Row::of(consumers::python()),
            Stage::KotlinJar => Row::of(consumers::kotlin()),
            Stage::SwiftPackage => Row::of(consumers::swift()),
            Stage::Docs => docs(),
        }
    }
}

/// Whether this run's `codegen --check` stage passed (the newcomer stage leans on it).
static CODEGEN_CHECKED: AtomicBool = AtomicBool::new(false);

/// One row of the summary.
#[derive(Default)]
pub struct Row {
    pub tests: Option<Counts>,
    pub vectors: Option<Counts>,
    pub ok: bool,
    pub note: String,
}

impl Row {
    pub fn failed(note: impl std::fmt::Display) -> Row {
        Row { note: note.to_string(), ..Row::default() }
    }

    /// The row of a stage whose result is all it reports: what it used, or why it failed.
    pub fn of<E: std::fmt::Display>(result: Result<String, E>) -> Row {
        match result {
            Ok(note) => Row { ok: true, note, ..Row::default() },
            Err(e) => Row::failed(e),
        }
    }
}

/// Tests counted one by one, and what failed: the row of a stage made of many runs.
#[derive(Default)]
struct Tally {
    tests: Counts,
    failed: Vec<String>,
}

impl Tally {
    fn record(&mut self, ok: bool, what: impl Into<String>) {
        if ok {
            self.tests.passed += 1;
        } else {
            self.tests.failed += 1;
            self.failed.push(what.into());
        }
    }

    /// Ok when nothing failed and something passed.
    fn row(self) -> Row {
        let note = if self.failed.is_empty() { String::new() } else { format!("failed: {}", self.failed.join("; ")) };
        Row { ok: self.failed.is_empty() && self.tests.passed > 0, tests: Some(self.tests), vectors: None, note }
    }
}

pub fn run(args: &Args) -> Result<(), Error> {
    let selected: Vec<Stage> = Stage::value_variants()
        .iter()
        .copied()
        .filter(|s| (args.stages.is_empty() || args.stages.contains(s)) && !args.skip.contains(s))
        .collect();
    let started = Instant::now();
    // Every cargo build below is not incremental, unless the caller says otherwise: this
    // command builds each crate once per run, and incremental state was a quarter of a cold
    // run's target directory (1.9 GB of 7.0 GB). Such builds are kept apart from incremental
    // ones (a plain `cargo test` and this command do not rebuild each other's crates).
    // Set while nothing else runs: no thread has been started yet.
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        std::env::set_var("CARGO_INCREMENTAL", "0");
    }
    let target = target_dir()?;
    disk::announce(&target, &cache_dir());
    let mut rows = Vec::new();
    for (i, stage) in selected.iter().enumerate() {
        eprintln!("\n== [{}/{}] {}: {} ==", i + 1, selected.len(), stage.name(), describe(*stage));
        let t = Instant::now();
        let mut row = stage.run();
        let secs = t.elapsed().as_secs_f64();
        let free = disk::available(&target);
        if let (false, Some(bytes)) = (row.ok, free) {
            if bytes < disk::NEARLY_FULL {
                let full = format!("the disk is nearly full: {} free", human(bytes));
                row.note = if row.note.is_empty() { full } else { format!("{full}; {}", row.note) };
            }
        }
        let note = if row.note.is_empty() { String::new() } else { format!(" ({})", row.note) };
        let free = free.map(|b| format!("; {} free", human(b))).unwrap_or_default();
        eprintln!("-- {}: {} in {secs:.0} s{note}{free}", stage.name(), if row.ok { "ok" } else { "FAILED" });
        rows.push((*stage, row, secs));
    }
    print_summary(&rows, started.elapsed().as_secs_f64());
    let failed = rows.iter().filter(|(_, r, _)| !r.ok).count();
    if failed == 0 {
        Ok(())
    } else {
        Err(Error::msg(format!("{failed} stage(s) failed")))
    }
}

fn describe(stage: Stage) -> String {
    stage.to_possible_value().and_then(|v| v.get_help().map(|h| h.to_string())).unwrap_or_default()
}

/// Runs a command whose exit status is the whole result (the fmt, clippy and doc gates).
fn gate(cmd: &mut Command, failure: &str) -> Row {
    match process::run(cmd, Echo::All) {
        Ok(ran) if ran.success() => Row { ok: true, ..Row::default() },
        Ok(_) => Row::failed(failure),
        Err(e) => Row::failed(e.to_string()),
    }
}

fn fmt() -> Row {
    let workspace = gate(Command::new(cargo()).args(["fmt", "--all", "--check"]), "the workspace");
    let bench = gate(Command::new(cargo()).args(["fmt", "--check", "--manifest-path", "bench/Cargo.toml"]), "bench/");
    let unformatted: Vec<&str> = [&workspace.note, &bench.note].into_iter().filter(|n| !n.is_empty()).map(String::as_str).collect();
    let note =
        if unformatted.is_empty() { String::new() } else { format!("not formatted: {}; run cargo fmt", unformatted.join(", ")) };
    Row { ok: workspace.ok && bench.ok, note, ..Row::default() }
}

/// Clippy over the workspace and over the two workspaces of their own, `fuzz/` and `bench/`,
/// so their targets keep compiling against the crates they exercise (no other stage builds them).
fn clippy() -> Row {
    let lint = |manifest: Option<&str>, what: &str| {
        let mut cmd = Command::new(cargo());
        cmd.args(["clippy", "--all-targets", "--keep-going"]);
        match manifest {
            Some(m) => cmd.args(["--manifest-path", m]),
            None => cmd.arg("--workspace"),
        };
        gate(cmd.args(["--", "-D", "warnings"]), what)
    };
    let rows = [lint(None, "the workspace"), lint(Some("fuzz/Cargo.toml"), "fuzz/"), lint(Some("bench/Cargo.toml"), "bench/")];
    let failed: Vec<&str> = rows.iter().filter(|r| !r.ok).map(|r| r.note.as_str()).collect();
    let note = if failed.is_empty() { String::new() } else { format!("clippy found problems in {}", failed.join(", ")) };
    Row { ok: failed.is_empty(), note, ..Row::default() }
}

/// One-host campaign (50 kills), then the two-host one on a private PostgreSQL server: 20
/// kills and pauses of reference-agent hosts, and 6 each of Python and Kotlin example-agent
/// hosts (their runtimes on the shared store, served over the network).
fn crash() -> Row {
    let mut tests = match crash::campaign(50, None) {
        Ok(()) => Counts { passed: 50, failed: 0, skipped: 0 },
        Err(e) => return Row::failed(e),
    };
    let server = match acp_inject_postgres_harness::start() {
        Ok(s) => s,
        Err(e) => return Row { tests: Some(tests), note: format!("PostgreSQL: {e}"), ..Row::default() },
    };
    let mut failed = Vec::new();
    for (i, (name, command)) in blackbox_agents().into_iter().enumerate() {
        let kills = if i == 0 { 20 } else { 6 };
        eprintln!("\nthe two-host crash campaign with the {name}:");
        let ran = command.and_then(|c| Ok(crash::two_hosts_of(&c, &format!("acp_crash_hosts_{i}"), kills, None, &server)?));
        match ran {
            Ok(_) => tests.add(Counts { passed: u64::from(kills), failed: 0, skipped: 0 }),
            Err(e) => failed.push(format!("two hosts, {name}: {e}")),
        }
    }
    Row { ok: failed.is_empty(), tests: Some(tests), note: failed.join("; "), ..Row::default() }
}

/// `cargo xtask docs --out <target>/xtask-docs`: every part built and every link checked; the
/// note says how many pages and links, and each part's time.
fn docs() -> Row {
    Row::of(target_dir().map_err(Error::from).and_then(|t| Ok(acp_inject_release::docs::run(Some(&t.join("xtask-docs")))?)))
}

/// `cargo test --workspace` with a private PostgreSQL server (the PostgreSQL store's tests
/// create their databases on it), then the vectors.
fn rust() -> Row {
    let server = match acp_inject_postgres_harness::start() {
        Ok(s) => s,
        Err(e) => return Row::failed(format!("PostgreSQL: {e}")),
    };
    let mut cmd = Command::new(cargo());
    cmd.args(["test", "--workspace", "--no-fail-fast"]);
    server.environment(&mut cmd);
    let ran = process::run(&mut cmd, Echo::All);
    drop(server);
    let ran = match ran {
        Ok(ran) => ran,
        Err(e) => return Row::failed(e.to_string()),
    };
    let mut tests = Counts::default();
    for counts in ran.stdout.lines().filter_map(libtest_summary) {
        tests.add(counts);
    }
    eprintln!("\nthe conformance vectors through the Rust core (spec/vectors):");
    let vectors = match rust_vectors() {
        Ok(v) => v,
        Err(e) => return Row { tests: Some(tests), note: e.to_string(), ..Row::default() },
    };
    Row {
        tests: Some(tests),
        vectors: Some(vectors),
        ok: ran.success() && vectors.failed == 0 && vectors.passed > 0 && tests.passed > 0,
        note: if ran.success() { String::new() } else { "cargo test failed".into() },
    }
}

/// The vectors through `acp-inject-conformance` (crates/conformance), counted from its JSON
/// report; xtask does not link the core (see `crate::conformance`).
fn rust_vectors() -> Result<Counts, Error> {
    let report = reports_dir()?.join("vectors-rust.json");
    let _ = std::fs::remove_file(&report);
    let mut cmd = Command::new(cargo());
    cmd.args(["run", "-p", "acp-inject-conformance", "--bin", "acp-inject-conformance", "--", "--json"]).arg(&report);
    process::run(&mut cmd, Echo::All)?;
    let text = std::fs::read_to_string(&report).map_err(|e| Error::read(&report, e))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", report.display())))?;
    match (v["passed"].as_u64(), v["failed"].as_u64()) {
        (Some(passed), Some(failed)) => Ok(Counts { passed, failed, skipped: 0 }),
        _ => Err(Error::msg(format!("{}: no passed/failed counts", report.display()))),
    }
}

/// Where the JUnit reports of this run go: `<target>/xtask-reports/`.
fn reports_dir() -> Result<PathBuf, Error> {
    let dir = target_dir()?.join("xtask-reports");
    std::fs::create_dir_all(&dir).map_err(|e| Error::write(&dir, e))?;
    Ok(dir)
}

/// A row with the counts of the report files (every case as a test, those `vectors` selects
/// as vectors), or why they cannot be read.
fn reported(files: &[PathBuf], vectors: impl Fn(&Case) -> bool) -> Row {
    match read_reports(files) {
        Ok(cases) => Row { tests: Some(count(&cases, |_| true)), vectors: Some(count(&cases, vectors)), ..Row::default() },
        Err(e) => Row::failed(e),
    }
}

/// The Python package: a venv in the cache, `pip install bindings/python/test-package[test]`
/// (the package plus the test-only conformance engine), pytest (one test per vector) and mypy
/// over the package and its tests.
fn python() -> Row {
    let py = match crate::python::python_with_test_package() {
        Ok(py) => py,
        Err(e) => return Row::failed(e.to_string()),
    };
    let report = match reports_dir() {
        Ok(dir) => dir.join("pytest.xml"),
        Err(e) => return Row::failed(e.to_string()),
    };
    let _ = std::fs::remove_file(&report);
    // The tests run the reference agent and the Rust conformance runner (which replays the
    // vectors their property tests generate through the Rust core, without the binding).
    let programs = reference_agent().and_then(|agent| {
        let runner = cargo_bin("acp-inject-conformance", "acp-inject-conformance")?;
        Ok((agent, runner))
    });
    let (agent, runner) = match programs {
        Ok(p) => p,
        Err(e) => return Row::failed(e),
    };
    let mut cmd = Command::new(&py);
    cmd.args(["-m", "pytest", "-p", "no:cacheprovider", "-o", "junit_family=xunit2"]).arg(format!("--junitxml={}", report.display()));
    cmd.arg("bindings/python").env("PYTHONUNBUFFERED", "1").env("ACP_INJECT_AGENT", &agent).env("ACP_INJECT_CONFORMANCE", &runner);
    let tests_ok = succeeds(&mut cmd);
    let mut row = reported(&[report], |c| c.name.starts_with("test_vector["));
    let types_ok = succeeds(Command::new(&py).args(["-m", "mypy"]).current_dir(root().join("bindings/python")));
    if !types_ok {
        row.note = "mypy found type errors".into();
    } else if !tests_ok && row.note.is_empty() {
        row.note = "pytest failed".into();
    }
    row.ok = tests_ok && types_ok && row.vectors.is_some_and(|v| v.passed > 0 && v.failed == 0);
    row
}

/// The directory holding fresh builds of the library for the Kotlin and Swift stages, in the
/// target directory `cargo metadata` reports: `libacp_inject_ffi.so` (what ships; the Kotlin
/// example agent loads it) and `libacp_inject_ffi_conformance.so` (`crates/ffi-conformance`:
/// the same UniFFI component plus the test-only conformance engine), which the test suites
/// load so that they can replay every vector through the binding.
fn ffi_lib_dir() -> Result<PathBuf, Error> {
    process::run_ok(Command::new(cargo()).args(["build", "-p", "acp-inject-ffi", "-p", "acp-inject-ffi-conformance"]))?;
    Ok(target_dir()?.join("debug"))
}

/// What the Kotlin and Swift stages need built: the cdylib's directory and the agent binary.
fn library_and_agent() -> Result<(PathBuf, PathBuf), Error> {
    Ok((ffi_lib_dir()?, reference_agent()?))
}

/// The reference agent for the Kotlin and Swift end-to-end tests (passed as
/// `ACP_INJECT_AGENT`): built once per run (`cargo build -p acp-inject-reference-agent`), by
/// whichever stage asks first, so each stage still works alone.
fn reference_agent() -> Result<PathBuf, Error> {
    static AGENT: OnceLock<Result<PathBuf, Error>> = OnceLock::new();
    AGENT
        .get_or_init(|| cargo_bin("acp-inject-reference-agent", "acp-inject-agent").map_err(Error::from))
        .as_ref()
        .cloned()
        .map_err(Error::again)
}

/// `apt-get install`s Debian packages (after one `apt-get update` per run).
fn apt_install(packages: &[&str]) -> bool {
    static UPDATED: AtomicBool = AtomicBool::new(false);
    if !UPDATED.load(Ordering::Relaxed) {
        if !succeeds(Command::new("apt-get").arg("update")) {
            return false;
        }
        UPDATED.store(true, Ordering::Relaxed);
    }
    let mut cmd = Command::new("apt-get");
    cmd.args(["install", "-y", "--no-install-recommends"]).args(packages).env("DEBIAN_FRONTEND", "noninteractive");
    succeeds(&mut cmd)
}

/// Runs a command with its output shown; whether it started and succeeded.
fn succeeds(cmd: &mut Command) -> bool {
    process::run(cmd, Echo::All).is_ok_and(|r| r.success())
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).output().is_ok_and(|o| o.status.success())
}

/// Maven's local repository (where the Kotlin stage's plugins and dependencies land).
fn maven_repository() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(".m2/repository")
}

/// The report files of a directory whose names start with `prefix` and end in `.xml`.
fn xml_reports(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|p: &PathBuf| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(".xml")
        })
        .collect();
    files.sort();
    files
}

/// Maven and a JDK, from apt when either is missing.
fn ensure_maven() -> Result<(), Error> {
    if !(runs("java", "-version") && runs("mvn", "-v")) {
        eprintln!("installing: maven and default-jdk-headless with apt-get (about 300 MB on disk)");
        if !apt_install(&["maven", "default-jdk-headless"]) {
            return Err(Error::msg("cannot install maven and a JDK (apt-get)"));
        }
    }
    Ok(())
}

/// The Kotlin package (bindings/kotlin): Maven + JUnit 5 over the generated Kotlin, loading the
/// cdylib through JNA; the end-to-end test starts the reference agent (`ACP_INJECT_AGENT`).
/// Maven and a JDK come from apt when missing; dependencies land in ~/.m2.
fn kotlin() -> Row {
    if let Err(e) = ensure_maven() {
        return Row::failed(e);
    }
    let (lib, agent) = match library_and_agent() {
        Ok(built) => built,
        Err(e) => return Row::failed(e),
    };
    let m2 = maven_repository();
    let before = size_of(&m2);
    eprintln!(
        "maven: the local repository {} holds {}; a first run downloads the Kotlin compiler, JUnit, JNA and the build plugins \
         (about 200 MB), listed below as they come",
        m2.display(),
        human(before)
    );
    let reports = root().join("bindings/kotlin/target/surefire-reports");
    let _ = std::fs::remove_dir_all(&reports);
    let mut cmd = Command::new("mvn");
    cmd.args(["-B", "test", "-Dacp.skipCargo=true"]).arg(format!("-Dacp.lib.dir={}", lib.display()));
    let ok = succeeds(cmd.env("ACP_INJECT_AGENT", &agent).current_dir(root().join("bindings/kotlin")));
    // The package and its tests compiled in this run when the tests ran, whatever their result
    // (the reports' directory was removed above).
    KOTLIN_COMPILED.store(reports.is_dir(), Ordering::Relaxed);
    let after = size_of(&m2);
    if after > before + (1 << 20) {
        eprintln!("maven: downloaded {} into {}", human(after - before), m2.display());
    }
    // Each vector is one dynamic test of `every vector()` (Surefire numbers them).
    let mut row = reported(&xml_reports(&reports, "TEST-"), |c| c.name.starts_with("every vector()["));
    row.ok = ok && row.tests.is_some_and(|t| t.failed == 0) && row.vectors.is_some_and(|v| v.passed > 0 && v.failed == 0);
    if !ok {
        row.note = "mvn test failed".into();
    }
    row
}

/// The `N passed, N failed` line the vector runners and the black-box suite end their report with.
fn vector_line(text: &str) -> Option<Counts> {
    text.lines().rev().find_map(|l| {
        let (passed, failed) = l.trim().split_once(" passed, ")?;
        let failed = failed.strip_suffix(" failed")?;
        Some(Counts { passed: passed.parse().ok()?, failed: failed.parse().ok()?, skipped: 0 })
    })
}

/// The Swift package (bindings/swift): `swift test` through bindings/swift/swiftw, which runs
/// Swift 6.0.3 in a Debian trixie chroot kept in the cache dir (created on first use); the
/// end-to-end test starts the host-built reference agent inside it (`ACP_INJECT_AGENT`).
fn swift() -> Row {
    let chroot = cache_dir().join("swift-trixie");
    if !chroot.join(".acp-inject-ready").exists() {
        eprintln!(
            "installing: the Swift toolchain, first use only. swiftw creates a Debian trixie chroot at {} with debootstrap \
             (about 215 MB), then installs swiftlang, libc6-dev and libstdc++-14-dev into it (about 530 MB of packages, \
             2.6 GB on disk): 3 to 10 minutes depending on the network; apt's progress follows",
            chroot.display()
        );
    }
    let (lib, agent) = match library_and_agent() {
        Ok(built) => built,
        Err(e) => return Row::failed(e),
    };
    // The package directory is visible inside the chroot at the same path. SwiftPM writes
    // XCTest's report only in parallel mode (`<name>.xml`), and swift-testing's beside it
    // (`<name>-swift-testing.xml`).
    let build = root().join("bindings/swift/.build");
    for old in xml_reports(&build, "xtask-xunit") {
        let _ = std::fs::remove_file(old);
    }
    let mut cmd = Command::new(root().join("bindings/swift/swiftw"));
    cmd.args(["test", "--parallel", "--xunit-output"]).arg(build.join("xtask-xunit.xml"));
    cmd.env("ACP_INJECT_CACHE", cache_dir()).env("ACP_INJECT_LIB_DIR", &lib).env("ACP_INJECT_AGENT", &agent);
    let ran = process::run(&mut cmd, Echo::All);
    let ok = ran.as_ref().is_ok_and(|r| r.success());
    // One XCTest replays every vector of spec/vectors (and fails on any mismatch); a parallel
    // run shows a test's output only when it fails, runner line included.
    let mut row = reported(&xml_reports(&build, "xtask-xunit"), |c| c.name == "testEveryVector");
    if let Some(every) = row.vectors {
        row.vectors = if every.passed == 1 {
            Some(Counts { passed: vector_files(&root().join("spec/vectors")), ..Counts::default() })
        } else {
            ran.as_ref().ok().and_then(|r| vector_line(&format!("{}{}", r.stdout, r.stderr)))
        };
    }
    row.ok = ok && row.tests.is_some_and(|t| t.failed == 0) && row.vectors.is_some_and(|v| v.passed > 0 && v.failed == 0);
    if !ok {
        row.note = "swiftw test failed".into();
    }
    row
}

/// How many vector files lie below `dir` (what the runners replay).
fn vector_files(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .map(|p| if p.is_dir() { vector_files(&p) } else { u64::from(p.extension().is_some_and(|x| x == "json")) })
                .sum()
        })
        .unwrap_or(0)
}

/// The agents the black-box suite runs against: a name, and the command (or why it cannot run).
/// Every agent accepts `--delay-ms MS` and `--store PATH` (the suite adds them).
fn blackbox_agents() -> Vec<(&'static str, Result<Vec<String>, Error>)> {
    let shown = |p: PathBuf| p.display().to_string();
    let python = crate::python::python_with_test_package()
        .map(|py| vec![shown(py), shown(root().join("bindings/python/examples/agent.py"))])
        .map_err(Error::from);
    vec![
        ("reference agent", reference_agent().map(|a| vec![shown(a)])),
        ("python example agent", python),
        ("kotlin example agent", kotlin_example_agent()),
    ]
}

/// `java … AgentKt` for the Kotlin example agent (bindings/kotlin/examples/Agent.kt): Maven
/// compiles it with the package (quietly, reusing the `kotlin` stage's build) and writes the
/// classpath that runs it; the library is the workspace's debug cdylib. Asked once per run
/// (the blackbox, crash and interop stages ask five times): the sources do not change during a
/// run, and each Maven run cost about a minute, most of it compiling the Kotlin sources again.
fn kotlin_example_agent() -> Result<Vec<String>, Error> {
    static AGENT: OnceLock<Result<Vec<String>, Error>> = OnceLock::new();
    AGENT.get_or_init(kotlin_example_agent_now).as_ref().cloned().map_err(Error::again)
}

fn kotlin_example_agent_now() -> Result<Vec<String>, Error> {
    ensure_maven()?;
    let lib = ffi_lib_dir()?;
    let project = root().join("bindings/kotlin");
    let classpath_file = project.join("target/example-classpath.txt");
    let mut cmd = Command::new("mvn");
    cmd.args(["-B", "-q", "-ntp", "-Dstyle.color=never"])
        .args(kotlin_compiled_then(&["exec:exec@classpath"]))
        .arg("-Dacp.skipCargo=true")
        .arg(format!("-Dacp.lib.dir={}", lib.display()))
        .arg(format!("-Dacp.classpath.file={}", classpath_file.display()))
        .current_dir(&project);
    match process::run(&mut cmd, Echo::StderrOnly) {
        Ok(r) if r.success() => KOTLIN_COMPILED.store(true, Ordering::Relaxed),
        Ok(r) => {
            let said: Vec<&str> = r.stdout.lines().rev().take(20).collect();
            return Err(Error::msg(format!("mvn test-compile failed:\n{}", said.into_iter().rev().collect::<Vec<_>>().join("\n"))));
        }
        Err(e) => return Err(Error::msg(format!("mvn test-compile: {e}"))),
    }
    let classpath =
        std::fs::read_to_string(&classpath_file).map_err(|e| Error::msg(format!("cannot read {}: {e}", classpath_file.display())))?;
    Ok(vec![
        "java".into(),
        format!("-Djna.library.path={}", lib.display()),
        "-cp".into(),
        classpath.trim().to_owned(),
        "AgentKt".into(),
    ])
}

/// Whether this run of the task runner has compiled bindings/kotlin (the package, its tests and
/// its examples) with Maven already.
static KOTLIN_COMPILED: AtomicBool = AtomicBool::new(false);

/// The Maven arguments that run `goals` on a compiled bindings/kotlin: the goals alone once
/// this run has compiled it (a plugin goal named on the command line runs without the
/// lifecycle before it), else the `test-compile` phase first. The Kotlin compiler is not
/// incremental here (see the pom), so each lifecycle run compiled everything again: about a
/// minute per Maven run, and the interop stage runs Maven several times.
fn kotlin_compiled_then(goals: &[&str]) -> Vec<String> {
    let compile = (!KOTLIN_COMPILED.load(Ordering::Relaxed)).then(|| "test-compile".to_owned());
    compile.into_iter().chain(goals.iter().map(|g| (*g).to_owned())).collect()
}

/// `acp-inject-blackbox -- AGENT…` for every agent of [`blackbox_agents`]: one test per check
/// and agent.
fn blackbox() -> Row {
    let suite = match cargo_bin("acp-inject-conformance", "acp-inject-blackbox") {
        Ok(bin) => bin,
        Err(e) => return Row::failed(e),
    };
    let mut t = Tally::default();
    // One run of the suite with these arguments (the agent's command after `--`), added up.
    let mut suite_on = |what: String, args: Result<Vec<String>, Error>| match args
        .and_then(|args| Ok(process::run(Command::new(&suite).args(args), Echo::All)?))
    {
        Ok(ran) => {
            match vector_line(&ran.stdout) {
                Some(c) => t.tests.add(c),
                None => t.failed.push(format!("{what}: no summary line")),
            }
            if !ran.success() {
                t.failed.push(what);
            }
        }
        Err(e) => t.failed.push(format!("{what}: {e}")),
    };
    for (name, command) in blackbox_agents() {
        eprintln!("\nthe black-box suite against the {name}:");
        suite_on(name.to_owned(), command.map(|c| [vec!["--".into()], c].concat()));
    }
    // The same suite on PostgreSQL (`--store-url postgres://…`), every agent on a fresh database.
    let server = acp_inject_postgres_harness::start();
    if let Ok(server) = &server {
        for (i, (name, command)) in blackbox_agents().into_iter().enumerate() {
            eprintln!("\nthe black-box suite against the {name}, on PostgreSQL:");
            let Ok(command) = command else { continue }; // reported above
            let url = server.create_database(&format!("acp_blackbox_{i}")).map_err(Error::from);
            suite_on(format!("{name} on PostgreSQL"), url.map(|url| [vec!["--store-url".into(), url, "--".into()], command].concat()));
        }
    }
    if let Err(e) = server {
        t.failed.push(format!("PostgreSQL: {e}"));
    }
    t.row()
}

/// `node sdk-client.mjs -- AGENT…` (interop/typescript-sdk, installed into the cache with its
/// pinned SDK) for every agent of [`blackbox_agents`]: one test per agent.
fn interop() -> Row {
    let project = root().join("interop/typescript-sdk");
    let harness = cache_dir().join("interop/typescript-sdk");
    let files = [
        "package.json",
        "package-lock.json",
        "validate.mjs",
        "validate.test.mjs",
        "harness.mjs",
        "sdk-client.mjs",
        "sdk-v1-client.mjs",
        "sdk-agent.mjs",
        "sdk-v1-agent.mjs",
        "sdk-remote-client.mjs",
    ];
    if let Err(e) = crate::typescript::npm_project(&project, &harness, &files) {
        return Row::failed(e);
    }
    let mut t = Tally::default();
    // First the line validator itself: it must refuse what the SDK's schemas refuse.
    let mut selftest = Command::new("node");
    selftest.args(["--test", "validate.test.mjs"]).current_dir(&harness);
    t.record(succeeds(&mut selftest), "the line validator's own tests");
    // The agents, with one permission request per turn (the example agents ask one anyway) and
    // short steps.
    let agents: Vec<(&str, Result<Vec<String>, Error>)> = blackbox_agents()
        .into_iter()
        .map(|(name, command)| {
            let options: &[&str] = if name == "reference agent" { &["--permission-on-tool", "1"] } else { &[] };
            (name, command.map(|c| [c, options.iter().chain(&["--delay-ms", "20"]).map(|o| o.to_string()).collect()].concat()))
        })
        .collect();
    for (name, command) in &agents {
        let command = match command {
            Ok(c) => c,
            Err(e) => {
                t.failed.push(format!("{name}: {e}"));
                continue;
            }
        };
        // The SDK's v2 draft client, then its v1 client (the default entrypoint: what shipping
        // editors run), against the same agent.
        for (version, script) in [("v2", "sdk-client.mjs"), ("v1", "sdk-v1-client.mjs")] {
            eprintln!("\nthe official TypeScript SDK's {version} client against the {name}:");
            let mut client = Command::new("node");
            client.arg(harness.join(script)).arg("--").args(command).current_dir(&harness);
            t.record(succeeds(&mut client), format!("{name} ({version} client)"));
        }
    }
    // Over the network: the SDK's remote clients (Streamable HTTP, WebSocket) against the
    // reference agent's `--listen`, and our clients in every language against the SDK's
    // `AcpServer`.
    for (name, run) in [
        ("the SDK's remote clients against acp-inject-agent --listen", remote_sdk_client as fn(&Path) -> bool),
        ("our Rust, Python, Kotlin and Swift clients against the SDK's AcpServer", remote_sdk_server),
    ] {
        eprintln!("\n{name}:");
        t.record(run(&harness), name);
    }
    // Authentication and extension methods against an agent written with the SDK that
    // requires them (sdk-agent.mjs --require-auth), from the Python client's own tests.
    eprintln!("\nour Python client against the SDK agent that requires authentication (tests/test_sdk_interop.py):");
    let ran = crate::python::python_with_test_package().map(|py| {
        let mut pytest = Command::new(py);
        pytest
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_sdk_interop.py"])
            .env("ACP_INJECT_SDK_AGENT", harness.join("sdk-agent.mjs"))
            .current_dir(root().join("bindings/python"));
        succeeds(&mut pytest)
    });
    t.record(ran.unwrap_or(false), "the Python client against the SDK agent that requires authentication");
    // A shipping agent (claude-agent-acp, offline against a mock of its model API) driven by
    // our clients on v1 and v2.
    for (name, ok) in crate::shipping::claude_agent_acp() {
        t.record(ok, name);
    }
    // The official Python SDK's client (ACP v1) against the same agents.
    let python_sdk = python_sdk();
    match &python_sdk {
        Ok(py) => {
            for (name, command) in &agents {
                let Ok(command) = command else { continue };
                eprintln!("\nthe official Python SDK's v1 client against the {name}:");
                let mut client = Command::new(py);
                client.arg(root().join("interop/python-sdk/sdk_v1_client.py")).arg("--").args(command).current_dir(&harness);
                t.record(succeeds(&mut client), format!("{name} (Python SDK v1 client)"));
            }
        }
        Err(e) => t.record(false, format!("the official Python SDK: {e}")),
    }
    // The side-by-side Python examples: each client (the official SDK's, ours) against each
    // agent, and the line counts the READMEs show.
    if let Ok(official) = &python_sdk {
        eprintln!("\nthe side-by-side Python examples (side-by-side/python/check.py):");
        let ran = crate::python::python_with_test_package().map(|ours| {
            let mut check = Command::new(official);
            check.arg(root().join("side-by-side/python/check.py")).arg("--official-python").arg(official);
            succeeds(check.arg("--ours-python").arg(ours))
        });
        match ran {
            Ok(ok) => t.record(ok, "the side-by-side Python examples"),
            Err(e) => t.record(false, format!("the side-by-side Python examples: {e}")),
        }
    }
    // The other way: our clients drive the agents written with the SDKs: the v2 draft agent
    // (TypeScript SDK), and a v1 agent written with each SDK's v1 API.
    let v1_agents = sdk_v1_agents(&harness, python_sdk.as_ref().ok());
    eprintln!("\nthe Python example client against the agents written with the official SDKs:");
    type Drive = fn(&Path, &[(&str, Vec<String>)]) -> Result<(), Error>;
    let others: [(&str, Drive); 3] = [
        ("python client", sdk_agents_driven_by_python),
        ("kotlin client", sdk_agents_driven_by_kotlin),
        ("swift client", sdk_agents_driven_by_swift),
    ];
    for (name, drive) in others {
        let result = drive(&harness, &v1_agents);
        t.record(result.is_ok(), result.err().map(|e| format!("{name}: {e}")).unwrap_or_default());
    }
    t.row()
}

/// `node sdk-remote-client.mjs -- acp-inject-agent …`: the TypeScript SDK's Streamable HTTP
/// and WebSocket clients against the reference agent listening on a loopback port.
fn remote_sdk_client(harness: &Path) -> bool {
    let Ok(agent) = reference_agent() else { return false };
    let mut client = Command::new("node");
    client
        .arg(harness.join("sdk-remote-client.mjs"))
        .arg("--")
        .arg(agent)
        .args(["--permission-on-tool", "1", "--delay-ms", "20"])
        .current_dir(harness);
    succeeds(&mut client)
}

/// Our clients over the network against the SDK agent served by the SDK's `AcpServer`
/// (`sdk-agent.mjs --listen`, started here once): the Rust client (`crates/remote/tests/
/// sdk_agent.rs`), the Python example client (by URL, WebSocket then Streamable HTTP), the
/// Kotlin and Swift interop tests, each given the endpoint in `ACP_INJECT_SDK_REMOTE_URL`; then
/// the server is stopped and its validators' report must list no problem.
fn remote_sdk_server(harness: &Path) -> bool {
    let report = harness.join("sdk-remote-agent-report.json");
    let _ = std::fs::remove_file(&report);
    let mut server = match Command::new("node")
        .arg(harness.join("sdk-agent.mjs"))
        .args(["--listen", "127.0.0.1:0", "--delay-ms", "20", "--report"])
        .arg(&report)
        .current_dir(harness)
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start the SDK server: {e}");
            return false;
        }
    };
    let url = server.stdout.take().and_then(|out| {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).ok()?;
        Some(line.trim().to_owned()).filter(|l| l.starts_with("http://"))
    });
    let Some(url) = url else {
        eprintln!("the SDK server printed no URL");
        let _ = server.kill();
        return false;
    };
    eprintln!("the SDK's AcpServer listens on {url}");
    let mut failed = Vec::new();
    let mut runs: Vec<(String, Result<Command, Error>)> = Vec::new();
    let mut rust = Command::new("cargo");
    rust.args(["test", "-q", "-p", "acp-inject-remote", "--test", "sdk_agent", "--", "--nocapture"]);
    runs.push(("the Rust client".into(), Ok(rust)));
    let py = crate::python::python_with_test_package().map_err(Error::from);
    for endpoint in [url.replacen("http", "ws", 1), url.clone()] {
        let python = py.as_ref().map_err(Error::again).map(|py| {
            let mut c = Command::new(py);
            c.arg(root().join("bindings/python/examples/client.py")).arg(&endpoint);
            c
        });
        runs.push((format!("the Python example client at {endpoint}"), python));
    }
    runs.push(("the Kotlin client".into(), kotlin_interop_command()));
    let swift_test = "testASessionOverTheNetworkAgainstTheOfficialTypeScriptSdksServer";
    runs.push(("the Swift client".into(), swift_interop_command(&format!("SdkAgentInteropTests/{swift_test}"))));
    for (name, command) in runs {
        eprintln!("\n{name}, over the network, against the SDK's AcpServer:");
        let mut command = match command {
            Ok(c) => c,
            Err(e) => {
                failed.push(format!("{name}: {e}"));
                continue;
            }
        };
        command.env("ACP_INJECT_SDK_REMOTE_URL", &url);
        let ran = process::run(&mut command, Echo::All);
        let said = ran.as_ref().map(|r| format!("{}{}", r.stdout, r.stderr)).unwrap_or_default();
        // The Swift test must have run, not been skipped.
        let skipped = name == "the Swift client" && !said.contains(&format!("{swift_test}' passed"));
        if !ran.is_ok_and(|r| r.success()) || skipped {
            failed.push(name);
        }
    }
    // SIGTERM: the server writes its report and exits.
    let _ = Command::new("kill").arg("-TERM").arg(server.id().to_string()).status();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline && !matches!(server.try_wait(), Ok(Some(_))) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = server.kill();
    match std::fs::read_to_string(&report).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok()) {
        Some(r) if r["problems"].as_array().is_some_and(Vec::is_empty) && r["lines"].as_u64().unwrap_or(0) > 0 => {
            eprintln!("the SDK's validators on the server's side: {}", r["summary"].as_str().unwrap_or("?"));
        }
        Some(r) => failed.push(format!("the SDK's validators found problems: {}", r["problems"])),
        None => failed.push(format!("the SDK server wrote no report ({})", report.display())),
    }
    for f in &failed {
        eprintln!("failed: {f}");
    }
    failed.is_empty()
}

/// The interpreter of `<cache>/interop/python-sdk/venv`, with the official Python SDK installed
/// as `interop/python-sdk/requirements.txt` pins it: pip runs only when that file changed since
/// the last install (a copy of it in the venv says what is installed).
fn python_sdk() -> Result<PathBuf, Error> {
    let venv = cache_dir().join("interop/python-sdk/venv");
    let py = crate::python::cached_venv(&venv)?;
    let wanted = root().join("interop/python-sdk/requirements.txt");
    let installed = venv.join("installed-requirements.txt");
    let text = std::fs::read_to_string(&wanted).map_err(|e| Error::msg(format!("{}: {e}", wanted.display())))?;
    if std::fs::read_to_string(&installed).ok().as_deref() != Some(text.as_str()) {
        eprintln!("installing: the official Python SDK as {} pins it, into {}", wanted.display(), venv.display());
        let mut pip = Command::new(&py);
        pip.args(["-m", "pip", "install", "--progress-bar", "off", "-r"]).arg(&wanted);
        match process::run(&mut pip, Echo::All) {
            Ok(r) if r.success() => {}
            _ => return Err(Error::msg("pip install -r interop/python-sdk/requirements.txt failed")),
        }
        std::fs::write(&installed, text).map_err(|e| Error::msg(format!("{}: {e}", installed.display())))?;
    }
    Ok(py)
}

/// The ACP v1 agents written with the official SDKs' v1 APIs, for our clients: the
/// TypeScript SDK's, and the Python SDK's when its venv is there (its failure is reported
/// where it is installed).
fn sdk_v1_agents(harness: &Path, python: Option<&PathBuf>) -> Vec<(&'static str, Vec<String>)> {
    let path = |p: PathBuf| p.display().to_string();
    let mut agents = vec![("TypeScript SDK v1 agent", vec!["node".to_owned(), path(harness.join("sdk-v1-agent.mjs"))])];
    if let Some(py) = python {
        agents.push(("Python SDK v1 agent", vec![path(py.clone()), path(root().join("interop/python-sdk/sdk_v1_agent.py"))]));
    }
    agents
}

/// `mvn test -Dtest=SdkAgentInteropTest` on the debug library: each test runs only when its
/// variable is set (the caller sets them).
fn kotlin_interop_command() -> Result<Command, Error> {
    kotlin_test_command("SdkAgentInteropTest")
}

/// `mvn test -Dtest=TEST` in bindings/kotlin on the debug library.
pub(crate) fn kotlin_test_command(test: &str) -> Result<Command, Error> {
    ensure_maven()?;
    let lib = ffi_lib_dir()?;
    let mut cmd = Command::new("mvn");
    // `surefire:test` is what the `test` phase runs.
    cmd.args(["-B", "-q", "-ntp", "-Dstyle.color=never"])
        .args(kotlin_compiled_then(&["surefire:test"]))
        .args([&format!("-Dtest={test}"), "-Dacp.skipCargo=true"])
        .arg(format!("-Dacp.lib.dir={}", lib.display()))
        .current_dir(root().join("bindings/kotlin"));
    Ok(cmd)
}

/// Whether Maven's report for the Kotlin test class `class` (`dev.acpinject.…`) counts at least
/// one test and none skipped (a test skipped for want of its variable proves nothing).
pub(crate) fn kotlin_tests_ran(class: &str) -> bool {
    let report = root().join(format!("bindings/kotlin/target/surefire-reports/TEST-{class}.xml"));
    let Ok(xml) = std::fs::read_to_string(&report) else { return false };
    let attr = |name: &str| -> Option<u64> {
        let at = xml.find(&format!(" {name}=\""))? + name.len() + 3;
        xml[at..].split('"').next()?.parse().ok()
    };
    matches!((attr("tests"), attr("skipped")), (Some(t), Some(0)) if t > 0)
}

/// `swiftw test --filter FILTER` in the Swift chroot, with the library and the reference agent.
pub(crate) fn swift_interop_command(filter: &str) -> Result<Command, Error> {
    let (lib, agent) = library_and_agent()?;
    let mut cmd = Command::new(root().join("bindings/swift/swiftw"));
    cmd.args(["test", "--filter", filter])
        .env("ACP_INJECT_CACHE", cache_dir())
        .env("ACP_INJECT_LIB_DIR", &lib)
        .env("ACP_INJECT_AGENT", &agent);
    Ok(cmd)
}

/// The Kotlin client's interop tests (`SdkAgentInteropTest`, skipped unless
/// `ACP_INJECT_SDK_AGENT` / `ACP_INJECT_SDK_V1_AGENT` name the agents) through Maven, on the
/// debug library: once per v1 agent, the first run with the v2 agent too.
fn sdk_agents_driven_by_kotlin(harness: &Path, v1_agents: &[(&str, Vec<String>)]) -> Result<(), Error> {
    for (i, (name, command)) in v1_agents.iter().enumerate() {
        eprintln!("\nthe Kotlin client against the {name}{}:", if i == 0 { " and the TypeScript SDK's v2 agent" } else { "" });
        let mut cmd = kotlin_interop_command()?;
        cmd.env("ACP_INJECT_SDK_V1_AGENT", command.join("\n"));
        if i == 0 {
            cmd.env("ACP_INJECT_SDK_AGENT", harness.join("sdk-agent.mjs"));
        }
        match process::run(&mut cmd, Echo::All) {
            Ok(r) if r.success() => {}
            Ok(_) => return Err(Error::msg(format!("mvn test -Dtest=SdkAgentInteropTest failed against the {name}"))),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The Swift client's interop tests (`SdkAgentInteropTests`, skipped unless the variables
/// name the agents) in the Swift chroot, where swiftw installs Node.js (and, for the Python
/// SDK's agent, python3 and the pinned SDK in a venv of the chroot's own) on first use: the
/// v2 agent and the TypeScript SDK's v1 agent in one run, the Python SDK's v1 agent in a second.
fn sdk_agents_driven_by_swift(harness: &Path, v1_agents: &[(&str, Vec<String>)]) -> Result<(), Error> {
    let typescript = v1_agents.first().map(|(_, c)| c.join("\n")).unwrap_or_default();
    let python = format!("/opt/acp-inject-python-sdk/bin/python\n{}", root().join("interop/python-sdk/sdk_v1_agent.py").display());
    let runs = [
        ("the TypeScript SDK's v2 and v1 agents", Some(harness.join("sdk-agent.mjs")), typescript, None),
        ("the Python SDK's v1 agent", None, python, Some(root().join("interop/python-sdk/requirements.txt"))),
    ];
    for (name, v2, v1, python_sdk) in runs {
        eprintln!("\nthe Swift client against {name}:");
        let mut cmd = swift_interop_command("SdkAgentInteropTests")?;
        cmd.env("ACP_INJECT_SDK_V1_AGENT", v1);
        let mut expected = vec!["testAV1SessionWithAQueueHeldByThisClientAgainstAnAgentWrittenWithAnOfficialSdk"];
        if let Some(v2) = v2 {
            cmd.env("ACP_INJECT_SDK_AGENT", v2);
            expected.push("testASessionAgainstAnAgentWrittenWithTheOfficialTypeScriptSdk");
        }
        if let Some(requirements) = python_sdk {
            cmd.env("ACP_INJECT_PYTHON_SDK", requirements);
        }
        let ran = process::run(&mut cmd, Echo::All)?;
        let said = format!("{}{}", ran.stdout, ran.stderr);
        // They must have run, not been skipped.
        if !ran.success() || !expected.iter().all(|t| said.contains(&format!("{t}' passed"))) {
            return Err(Error::msg(format!("swiftw test --filter SdkAgentInteropTests failed or skipped a test against {name}")));
        }
    }
    Ok(())
}

/// `examples/client.py -- AGENT --report FILE` against the TypeScript SDK's v2 agent and each v1
/// agent: the client's own checks pass, and the agent found every line valid per its SDK. A v1
/// agent also reports the prompts it got: the client's held queue arrives as prompts of their
/// own, in order, with the replaced text and without the revoked one.
fn sdk_agents_driven_by_python(harness: &Path, v1_agents: &[(&str, Vec<String>)]) -> Result<(), Error> {
    let py = crate::python::python_with_test_package()?;
    let v2 = vec!["node".to_owned(), harness.join("sdk-agent.mjs").display().to_string()];
    let mut agents = vec![("TypeScript SDK v2 agent", v2, false)];
    agents.extend(v1_agents.iter().map(|(n, c)| (*n, c.clone(), true)));
    for (name, command, v1) in agents {
        eprintln!("\nthe Python example client against the {name}:");
        let report = harness.join("sdk-agent-report.json");
        let _ = std::fs::remove_file(&report);
        let mut client = Command::new(&py);
        client.arg(root().join("bindings/python/examples/client.py")).arg("--").args(&command);
        client.args(["--delay-ms", "20", "--report"]).arg(&report);
        if !process::run(&mut client, Echo::All)?.success() {
            return Err(Error::msg(format!("the client's checks failed against the {name}")));
        }
        // The agent writes it when its input ends, which may be just after the client exits.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !report.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let text = std::fs::read_to_string(&report)
            .map_err(|e| Error::msg(format!("the {name} wrote no report ({}): {e}", report.display())))?;
        let report: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::msg(format!("the {name}'s report: {e}")))?;
        eprintln!("{name}: {}", report["summary"].as_str().unwrap_or("?"));
        match report["problems"].as_array() {
            Some(p) if p.is_empty() && report["lines"].as_u64().unwrap_or(0) > 0 => {}
            _ => return Err(Error::msg(format!("the {name} found problems: {}", report["problems"]))),
        }
        if v1 {
            let prompts: Vec<&str> = report["promptTexts"].as_array().into_iter().flatten().filter_map(|p| p.as_str()).collect();
            let held = ["Refactor the login module", "then update the docs", "final text"];
            if !prompts.starts_with(&held) || prompts.iter().any(|p| *p == "draft" || *p == "revoke me") {
                return Err(Error::msg(format!("the {name} got the prompts {prompts:?}; the held queue should arrive as {held:?}")));
            }
        }
    }
    Ok(())
}

fn print_summary(rows: &[(Stage, Row, f64)], total: f64) {
    let cell = |c: Option<Counts>| {
        c.map_or("-".to_owned(), |c| {
            let skipped = if c.skipped > 0 { format!(", {} skipped", c.skipped) } else { String::new() };
            format!("{} passed, {} failed{skipped}", c.passed, c.failed)
        })
    };
    println!("\n== summary ==");
    println!("{:<16} {:<28} {:<26} {:>7}  result", "stage", "tests", "vectors", "time");
    for (stage, r, secs) in rows {
        println!(
            "{:<16} {:<28} {:<26} {:>6.0}s  {}{}",
            stage.name(),
            cell(r.tests),
            cell(r.vectors),
            secs,
            if r.ok { "ok" } else { "FAILED" },
            if r.note.is_empty() { String::new() } else { format!(" ({})", r.note) }
        );
    }
    let failed = rows.iter().filter(|(_, r, _)| !r.ok).count();
    println!("total time: {total:.0} s");
    println!("stages: {} passed, {} failed", rows.len() - failed, failed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_vector_runners_closing_line() {
        let out = "Test Case 'A.b' passed (0.1 seconds)\n97 passed, 0 failed\n✔ Test run with 0 tests passed after 0.001 seconds.";
        assert_eq!(vector_line(out), Some(Counts { passed: 97, failed: 0, skipped: 0 }));
        assert_eq!(vector_line("nothing here"), None);
    }
}
