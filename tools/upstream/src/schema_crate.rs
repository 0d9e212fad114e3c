//! The crates.io authority: the four schema files generated from a release of the official
//! Rust schema crate ([`CRATE`]), from its own types with its own `schemars` derive, the way
//! upstream generates the schema it publishes (its generator, in the upstream repository at
//! <https://github.com/agentclientprotocol/agent-client-protocol>, builds one root type and
//! writes one file per set of cargo features).
//!
//! # How
//!
//! A throwaway cargo project in the cache, `<cache>/upstream/crate/<crate>-<version>/`, depends
//! on the crate pinned with `=VERSION` and holds this crate's generator
//! (`tools/upstream/generator/main.rs`); its `Cargo.lock` is kept there. On the first run for a
//! version the lock is seeded with the versions the crate's own `Cargo.lock` names (the lock
//! upstream published the crate with: the same `schemars`, `serde_json`, `serde_with` that
//! generated upstream's schema), when the crate carries one. All versions share one target
//! directory, `<cache>/upstream/crate/target`.
//!
//! The generator is built once per file:
//!
//! | file | crate features |
//! |---|---|
//! | `v1/schema.json` | none |
//! | `v1/schema.unstable.json` | `unstable` |
//! | `v2/schema.json` | `unstable_protocol_v2` |
//! | `v2/schema.unstable.json` | `unstable_protocol_v2`, `unstable` |
//!
//! (plus `schemars` where the crate makes it a feature). The root is an untagged union titled
//! "Agent Client Protocol" of the agent's and the client's JSON-RPC messages, with what the
//! crate version has of: the `$/` protocol-level notifications (`ProtocolLevel`; in versions
//! with an `unstable_cancel_request` feature, only where it is on), the proxy chains' messages
//! (`Proxy`, in the unstable files when `unstable` turns on `unstable_proxy_chains`), and in
//! v2 the four batch variants when the crate's v2 module exports `JsonRpcBatch` (upstream's
//! generator adds them exactly then: crate 1.15.1 and 1.20.0 do not export it, and the npm
//! package 2.4.0, cut from 1.15.1, has none). Settings: draft 2020-12, untagged variant
//! titles, the `RemoveRefSiblings` and `ReplaceBoolSchemas { skip_additional_properties }`
//! transforms.
//!
//! Then, as upstream publishes its files: in the unstable files, a link to the protocol docs
//! (`https://agentclientprotocol.com/protocol/v1/…`, `…/v2/…`) points at the draft docs
//! (`…/v1/draft/…`), and the text is laid out as its published files are (they pass through
//! prettier: two-space indentation, objects one member per line, an array of plain values on
//! one line when it fits in 80 columns), with a final newline. Crate 1.15.1 generated this way
//! gives, byte for byte, the four files of the npm package 2.4.0.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use acp_inject_tool_support::process::{self, Echo};
use serde_json::Value;

use crate::vendored::{check_version, Generation, CRATE, FILES};
use crate::Error;

/// The generator's source, written into the throwaway project.
const GENERATOR: &str = include_str!("../generator/main.rs");

/// Where upstream's documentation links start (see [`draft_links`]).
const DOCS: &str = "https://agentclientprotocol.com/protocol/";

/// The width prettier lays upstream's published files out to.
const WIDTH: usize = 80;

/// The generated files of one crate release, and how they were made.
#[derive(Debug)]
pub struct Generated {
    pub files: BTreeMap<String, Vec<u8>>,
    /// The `.crate` file's checksum, from the project's `Cargo.lock`.
    pub checksum: String,
    pub generation: Generation,
    /// The root's variants per file (its titles), for the report.
    pub roots: BTreeMap<String, Vec<&'static str>>,
}

/// The newest release, as `cargo info` reads it from the registry's index.
pub fn latest(cache: &Path) -> Result<String, Error> {
    // Outside any workspace: in one that locks the crate, `cargo info` shows the locked version.
    let dir = cache.join("upstream");
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let mut cmd = Command::new(acp_inject_tool_support::cargo());
    cmd.args(["info", CRATE]).current_dir(&dir);
    let ran = process::run(&mut cmd, Echo::StderrOnly).map_err(|e| Error::Command(e.to_string()))?;
    if !ran.success() {
        return Err(Error::Command(format!("cargo info {CRATE} failed ({}): {}", ran.status, ran.stderr.trim())));
    }
    info_version(&ran.stdout).ok_or_else(|| Error::Command(format!("cargo info {CRATE} named no version:\n{}", ran.stdout)))
}

