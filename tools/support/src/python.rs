//! The Python environment the demo, the tests and the benchmarks use: a venv in the cache
//! directory (outside the repository), created on first use, with `bindings/python`
//! (re)installed into it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::process::{human, run_ok, size_of};
use crate::Error;

/// The venv's interpreter, with the package (what ships: `bindings/python`, built from
/// `crates/ffi`) freshly installed (`extras`: e.g. `[test]`). The demo and the benchmarks use
/// it (the docs use a venv of their own: [`python_with_package_in`]).
///
/// First use creates the venv and downloads maturin (the build backend) and, with `[test]`,
/// pytest, mypy and hypothesis from PyPI: about 100 MB in the venv and pip's cache. Every call rebuilds
/// the package's wheel, which compiles `crates/ffi` in release mode (a few minutes the first
/// time, seconds afterwards); pip runs verbosely so that compilation shows as it happens.
pub fn python_with_package(extras: &str) -> Result<PathBuf, Error> {
    install(&crate::cache_dir().join("venv"), &format!("bindings/python{extras}"), extras.contains("test"))
}

/// The same as [`python_with_package`] with the package installed into the venv at `venv`
/// (created on first use) instead of the shared one: for a tool that adds packages of its own
/// (`cargo xtask docs` adds pdoc), so that nothing it installs lands in the venv the tests use.
pub fn python_with_package_in(venv: &Path) -> Result<PathBuf, Error> {
    install(venv, "bindings/python", false)
}

/// The venv's interpreter with the test package freshly installed, with its `[test]` extras:
/// `bindings/python/test-package`, the same package plus the test-only conformance engine
/// (built from `crates/ffi-conformance`), which the tests' vector driver needs. What the
/// Python test stage and the black-box stage's Python agent use.
pub fn python_with_test_package() -> Result<PathBuf, Error> {
    install(&crate::cache_dir().join("venv"), "bindings/python/test-package[test]", true)
}

/// What this process last installed into each venv: the sources do not change during one run
/// of the task runner, so asking again for the same spec (the interop stage asks four times)
/// reuses the install instead of rebuilding the wheel.
static INSTALLED: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());

fn install(venv: &Path, spec: &str, test_tools: bool) -> Result<PathBuf, Error> {
    let mut installed = INSTALLED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if installed.iter().any(|(v, s)| v == venv && s == spec) {
        eprintln!("installed already in this run: {spec} in the venv at {}", venv.display());
        return cached_venv(venv);
    }
    installed.retain(|(v, _)| v != venv);
    let py = install_now(venv, spec, test_tools)?;
    installed.push((venv.to_path_buf(), spec.to_owned()));
    Ok(py)
}

fn install_now(venv: &Path, spec: &str, test_tools: bool) -> Result<PathBuf, Error> {
    let py = cached_venv(venv)?;
    remove_develop_outputs()?;
    remove_stale_bindings()?;
    let before = size_of(venv);
    eprintln!(
        "installing: {spec} into the venv at {} ({}); the first time this downloads maturin{} from PyPI",
        venv.display(),
        human(before),
        if test_tools { ", pytest, mypy and hypothesis" } else { "" }
    );
    run_ok(Command::new(&py).args(["-m", "pip", "install", "--verbose", "--progress-bar", "off", spec]).env("PYTHONUNBUFFERED", "1"))?;
    let after = size_of(venv);
    if after > before + (1 << 20) {
        eprintln!("installed: the venv grew from {} to {}", human(before), human(after));
    }
    Ok(py)
}

/// The interpreter of the venv at `venv`, created on first use. A venv whose pip does not run
/// (its creation was cut short: the disk filled, the run was killed) is removed and made
/// again, so one interrupted run does not break every later one.
pub fn cached_venv(venv: &Path) -> Result<PathBuf, Error> {
    let py = venv.join("bin/python");
    let pip_runs = || {
        Command::new(&py)
            .args(["-m", "pip", "--version"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if py.exists() && pip_runs() {
        return Ok(py);
    }
    if venv.exists() {
        eprintln!("removing the venv at {}: its pip does not run (an earlier creation was cut short)", venv.display());
        std::fs::remove_dir_all(venv).map_err(|e| Error::write(venv, e))?;
    }
    eprintln!("installing: a Python venv at {} (first use only)", venv.display());
    run_ok(Command::new("python3").args(["-m", "venv"]).arg(venv))?;
    Ok(py)
}

/// `maturin develop` writes the generated module and the native library into the package's
/// source folder (ignored by git). Left there, they collide with the same files maturin
/// generates into the wheel, and the build fails; they are build products, so they go.
fn remove_develop_outputs() -> Result<(), Error> {
    let dir = crate::root().join("bindings/python/python/acp_inject/acp_inject_ffi");
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(()) };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let product = name == "__init__.py" || name == "acp_inject_ffi.py" || name.ends_with(".so") || name.ends_with(".dylib");
        if product {
            eprintln!("removing {} (a `maturin develop` output; the wheel build generates it)", path.display());
            std::fs::remove_file(&path).map_err(|e| Error::write(&path, e))?;
        }
    }
    Ok(())
}

/// maturin has uniffi-bindgen write the Python modules into `<target>/maturin/uniffi/<module>`,
/// never emptied, and puts every module it finds there into the wheel. The test package's build
/// leaves the conformance component's module there, which the package's next build would then
/// ship (and which would fail to load without its library): every wheel build starts with the
/// folder gone. (`cargo xtask dist` checks the wheel has no such module.)
pub fn remove_stale_bindings() -> Result<(), Error> {
    let dir = crate::target_dir()?.join("maturin/uniffi");
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::write(&dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A venv cut short before pip was installed is replaced by a working one, and a working
    /// one is kept as it is.
    #[test]
    fn a_venv_without_a_working_pip_is_made_again() {
        let dir = std::env::temp_dir().join(format!("acp-inject-venv-test-{}", std::process::id()));
        let venv = dir.join("venv");
        let _ = std::fs::remove_dir_all(&dir);
        run_ok(Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv)).expect("python3 -m venv");
        let marker = venv.join("cut-short");
        std::fs::write(&marker, "").unwrap();

        let py = cached_venv(&venv).expect("the venv is made again");
        assert!(!marker.exists(), "the broken venv was kept");
        let pip = Command::new(&py).args(["-m", "pip", "--version"]).output().unwrap();
        assert!(pip.status.success(), "{}", String::from_utf8_lossy(&pip.stderr));

        std::fs::write(&marker, "").unwrap();
        assert_eq!(cached_venv(&venv).unwrap(), py);
        assert!(marker.exists(), "a working venv was made again");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
