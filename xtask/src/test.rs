//! `cargo xtask test`: every test in every language, then one summary table.
//!
//! Each stage runs even when an earlier one failed, so one run shows everything that is
//! broken; the exit status is non-zero when any stage failed.

use std::process::Command;

use crate::root;

struct Stage {
    name: &'static str,
    ok: bool,
    detail: String,
}

pub fn run(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask test".into());
    }
    let mut stages = Vec::new();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = run_cmd(Command::new(&cargo).args(["test", "--workspace", "--quiet"]));
    stages.push(Stage { name: "rust: cargo test --workspace", ok, detail: String::new() });

    let stale = crate::codegen::generate(crate::codegen::Mode::Check);
    let (ok, detail) = match stale {
        Ok(s) if s.is_empty() => (true, String::new()),
        Ok(s) => (false, format!("stale: {s:?}")),
        Err(e) => (false, e),
    };
    stages.push(Stage { name: "codegen --check", ok, detail });

    let report = acp_inject_core::vectors::run_dirs(&[root().join("spec/vectors")]);
    print!("{}", report.render());
    stages.push(Stage {
        name: "rust: conformance vectors",
        ok: report.failed() == 0 && !report.results.is_empty(),
        detail: format!("{} passed, {} failed", report.passed(), report.failed()),
    });

    println!("\n== summary ==");
    for s in &stages {
        println!("{:<48} {}{}", s.name, if s.ok { "ok" } else { "FAILED" }, if s.detail.is_empty() { String::new() } else { format!("  ({})", s.detail) });
    }
    let failed = stages.iter().filter(|s| !s.ok).count();
    println!("stages: {} passed, {} failed", stages.len() - failed, failed);
    if failed == 0 { Ok(()) } else { Err(format!("{failed} stage(s) failed")) }
}

fn run_cmd(cmd: &mut Command) -> bool {
    cmd.current_dir(root());
    eprintln!("+ {cmd:?}");
    matches!(cmd.status(), Ok(s) if s.success())
}