/// The version `cargo info` names: `version: 1.20.0`, or the newer one of
/// `version: 1.15.1 (latest 1.20.0)`.
fn info_version(out: &str) -> Option<String> {
    let line = out.lines().find_map(|l| l.strip_prefix("version:"))?;
    let newest = match line.split_once("(latest ") {
        Some((_, rest)) => rest.trim_end().trim_end_matches(')'),
        None => line,
    };
    let v = newest.split_whitespace().next()?.to_owned();
    check_version(&v).ok().map(|()| v)
}

/// Generates the four files from release `version` of the crate (built in the cache).
pub fn generate(cache: &Path, version: &str) -> Result<Generated, Error> {
    check_version(version)?;
    let project = Project::new(cache, version);
    let fresh = project.write()?;
    let mut meta = project.metadata(!fresh)?;
    if fresh {
        if let Some(seed) = seed_lock(&meta.crate_dir.join("Cargo.lock"))? {
            eprintln!("seeding {} with the versions the crate's own Cargo.lock names", project.lock().display());
            std::fs::write(project.lock(), seed).map_err(Error::io(project.lock()))?;
            meta = match project.metadata(false) {
                Ok(meta) => meta,
                Err(e) => {
                    eprintln!("the crate's own Cargo.lock does not resolve here ({e}); resolving afresh");
                    std::fs::remove_file(project.lock()).map_err(Error::io(project.lock()))?;
                    project.metadata(false)?
                }
            };
        }
    }
    let caps = Capabilities::of(&meta, version)?;
    let lock_text = std::fs::read_to_string(project.lock()).map_err(Error::io(project.lock()))?;
    let ours = LockPackage::parse(&lock_text);
    let checksum = ours
        .iter()
        .find(|p| p.name == CRATE && p.version == version)
        .and_then(|p| p.checksum.clone())
        .ok_or_else(|| Error::Invalid(format!("{} has no checksum for {CRATE} {version}", project.lock().display())))?;
    let schemars = ours
        .iter()
        .filter(|p| p.name == "schemars" && p.version.starts_with("1."))
        .map(|p| p.version.clone())
        .max_by_key(|v| v.split('.').map(|n| n.parse::<u64>().unwrap_or(0)).collect::<Vec<_>>())
        .ok_or_else(|| Error::Invalid(format!("{} resolves no schemars 1.x", project.lock().display())))?;
    let upstream_lock = match std::fs::read_to_string(meta.crate_dir.join("Cargo.lock")) {
        Ok(theirs) => same_versions(&ours, &LockPackage::parse(&theirs)),
        Err(_) => false,
    };

    let mut files = BTreeMap::new();
    let mut features = BTreeMap::new();
    let mut roots = BTreeMap::new();
    for file in FILES {
        let build = caps.build(file);
        let schema = project.run(&build)?;
        let schema: Value = serde_json::from_str(&schema)
            .map_err(|e| Error::Invalid(format!("the generator's output for {file} is not JSON: {e}")))?;
        files.insert(file.to_owned(), published(schema, build.unstable).into_bytes());
        features.insert(file.to_owned(), build.crate_features.iter().filter(|f| *f != "schemars").cloned().collect());
        roots.insert(file.to_owned(), build.root());
    }
    Ok(Generated { files, checksum, generation: Generation { schemars, upstream_lock, features }, roots })
}

/// The throwaway project of one crate version.
struct Project {
    dir: PathBuf,
    target: PathBuf,
    version: String,
}

/// What `cargo metadata` says of the crate.
struct Metadata {
    /// Its features, each with what it turns on.
    features: BTreeMap<String, Vec<String>>,
    /// Its source folder (in cargo's registry cache).
    crate_dir: PathBuf,
    /// Its `schemars` requirement (`^1`), when it has one.
    schemars: Option<String>,
}

impl Project {
    fn new(cache: &Path, version: &str) -> Project {
        let base = cache.join("upstream").join("crate");
        Project { dir: base.join(format!("{CRATE}-{version}")), target: base.join("target"), version: version.to_owned() }
    }

    fn lock(&self) -> PathBuf {
        self.dir.join("Cargo.lock")
    }

