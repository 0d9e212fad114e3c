//! `cargo xtask upstream bump [--npm @agentclientprotocol/sdk@VERSION | --crate
//! agent-client-protocol-schema@VERSION | VERSION] [--dir DIR]`: the vendored upstream schemas
//! move to a release of the official TypeScript SDK's npm package or of the official Rust
//! schema crate (`acp_inject_upstream::bump`; without a release named, the newer of both
//! newest), every language is regenerated, and the differ reports how far our schema is from
//! the new draft.

use std::path::Path;

use acp_inject_upstream::bump;
use acp_inject_upstream::diff;
use acp_inject_upstream::vendored::{Vendored, DIR};

use crate::{cache_dir, codegen, root, Error};

/// The `upstream` commands.
#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Vendor the schemas of a release of either upstream authority: --npm (the official
    /// TypeScript SDK's package, fetched with npm into the cache), --crate (generated from the
    /// official Rust schema crate's types, built in the cache), or, with neither, the newer of
    /// both newest releases; then regenerate, and report what changed per language and the
    /// drift.
    Bump(bump::Args),
    /// Check the vendored copy against its manifest (nothing is fetched).
    Verify,
}

pub fn run(cmd: Cmd) -> Result<(), Error> {
    match cmd {
        Cmd::Bump(args) => run_bump(&args),
        Cmd::Verify => match Vendored::at(&root()).verify()?.as_slice() {
            [] => {
                eprintln!("spec/upstream/ is exactly what its manifest says");
                Ok(())
            }
            problems => Err(Error::msg(problems.join("\n"))),
        },
    }
}

fn run_bump(args: &bump::Args) -> Result<(), Error> {
    let cache = cache_dir();
    let ours = root().join(DIR);
    let dir = args.dir.clone().unwrap_or_else(|| ours.clone());
    let is_ours = same_dir(&dir, &ours);
    let (fetched, why) = match args.source()? {
        Some(source) => (bump::fetch(&cache, &source)?, None),
        None => {
            let choice = bump::newest(&cache)?;
            (choice.fetched, Some(choice.why))
        }
    };
    let chosen = fetched.manifest.source.clone();
    let bumped = bump::bump(&dir, fetched)?;
    for path in &bumped.written {
        eprintln!("wrote {}", path.strip_prefix(root()).unwrap_or(path).display());
    }
    if is_ours {
        // Every language is regenerated from spec/ (a no-op while our schema does not change).
        codegen::run(codegen::Mode::Write)?;
    } else {
        eprintln!("{} is not {DIR}/: nothing is regenerated", dir.display());
    }
    let unstable = Vendored::in_dir(&dir).path("v2/schema.unstable.json");
    eprintln!("\nthe differ against the new unstable v2 schema:");
    let args = ["upstream-diff".into(), unstable.display().to_string()];
    let drift = match diff::run_args(&args) {
        Ok(()) => "no unintended difference from our schema".to_owned(),
        // Drift is what a bump is run to see: it is reported, and the test command's own
        // check decides whether it may land.
        Err(e) => e,
    };
    // The report comes last, so it is what the maintainer reads.
    let why = why.map(|w| format!("chose {chosen}: {w}\n\n")).unwrap_or_default();
    println!("\n{why}{}\n{drift}", bumped.render());
    Ok(())
}

/// Whether two paths name the same folder (either may not exist yet).
fn same_dir(a: &Path, b: &Path) -> bool {
    let resolved = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    resolved(a) == resolved(b)
}
