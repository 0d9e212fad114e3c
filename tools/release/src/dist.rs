//! `cargo xtask dist [--manylinux2014] [--publish-dry-run] [--consumers]`: the installable
//! artifacts, in `dist/`; `--consumers` then runs the consumer stages of `cargo xtask test` on
//! them (`crate::consumers`).
//!
//! | path | what | built by |
//! |---|---|---|
//! | `dist/python/acp_inject-V-py3-none-manylinux_*.whl` | the wheel | maturin (release, no debug info) |
//! | `dist/maven/dev/acpinject/acp-inject/V/` | jar (+ native library), -sources, -javadoc (Dokka), pom | `mvn -Pdist deploy` |
//! | `dist/swift/AcpInject/` | a SwiftPM package with the static library and its pkg-config file | this module |
//! | `dist/crates/*.crate` | the crates meant for the Rust crate registry | `cargo package` |
//!
//! The wheel is `py3-none-<platform>`: UniFFI's Python binding loads the library with ctypes,
//! so it needs no CPython ABI at all (wider than abi3). Its platform tag is the one maturin's
//! own manylinux audit finds for the library's glibc symbols (`manylinux_2_34` on a glibc 2.36
//! host: Rust's std binds the pthread symbols glibc 2.34 moved into libc); with
//! `--manylinux2014` maturin links through zig (`ziglang` from PyPI) against glibc 2.17 instead.
//!
//! The JVM jar and the Swift package take one release build of `crates/ffi` (`cargo rustc
//! --release`, which also prints the native libraries the static library needs); the wheel is
//! maturin's own build of the same crate, with the same features, so only the crate itself is
//! compiled again.
//!
//! None of them carries the conformance harness (the vector engine `VectorRun` and the crates
//! behind it): that is the test-only component `crates/ffi-conformance`, which the language test
//! suites load instead. Each artifact is checked for it once built ([`check_no_harness`]): no
//! symbol of the engine or of `acp-inject-conformance` in a library (`nm`), no module, class
//! or source of it in the wheel, the jar or the Swift package. Tools (maturin, auditwheel, ziglang) live in a venv
//! in the cache dir, never in the repository. `dist/` is rebuilt per artifact, each
//! independently, so one failure does not hide the others.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use acp_inject_tool_support::{cache_dir, cargo, copy, python, root, target_dir, Error, VERSION};

#[derive(Clone, Copy, Default)]
pub struct Options {
    /// The wheel links through zig for the manylinux2014 (glibc 2.17) tag.
    pub manylinux2014: bool,
    /// Also package the Rust crates into `dist/crates` (not needed by the consumer tests).
    pub crates: bool,
}

/// The artifacts, each built or the reason it is not.
pub struct Built {
    pub wheel: Result<PathBuf, Error>,
    pub maven_repo: Result<PathBuf, Error>,
    pub swift_package: Result<PathBuf, Error>,
    pub crates: Option<Result<Vec<PathBuf>, Error>>,
}

/// `cargo xtask dist`'s arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Link the wheel through zig for the manylinux2014 (glibc 2.17) tag
    #[arg(long)]
    manylinux2014: bool,
    /// Then build every crate from its package, as `cargo publish` would
    #[arg(long)]
    publish_dry_run: bool,
    /// Then install and use each artifact as a user of its language would
    #[arg(long)]
    consumers: bool,
}

