//! `cargo xtask demo`: the main job. Regenerates the bindings, builds the reference agent,
//! installs the Python package, and runs a live session against the agent over stdio from a
//! client written against the Python binding (`bindings/python/examples/live_demo.py`).

use std::process::Command;

use crate::root;

pub fn run(args: &[String]) -> Result<(), String> {
    let mut delay = "120".to_owned();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--delay-ms" => delay = it.next().ok_or("--delay-ms needs a value")?.clone(),
            other => return Err(format!("unknown argument {other:?}; usage: cargo xtask demo [--delay-ms MS]")),
        }
    }
    crate::codegen::run(&[])?;
    let agent = crate::pyenv::cargo_bin("acp-inject-reference-agent", "acp-inject-agent")?;
    let py = crate::pyenv::python_with_package("")?;
    println!("\n== live session: Python client (acp_inject) ⇄ {} over stdio ==\n", agent.display());
    let status = Command::new(&py)
        .arg(root().join("bindings/python/examples/live_demo.py"))
        .arg(&agent)
        .args(["--delay-ms", &delay])
        .status()
        .map_err(|e| format!("cannot run the demo client: {e}"))?;
    if status.success() { Ok(()) } else { Err("the live session did not show every behaviour (see MISSING above)".into()) }
}
