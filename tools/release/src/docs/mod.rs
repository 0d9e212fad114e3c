//! `cargo xtask docs [--out DIR]`: the API docs of every language and the guide, into `DIR`
//! (default `<target>/doc-site/`), then every link of every page checked.
//!
//! | folder | tool | from |
//! |---|---|---|
//! | `rust/` | rustdoc (`cargo doc --no-deps`) | the crates meant for the Rust crate registry |
//! | `python/` | pdoc (from PyPI, in a venv of its own: `<cache>/docs-venv`) | the installed package's docstrings and stub |
//! | `kotlin/` | Dokka HTML (`dokka-maven-plugin` from Maven Central) | bindings/kotlin + the generated binding |
//! | `swift/` | DocC (`docc convert`, shipped with Swift 6.0.3, in the trixie chroot) | symbol graphs of `AcpInject` (the public module) |
//! | `guide/` | pulldown-cmark ([`guide`]), and `acp-inject-timeline` for its picture | `docs/guide/*.md`, a recorded session |
//!
//! Swift: the usual route, `swift package generate-documentation`, needs the swift-docc-plugin
//! package from GitHub; here `swift package dump-symbol-graph` (built into SwiftPM) and the
//! toolchain's own `docc` do the same without it. DocC's output is a static site that loads its
//! pages with JavaScript, so open it through a web server (`python3 -m http.server -d DIR`),
//! not as a file. Python: pdoc goes into `<cache>/docs-venv` with the package, never into the
//! venv the tests use. The guide's picture is drawn from a real run: `acp-inject-timeline`
//! (`tools/timeline`) drives the reference agent through the Rust client, and writes the
//! recording and its drawing (`timeline.json` and `timeline.svg` in `DIR/guide`); it is a binary of
//! its own, so this crate (and xtask) does not link the product crates.
//!
//! Each part is attempted even when another failed; then [`links::check`] reads every page and
//! reports each broken link with its page. The run fails when a part failed or a link is
//! broken. The doctests of the Rust examples run in `cargo test` (`cargo xtask test`), not here.

pub mod guide;
pub mod links;

use std::path::{Path, PathBuf};
use std::process::Command;

use acp_inject_tool_support::{cache_dir, cargo, cargo_bin, copy_tree, root, target_dir, Error};

use crate::dist::step;

/// A language's docs: its folder name and the builder (which returns the entry page).
type Part = (&'static str, fn(&Path) -> Result<String, Error>);

/// Builds everything into `out` (default `<target>/doc-site`; a relative path is from the
/// current directory) and checks its links; returns a one-line summary.
pub fn run(out: Option<&Path>) -> Result<String, Error> {
    let site = match out {
        Some(dir) => std::path::absolute(dir).map_err(|e| Error::msg(format!("{}: {e}", dir.display())))?,
        None => target_dir()?.join("doc-site"),
    };
    std::fs::create_dir_all(&site).map_err(|e| Error::msg(format!("cannot create {}: {e}", site.display())))?;
    let parts: [Part; 5] = [("rust", rust), ("python", python), ("kotlin", kotlin), ("swift", swift), ("guide", guide)];
    let mut index = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<meta charset=\"utf-8\">\n<title>acp-inject docs</title>\n<h1>acp-inject docs</h1>\n<ul>\n",
    );
    let mut failed = Vec::new();
    let mut times = Vec::new();
    for (name, build) in parts {
        let dir = site.join(name);
        let started = std::time::Instant::now();
        let result = reset(&dir).and_then(|()| build(&dir));
        let secs = started.elapsed().as_secs_f64();
        times.push(format!("{name} {secs:.0} s"));
        match result {
            Ok(entry) => {
                println!("docs: {name}: {} ({secs:.0} s)", dir.join(&entry).display());
                let label = if name == "guide" { "guide".to_owned() } else { format!("{name} API") };
                index += &format!("<li><a href=\"{name}/{entry}\">{label}</a></li>\n");
            }
            Err(e) => {
                println!("docs: {name}: FAILED after {secs:.0} s: {e}");
                failed.push(name);
            }
        }
    }
    index += "</ul>\n";
    let page = site.join("index.html");
    std::fs::write(&page, index).map_err(|e| Error::write(&page, e))?;
    println!("docs: {}", site.join("index.html").display());

    let started = std::time::Instant::now();
    let report = links::check(&site)?;
    for broken in &report.broken {
        println!("broken link: {broken}");
    }
    println!("links: {report} ({:.0} s)", started.elapsed().as_secs_f64());
    let summary = format!(
        "{} pages, {} links checked, {} external, {} broken; {}",
        report.pages,
        report.links + report.docc_references,
        report.external,
        report.broken.len(),
        times.join(", ")
    );
    match (failed.is_empty(), report.broken.is_empty()) {
        (true, true) => Ok(summary),
        (false, _) => Err(Error::msg(format!("docs failed for {failed:?}; {summary}"))),
        (true, false) => Err(Error::msg(format!("{} broken link(s); {summary}", report.broken.len()))),
    }
}

