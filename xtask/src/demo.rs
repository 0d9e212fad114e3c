//! `cargo xtask demo`: the main job. Checks that the generated files are fresh, builds the
//! reference agent, installs the Python package, and runs the example client
//! (`bindings/python/examples/client.py`) against the agent over stdio: a scripted session
//! (prompt, steer and queue mid-turn, revoke, replace, cancel, two sessions at once) printed live
//! as it happens, each step checked against the rules.
//!
//! It writes nothing the repository tracks: the check generates into the target directory and
//! compares, and a stale file is reported with `cargo xtask codegen`, the one command that writes
//! generated files (the demo goes on with the checked-in files); the builds go to the target
//! directory and the venv to the cache.

use std::process::Command;
use std::time::Instant;

use crate::process::{self, Echo};
use crate::{root, Error};

pub fn run(delay_ms: u64) -> Result<(), Error> {
    let started = Instant::now();
    step(1, "codegen --check: are the generated files fresh? (builds crates/ffi and uniffi-bindgen into the target dir)");
    match crate::codegen::run(crate::codegen::Mode::Check) {
        Ok(()) => {}
        Err(Error::Stale(files)) => eprintln!("demo: warning: {}; the demo goes on with the checked-in files", Error::Stale(files)),
        Err(e) => return Err(e),
    }
    step(2, "build the reference agent (cargo build -p acp-inject-reference-agent)");
    let agent = crate::cargo_bin("acp-inject-reference-agent", "acp-inject-agent")?;
    step(3, "the Python package (bindings/python) in the cached venv");
    let py = crate::python::python_with_package("")?;
    step(4, &format!("live session: examples/client.py (acp_inject) ⇄ {} over stdio", agent.display()));
    let mut client = Command::new(&py);
    client.arg(root().join("bindings/python/examples/client.py")).arg("--").arg(&agent).args(["--delay-ms", &delay_ms.to_string()]);
    // Python buffers a pipe's output until exit; the session is meant to be watched live.
    let ran = process::run(client.env("PYTHONUNBUFFERED", "1"), Echo::All)?;
    eprintln!("\ndemo: {:.0} s in all", started.elapsed().as_secs_f64());
    if ran.success() {
        Ok(())
    } else {
        Err(Error::msg("the session did not behave as the rules say (see FAIL above)"))
    }
}

fn step(n: usize, what: &str) {
    eprintln!("\n== demo [{n}/4] {what} ==");
}