pub fn run(args: Args) -> Result<(), Error> {
    let options = Options { crates: true, manylinux2014: args.manylinux2014 };
    let (publish_dry_run, consumers) = (args.publish_dry_run, args.consumers);
    let built = BUILT.get_or_init(|| build(options));
    let mut failed = 0;
    let mut show = |what: &str, result: Result<String, &Error>| match result {
        Ok(shown) => println!("{what:<16} {shown}"),
        Err(e) => {
            failed += 1;
            println!("{what:<16} FAILED: {e}");
        }
    };
    println!("\n== dist ({VERSION}) ==");
    show("python", built.wheel.as_ref().map(|p| shown(p)));
    show("maven", built.maven_repo.as_ref().map(|p| format!("{} (dev.acpinject:acp-inject:{VERSION})", shown(p))));
    show("swift", built.swift_package.as_ref().map(|p| shown(p)));
    if let Some(crates) = &built.crates {
        show("crates", crates.as_ref().map(|c| c.iter().map(|p| shown(p)).collect::<Vec<_>>().join(" ")));
    }
    if publish_dry_run {
        // Packages every publishable crate and builds each from its package, resolving the
        // unpublished siblings from the packages themselves (cargo >= 1.90).
        let published =
            step(Command::new(cargo()).args(["publish", "--workspace", "--dry-run", "--allow-dirty"]), "cargo publish --dry-run");
        show("publish", published.as_ref().map(|()| "cargo publish --workspace --dry-run passed".into()));
    }
    if consumers {
        // The consumer stages of `cargo xtask test`, on the artifacts just built.
        let results = [crate::consumers::python(), crate::consumers::kotlin(), crate::consumers::swift()];
        println!("\n== consumers ==");
        for (what, result) in ["python (wheel)", "kotlin (jar)", "swift (package)"].iter().zip(&results) {
            show(what, result.as_ref().map(|used| used.to_owned()));
        }
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(Error::msg(format!("{failed} step(s) failed")))
    }
}

/// The artifacts of this run (the consumer stages share them).
static BUILT: OnceLock<Built> = OnceLock::new();

/// What `cargo xtask test`'s consumer stages use: built once per run, whichever asks first.
pub fn for_consumers() -> &'static Built {
    BUILT.get_or_init(|| build(Options::default()))
}

/// An artifact of [`for_consumers`], or why it was not built.
pub fn built(artifact: &Result<PathBuf, Error>) -> Result<PathBuf, Error> {
    artifact.as_ref().cloned().map_err(Error::again)
}

pub fn build(options: Options) -> Built {
    let dist = dist_dir();
    let native = native_library();
    let native = |f: fn(&Path, &Native) -> Result<PathBuf, Error>| match &native {
        Ok(n) => f(&dist, n),
        Err(e) => Err(e.again()),
    };
    Built {
        wheel: python_wheel(&dist, options),
        maven_repo: native(maven_repo),
        swift_package: native(swift_package),
        crates: options.crates.then(|| crates(&dist)),
    }
}

pub fn dist_dir() -> PathBuf {
    root().join("dist")
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// Runs a command (in the repository unless told otherwise), echoing it; fails with `what`.
pub fn step(cmd: &mut Command, what: &str) -> Result<(), Error> {
    if cmd.get_current_dir().is_none() {
        cmd.current_dir(root());
    }
    eprintln!("+ {cmd:?}");
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(Error::msg(format!("{what} failed ({s})"))),
        Err(e) => Err(Error::msg(format!("cannot run {what}: {e}"))),
    }
}

/// An empty directory at `path` (its old contents removed).
fn fresh_dir(path: &Path) -> Result<(), Error> {
    if path.exists() {
        std::fs::remove_dir_all(path).map_err(|e| Error::msg(format!("cannot clear {}: {e}", path.display())))?;
    }
    std::fs::create_dir_all(path).map_err(|e| Error::msg(format!("cannot create {}: {e}", path.display())))
}

/// The venv in the cache dir that holds the packaging tools (maturin, auditwheel, …),
/// created on first use; `requirements` are pip-installed (a no-op once satisfied).
pub fn tools_python(requirements: &[&str]) -> Result<PathBuf, Error> {
    let py = python::cached_venv(&cache_dir().join("tools-venv"))?;
    if !requirements.is_empty() {
        step(
            Command::new(&py).args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).args(requirements),
            "pip install (packaging tools)",
        )?;
    }
    Ok(py)
}

const MATURIN: &str = "maturin>=1.16,<2";