    fn manifest(&self) -> String {
        format!(
            r#"# Written by `cargo xtask upstream bump --crate` (acp-inject's tools/upstream): generates the
# ACP JSON Schemas from {CRATE} {version}, pinned; Cargo.lock is kept.
[package]
name = "acp-schema-from-crate"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
{CRATE} = "={version}"
schemars = "1"
serde_json = "1"

[features]
# The root variants this crate version has; the bump turns them on per file.
v2 = []
batch = []
protocol_level = []
proxy = []

# Nothing here is debugged: without debug info the builds are faster and the target directory
# less than half the size.
[profile.dev]
debug = false
"#,
            version = self.version
        )
    }

    /// Writes the project; true when it has no lock yet (a first run, or a changed manifest).
    fn write(&self) -> Result<bool, Error> {
        let manifest = self.dir.join("Cargo.toml");
        if write_if_changed(&manifest, &self.manifest())? {
            match std::fs::remove_file(self.lock()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(self.lock())(e)),
                _ => {}
            }
        }
        write_if_changed(&self.dir.join("src").join("main.rs"), GENERATOR)?;
        Ok(!self.lock().exists())
    }

    fn cargo(&self) -> Command {
        let mut cmd = Command::new(acp_inject_tool_support::cargo());
        cmd.current_dir(&self.dir).env("CARGO_TARGET_DIR", &self.target);
        cmd
    }

    fn metadata(&self, locked: bool) -> Result<Metadata, Error> {
        let mut cmd = self.cargo();
        cmd.args(["metadata", "--format-version", "1"]);
        if locked {
            cmd.arg("--locked");
        }
        let ran = process::run(&mut cmd, Echo::StderrOnly).map_err(|e| Error::Command(e.to_string()))?;
        if !ran.success() {
            return Err(Error::Command(format!("cargo metadata failed ({}): {}", ran.status, ran.stderr.trim())));
        }
        let v: Value =
            serde_json::from_str(&ran.stdout).map_err(|e| Error::Command(format!("cargo metadata printed no JSON: {e}")))?;
        let package = v["packages"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == CRATE && p["version"] == self.version.as_str()))
            .ok_or_else(|| Error::Invalid(format!("cargo metadata resolved no {CRATE} {}", self.version)))?;
        let features = package["features"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, on)| {
                        let on =
                            on.as_array().map(|l| l.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default();
                        (k.clone(), on)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let crate_dir = package["manifest_path"]
            .as_str()
            .and_then(|p| Path::new(p).parent())
            .map(Path::to_path_buf)
            .ok_or_else(|| Error::Invalid(format!("cargo metadata gives no manifest_path for {CRATE}")))?;
        let schemars = package["dependencies"]
            .as_array()
            .and_then(|ds| ds.iter().find(|d| d["name"] == "schemars" && d["kind"].is_null()))
            .and_then(|d| d["req"].as_str())
            .map(str::to_owned);
        Ok(Metadata { features, crate_dir, schemars })
    }

    /// Builds and runs the generator for one file; its stdout.
    fn run(&self, build: &Build) -> Result<String, Error> {
        let mut features: Vec<String> = build.crate_features.iter().map(|f| format!("{CRATE}/{f}")).collect();
        features.extend(build.switches.iter().map(|s| s.to_string()));
        let mut cmd = self.cargo();
        cmd.args(["run", "--locked", "--features", &features.join(",")]);
        let ran = process::run(&mut cmd, Echo::StderrOnly).map_err(|e| Error::Command(e.to_string()))?;
        if !ran.success() {
            return Err(Error::Command(format!(
                "the generator failed for {} ({}); its project is {}",
                build.file,
                ran.status,
                self.dir.display()
            )));
        }
        Ok(ran.stdout)
    }
}

/// Writes a file unless it already holds exactly this (so cargo sees no change); true when it
/// wrote.
fn write_if_changed(path: &Path, text: &str) -> Result<bool, Error> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    }
    std::fs::write(path, text).map_err(Error::io(path))?;
    Ok(true)
}

/// What a crate version has, read from its features and its source.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Capabilities {
    /// The features the crate has (`schemars` is passed when it is one).
    features: BTreeMap<String, Vec<String>>,
    /// The v2 module exports `JsonRpcBatch` (the root gets the batch variants in v2).
    v2_batches: bool,
    /// The `$/` protocol-level notifications exist (`ProtocolLevelNotification`).
    protocol_level: bool,
}

