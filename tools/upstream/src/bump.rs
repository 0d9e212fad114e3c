//! `cargo xtask upstream bump VERSION`: fetches the official TypeScript SDK package of that
//! version through npm (`npm pack`, into the cache), replaces the vendored schemas with the
//! ones it carries, and reports what changed between the two releases, per language.
//!
//! xtask then regenerates every language and runs the differ against the new unstable v2
//! schema. A bump to the version already vendored changes nothing.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use heck::{ToLowerCamelCase, ToShoutySnakeCase, ToSnakeCase, ToUpperCamelCase};
use serde_json::Value;

use crate::diff::{compare, Allowlist, Difference};
use crate::vendored::{Manifest, Vendored, FILES, PACKAGE};
use crate::Error;

/// What a bump did.
#[derive(Debug)]
pub struct Bumped {
    /// The version vendored before (`None` when nothing was).
    pub from: Option<String>,
    /// The version vendored now.
    pub to: String,
    /// The files whose bytes changed.
    pub written: Vec<PathBuf>,
    /// The upstream changes between the two releases, per vendored file.
    pub changes: BTreeMap<String, Vec<Difference>>,
}

impl Bumped {
    /// The report for people: per file, each change and how each language will spell it.
    pub fn render(&self) -> String {
        let mut out = format!("{PACKAGE}: {} -> {}\n", self.from.as_deref().unwrap_or("(nothing vendored)"), self.to);
        if self.written.is_empty() {
            out.push_str("the vendored schemas are already this release's: nothing changed\n");
            return out;
        }
        if self.changes.is_empty() {
            out.push_str("the schemas are byte-identical to the previous release's: only the manifest changed\n");
        }
        for (file, changes) in &self.changes {
            let shown: Vec<&Difference> = changes.iter().filter(|d| d.category != "marker").collect();
            if shown.is_empty() {
                out.push_str(&format!("\n{file}: only decoding markers (x-deserialize-*) changed\n"));
                continue;
            }
            out.push_str(&format!("\n{file}: {} change(s)\n", shown.len()));
            for d in shown {
                out.push_str(&format!("  {}\n", describe(d)));
                if let Some(names) = per_language(d) {
                    out.push_str(&format!("      {names}\n"));
                }
            }
        }
        out
    }
}

/// Fetches `version`, replaces the vendored copy under `root`, and compares it with what was
/// there. `cache` holds the downloaded tarballs.
pub fn bump(root: &Path, cache: &Path, version: &str) -> Result<Bumped, Error> {
    let vendored = Vendored::at(root);
    let before = vendored.manifest()?;
    let old = vendored.files()?;
    let (tarball, integrity) = npm_pack(cache, version)?;
    let files = schemas_in(&tarball, version)?;
    let manifest = Manifest::new(version, &integrity, &files);
    let written = vendored.write(&manifest, &files)?;
    let mut changes = BTreeMap::new();
    for file in FILES {
        let (Some(a), Some(b)) = (old.get(file), files.get(file)) else { continue };
        if a == b {
            continue;
        }
        let (a, b) = (json(a, file)?, json(b, file)?);
        let report = compare(&a, &b, &Allowlist::default()).map_err(Error::Invalid)?;
        changes.insert(file.to_owned(), report.differences);
    }
    Ok(Bumped { from: before.map(|m| m.version), to: version.to_owned(), written, changes })
}

fn json(bytes: &[u8], file: &str) -> Result<Value, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Invalid(format!("{file} is not JSON: {e}")))
}

/// `npm pack PACKAGE@VERSION` into `<cache>/upstream`: the tarball's path and its integrity.
fn npm_pack(cache: &Path, version: &str) -> Result<(PathBuf, String), Error> {
    if version.is_empty() || !version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+')) {
        return Err(Error::Invalid(format!("{version:?} is not a version (say e.g. 2.4.0)")));
    }
    let dir = cache.join("upstream");
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let spec = format!("{PACKAGE}@{version}");
    eprintln!("$ npm pack --json --pack-destination {} {spec}", dir.display());
    let out = Command::new("npm")
        .args(["pack", "--json", "--pack-destination"])
        .arg(&dir)
        .arg(&spec)
        .output()
        .map_err(|e| Error::Command(format!("cannot run npm (needed to fetch {spec}): {e}")))?;
    if !out.status.success() {
        return Err(Error::Command(format!(
            "npm pack {spec} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let packed: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Command(format!("npm pack printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout))))?;
    let first = packed.get(0).ok_or_else(|| Error::Command("npm pack reported no package".into()))?;
    let field = |k: &str| first.get(k).and_then(Value::as_str).map(str::to_owned);
    let filename = field("filename").ok_or_else(|| Error::Command("npm pack did not name its tarball".into()))?;
    let integrity = field("integrity").ok_or_else(|| Error::Command("npm pack reported no integrity".into()))?;
    if field("version").as_deref() != Some(version) {
        return Err(Error::Invalid(format!("npm pack fetched version {:?}, not {version}", field("version"))));
    }
    // npm names scoped tarballs `agentclientprotocol-sdk-2.4.0.tgz`.
    let name = Path::new(&filename).file_name().map(PathBuf::from).unwrap_or_else(|| PathBuf::from(&filename));
    Ok((dir.join(name), integrity))
}