/// The wheel, built by maturin from bindings/python (pyproject.toml: `bindings = "uniffi"`).
fn python_wheel(dist: &Path, options: Options) -> Result<PathBuf, Error> {
    let mut tools = vec![MATURIN, "auditwheel>=6,<7"];
    if options.manylinux2014 {
        tools.push("ziglang<1");
    }
    let py = tools_python(&tools)?;
    let out = dist.join("python");
    fresh_dir(&out)?;
    let bin = py.parent().expect("venv/bin").to_path_buf();
    let mut maturin = Command::new(bin.join("maturin"));
    maturin.args(["build", "--release", "--out"]).arg(&out).current_dir(root().join("bindings/python"));
    if options.manylinux2014 {
        maturin.args(["--zig", "--compatibility", "manylinux2014"]);
    }
    // Without debug information, for the library crate only (so no dependency is rebuilt). Not
    // maturin's --strip: it drops the symbols uniffi-bindgen reads the interface from.
    maturin.args(["--", "-C", "strip=debuginfo"]);
    // maturin runs `python -m ziglang` for --zig: the venv's interpreter must come first.
    maturin.env("PATH", prepend_path(&bin));
    // A module the test package's build left in maturin's bindings folder would go in too.
    python::remove_stale_bindings()?;
    step(&mut maturin, "maturin build")?;
    let wheel = only_file(&out, ".whl")?;
    let name = wheel.file_name().unwrap_or_default().to_string_lossy().into_owned();
    // No manylinux tag means maturin's audit could not vouch for the library's glibc symbols.
    if !(name.contains("-py3-none-") && name.contains("manylinux")) {
        return Err(Error::msg(format!("unexpected wheel tag: {name}")));
    }
    let entries = zip_entries(&py, &wheel)?;
    let library = "acp_inject/acp_inject_ffi/libacp_inject_ffi.so";
    for needed in [
        "acp_inject/__init__.py",
        "acp_inject/py.typed",
        "acp_inject/values.py",
        "acp_inject/_core.py",
        "acp_inject/acp_inject_ffi/acp_inject_ffi.py",
        library,
    ] {
        if !entries.iter().any(|e| e == needed) {
            return Err(Error::msg(format!("{name} lacks {needed}")));
        }
    }
    // The conformance harness stays out: no module or stub of it, no symbol of it.
    if let Some(e) = entries.iter().find(|e| e.to_lowercase().contains("conformance")) {
        return Err(Error::msg(format!("{name} carries the conformance harness: {e}")));
    }
    let extracted = target_dir()?.join("dist-wheel-library.so");
    zip_extract(&py, &wheel, library, &extracted)?;
    check_no_harness(&extracted).map_err(|e| Error::msg(format!("{name}: {e}")))?;
    // A second opinion on the platform tag (informational: maturin already enforced it).
    let _ = step(Command::new(bin.join("auditwheel")).arg("show").arg(&wheel), "auditwheel show");
    Ok(wheel)
}

fn prepend_path(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(paths).expect("PATH entries")
}

