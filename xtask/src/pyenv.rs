//! The Python environment the demo and the tests use: a venv in the cache directory (outside
//! the repository), created on first use, with `bindings/python` (re)installed into it.

use std::path::PathBuf;
use std::process::Command;

use crate::root;

/// The venv's interpreter, with the package freshly installed (`extras`: e.g. `[test]`).
pub fn python_with_package(extras: &str) -> Result<PathBuf, String> {
    let venv = crate::test::cache_dir().join("venv");
    let py = venv.join("bin/python");
    if !py.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv), "create the venv")?;
    }
    let spec = format!("bindings/python{extras}");
    run(Command::new(&py).args(["-m", "pip", "install", "--quiet", &spec]), "pip install bindings/python")?;
    Ok(py)
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    cmd.current_dir(root());
    eprintln!("+ {cmd:?}");
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("cannot {what}: {s}")),
        Err(e) => Err(format!("cannot {what}: {e}")),
    }
}

/// Builds a workspace binary and returns its path.
pub fn cargo_bin(package: &str, bin: &str) -> Result<PathBuf, String> {
    run(Command::new(crate::cargo()).args(["build", "--quiet", "-p", package, "--bin", bin]), &format!("build {bin}"))?;
    Ok(crate::target_dir()?.join("debug").join(format!("{bin}{}", std::env::consts::EXE_SUFFIX)))
}
