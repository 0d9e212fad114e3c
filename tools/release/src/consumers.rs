//! The consumer stages of `cargo xtask test`: each installs one artifact of `cargo xtask dist`
//! the way a user of that language would, into a throwaway project in the cache dir, and runs
//! a small real session against the reference agent (tools/release/consumers/README.md).
//!
//! Each returns `Ok(what was used)` or `Err(reason)`; the projects are rewritten on every run so
//! nothing of an earlier run is used, while the package caches (pip's, the Maven repository,
//! SwiftPM's) stay warm.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use acp_inject_tool_support::{cache_dir, cargo_bin, root, Error, VERSION};

use crate::dist::{self, built, file_url};

/// How long one consumer program may run before it is killed.
const DEADLINE: Duration = Duration::from_secs(600);

fn sources() -> PathBuf {
    root().join("tools/release/consumers")
}

fn project_dir(name: &str) -> Result<PathBuf, Error> {
    let dir = cache_dir().join("consumers").join(name);
    std::fs::create_dir_all(&dir).map_err(|e| Error::msg(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// Writes `to` from the template `from`, with each `@KEY@` replaced.
fn render(from: &Path, to: &Path, values: &[(&str, String)]) -> Result<(), Error> {
    let mut text = std::fs::read_to_string(from).map_err(|e| Error::msg(format!("cannot read {}: {e}", from.display())))?;
    for (key, value) in values {
        text = text.replace(&format!("@{key}@"), value);
    }
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::msg(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(to, text).map_err(|e| Error::msg(format!("cannot write {}: {e}", to.display())))
}

/// Runs a consumer command with a deadline, echoing its output.
fn run(cmd: &mut Command, what: &str) -> Result<(), Error> {
    eprintln!("+ {cmd:?}");
    let mut child = cmd.stdout(Stdio::piped()).spawn().map_err(|e| Error::msg(format!("cannot run {what}: {e}")))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::msg(e.to_string()))? {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::msg(format!("{what} did not finish within {} s", DEADLINE.as_secs())));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    print!("{}", reader.join().unwrap_or_default());
    if status.success() {
        Ok(())
    } else {
        Err(Error::msg(format!("{what} failed ({status})")))
    }
}

/// `PATH` without any directory that holds cargo or rustc: the consumer has no Rust toolchain.
fn path_without_rust() -> std::ffi::OsString {
    let kept: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|dir| !dir.join("cargo").exists() && !dir.join("rustc").exists())
        .collect();
    std::env::join_paths(kept).expect("PATH entries")
}

/// The reference agent (a debug build: it is the peer, not the artifact under test).
fn agent() -> Result<PathBuf, Error> {
    cargo_bin("acp-inject-reference-agent", "acp-inject-agent")
}

/// A fresh venv (PATH without Rust) installs the wheel, checks what it installed, runs the
/// session and the example client (bindings/python/examples/client.py) from a directory
/// outside the repository.
pub fn python() -> Result<String, Error> {
    let wheel = built(&dist::for_consumers().wheel)?;
    let agent = agent()?;
    let dir = project_dir("python")?;
    let venv = dir.join("venv");
    if venv.exists() {
        std::fs::remove_dir_all(&venv).map_err(|e| Error::msg(format!("cannot remove the old venv: {e}")))?;
    }
    let path = path_without_rust();
    let python = |args: &[&str]| {
        let mut cmd = Command::new(venv.join("bin/python"));
        cmd.args(args).current_dir(&dir).env("PATH", &path).env_remove("PYTHONPATH");
        cmd
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv).env("PATH", &path), "python3 -m venv")?;
    // --only-binary: the wheel's dependencies (msgspec) come from PyPI as wheels, and a source
    // build of anything (ours above all) must be impossible.
    run(
        python(&["-m", "pip", "install", "--quiet", "--only-binary", ":all:", "--disable-pip-version-check"]).arg(&wheel),
        "pip install the wheel",
    )?;
    let check = "import acp_inject, pathlib; p = pathlib.Path(acp_inject.__file__).parent\n\
                 files = [p / 'py.typed', p / 'values.py']\n\
                 assert all(f.is_file() and not f.is_symlink() for f in files), files\n\
                 assert str(p).startswith(__import__('sys').prefix), p\n\
                 print('installed', acp_inject.__version__, 'from', p)";
    run(&mut python(&["-c", check]), "the installed package")?;
    render(&sources().join("python/session.py"), &dir.join("session.py"), &[])?;
    render(&root().join("bindings/python/examples/client.py"), &dir.join("client.py"), &[])?;
    run(python(&["session.py"]).arg(&agent), "session.py")?;
    run(python(&["client.py", "--"]).arg(&agent).args(["--delay-ms", "20"]), "examples/client.py")?;
    Ok(wheel.file_name().unwrap_or_default().to_string_lossy().into_owned())
}

/// A Maven project depending on `dev.acpinject:acp-inject` from `dist/maven`, with its own
/// local repository in the cache dir (our group purged first, so the jar just built is the one
/// resolved), compiled and run in a fresh JVM with no library path.
pub fn kotlin() -> Result<String, Error> {
    let repo = built(&dist::for_consumers().maven_repo)?;
    let agent = agent()?;
    let dir = project_dir("kotlin")?;
    let local = cache_dir().join("consumers/m2");
    let ours = local.join("dev/acpinject");
    if ours.exists() {
        std::fs::remove_dir_all(&ours).map_err(|e| Error::msg(format!("cannot purge {}: {e}", ours.display())))?;
    }
    let values = [
        ("ACP_INJECT_AGENT", agent.display().to_string()),
        ("ACP_INJECT_MAVEN_REPO", file_url(&repo)),
        ("ACP_INJECT_VERSION", VERSION.to_owned()),
    ];
    render(&sources().join("kotlin/pom.xml"), &dir.join("pom.xml"), &values)?;
    render(&sources().join("kotlin/Session.kt"), &dir.join("src/main/kotlin/Session.kt"), &[])?;
    run(
        Command::new("mvn")
            .args(["-B", "-ntp", "-q", "-Dstyle.color=never", "package", "exec:exec"])
            .arg(format!("-Dmaven.repo.local={}", local.display()))
            .env_remove("LD_LIBRARY_PATH")
            .current_dir(&dir),
        "mvn package exec:exec (consumer)",
    )?;
    Ok(format!("dev.acpinject:acp-inject:{VERSION} from dist/maven"))
}

/// A SwiftPM package depending on `dist/swift/AcpInject` by path, built and run with Swift
/// 6.0.3 in the trixie chroot (`swiftw --package`); the agent is copied into the project so
/// the chroot sees it.
pub fn swift() -> Result<String, Error> {
    let package = built(&dist::for_consumers().swift_package)?;
    let agent = agent()?;
    let dir = project_dir("swift")?;
    let values = [("ACP_INJECT_SWIFT_PACKAGE", package.display().to_string())];
    render(&sources().join("swift/Package.swift"), &dir.join("Package.swift"), &values)?;
    render(&sources().join("swift/main.swift"), &dir.join("Sources/Consumer/main.swift"), &[])?;
    let local_agent = dir.join("bin/acp-inject-agent");
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| Error::write(&dir.join("bin"), e))?;
    std::fs::copy(&agent, &local_agent).map_err(|e| Error::msg(format!("cannot copy the agent: {e}")))?;
    run(
        Command::new(root().join("bindings/swift/swiftw"))
            .arg("--package")
            .arg(&dir)
            .args(["run", "Consumer"])
            .arg(&local_agent)
            .env("ACP_INJECT_CACHE", cache_dir()),
        "swift run Consumer",
    )?;
    Ok(".package(path: \"dist/swift/AcpInject\")".into())
}