/// The one file in `dir` whose name ends with `suffix`.
fn only_file(dir: &Path, suffix: &str) -> Result<PathBuf, Error> {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::msg(format!("cannot read {}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(Error::msg(format!("expected one *{suffix} in {}, found {found:?}", dir.display()))),
    }
}

/// Writes the entry `name` of a zip archive to `to`, with Python's zipfile module.
fn zip_extract(python: &Path, archive: &Path, name: &str, to: &Path) -> Result<(), Error> {
    let out = Command::new(python)
        .args(["-c", "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))"])
        .arg(archive)
        .arg(name)
        .arg(to)
        .output()
        .map_err(|e| Error::msg(format!("cannot read {name} of {}: {e}", archive.display())))?;
    if !out.status.success() {
        return Err(Error::msg(format!("cannot read {name} of {}: {}", archive.display(), String::from_utf8_lossy(&out.stderr))));
    }
    Ok(())
}

/// What names the conformance harness in a library's symbols: the exports of its UniFFI
/// component (`uniffi_acp_inject_ffi_conformance_…`, `…_vectorrun_…`) and the code of the crates
/// behind it (Rust symbols carry their crate's name).
const HARNESS_SYMBOLS: [&str; 4] = ["acp_inject_ffi_conformance", "vectorrun", "acp_inject_conformance", "jsonschema"];

/// The symbols of `nm` output that belong to the conformance harness ([`HARNESS_SYMBOLS`]), or
/// `None` when the output holds no export of acp-inject-ffi at all (then it proves nothing).
fn harness_symbols(nm: &str) -> Option<Vec<&str>> {
    if !nm.contains("uniffi_acp_inject_ffi_fn_") {
        return None;
    }
    Some(
        nm.lines()
            .filter(|l| {
                let l = l.to_lowercase();
                HARNESS_SYMBOLS.iter().any(|m| l.contains(m))
            })
            .collect(),
    )
}

/// A shipped library (cdylib or static library) holds nothing of the conformance harness: read
/// from its symbol table with `nm` (the release builds keep it; only debug information goes).
pub fn check_no_harness(library: &Path) -> Result<(), Error> {
    let out =
        Command::new("nm").arg(library).output().map_err(|e| Error::msg(format!("cannot run nm on {}: {e}", library.display())))?;
    if !out.status.success() {
        return Err(Error::msg(format!("nm {} failed: {}", library.display(), String::from_utf8_lossy(&out.stderr))));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let found = harness_symbols(&text).ok_or_else(|| {
        Error::msg(format!("{}: nm lists no export of acp-inject-ffi (uniffi_acp_inject_ffi_fn_…)", library.display()))
    })?;
    match found.as_slice() {
        [] => Ok(()),
        [first, ..] => Err(Error::msg(format!(
            "{} carries the conformance harness: {} of its symbols name it, such as {}",
            library.display(),
            found.len(),
            first.trim()
        ))),
    }
}

/// The names in a zip archive (wheel or jar), read with Python's zipfile module.
fn zip_entries(python: &Path, archive: &Path) -> Result<Vec<String>, Error> {
    let out = Command::new(python)
        .args(["-c", "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))"])
        .arg(archive)
        .output()
        .map_err(|e| Error::msg(format!("cannot list {}: {e}", archive.display())))?;
    if !out.status.success() {
        return Err(Error::msg(format!("cannot list {}: {}", archive.display(), String::from_utf8_lossy(&out.stderr))));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect())
}

/// The release build of `crates/ffi` for the jar and the Swift package, staged without debug
/// information in `<target>/dist-native`.
pub struct Native {
    cdylib: PathBuf,
    staticlib: PathBuf,
    /// What the static library needs linked after it (rustc's `native-static-libs`).
    static_deps: String,
}

fn native_library() -> Result<Native, Error> {
    // `cargo rustc` (not `cargo build`) so rustc can print the static library's native
    // dependencies; cargo replays the note when the build is fresh.
    let mut cmd = Command::new(cargo());
    cmd.args(["rustc", "--release", "-p", "acp-inject-ffi", "--lib", "--", "--print", "native-static-libs"]).current_dir(root());
    eprintln!("+ {cmd:?}");
    let out = cmd.output().map_err(|e| Error::msg(format!("cannot run cargo: {e}")))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprint!("{stderr}");
    if !out.status.success() {
        return Err(Error::msg("cargo rustc --release -p acp-inject-ffi failed"));
    }
    let static_deps = stderr
        .lines()
        .find_map(|l| l.split_once("native-static-libs:").map(|(_, libs)| libs.trim().to_owned()))
        .ok_or_else(|| Error::msg("rustc printed no native-static-libs"))?;
    // Staged (stripped) at once: maturin's build of the same crate writes the same file names.
    let (release, staged) = (target_dir()?.join("release"), target_dir()?.join("dist-native"));
    fresh_dir(&staged)?;
    let cdylib = format!("{}acp_inject_ffi{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let native = Native { cdylib: staged.join(&cdylib), staticlib: staged.join("libacp_inject_ffi.a"), static_deps };
    copy_stripped(&release.join(&cdylib), &native.cdylib)?;
    copy_stripped(&release.join("libacp_inject_ffi.a"), &native.staticlib)?;
    // What the jar and the Swift package carry: nothing of the conformance harness.
    check_no_harness(&native.cdylib)?;
    check_no_harness(&native.staticlib)?;
    Ok(native)
}

/// Copies a library without its debug information (binutils `strip`, present wherever Rust
/// links with the system `cc`); a plain copy where there is no `strip`.
fn copy_stripped(from: &Path, to: &Path) -> Result<(), Error> {
    copy(from, to)?;
    match Command::new("strip").arg("--strip-debug").arg(to).status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(Error::msg(format!("strip {} failed ({s})", to.display()))),
        Err(_) => {
            eprintln!("note: no `strip`; {} keeps its debug information", to.display());
            Ok(())
        }
    }
}

/// JNA's resource prefix for this platform (`Platform.RESOURCE_PREFIX`): the folder of the jar
/// in which `Native.load` finds the library.
fn jna_platform() -> Result<String, Error> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        "windows" => "win32",
        other => return Err(Error::msg(format!("no JNA resource prefix known for {other}"))),
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86-64",
        "aarch64" => "aarch64",
        other => return Err(Error::msg(format!("no JNA resource prefix known for {other}"))),
    };
    Ok(format!("{os}-{arch}"))
}