/// The vendored files out of a package tarball, checking it is the version asked for.
fn schemas_in(tarball: &Path, version: &str) -> Result<BTreeMap<String, Vec<u8>>, Error> {
    let file = std::fs::File::open(tarball).map_err(Error::io(tarball))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut found = BTreeMap::new();
    let mut package_version = None;
    let entries = archive.entries().map_err(Error::io(tarball))?;
    for entry in entries {
        let mut entry = entry.map_err(Error::io(tarball))?;
        let path = entry.path().map_err(Error::io(tarball))?.to_string_lossy().into_owned();
        let wanted = path.strip_prefix("package/schema/").filter(|f| FILES.contains(f)).map(str::to_owned);
        if wanted.is_none() && path != "package/package.json" {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(Error::io(tarball))?;
        match wanted {
            Some(f) => {
                found.insert(f, bytes);
            }
            None => package_version = json(&bytes, "package.json")?.get("version").and_then(Value::as_str).map(str::to_owned),
        }
    }
    if package_version.as_deref() != Some(version) {
        return Err(Error::Invalid(format!("{} holds version {package_version:?}, not {version}", tarball.display())));
    }
    if let Some(missing) = FILES.iter().find(|f| !found.contains_key(**f)) {
        return Err(Error::Invalid(format!("{} has no package/schema/{missing}", tarball.display())));
    }
    Ok(found)
}

/// One change between two upstream releases, for people.
fn describe(d: &Difference) -> String {
    let verb = match d.change {
        "only-upstream" => "added",
        "only-ours" => "removed",
        _ => "changed",
    };
    let was = d.ours.as_deref().map(|o| format!(" (was {o})")).unwrap_or_default();
    let now = d.upstream.as_deref().map(|u| format!(": {u}")).unwrap_or_default();
    match d.change {
        "differs" => format!("{:<10} {verb:<8} {}{now}{was}", d.category, d.location),
        "only-ours" => {
            format!("{:<10} {verb:<8} {}{}", d.category, d.location, d.ours.as_deref().map(|o| format!(": {o}")).unwrap_or_default())
        }
        _ => format!("{:<10} {verb:<8} {}{now}", d.category, d.location),
    }
}

/// How the generated bindings spell what a change touches: a member (`Type.member`,
/// `Union[tag].member`), a type, or an enum value.
fn per_language(d: &Difference) -> Option<String> {
    match d.category {
        "property" | "required" | "type" => {
            let (owner, member) = d.location.rsplit_once('.')?;
            // A member of a tagged union's variant (`SessionUpdate[tool_call_update]`) lives on
            // the variant's value.
            let (rust, python, kotlin, swift) = match owner.strip_suffix(']').and_then(|o| o.split_once('[')) {
                Some((union, tag)) => (
                    format!("{union}::{}(v): v", tag.to_upper_camel_case()),
                    format!("{union}.{}: [0]", tag.to_shouty_snake_case()),
                    format!("{union}.{}: v1", tag.to_upper_camel_case()),
                    format!("{union}.{}: value", tag.to_lower_camel_case()),
                ),
                None => (owner.to_owned(), owner.to_owned(), owner.to_owned(), owner.to_owned()),
            };
            Some(format!(
                "Rust {rust}.{}  Python {python}.{}  Kotlin {kotlin}.{}  Swift {swift}.{}",
                member.to_snake_case(),
                member.to_snake_case(),
                member.to_lower_camel_case(),
                member.to_lower_camel_case()
            ))
        }
        "definition" => Some(format!("Rust, Python, Kotlin and Swift: {}", d.location)),
        "value" => {
            // `Name = value` (an enum value) or `Name[tag]` (a union variant).
            let (owner, value) = match d.location.split_once(" = ") {
                Some((owner, value)) => (owner, value),
                None => d.location.strip_suffix(']')?.split_once('[')?,
            };
            Some(format!(
                "Rust {owner}::{}  Python {owner}.{}  Kotlin {owner}.{}  Swift .{}",
                value.to_upper_camel_case(),
                value.to_shouty_snake_case(),
                value.to_upper_camel_case(),
                value.to_lower_camel_case()
            ))
        }
        _ => None,
    }
}
