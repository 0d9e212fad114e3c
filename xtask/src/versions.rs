//! One version for every artifact: the workspace's (`[workspace.package] version` in the root
//! Cargo.toml, which xtask inherits, so it is `CARGO_PKG_VERSION` here).
//!
//! - Rust crates inherit it (`version.workspace = true`); the versions beside the paths in
//!   `[workspace.dependencies]` must match it, which cargo itself enforces.
//! - The Python wheel: maturin reads the version of `crates/ffi` (`dynamic = ["version"]`).
//! - The Maven pom: Maven cannot read Cargo.toml. The hand-written `bindings/kotlin/pom.xml`
//!   says `<version>${revision}</version>` (Maven's CI-friendly versions) and `cargo xtask
//!   codegen` writes [`MAVEN_CONFIG`], which Maven (3.3.1 and later) reads on every run in that
//!   project: `-Drevision=VERSION`. `codegen --check` and `cargo test` fail when it differs.
//!   flatten-maven-plugin (`resolveCiFriendliesOnly`) installs and deploys the pom with the
//!   literal version and nothing else changed, so the pom in `dist/maven` is readable by every
//!   tool.
//! - The Swift package: SwiftPM versions packages by git tag; `cargo xtask dist` writes the
//!   version into the package's pkg-config file.
//! - The TypeScript package (`generated/typescript/package.json`) is rendered with it.

use std::path::PathBuf;

use crate::codegen::{ensure_file_contents, Mode, PREAMBLE};
use crate::{root, Error};

/// The workspace version.
pub use acp_inject_tool_support::VERSION;

/// The Maven arguments of the Kotlin project, generated: the version the pom reads.
pub const MAVEN_CONFIG: &str = "bindings/kotlin/.mvn/maven.config";

/// Writes (or, in check mode, checks) every version that is not read from Cargo directly.
pub fn sync(mode: Mode, stale: &mut Vec<PathBuf>) -> Result<(), Error> {
    ensure_file_contents(&root().join(MAVEN_CONFIG), &maven_config(VERSION), mode, stale)
}

/// The text of [`MAVEN_CONFIG`]. Maven 3.8 splits the file at whitespace into command-line
/// arguments and knows no comments, so the preamble is a property of its own (`acp.generated`,
/// read by nothing) with its spaces written as underscores.
fn maven_config(version: &str) -> String {
    format!("-Dacp.generated={}\n-Drevision={version}\n", maven_preamble())
}

/// [`PREAMBLE`] as [`MAVEN_CONFIG`] spells it.
pub fn maven_preamble() -> String {
    PREAMBLE.replace(' ', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    const POM: &str = "bindings/kotlin/pom.xml";

    /// The text of the project's `<version>` in a pom.
    fn project_version(pom: &str) -> Option<String> {
        let doc = roxmltree::Document::parse(pom).expect("the pom is XML");
        let version = doc.root_element().children().find(|n| n.has_tag_name(("http://maven.apache.org/POM/4.0.0", "version")));
        version.and_then(|n| n.text()).map(|t| t.trim().to_owned())
    }

    /// The pom's version is the generated one, and what it installs carries it literally.
    #[test]
    fn the_pom_reads_its_version_from_the_generated_maven_config() {
        let pom = std::fs::read_to_string(root().join(POM)).unwrap();
        assert_eq!(project_version(&pom).unwrap(), "${revision}", "{POM}: the project version is set in {MAVEN_CONFIG}");
        for needed in ["<artifactId>flatten-maven-plugin</artifactId>", "<flattenMode>resolveCiFriendliesOnly</flattenMode>"] {
            assert!(pom.contains(needed), "{POM} lacks {needed}: the installed pom would say ${{revision}}");
        }
        assert!(maven_config(VERSION).contains(&format!("\n-Drevision={VERSION}\n")));
        assert!(!maven_preamble().contains(char::is_whitespace));
    }

    #[test]
    fn the_project_version_is_the_projects_own() {
        let pom = "<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><parent><version>9</version></parent>\n\
                   <artifactId>acp-inject</artifactId>\n    <version> 1.2 </version>\n\
                   <dependencies><dependency><version>5</version></dependency></dependencies></project>";
        assert_eq!(project_version(pom).unwrap(), "1.2");
        assert!(project_version("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><artifactId>x</artifactId></project>").is_none());
    }
}
