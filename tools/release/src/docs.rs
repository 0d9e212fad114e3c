//! `cargo xtask docs`: the API docs of every language, into `<target>/doc-site/`.
//!
//! | folder | tool | from |
//! |---|---|---|
//! | `rust/` | rustdoc (`cargo doc --no-deps`) | the crates meant for the Rust crate registry |
//! | `python/` | pdoc (from PyPI, in the cache venv) | the installed package's docstrings and stub |
//! | `kotlin/` | Dokka HTML (`dokka-maven-plugin` from Maven Central) | bindings/kotlin + the generated binding |
//! | `swift/` | DocC (`docc convert`, shipped with Swift 6.0.3, in the trixie chroot) | symbol graphs of `AcpInjectFFI` |
//!
//! Swift: the usual route, `swift package generate-documentation`, needs the swift-docc-plugin
//! package from GitHub; here `swift package dump-symbol-graph` (built into SwiftPM) and the
//! toolchain's own `docc` do the same without it. DocC's output is a static site that loads its
//! pages with JavaScript, so open it through a web server (`python3 -m http.server -d
//! <target>/doc-site`), not as a file. The doctests of the Rust examples run in `cargo test`
//! (`cargo xtask test`), not here. Each language is attempted even when another failed.

use std::path::{Path, PathBuf};
use std::process::Command;

use acp_inject_tool_support::{cache_dir, cargo, copy_tree, root, target_dir, Error};

use crate::dist::step;

/// A language's docs: its folder name and the builder (which returns the entry page).
type Part = (&'static str, fn(&Path) -> Result<String, Error>);

pub fn run() -> Result<(), Error> {
    let site = target_dir()?.join("doc-site");
    std::fs::create_dir_all(&site).map_err(|e| Error::msg(format!("cannot create {}: {e}", site.display())))?;
    let parts: [Part; 4] = [("rust", rust), ("python", python), ("kotlin", kotlin), ("swift", swift)];
    let mut index =
        String::from("<!doctype html>\n<meta charset=\"utf-8\">\n<title>acp-inject API</title>\n<h1>acp-inject API</h1>\n<ul>\n");
    let mut failed = Vec::new();
    for (name, build) in parts {
        let out = site.join(name);
        let result = reset(&out).and_then(|()| build(&out));
        match result {
            Ok(entry) => {
                println!("docs: {name}: {}", out.join(&entry).display());
                index += &format!("<li><a href=\"{name}/{entry}\">{name}</a></li>\n");
            }
            Err(e) => {
                println!("docs: {name}: FAILED: {e}");
                failed.push(name);
            }
        }
    }
    index += "</ul>\n";
    let page = site.join("index.html");
    std::fs::write(&page, index).map_err(|e| Error::write(&page, e))?;
    println!("docs: {}", site.join("index.html").display());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::msg(format!("docs failed for {failed:?}")))
    }
}

fn reset(dir: &Path) -> Result<(), Error> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::msg(format!("cannot clear {}: {e}", dir.display())))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::msg(format!("cannot create {}: {e}", dir.display())))
}

/// rustdoc of the published crates (their dependencies are on docs.rs).
fn rust(out: &Path) -> Result<String, Error> {
    let crates = crate::dist::publishable_crates()?;
    let mut cmd = Command::new(cargo());
    cmd.args(["doc", "--no-deps", "--quiet"]);
    for name in &crates {
        cmd.args(["-p", name]);
    }
    step(&mut cmd, "cargo doc")?;
    copy_tree(&target_dir()?.join("doc"), out)?;
    let first = crates
        .iter()
        .find(|c| c.as_str() == "acp-inject-core")
        .or(crates.first())
        .ok_or_else(|| Error::msg("no crate to document"))?;
    Ok(format!("{}/index.html", first.replace('-', "_")))
}

/// pdoc over the package as installed in the cache venv (the one `cargo xtask test` uses).
fn python(out: &Path) -> Result<String, Error> {
    let py = acp_inject_tool_support::python::python_with_package("")?;
    step(
        Command::new(&py).args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "pdoc>=15,<17"]),
        "pip install pdoc",
    )?;
    // From a directory outside the repository, so the installed package is documented.
    step(Command::new(&py).args(["-m", "pdoc", "acp_inject", "-o"]).arg(out).current_dir(std::env::temp_dir()), "pdoc")?;
    Ok("acp_inject.html".into())
}

/// Dokka HTML of bindings/kotlin (the generated binding is a source root from
/// `generate-sources` on, so the phase runs first).
fn kotlin(out: &Path) -> Result<String, Error> {
    let project = root().join("bindings/kotlin");
    step(
        Command::new("mvn").args(["-B", "-ntp", "-q", "-Pdist", "generate-sources", "dokka:dokka"]).current_dir(&project),
        "mvn dokka:dokka",
    )?;
    copy_tree(&project.join("target/dokka"), out)?;
    Ok("index.html".into())
}

/// DocC of the `AcpInjectFFI` module: symbol graphs from SwiftPM, then `docc convert`.
fn swift(out: &Path) -> Result<String, Error> {
    let swiftw = root().join("bindings/swift/swiftw");
    let cache = cache_dir();
    step(
        Command::new(&swiftw).args(["package", "dump-symbol-graph"]).env("ACP_INJECT_CACHE", &cache),
        "swift package dump-symbol-graph",
    )?;
    // Only this module's graphs (the package also has the benchmark's and the tests' modules);
    // inside the package, so the chroot sees them.
    let build = root().join("bindings/swift/.build");
    let graphs = build.join("acp-inject-docs/symbolgraph");
    reset(&graphs)?;
    let mut found = 0;
    for dir in std::fs::read_dir(&build).map_err(|e| Error::read(&build, e))?.flatten() {
        let Ok(files) = std::fs::read_dir(dir.path().join("symbolgraph")) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.starts_with("AcpInjectFFI.") || name.starts_with("AcpInjectFFI@") {
                std::fs::copy(file.path(), graphs.join(&name)).map_err(|e| Error::write(&graphs.join(&name), e))?;
                found += 1;
            }
        }
    }
    if found == 0 {
        return Err(Error::msg("no symbol graph for AcpInjectFFI"));
    }
    let archive: PathBuf = build.join("acp-inject-docs/site");
    reset(&archive)?;
    step(
        Command::new(&swiftw)
            .args(["--tool", "docc", "convert", "--additional-symbol-graph-dir"])
            .arg(&graphs)
            .args(["--fallback-display-name", "AcpInjectFFI", "--fallback-bundle-identifier", "dev.acpinject.AcpInjectFFI"])
            .args(["--transform-for-static-hosting", "--hosting-base-path", "swift", "--output-path"])
            .arg(&archive)
            .env("ACP_INJECT_CACHE", &cache),
        "docc convert",
    )?;
    copy_tree(&archive, out)?;
    Ok("documentation/acpinjectffi/index.html".into())
}