/// One build of the generator: one file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Build {
    file: &'static str,
    unstable: bool,
    crate_features: Vec<String>,
    switches: Vec<&'static str>,
}

impl Build {
    /// The root's variants, as the generator names (and titles) them.
    fn root(&self) -> Vec<&'static str> {
        let on = |s| self.switches.contains(&s);
        let mut root = vec!["Agent", "Client"];
        if on("batch") {
            root.extend(["AgentBatchCall", "AgentBatchResponse", "ClientBatchCall", "ClientBatchResponse"]);
        }
        if on("protocol_level") {
            root.push("ProtocolLevel");
        }
        if on("proxy") {
            root.push("Proxy");
        }
        root
    }
}

impl Capabilities {
    fn of(meta: &Metadata, version: &str) -> Result<Capabilities, Error> {
        let unsupported = |why: String| Error::Invalid(format!("{CRATE} {version} {why}; vendor an npm release instead (--npm)"));
        for needed in ["unstable", "unstable_protocol_v2"] {
            if !meta.features.contains_key(needed) {
                return Err(unsupported(format!("has no `{needed}` feature")));
            }
        }
        match meta.schemars.as_deref() {
            Some(req) if req.trim_start_matches(['^', '=', '~', ' ']).starts_with('1') => {}
            other => return Err(unsupported(format!("does not derive its schema with schemars 1 (its requirement: {other:?})"))),
        }
        let src = meta.crate_dir.join("src");
        let read_all = |dir: &Path| -> String {
            let mut text = String::new();
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if entry.path().extension().is_some_and(|e| e == "rs") {
                    text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
                }
            }
            text
        };
        let (v1, v2) = (read_all(&src.join("v1")), read_all(&src.join("v2")));
        if v1.is_empty() || v2.is_empty() {
            return Err(unsupported("has no v1 and v2 modules".into()));
        }
        let v2_mod = std::fs::read_to_string(src.join("v2").join("mod.rs")).unwrap_or_default();
        Ok(Capabilities {
            features: meta.features.clone(),
            v2_batches: exports(&v2_mod, "JsonRpcBatch") || v2.contains("pub struct JsonRpcBatch"),
            protocol_level: v1.contains("enum ProtocolLevelNotification"),
        })
    }

    /// Whether `feature` turns on `wanted` (itself, or through the features it enables).
    fn enables(&self, feature: &str, wanted: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut todo = vec![feature.to_owned()];
        while let Some(f) = todo.pop() {
            if f == wanted {
                return true;
            }
            if seen.insert(f.clone()) {
                todo.extend(self.features.get(&f).into_iter().flatten().filter(|g| !g.contains(['/', ':'])).cloned());
            }
        }
        false
    }

    fn build(&self, file: &'static str) -> Build {
        let v2 = file.starts_with("v2/");
        let unstable = file.ends_with(".unstable.json");
        let mut crate_features = Vec::new();
        if self.features.contains_key("schemars") {
            crate_features.push("schemars".to_owned());
        }
        if v2 {
            crate_features.push("unstable_protocol_v2".to_owned());
        }
        if unstable {
            crate_features.push("unstable".to_owned());
        }
        let mut switches = Vec::new();
        if v2 {
            switches.push("v2");
            if self.v2_batches {
                switches.push("batch");
            }
        }
        let protocol_level = match self.features.contains_key("unstable_cancel_request") {
            true => unstable && self.enables("unstable", "unstable_cancel_request"),
            false => self.protocol_level,
        };
        if protocol_level {
            switches.push("protocol_level");
        }
        if unstable && self.enables("unstable", "unstable_proxy_chains") {
            switches.push("proxy");
        }
        Build { file, unstable, crate_features, switches }
    }
}

/// Whether a module's `pub use` statements export `name`.
fn exports(module: &str, name: &str) -> bool {
    module
        .split("pub use")
        .skip(1)
        .map(|rest| rest.split(';').next().unwrap_or_default())
        .any(|statement| statement.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|word| word == name))
}

/// One `[[package]]` of a `Cargo.lock`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LockPackage {
    name: String,
    version: String,
    source: Option<String>,
    checksum: Option<String>,
}

