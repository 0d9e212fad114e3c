//! `cargo xtask upstream bump VERSION`: the vendored upstream schemas move to another release
//! of the official TypeScript SDK package (`acp_inject_upstream::bump`), every language is
//! regenerated, and the differ reports how far our schema is from the new draft.

use acp_inject_upstream::diff;
use acp_inject_upstream::vendored::Vendored;

use crate::{cache_dir, codegen, root, Error};

/// The `upstream` commands.
#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Vendor the schemas of this release of the official TypeScript SDK package (fetched with
    /// npm into the cache), regenerate, and report what changed per language and the drift.
    Bump {
        /// The package version, e.g. 2.4.0.
        version: String,
    },
    /// Check the vendored copy against its manifest (nothing is fetched).
    Verify,
}

pub fn run(cmd: Cmd) -> Result<(), Error> {
    match cmd {
        Cmd::Bump { version } => bump(&version),
        Cmd::Verify => match Vendored::at(&root()).verify()?.as_slice() {
            [] => {
                eprintln!("spec/upstream/ is exactly what its manifest says");
                Ok(())
            }
            problems => Err(Error::msg(problems.join("\n"))),
        },
    }
}

fn bump(version: &str) -> Result<(), Error> {
    let bumped = acp_inject_upstream::bump::bump(&root(), &cache_dir(), version)?;
    for path in &bumped.written {
        eprintln!("wrote {}", path.strip_prefix(root()).unwrap_or(path).display());
    }
    // Every language is regenerated from spec/ (a no-op while our schema does not change).
    codegen::run(codegen::Mode::Write)?;
    let unstable = Vendored::at(&root()).path("v2/schema.unstable.json");
    eprintln!("\nthe differ against the new unstable v2 schema:");
    let args = ["upstream-diff".into(), unstable.display().to_string()];
    let drift = match diff::run_args(&args) {
        Ok(()) => "no unintended difference from our schema".to_owned(),
        // Drift is what a bump is run to see: it is reported, and the test command's own
        // check decides whether it may land.
        Err(e) => e,
    };
    // The report comes last, so it is what the maintainer reads.
    println!("\n{}\n{drift}", bumped.render());
    Ok(())
}