/// The jar (with the library under its JNA prefix), -sources and -javadoc jars and the pom,
/// deployed into `dist/maven` (a Maven repository on disk).
fn maven_repo(dist: &Path, native: &Native) -> Result<PathBuf, Error> {
    let repo = dist.join("maven");
    fresh_dir(&repo)?;
    // The jar's resources: one folder per platform, only this one built here.
    let resources = target_dir()?.join("dist-jna");
    fresh_dir(&resources)?;
    let platform = jna_platform()?;
    let lib_name = native.cdylib.file_name().expect("a file").to_string_lossy().into_owned();
    copy(&native.cdylib, &resources.join(&platform).join(&lib_name))?;
    step(
        Command::new("mvn")
            .args(["-B", "-ntp", "-q", "-Pdist", "deploy"])
            .arg(format!("-Dacp.native.dir={}", resources.display()))
            .arg(format!("-DaltDeploymentRepository=dist::{}", file_url(&repo)))
            .current_dir(root().join("bindings/kotlin")),
        "mvn -Pdist deploy",
    )?;
    let dir = repo.join(format!("dev/acpinject/acp-inject/{VERSION}"));
    let jar = dir.join(format!("acp-inject-{VERSION}.jar"));
    for suffix in ["-sources.jar", "-javadoc.jar", ".pom"] {
        let file = dir.join(format!("acp-inject-{VERSION}{suffix}"));
        if !file.exists() {
            return Err(Error::msg(format!("the deploy produced no {}", file.display())));
        }
    }
    let entries = zip_entries(&tools_python(&[])?, &jar)?;
    let wanted = format!("{platform}/{lib_name}");
    if !entries.contains(&wanted) {
        return Err(Error::msg(format!("{} lacks {wanted}", jar.display())));
    }
    // The vector driver and the engine's binding are test sources: no class of them (a folder
    // entry alone is what a build without `clean` may leave of a package that moved away).
    let harness = |e: &&String| !e.ends_with('/') && (e.to_lowercase().contains("conformance") || e.contains("VectorRun"));
    if let Some(e) = entries.iter().find(harness) {
        return Err(Error::msg(format!("{} carries the conformance harness: {e}", jar.display())));
    }
    Ok(repo)
}

pub fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// The SwiftPM package another package depends on (see bindings/swift/dist/Package.swift for
/// why it is a system-library target with a pkg-config file and a static library).
fn swift_package(dist: &Path, native: &Native) -> Result<PathBuf, Error> {
    let out = dist.join("swift");
    fresh_dir(&out)?;
    let package = out.join("AcpInject");
    let (r, g) = (root(), root().join("generated/swift"));
    let mut files: Vec<(PathBuf, String)> = vec![
        (r.join("bindings/swift/dist/Package.swift"), "Package.swift".into()),
        (r.join("bindings/swift/dist/README.md"), "README.md".into()),
        (g.join("AcpInjectFFI.swift"), "Sources/AcpInjectFFI/AcpInjectFFI.swift".into()),
        (g.join("AcpInjectFFIFFI.h"), "Sources/AcpInjectFFIFFI/AcpInjectFFIFFI.h".into()),
        (g.join("module.modulemap"), "Sources/AcpInjectFFIFFI/module.modulemap".into()),
        // The per-line C functions' header and module map (hand-written: UniFFI generates none).
        (r.join("bindings/swift/Sources/AcpInjectLines/acp_inject_lines.h"), "Sources/AcpInjectLines/acp_inject_lines.h".into()),
        (r.join("bindings/swift/Sources/AcpInjectLines/module.modulemap"), "Sources/AcpInjectLines/module.modulemap".into()),
    ];
    // The public module (AcpInject): every Swift file of its target, the value types
    // (Values.swift, a symlink to generated/swift/Values.swift there) copied as real files.
    let layer = r.join("bindings/swift/Sources/AcpInject");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&layer)
        .map_err(|e| Error::msg(format!("cannot list {}: {e}", layer.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "swift"))
        .collect();
    sources.sort();
    if sources.is_empty() {
        return Err(Error::msg(format!("no Swift sources in {}", layer.display())));
    }
    for source in sources {
        let name = source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        files.push((source, format!("Sources/AcpInject/{name}")));
    }
    for (from, to) in &files {
        copy(from, &package.join(to))?; // real files: a package's sources must live inside it
    }
    // The vector driver and the engine's binding belong to the development package's tests.
    for (_, to) in &files {
        let text = std::fs::read_to_string(package.join(to)).unwrap_or_default();
        if to.to_lowercase().contains("conformance") || text.contains("VectorRun") {
            return Err(Error::msg(format!("the Swift package's {to} carries the conformance harness")));
        }
    }
    // lib/<os>-<arch>/, the names Package.swift picks from (`linux-x86_64`, `linux-aarch64`).
    let lib = package.join("lib").join(format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH));
    copy(&native.staticlib, &lib.join("libacp_inject_ffi.a"))?;
    let pc = format!(
        "# Written by `cargo xtask dist`. The Rust library of acp-inject, static; paths are\n\
         # relative to this file, so the package can live anywhere.\n\
         libdir=${{pcfiledir}}/..\n\n\
         Name: acp-inject-ffi\n\
         Description: ACP v2 session/inject semantics from one shared Rust core (UniFFI library)\n\
         Version: {VERSION}\n\
         Libs: -L${{libdir}} -lacp_inject_ffi {}\n",
        native.static_deps
    );
    let pc_path = lib.join("pkgconfig/acp-inject-ffi.pc");
    let pc_dir = pc_path.parent().expect("a dir");
    std::fs::create_dir_all(pc_dir).map_err(|e| Error::write(pc_dir, e))?;
    std::fs::write(&pc_path, pc).map_err(|e| Error::msg(format!("cannot write {}: {e}", pc_path.display())))?;
    Ok(package)
}

