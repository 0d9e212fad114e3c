//! The npm authority: a release of the official TypeScript SDK's package
//! ([`PACKAGE`]), fetched with `npm pack` into the cache; the vendored files are the ones its
//! tarball carries under `package/schema/`, byte for byte.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use acp_inject_tool_support::process::{self, Echo};
use serde_json::Value;

use crate::vendored::{check_version, FILES, PACKAGE};
use crate::Error;

/// A fetched release: its files and the tarball's integrity as npm reports it.
pub struct Packed {
    pub files: BTreeMap<String, Vec<u8>>,
    pub integrity: String,
}

/// `npm pack PACKAGE@VERSION` into `<cache>/upstream`, and the schemas out of the tarball.
pub fn fetch(cache: &Path, version: &str) -> Result<Packed, Error> {
    let (tarball, integrity) = pack(cache, version)?;
    Ok(Packed { files: schemas_in(&tarball, version)?, integrity })
}

/// The newest release (npm's `latest` tag), asked with `npm view`.
pub fn latest() -> Result<String, Error> {
    let mut cmd = Command::new("npm");
    cmd.args(["view", &format!("{PACKAGE}@latest"), "version"]);
    let ran = process::run(&mut cmd, Echo::StderrOnly)
        .map_err(|e| Error::Command(format!("cannot run npm (needed to find the newest {PACKAGE}): {e}")))?;
    if !ran.success() {
        return Err(Error::Command(format!("npm view {PACKAGE} failed ({}): {}", ran.status, ran.stderr.trim())));
    }
    let version = ran.stdout.trim().to_owned();
    check_version(&version).map_err(|_| Error::Command(format!("npm view {PACKAGE} printed no version: {:?}", ran.stdout)))?;
    Ok(version)
}

fn pack(cache: &Path, version: &str) -> Result<(PathBuf, String), Error> {
    check_version(version)?;
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
            None => {
                let package: Value = serde_json::from_slice(&bytes)
                    .map_err(|e| Error::Invalid(format!("{}: package.json is not JSON: {e}", tarball.display())))?;
                package_version = package.get("version").and_then(Value::as_str).map(str::to_owned);
            }
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
