//! A shipping agent in the interop stage: `@agentclientprotocol/claude-agent-acp` (the ACP agent
//! around Claude Code), pinned in `interop/claude-agent-acp/package.json`, installed into the
//! cache, and run offline against the mock of the Anthropic Messages API the tests own
//! (`mock-anthropic.mjs`, on 127.0.0.1 only), with the agent's other traffic disabled. Our
//! clients drive it on ACP v1 and v2 (`drive.py` for Python; the Kotlin and Swift suites'
//! `ShippingAgentInterop` tests, which run only when `ACP_INJECT_CLAUDE_AGENT` is set, and
//! must have run: a skipped one fails the stage).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::process::{self, Echo};
use crate::{cache_dir, root, Error};

/// The files of `interop/claude-agent-acp` the harness in the cache needs.
const FILES: [&str; 3] = ["package.json", "package-lock.json", "mock-anthropic.mjs"];

/// The mock API, stopped when dropped.
struct Mock {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_mock(harness: &Path, run: &Path) -> Result<Mock, Error> {
    let log = run.join("mock-requests.jsonl");
    let mut child = Command::new("node")
        .arg(harness.join("mock-anthropic.mjs"))
        .args(["--delay-ms", "120", "--log"])
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Error::msg(format!("cannot start the mock Anthropic API: {e}")))?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = std::io::BufReader::new(out).read_line(&mut line);
    }
    let url = line.trim().to_owned();
    let mock = Mock { child, url, log };
    if !mock.url.starts_with("http://127.0.0.1:") {
        return Err(Error::msg("the mock Anthropic API printed no URL"));
    }
    Ok(mock)
}

/// The agent's command: `env` giving it the mock as its API, a home of its own (its settings
/// and the sessions it saves for `session/load`), nothing sent anywhere else, and the protocol
/// version it is held to, then `node` on the package's entry point. Carried in the command, so
/// the test runners (Maven, swiftw, pytest) keep their own environment. `IS_SANDBOX=1`: as
/// root (this machine, CI containers) Claude Code refuses to start sessions otherwise.
fn agent_command(entry: &Path, mock: &Mock, home: &Path, protocol: &str) -> Vec<String> {
    let mut cmd = vec!["env".to_owned()];
    for var in
        ["ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_OAUTH_TOKEN"]
    {
        cmd.extend(["-u".to_owned(), var.to_owned()]);
    }
    let set = [
        ("ANTHROPIC_BASE_URL", mock.url.clone()),
        ("ANTHROPIC_API_KEY", "sk-ant-offline-mock".to_owned()),
        ("HOME", home.display().to_string()),
        ("IS_SANDBOX", "1".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ("DISABLE_ERROR_REPORTING", "1".to_owned()),
        ("CLAUDE_AGENT_ACP_PROTOCOL", protocol.to_owned()),
    ];
    cmd.extend(set.iter().map(|(k, v)| format!("{k}={v}")));
    cmd.extend(["node".to_owned(), entry.display().to_string()]);
    cmd
}

/// Installs the agent, starts the mock, and runs our clients against the agent: one result
/// per run, named.
pub fn claude_agent_acp() -> Vec<(String, bool)> {
    let harness = cache_dir().join("interop/claude-agent-acp");
    let failed = |what: &str, e: Error| vec![(format!("claude-agent-acp: {what}: {e}"), false)];
    if let Err(e) = crate::typescript::npm_project(&root().join("interop/claude-agent-acp"), &harness, &FILES) {
        return failed("npm ci", e);
    }
    let run = harness.join("run");
    let _ = std::fs::remove_dir_all(&run);
    let (home, work) = (run.join("home"), run.join("work"));
    for dir in [&home, &work] {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return failed("the run's directories", Error::msg(e.to_string()));
        }
    }
    let mock = match start_mock(&harness, &run) {
        Ok(m) => m,
        Err(e) => return failed("the mock", e),
    };
    eprintln!("the mock Anthropic API listens on {} (requests logged to {})", mock.url, mock.log.display());
    let entry = harness.join("node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js");
    let mut results = Vec::new();
    let python = crate::python::python_with_test_package();
    for protocol in ["v1", "v2"] {
        let name = format!("our Python client against claude-agent-acp ({protocol})");
        eprintln!("\n{name}:");
        let ok = match &python {
            Ok(py) => {
                let mut cmd = Command::new(py);
                cmd.arg(root().join("interop/claude-agent-acp/drive.py"))
                    .args(["--protocol", protocol, "--mock-log"])
                    .arg(&mock.log)
                    .arg("--workdir")
                    .arg(&work)
                    .arg("--")
                    .args(agent_command(&entry, &mock, &home, protocol));
                process::run(&mut cmd, Echo::All).is_ok_and(|r| r.success())
            }
            Err(e) => {
                eprintln!("{e}");
                false
            }
        };
        results.push((name, ok));
    }
    for protocol in ["v1", "v2"] {
        let name = format!("our Kotlin client against claude-agent-acp ({protocol})");
        eprintln!("\n{name}:");
        let ok = match crate::test::kotlin_test_command("ShippingAgentInteropTest") {
            Ok(mut cmd) => {
                ours_env(&mut cmd, &agent_command(&entry, &mock, &home, protocol), &mock, &work, protocol);
                process::run(&mut cmd, Echo::All).is_ok_and(|r| r.success())
                    && crate::test::kotlin_tests_ran("dev.acpinject.ShippingAgentInteropTest")
            }
            Err(e) => {
                eprintln!("{e}");
                false
            }
        };
        results.push((name, ok));
    }
    for protocol in ["v1", "v2"] {
        let name = format!("our Swift client against claude-agent-acp ({protocol})");
        eprintln!("\n{name}:");
        let test = "testOurClientAgainstClaudeAgentAcpOfflineOnTheProtocolVersionTheStageForces";
        let ok = match crate::test::swift_interop_command(&format!("ShippingAgentInteropTests/{test}")) {
            Ok(mut cmd) => {
                ours_env(&mut cmd, &agent_command(&entry, &mock, &home, protocol), &mock, &work, protocol);
                // It must have run, not been skipped.
                process::run(&mut cmd, Echo::All)
                    .is_ok_and(|r| r.success() && format!("{}{}", r.stdout, r.stderr).contains(&format!("{test}' passed")))
            }
            Err(e) => {
                eprintln!("{e}");
                false
            }
        };
        results.push((name, ok));
    }
    results
}

/// What the Kotlin and Swift suites' `ShippingAgentInterop` tests read: the agent's command
/// (one argument per line), the mock's log, the sessions' directory and the version the agent
/// is held to.
fn ours_env(cmd: &mut Command, agent: &[String], mock: &Mock, work: &Path, protocol: &str) {
    cmd.env("ACP_INJECT_CLAUDE_AGENT", agent.join("\n"))
        .env("ACP_INJECT_CLAUDE_MOCK_LOG", &mock.log)
        .env("ACP_INJECT_CLAUDE_WORKDIR", work)
        .env("ACP_INJECT_CLAUDE_PROTOCOL", protocol);
}