/// The guide: the timeline picture recorded from a real session, then the pages.
fn guide(out: &Path) -> Result<String, Error> {
    let agent = cargo_bin("acp-inject-reference-agent", "acp-inject-agent")?;
    let recorder = cargo_bin("acp-inject-timeline", "acp-inject-timeline")?;
    step(Command::new(&recorder).arg("--agent").arg(&agent).arg("--out").arg(out), "acp-inject-timeline")?;
    guide::render(&root().join("docs/guide"), out)?;
    Ok("index.html".into())
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
    fix_rustdoc(out, &crates)?;
    let first = crates
        .iter()
        .find(|c| c.as_str() == "acp-inject-core")
        .or(crates.first())
        .ok_or_else(|| Error::msg("no crate to document"))?;
    Ok(format!("{}/index.html", first.replace('-', "_")))
}

/// Two things rustdoc leaves broken in its output, mended:
///
/// - its help and settings pages link to `index.html` at the root, which it writes only with
///   the unstable `--enable-index-page`: a list of the documented crates is written there;
/// - `--no-deps` renders the docs of blanket impls from dependencies on every type's page,
///   with their relative links, which resolve only in that dependency's own docs: tracing's
///   `WithSubscriber` (implemented for every type of the crates that depend on tracing) links
///   `dispatcher#…` and `super::Subscriber`. They are pointed at tracing's docs on docs.rs.
fn fix_rustdoc(out: &Path, crates: &[String]) -> Result<(), Error> {
    let mut index = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<meta charset=\"utf-8\">\n<title>acp-inject crates</title>\n<h1>acp-inject crates</h1>\n<ul>\n",
    );
    for name in crates {
        let dir = name.replace('-', "_");
        if out.join(&dir).join("index.html").is_file() {
            index += &format!("<li><a href=\"{dir}/index.html\">{name}</a></li>\n");
        }
    }
    index += "</ul>\n";
    let page = out.join("index.html");
    std::fs::write(&page, index).map_err(|e| Error::write(&page, e))?;
    const TRACING: [(&str, &str); 2] = [
        (
            "href=\"dispatcher#setting-the-default-subscriber\"",
            "href=\"https://docs.rs/tracing/0.1/tracing/dispatcher/index.html#setting-the-default-subscriber\"",
        ),
        ("href=\"super::Subscriber\"", "href=\"https://docs.rs/tracing/0.1/tracing/trait.Subscriber.html\""),
    ];
    let mut pages = Vec::new();
    html_pages(out, &mut pages)?;
    for page in pages {
        let text = std::fs::read_to_string(&page).map_err(|e| Error::read(&page, e))?;
        if TRACING.iter().any(|(from, _)| text.contains(from)) {
            let fixed = TRACING.iter().fold(text, |t, (from, to)| t.replace(from, to));
            std::fs::write(&page, fixed).map_err(|e| Error::write(&page, e))?;
        }
    }
    Ok(())
}

fn html_pages(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::read(dir, e))? {
        let path = entry.map_err(|e| Error::read(dir, e))?.path();
        if path.is_dir() {
            html_pages(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    Ok(())
}

/// pdoc over the package as installed in the docs' own venv (`<cache>/docs-venv`: pdoc is
/// installed there, never into the venv the tests use).
fn python(out: &Path) -> Result<String, Error> {
    let py = acp_inject_tool_support::python::python_with_package_in(&cache_dir().join("docs-venv"))?;
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

/// DocC of the `AcpInject` module (the public one; the UniFFI binding underneath is internal):
/// symbol graphs from SwiftPM, then `docc convert`.
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
            if name.starts_with("AcpInject.") || name.starts_with("AcpInject@") {
                std::fs::copy(file.path(), graphs.join(&name)).map_err(|e| Error::write(&graphs.join(&name), e))?;
                found += 1;
            }
        }
    }
    if found == 0 {
        return Err(Error::msg("no symbol graph for AcpInject"));
    }
    let archive: PathBuf = build.join("acp-inject-docs/site");
    reset(&archive)?;
    step(
        Command::new(&swiftw)
            .args(["--tool", "docc", "convert", "--additional-symbol-graph-dir"])
            .arg(&graphs)
            .args(["--fallback-display-name", "AcpInject", "--fallback-bundle-identifier", "dev.acpinject.AcpInject"])
            .args(["--transform-for-static-hosting", "--hosting-base-path", "swift", "--output-path"])
            .arg(&archive)
            .env("ACP_INJECT_CACHE", &cache),
        "docc convert",
    )?;
    copy_tree(&archive, out)?;
    Ok("documentation/acpinject/index.html".into())
}
