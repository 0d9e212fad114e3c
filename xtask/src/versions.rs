//! One version for every artifact: the workspace's (`[workspace.package] version` in the root
//! Cargo.toml, which xtask inherits, so it is `CARGO_PKG_VERSION` here).
//!
//! - Rust crates inherit it (`version.workspace = true`); the versions beside the paths in
//!   `[workspace.dependencies]` must match it, which cargo itself enforces.
//! - The Python wheel: maturin reads the version of `crates/ffi` (`dynamic = ["version"]`).
//! - The Maven pom: Maven cannot read Cargo.toml, so `cargo xtask codegen` writes the project
//!   `<version>` of `bindings/kotlin/pom.xml` and `codegen --check` (part of `cargo xtask
//!   test`) fails when it differs. A literal version (rather than `${revision}` and the flatten
//!   plugin) keeps the installed pom readable by every tool.
//! - The Swift package: SwiftPM versions packages by git tag; `cargo xtask dist` writes the
//!   version into the package's pkg-config file.
//! - A TypeScript package (`generated/typescript/package.json`), when there is one, takes it
//!   the same way as the pom.

use std::path::PathBuf;

use crate::codegen::{ensure_file_contents, Mode};
use crate::root;

/// The workspace version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub const POM: &str = "bindings/kotlin/pom.xml";

/// Writes (or, in check mode, checks) every version that is not read from Cargo directly.
pub fn sync(mode: Mode, stale: &mut Vec<PathBuf>) -> Result<(), String> {
    let path = root().join(POM);
    let pom = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {POM}: {e}"))?;
    let updated = with_project_version(&pom, VERSION)?;
    Ok(ensure_file_contents(&path, &updated, mode, stale)?)
}

/// The pom with its project version (the first `<version>` after the project's
/// `<artifactId>`, before any `<parent>`, `<dependencies>` or `<build>`) set to `version`.
fn with_project_version(pom: &str, version: &str) -> Result<String, String> {
    const ANCHOR: &str = "<artifactId>acp-inject</artifactId>";
    let after = pom.find(ANCHOR).ok_or_else(|| format!("{POM}: no {ANCHOR}"))? + ANCHOR.len();
    let open = after + pom[after..].find("<version>").ok_or_else(|| format!("{POM}: no project <version>"))? + "<version>".len();
    let close = open + pom[open..].find("</version>").ok_or_else(|| format!("{POM}: unclosed <version>"))?;
    if !pom[after..open - "<version>".len()].trim().is_empty() {
        return Err(format!("{POM}: the project <version> must follow <artifactId>acp-inject</artifactId>"));
    }
    Ok(format!("{}{version}{}", &pom[..open], &pom[close..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pom_carries_the_workspace_version() {
        let pom = std::fs::read_to_string(root().join(POM)).unwrap();
        assert_eq!(with_project_version(&pom, VERSION).unwrap(), pom, "run `cargo xtask codegen`");
    }

    #[test]
    fn only_the_project_version_changes() {
        let pom = "<project>\n<artifactId>acp-inject</artifactId>\n    <version>0.1.0</version>\n<dependency><version>5</version></dependency>";
        let out = with_project_version(pom, "2.3.4").unwrap();
        assert_eq!(out, pom.replace("0.1.0", "2.3.4"));
        assert!(with_project_version("<project><artifactId>acp-inject</artifactId><name>x</name><version>1</version>", "2").is_err());
    }
}
