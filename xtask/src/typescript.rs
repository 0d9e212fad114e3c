//! The TypeScript stage of `cargo xtask test`; `cargo xtask typescript` runs it alone.
//!
//! Nothing is installed into the repository. In `$ACP_INJECT_CACHE/typescript/harness/` (see
//! [`acp_inject_tool_support::cache_dir`]) it:
//!
//! 1. copies the consumer project `bindings/typescript/` (package.json, lockfile, tsconfig,
//!    tests) and runs `npm ci` when the lockfile differs from the installed one (so a warm run
//!    does not touch the network);
//! 2. builds the generated package `generated/typescript/` with the pinned `tsc` into
//!    `node_modules/@acp-inject/schema/`, as npm would install it;
//! 3. type-checks and compiles the consumer project against it (`test/types.ts` holds
//!    type-level tests that only have to compile);
//! 4. runs `test/check.ts`: every example (valid ones pass, invalid ones fail naming the member
//!    in `spec/examples/invalid-members.json`) and every JSON-RPC message of the vectors.

use std::path::Path;
use std::process::Command;

use crate::test::{Counts, Row};
use crate::{cache_dir, copy, copy_tree, root, Error};

pub fn run() -> Result<(), Error> {
    let row = stage();
    let cell = |c: Option<Counts>| c.map_or("-".to_owned(), |c| format!("{} passed, {} failed", c.passed, c.failed));
    println!("typescript: examples {}; vector messages {}", cell(row.tests), cell(row.vectors));
    if row.ok {
        Ok(())
    } else {
        Err(Error::msg(format!("the TypeScript stage failed: {}", row.note)))
    }
}

/// The stage's row of the summary: examples as tests, vector messages as vectors.
pub fn stage() -> Row {
    let harness = cache_dir().join("typescript/harness");
    let (ok, text) = match prepare(&harness).and_then(|()| build(&harness)) {
        Ok(()) => run_logged(Command::new("node").arg(harness.join("build/check.js")).arg(root())),
        Err(e) => return Row::failed(e),
    };
    let counts = |label| counts(&text, label).map(|(passed, failed)| Counts { passed, failed, skipped: 0 });
    let mut row = Row { tests: counts("examples:"), vectors: counts("vectors:"), ..Row::default() };
    row.ok = ok && [row.tests, row.vectors].iter().all(|c| c.is_some_and(|c| c.passed > 0 && c.failed == 0));
    if !row.ok {
        row.note = "check.js failed".into();
    }
    row
}

/// The consumer project in the cache, with its pinned dependencies installed.
fn prepare(harness: &Path) -> Result<(), Error> {
    let project = root().join("bindings/typescript");
    npm_project(&project, harness, &["package.json", "package-lock.json", "tsconfig.json"])?;
    let tests = harness.join("test");
    let _ = std::fs::remove_dir_all(&tests);
    Ok(copy_tree(&project.join("test"), &tests)?)
}

/// Copies `files` of the npm project `project` into `harness` (in the cache) and installs its
/// locked dependencies there with `npm ci`, only when the lockfile differs from the installed
/// one (so a warm run does not touch the network). Node 18 or newer is required.
pub fn npm_project(project: &Path, harness: &Path, files: &[&str]) -> Result<(), Error> {
    let node = Command::new("node").arg("--version").output().map_err(|e| Error::msg(format!("node is not installed: {e}")))?;
    let version = String::from_utf8_lossy(&node.stdout).trim().to_owned();
    let major: u32 = version.trim_start_matches('v').split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if major < 18 {
        return Err(Error::msg(format!("node {version} is too old (18 or newer is needed)")));
    }
    std::fs::create_dir_all(harness).map_err(|e| Error::msg(format!("cannot create {}: {e}", harness.display())))?;
    for file in files {
        copy(&project.join(file), &harness.join(file))?;
    }
    let lock_path = project.join("package-lock.json");
    let lock = std::fs::read_to_string(&lock_path).map_err(|e| Error::read(&lock_path, e))?;
    let stamp = harness.join("node_modules/.acp-inject-installed.json");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(lock.as_str()) {
        let (ok, _) = run_logged(Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"]).current_dir(harness));
        if !ok {
            return Err(Error::msg("npm ci failed (is the npm registry reachable?)"));
        }
        std::fs::write(&stamp, &lock).map_err(|e| Error::msg(format!("cannot write {}: {e}", stamp.display())))?;
    }
    Ok(())
}

/// The package built into the consumer's node_modules, then the consumer compiled against it.
fn build(harness: &Path) -> Result<(), Error> {
    let tsc = harness.join("node_modules/.bin/tsc");
    let package = harness.join("node_modules/@acp-inject/schema");
    let _ = std::fs::remove_dir_all(&package);
    let generated = root().join("generated/typescript");
    let (ok, _) =
        run_logged(Command::new(&tsc).arg("-p").arg(generated.join("tsconfig.json")).arg("--outDir").arg(package.join("dist")));
    if !ok {
        return Err(Error::msg("tsc could not build generated/typescript"));
    }
    copy(&generated.join("package.json"), &package.join("package.json"))?;
    let _ = std::fs::remove_dir_all(harness.join("build"));
    let (ok, _) = run_logged(Command::new(&tsc).arg("-p").arg(harness.join("tsconfig.json")));
    if !ok {
        return Err(Error::msg("tsc rejected bindings/typescript/test (type-level tests)"));
    }
    Ok(())
}

/// `examples: 12 passed, 0 failed` → (12, 0), from the last such line.
fn counts(text: &str, label: &str) -> Option<(u64, u64)> {
    let line = text.lines().rev().find(|l| l.starts_with(label))?;
    let words: Vec<&str> = line[label.len()..].split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    let number = |word: &str| words.windows(2).find(|w| w[1] == word).and_then(|w| w[0].parse().ok());
    Some((number("passed")?, number("failed")?))
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_closing_counts_of_check_js() {
        let out = "FAILED vector messages: x\nexamples: 66 passed, 1 failed\nvectors: 1200 passed, 0 failed\n";
        assert_eq!(super::counts(out, "examples:"), Some((66, 1)));
        assert_eq!(super::counts(out, "vectors:"), Some((1200, 0)));
        assert_eq!(super::counts(out, "nothing:"), None);
    }

    /// The generated package and the consumer project pin the same compiler.
    #[test]
    fn the_typescript_pins_agree() {
        let text = std::fs::read_to_string(crate::root().join("bindings/typescript/package.json")).unwrap();
        let project: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(project["devDependencies"]["typescript"], acp_inject_codegen::typescript::TYPESCRIPT_VERSION);
        let lock = std::fs::read_to_string(crate::root().join("bindings/typescript/package-lock.json")).unwrap();
        let lock: serde_json::Value = serde_json::from_str(&lock).unwrap();
        assert_eq!(lock["packages"]["node_modules/typescript"]["version"], acp_inject_codegen::typescript::TYPESCRIPT_VERSION);
    }
}