impl LockPackage {
    fn parse(lock: &str) -> Vec<LockPackage> {
        lock.split("[[package]]")
            .skip(1)
            .filter_map(|block| {
                let field = |key: &str| {
                    block.lines().find_map(|l| {
                        let (k, v) = l.split_once('=')?;
                        (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
                    })
                };
                Some(LockPackage {
                    name: field("name")?,
                    version: field("version")?,
                    source: field("source"),
                    checksum: field("checksum"),
                })
            })
            .collect()
    }
}

/// The crate's own `Cargo.lock` as a lock to start from: its registry packages (its workspace's
/// own members left out). `None` when the crate carries no lock.
fn seed_lock(path: &Path) -> Result<Option<String>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path)(e)),
    };
    let mut blocks = text.split("\n[[package]]\n");
    let mut seed = blocks.next().unwrap_or_default().trim_end().to_owned();
    seed.push('\n');
    for block in blocks.filter(|b| b.lines().any(|l| l.starts_with("source = \"registry+"))) {
        seed.push_str("\n[[package]]\n");
        seed.push_str(block.trim_end());
        seed.push('\n');
    }
    Ok(Some(seed))
}

/// Whether every registry package of `ours` that `theirs` also has is at a version `theirs`
/// names (our lock follows the crate's).
fn same_versions(ours: &[LockPackage], theirs: &[LockPackage]) -> bool {
    let names: BTreeSet<&str> = theirs.iter().map(|p| p.name.as_str()).collect();
    let pinned: BTreeSet<(&str, &str)> = theirs.iter().map(|p| (p.name.as_str(), p.version.as_str())).collect();
    ours.iter()
        .filter(|p| p.source.is_some() && names.contains(p.name.as_str()))
        .all(|p| pinned.contains(&(p.name.as_str(), p.version.as_str())))
}

/// The text of a generated schema as upstream publishes it: draft links in the unstable files,
/// laid out as prettier lays out its output, with a final newline.
fn published(mut schema: Value, unstable: bool) -> String {
    if unstable {
        draft_links(&mut schema);
    }
    let mut out = String::new();
    layout(&mut out, &schema, 0, 0, 0);
    out.push('\n');
    out
}