/// `cargo package` for every crate meant for the Rust crate registry (those without `publish = false`).
fn crates(dist: &Path) -> Result<Vec<PathBuf>, Error> {
    let names = publishable_crates()?;
    let out = dist.join("crates");
    fresh_dir(&out)?;
    let mut cmd = Command::new(cargo());
    // --no-verify: building each package is `--publish-dry-run`'s job (minutes, not seconds).
    cmd.args(["package", "--no-verify", "--allow-dirty", "--quiet"]);
    for name in &names {
        cmd.args(["-p", name]);
    }
    step(&mut cmd, "cargo package")?;
    let package_dir = target_dir()?.join("package");
    names
        .iter()
        .map(|name| {
            let file = format!("{name}-{VERSION}.crate");
            copy(&package_dir.join(&file), &out.join(&file)).map(|()| out.join(&file))
        })
        .collect()
}

/// The workspace members cargo would publish (`publish` unset), from `cargo metadata`.
pub fn publishable_crates() -> Result<Vec<String>, Error> {
    let out = Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root())
        .output()
        .map_err(|e| Error::msg(format!("cannot run cargo metadata: {e}")))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| Error::msg(format!("cargo metadata: {e}")))?;
    let packages = v["packages"].as_array().ok_or_else(|| Error::msg("cargo metadata has no packages"))?;
    Ok(packages.iter().filter(|p| p["publish"].is_null()).filter_map(|p| p["name"].as_str().map(str::to_owned)).collect())
}

#[cfg(test)]
mod tests {
    use super::harness_symbols;

    #[test]
    fn the_conformance_harness_is_found_by_its_symbols() {
        // `nm` of a library without the harness, then with it (trimmed).
        let shipped = "0000000000123450 T uniffi_acp_inject_ffi_fn_constructor_agentcore_new\n\
                       0000000000123460 t _ZN14acp_inject_ffi5agent9AgentCore3new17h0123456789abcdefE\n";
        assert_eq!(harness_symbols(shipped), Some(vec![]));
        let test = format!(
            "{shipped}0000000000123470 T uniffi_acp_inject_ffi_conformance_fn_constructor_vectorrun_new\n\
             0000000000123480 t _ZN22acp_inject_conformance6replay9VectorRun3new17h0123456789abcdefE\n\
             0000000000123490 t _ZN10jsonschema9validator17h0123456789abcdefE\n"
        );
        assert_eq!(harness_symbols(&test).map(|s| s.len()), Some(3));
        // Output without acp-inject-ffi's exports (a wrong file, stripped symbols) proves nothing.
        assert!(harness_symbols("").is_none());
    }
}
