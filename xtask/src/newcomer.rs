//! The newcomer stage of `cargo xtask test`: the committed HEAD, checked out alone in an
//! otherwise empty directory of the cache (`<cache>/newcomer/acp-inject`, nothing beside it),
//! passes `cargo xtask codegen --check`. A clone that needs anything outside itself (a file
//! beside the repository, a path into the developer's machine) fails here.
//!
//! The checkout is kept between runs and moved to the new HEAD with `git checkout --force`
//! plus `git clean`, so files that did not change keep their timestamps and a warm run only
//! rebuilds what changed. It builds into its own directory below the caller's target directory
//! (`<target>/newcomer`): cargo names a workspace crate's artifacts without its absolute path,
//! so a clone building into the caller's own directory would replace the caller's artifacts
//! (the running `xtask` binary included) with builds of the committed HEAD. The first run
//! builds the dependencies of `xtask` and `crates/ffi` there once (a few minutes).
//!
//! A run in a checkout that is itself such a clone (nothing beside it, HEAD with no change or
//! untracked file: a CI job's fresh clone) needs no second one: the run's `codegen --check`
//! stage ran in it, and the stage says so instead of building the tree again.

use std::path::Path;
use std::process::Command;

use crate::process::{self, run_ok, Echo};
use crate::test::Row;
use crate::{root, Error};

/// The stage; `codegen_checked`: this run's `codegen --check` stage passed.
pub fn stage(codegen_checked: bool) -> Row {
    match alone_and_clean() {
        Ok(Some(head)) if codegen_checked => {
            let note = format!("HEAD {head}: this checkout is itself alone and clean, and `codegen --check` passed in it");
            eprintln!("newcomer: {note}; no second clone is built");
            return Row { ok: true, note, ..Row::default() };
        }
        Ok(_) => {}
        Err(e) => return Row::failed(e.to_string()),
    }
    match check() {
        Ok(head) => Row { ok: true, note: format!("HEAD {head}"), ..Row::default() },
        Err(e) => Row::failed(e.to_string()),
    }
}

fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir);
    cmd
}

/// When the repository this runs in is what the stage would make (a checkout with nothing
/// beside it, holding HEAD exactly: no change, no untracked file), the run's own `codegen
/// --check` stage has checked it already (CI runs the test command in a fresh clone): `Some`
/// with HEAD. Otherwise `None`, and the stage clones.
fn alone_and_clean() -> Result<Option<String>, Error> {
    let root = root();
    let Some(parent) = root.parent() else { return Ok(None) };
    let entries = std::fs::read_dir(parent).map_err(|e| Error::read(parent, e))?;
    let beside = entries.flatten().filter(|e| e.path() != root).count();
    if beside > 0 {
        return Ok(None);
    }
    let status = process::run(git(&root).args(["status", "--porcelain", "--untracked-files=normal"]), Echo::StderrOnly)?.check()?;
    if !status.stdout.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(head(&root)?))
}

/// The short id of the commit checked out in `dir`.
fn head(dir: &Path) -> Result<String, Error> {
    Ok(process::run(git(dir).args(["rev-parse", "--short", "HEAD"]), Echo::StderrOnly)?.check()?.stdout.trim().to_owned())
}

fn check() -> Result<String, Error> {
    let root = root();
    let head = head(&root)?;
    let dirty = process::run(git(&root).args(["status", "--porcelain", "--untracked-files=no"]), Echo::StderrOnly)?.check()?;
    if !dirty.stdout.trim().is_empty() {
        eprintln!("newcomer: note: this checks the committed HEAD {head}; uncommitted changes are not part of it");
    }
    let parent = crate::cache_dir().join("newcomer");
    let checkout = parent.join("acp-inject");
    std::fs::create_dir_all(&parent).map_err(|e| Error::write(&parent, e))?;
    // Nothing may stand beside the checkout: that is the point of the stage.
    for entry in std::fs::read_dir(&parent).map_err(|e| Error::read(&parent, e))?.flatten() {
        if entry.path() != checkout {
            let p = entry.path();
            let removed = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            removed.map_err(|e| Error::write(&p, e))?;
        }
    }
    if !checkout.join(".git").exists() {
        let _ = std::fs::remove_dir_all(&checkout);
        run_ok(Command::new("git").args(["init", "--quiet"]).arg(&checkout))?;
    }
    run_ok(git(&checkout).args(["fetch", "--no-tags"]).arg(&root).arg("HEAD"))?;
    run_ok(git(&checkout).args(["checkout", "--quiet", "--force", "--detach", "FETCH_HEAD"]))?;
    run_ok(git(&checkout).args(["clean", "-ffdxq"]))?;
    eprintln!("newcomer: {} holds HEAD {head} and nothing else is beside it", checkout.display());

    let target = crate::target_dir()?.join("newcomer");
    let mut cmd = Command::new(crate::cargo());
    // Not incremental: the next run rebuilds only the crates its HEAD changed, a small part of
    // this build, while incremental state would add about a third to its size on disk.
    cmd.args(["xtask", "codegen", "--check"]).current_dir(&checkout).env("CARGO_TARGET_DIR", &target).env("CARGO_INCREMENTAL", "0");
    let ran = process::run(&mut cmd, Echo::All)?;
    if !ran.success() {
        return Err(Error::msg(format!("HEAD {head}, cloned alone, fails `cargo xtask codegen --check` (output above)")));
    }
    Ok(head)
}