/// In every string, a link to versioned protocol docs (`…/protocol/v2/tool-calls`) points at
/// the draft docs (`…/protocol/v2/draft/tool-calls`).
fn draft_links(value: &mut Value) {
    match value {
        Value::String(s) => {
            for v in ["v1/", "v2/"] {
                let from = format!("{DOCS}{v}");
                if s.contains(&from) {
                    let mut out = String::new();
                    let mut rest = s.as_str();
                    while let Some(at) = rest.find(&from) {
                        let (before, after) = rest.split_at(at + from.len());
                        out.push_str(before);
                        if !after.starts_with("draft/") && !after.starts_with("draft#") {
                            out.push_str("draft/");
                        }
                        rest = after;
                    }
                    out.push_str(rest);
                    *s = out;
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(draft_links),
        Value::Object(members) => members.values_mut().for_each(draft_links),
        _ => {}
    }
}

/// A value on one line, unless it holds a non-empty object (which prettier never puts on one
/// line when the text it formats had it on several, as serde_json's pretty output does).
fn flat(value: &Value) -> Option<String> {
    match value {
        Value::Object(m) if !m.is_empty() => None,
        Value::Array(items) => {
            let items = items.iter().map(flat).collect::<Option<Vec<_>>>()?;
            Some(format!("[{}]", items.join(", ")))
        }
        other => Some(serde_json::to_string(other).expect("JSON values serialize")),
    }
}

/// Writes `value` starting at `column`, at nesting `depth`; `trailing` characters (a comma)
/// follow it on its last line. An array goes on one line when it fits in [`WIDTH`] columns
/// (prettier would fill the lines of a long array of numbers instead; upstream's schemas have
/// none).
fn layout(out: &mut String, value: &Value, depth: usize, column: usize, trailing: usize) {
    let indent = |depth: usize| "  ".repeat(depth);
    match value {
        Value::Object(members) if !members.is_empty() => {
            out.push('{');
            for (i, (key, member)) in members.iter().enumerate() {
                let key = serde_json::to_string(key).expect("strings serialize");
                out.push('\n');
                out.push_str(&indent(depth + 1));
                out.push_str(&key);
                out.push_str(": ");
                let last = i + 1 == members.len();
                layout(out, member, depth + 1, 2 * (depth + 1) + key.chars().count() + 2, usize::from(!last));
                if !last {
                    out.push(',');
                }
            }
            out.push('\n');
            out.push_str(&indent(depth));
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            if let Some(line) = flat(value).filter(|l| column + l.chars().count() + trailing <= WIDTH) {
                out.push_str(&line);
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push('\n');
                out.push_str(&indent(depth + 1));
                let last = i + 1 == items.len();
                layout(out, item, depth + 1, 2 * (depth + 1), usize::from(!last));
                if !last {
                    out.push(',');
                }
            }
            out.push('\n');
            out.push_str(&indent(depth));
            out.push(']');
        }
        other => out.push_str(&flat(other).expect("a scalar or an empty container is flat")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(features: &[(&str, &[&str])], v2_batches: bool, protocol_level: bool) -> Capabilities {
        Capabilities {
            features: features.iter().map(|(k, on)| (k.to_string(), on.iter().map(|s| s.to_string()).collect())).collect(),
            v2_batches,
            protocol_level,
        }
    }

    #[test]
    fn each_file_is_built_with_its_features_and_the_variants_the_crate_has() {
        // Like 1.20.0: schemars optional, proxy chains in `unstable`, cancel requests stable.
        let c = caps(
            &[
                ("default", &["schemars"]),
                ("schemars", &["dep:schemars", "serde_with/schemars_1"]),
                ("unstable", &["unstable_proxy_chains", "unstable_session_fork"]),
                ("unstable_proxy_chains", &[]),
                ("unstable_session_fork", &[]),
                ("unstable_protocol_v2", &[]),
            ],
            false,
            true,
        );
        let features = |f| c.build(f).crate_features;
        assert_eq!(features("v1/schema.json"), ["schemars"]);
        assert_eq!(features("v1/schema.unstable.json"), ["schemars", "unstable"]);
        assert_eq!(features("v2/schema.json"), ["schemars", "unstable_protocol_v2"]);
        assert_eq!(features("v2/schema.unstable.json"), ["schemars", "unstable_protocol_v2", "unstable"]);
        let root = |f| c.build(f).root();
        assert_eq!(root("v1/schema.json"), ["Agent", "Client", "ProtocolLevel"]);
        assert_eq!(root("v1/schema.unstable.json"), ["Agent", "Client", "ProtocolLevel", "Proxy"]);
        assert_eq!(root("v2/schema.json"), ["Agent", "Client", "ProtocolLevel"]);
        assert_eq!(root("v2/schema.unstable.json"), ["Agent", "Client", "ProtocolLevel", "Proxy"]);
        assert_eq!(c.build("v2/schema.json").switches, ["v2", "protocol_level"]);

        // Like the crate upstream's newest generator is written for: v2 exports batches, no
        // proxy chains; and an older one whose cancel requests were unstable.
        let c = caps(
            &[("unstable", &["unstable_cancel_request"]), ("unstable_cancel_request", &[]), ("unstable_protocol_v2", &[])],
            true,
            true,
        );
        assert_eq!(c.build("v1/schema.json").root(), ["Agent", "Client"]);
        assert_eq!(c.build("v1/schema.json").crate_features, Vec::<String>::new());
        assert_eq!(c.build("v1/schema.unstable.json").root(), ["Agent", "Client", "ProtocolLevel"]);
        assert_eq!(
            c.build("v2/schema.json").root(),
            ["Agent", "Client", "AgentBatchCall", "AgentBatchResponse", "ClientBatchCall", "ClientBatchResponse"]
        );
        assert_eq!(c.build("v2/schema.unstable.json").switches, ["v2", "batch", "protocol_level"]);
    }

    #[test]
    fn exports_reads_pub_use_statements() {
        let module = "mod rpc;\npub use crate::rpc::{\n    JsonRpcBatch, JsonRpcMessage,\n};\npub use agent::*;\n";
        assert!(exports(module, "JsonRpcBatch"));
        assert!(exports(module, "JsonRpcMessage"));
        assert!(!exports("pub use crate::rpc::{JsonRpcMessage, Notification};\n// JsonRpcBatch\n", "JsonRpcBatch"));
        assert!(!exports("pub use crate::rpc::{EmptyJsonRpcBatch};", "JsonRpcBatch"));
    }

    #[test]
    fn the_lock_is_read_seeded_and_compared() {
        let theirs = "# generated\nversion = 4\n\n[[package]]\nname = \"agent-client-protocol-schema\"\nversion = \"1.20.0\"\n\
                      dependencies = [\n \"schemars\",\n]\n\n[[package]]\nname = \"schemars\"\nversion = \"1.2.3\"\n\
                      source = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"abc\"\n";
        let dir = std::env::temp_dir().join(format!("acp-upstream-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("Cargo.lock");
        assert_eq!(seed_lock(&path).unwrap(), None);
        std::fs::write(&path, theirs).unwrap();
        let seed = seed_lock(&path).unwrap().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            seed,
            "# generated\nversion = 4\n\n[[package]]\nname = \"schemars\"\nversion = \"1.2.3\"\n\
             source = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"abc\"\n"
        );
        let theirs = LockPackage::parse(theirs);
        assert_eq!(theirs.len(), 2);
        assert_eq!(theirs[1].checksum.as_deref(), Some("abc"));
        let registry = Some("registry+https://github.com/rust-lang/crates.io-index".to_owned());
        let ours = |schemars: &str| {
            vec![
                LockPackage { name: "acp-schema-from-crate".into(), version: "0.0.0".into(), source: None, checksum: None },
                LockPackage { name: "schemars".into(), version: schemars.into(), source: registry.clone(), checksum: None },
                LockPackage { name: "itoa".into(), version: "1.0.0".into(), source: registry.clone(), checksum: None },
            ]
        };
        assert!(same_versions(&ours("1.2.3"), &theirs));
        assert!(!same_versions(&ours("1.2.4"), &theirs));
    }

    #[test]
    fn cargo_info_names_the_newest_version() {
        assert_eq!(
            info_version("agent-client-protocol-schema #agent\nversion: 1.20.0\nlicense: Apache-2.0\n").as_deref(),
            Some("1.20.0")
        );
        assert_eq!(info_version("version: 1.15.1 (latest 1.20.0)\n").as_deref(), Some("1.20.0"));
        assert_eq!(info_version("no such crate\n"), None);
    }

    #[test]
    fn unstable_files_link_to_the_draft_docs() {
        let mut v = json!({"description": "See https://agentclientprotocol.com/protocol/v2/tool-calls and \
            https://agentclientprotocol.com/protocol/v1/draft/extensibility, https://agentclientprotocol.com/protocol/overview",
            "list": ["https://agentclientprotocol.com/protocol/v1/prompt-turn#x"]});
        draft_links(&mut v);
        assert_eq!(
            v,
            json!({"description": "See https://agentclientprotocol.com/protocol/v2/draft/tool-calls and \
                https://agentclientprotocol.com/protocol/v1/draft/extensibility, https://agentclientprotocol.com/protocol/overview",
                "list": ["https://agentclientprotocol.com/protocol/v1/draft/prompt-turn#x"]})
        );
    }

    #[test]
    fn the_layout_is_prettiers() {
        let schema: Value = serde_json::from_str(
            r##"{"$schema": "x", "required": ["jsonrpc", "method"], "anyOf": [{"title": "A", "allOf": [{"$ref": "#/$defs/A"}]}],
                "empty": {}, "none": [], "nested": [["a"], []], "n": 1.5, "text": "tab\there \"q\" é",
                "long": ["aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb", "cccccccccccccccccccc"],
                "fits": ["aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb", "ccccccccccccccccc"],
                "last": ["aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb", "cccccccccccccccccc"]}"##,
        )
        .unwrap();
        let text = published(schema, false);
        let expected = r##"{
  "$schema": "x",
  "required": ["jsonrpc", "method"],
  "anyOf": [
    {
      "title": "A",
      "allOf": [
        {
          "$ref": "#/$defs/A"
        }
      ]
    }
  ],
  "empty": {},
  "none": [],
  "nested": [["a"], []],
  "n": 1.5,
  "text": "tab\there \"q\" é",
  "long": [
    "aaaaaaaaaaaaaaaaaaaa",
    "bbbbbbbbbbbbbbbbbbbb",
    "cccccccccccccccccccc"
  ],
  "fits": ["aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb", "ccccccccccccccccc"],
  "last": ["aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb", "cccccccccccccccccc"]
}
"##;
        assert_eq!(text, expected);
        // The two 80-column lines: one with its comma, one (the last member) without.
        assert!(text.lines().filter(|l| l.chars().count() == 80).count() == 2, "{text}");
    }
}
