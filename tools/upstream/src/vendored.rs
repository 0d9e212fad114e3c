//! The vendored upstream schemas: `spec/upstream/{v1,v2}/schema{,.unstable}.json`, and
//! `spec/upstream/manifest.json` saying which upstream authority they came from and how:
//!
//! - **npm**: byte for byte as a release of the official TypeScript SDK's package carries them
//!   under `package/schema/`, with the tarball's integrity as npm reports it;
//! - **crates.io**: generated from a release of the official Rust schema crate, from its own
//!   types with its own `schemars` derive, the way upstream generates the schema it publishes
//!   ([`crate::schema_crate`]), with the crate's checksum from the generator's `Cargo.lock`, the
//!   `schemars` version and the crate features each file was built with.
//!
//! Either way the manifest holds the SHA-256 of every file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::Error;

/// The npm package whose releases carry the schemas.
pub const PACKAGE: &str = "@agentclientprotocol/sdk";

/// The Rust crate whose types the schemas are generated from.
pub const CRATE: &str = "agent-client-protocol-schema";

/// The schema files vendored, by their path under the package's `schema/` folder (and under
/// the upstream repository's `schema/`, where its generator writes them).
pub const FILES: [&str; 4] = ["v1/schema.json", "v1/schema.unstable.json", "v2/schema.json", "v2/schema.unstable.json"];

/// The folder of the vendored copy, relative to the repository.
pub const DIR: &str = "spec/upstream";

/// Where a vendored copy comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authority {
    /// The official TypeScript SDK's npm package ([`PACKAGE`]).
    Npm,
    /// The official Rust schema crate ([`CRATE`]) on the Rust crate registry.
    Crate,
}

impl Authority {
    /// The package or crate of this authority.
    pub fn name(self) -> &'static str {
        match self {
            Authority::Npm => PACKAGE,
            Authority::Crate => CRATE,
        }
    }

    /// The registry, as the manifest's `authority` names it.
    pub fn registry(self) -> &'static str {
        match self {
            Authority::Npm => "npm",
            Authority::Crate => "crates.io",
        }
    }
}

/// One release of one authority: `@agentclientprotocol/sdk@2.4.0`,
/// `agent-client-protocol-schema@1.20.0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub authority: Authority,
    pub version: String,
}

impl Source {
    /// A release of the npm package.
    pub fn npm(version: &str) -> Source {
        Source { authority: Authority::Npm, version: version.to_owned() }
    }

    /// A release of the crate.
    pub fn krate(version: &str) -> Source {
        Source { authority: Authority::Crate, version: version.to_owned() }
    }

    /// Reads `NAME@VERSION` (or a bare `VERSION`) of this authority's package or crate.
    pub fn parse(authority: Authority, spec: &str) -> Result<Source, Error> {
        let name = authority.name();
        let version = match spec.rsplit_once('@') {
            // A scoped npm name starts with `@`: `@agentclientprotocol/sdk` alone has no version.
            Some(("", _)) => return Err(Error::Invalid(format!("{spec:?} names no version: say {name}@VERSION"))),
            Some((n, v)) if n == name => v,
            Some(_) => return Err(Error::Invalid(format!("{spec:?} is not a release of {name} (say {name}@VERSION)"))),
            None => spec,
        };
        check_version(version)?;
        Ok(Source { authority, version: version.to_owned() })
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{} ({})", self.authority.name(), self.version, self.authority.registry())
    }
}

/// A version as a registry spells it: `2.4.0`, `1.20.0`, `2.0.0-alpha.1`, `1.0.0+build`.
pub fn check_version(version: &str) -> Result<(), Error> {
    let ok = version.starts_with(|c: char| c.is_ascii_digit())
        && version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    if ok {
        Ok(())
    } else {
        Err(Error::Invalid(format!("{version:?} is not a version (say e.g. 2.4.0)")))
    }
}

/// How the files of a crate release were generated (recorded in the manifest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// The `schemars` version that ran (from the generator's `Cargo.lock`).
    pub schemars: String,
    /// Whether the generator's dependencies are the versions the crate's own `Cargo.lock`
    /// names (the lock upstream generated with), rather than resolved when generating.
    pub upstream_lock: bool,
    /// The crate features each file was built with, by file.
    pub features: BTreeMap<String, Vec<String>>,
}

/// What `manifest.json` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The authority and version.
    pub source: Source,
    /// npm: the tarball's integrity (`sha512-…`), as npm reports it; crates.io: the `.crate`
    /// file's checksum as the generator's `Cargo.lock` records it (SHA-256, hex).
    pub integrity: String,
    /// crates.io only: how the files were generated.
    pub generation: Option<Generation>,
    /// `sha256:<hex>` of every vendored file, by path under `schema/`.
    pub files: BTreeMap<String, String>,
}

/// The manifest's `from` of an npm release.
const FROM_NPM: &str = "the package's tarball as `npm pack` fetches it: package/schema/<file>, unchanged";

/// The manifest's `from` of a crate release.
const FROM_CRATE: &str = "generated by `cargo xtask upstream bump --crate` from the crate's own types with its own schemars \
     derive, as upstream generates its published schema: a project in the cache pins the crate (=version, Cargo.lock kept \
     there) and builds the root type (the agent's and the client's JSON-RPC messages) once per file with the features below, \
     draft 2020-12, untagged variant titles, RemoveRefSiblings and ReplaceBoolSchemas; the unstable files' links point at \
     the draft docs, and the text is laid out as upstream's published files are";

impl Manifest {
    /// The manifest of an npm release with these file contents.
    pub fn npm(version: &str, integrity: &str, files: &BTreeMap<String, Vec<u8>>) -> Manifest {
        Manifest { source: Source::npm(version), integrity: integrity.to_owned(), generation: None, files: checksums(files) }
    }

    /// The manifest of a crate release, generated into these file contents.
    pub fn krate(version: &str, checksum: &str, generation: Generation, files: &BTreeMap<String, Vec<u8>>) -> Manifest {
        Manifest {
            source: Source::krate(version),
            integrity: checksum.to_owned(),
            generation: Some(generation),
            files: checksums(files),
        }
    }

    /// The manifest as written (keys in this order, two-space indentation, a final newline).
    pub fn to_text(&self) -> String {
        let value = match (&self.source.authority, &self.generation) {
            (Authority::Npm, _) => json!({
                "authority": Authority::Npm.registry(),
                "package": PACKAGE,
                "version": self.source.version,
                "from": FROM_NPM,
                "integrity": self.integrity,
                "files": self.files,
            }),
            (Authority::Crate, generation) => {
                let mut v = Map::new();
                v.insert("authority".into(), Authority::Crate.registry().into());
                v.insert("crate".into(), CRATE.into());
                v.insert("version".into(), self.source.version.clone().into());
                v.insert("from".into(), FROM_CRATE.into());
                v.insert("checksum".into(), self.integrity.clone().into());
                if let Some(g) = generation {
                    v.insert("schemars".into(), g.schemars.clone().into());
                    let lock = if g.upstream_lock { "the crate's own Cargo.lock" } else { "resolved when generated" };
                    v.insert("dependencies".into(), lock.into());
                    v.insert("features".into(), json!(g.features));
                }
                v.insert("files".into(), json!(self.files));
                Value::Object(v)
            }
        };
        serde_json::to_string_pretty(&value).expect("JSON values serialize") + "\n"
    }

    /// Reads a manifest. One without `authority` is an npm one (the only authority before the
    /// crate became one).
    pub fn parse(text: &str) -> Result<Manifest, Error> {
        let v: Value = serde_json::from_str(text).map_err(|e| Error::Invalid(format!("manifest.json is not JSON: {e}")))?;
        let field = |k: &str| {
            v.get(k).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| Error::Invalid(format!("manifest.json has no `{k}`")))
        };
        let strings = |k: &str| -> Result<Vec<(String, &Value)>, Error> {
            let object =
                v.get(k).and_then(Value::as_object).ok_or_else(|| Error::Invalid(format!("manifest.json has no `{k}` object")))?;
            Ok(object.iter().map(|(k, x)| (k.clone(), x)).collect())
        };
        let files = strings("files")?
            .into_iter()
            .map(|(k, h)| {
                Ok((k.clone(), h.as_str().ok_or_else(|| Error::Invalid(format!("manifest.json: {k} is not a string")))?.to_owned()))
            })
            .collect::<Result<_, Error>>()?;
        let authority = match v.get("authority").and_then(Value::as_str) {
            None | Some("npm") => Authority::Npm,
            Some("crates.io") => Authority::Crate,
            Some(other) => return Err(Error::Invalid(format!("manifest.json names an unknown authority {other:?}"))),
        };
        let version = field("version")?;
        match authority {
            Authority::Npm => {
                let package = field("package")?;
                if package != PACKAGE {
                    return Err(Error::Invalid(format!("manifest.json names package {package}, not {PACKAGE}")));
                }
                Ok(Manifest { source: Source { authority, version }, integrity: field("integrity")?, generation: None, files })
            }
            Authority::Crate => {
                let name = field("crate")?;
                if name != CRATE {
                    return Err(Error::Invalid(format!("manifest.json names crate {name}, not {CRATE}")));
                }
                let features = strings("features")?
                    .into_iter()
                    .map(|(file, list)| {
                        let list = list
                            .as_array()
                            .and_then(|l| l.iter().map(|f| f.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>())
                            .ok_or_else(|| Error::Invalid(format!("manifest.json: the features of {file} are not a list of names")))?;
                        Ok((file, list))
                    })
                    .collect::<Result<_, Error>>()?;
                let generation = Generation {
                    schemars: field("schemars")?,
                    upstream_lock: field("dependencies")? == "the crate's own Cargo.lock",
                    features,
                };
                Ok(Manifest {
                    source: Source { authority, version },
                    integrity: field("checksum")?,
                    generation: Some(generation),
                    files,
                })
            }
        }
    }
}

fn checksums(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, String> {
    files.iter().map(|(p, bytes)| (p.clone(), sha256(bytes))).collect()
}

/// `sha256:<hex>` of some bytes.
pub fn sha256(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    format!("sha256:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// The vendored copy in a repository.
#[derive(Debug, Clone)]
pub struct Vendored {
    dir: PathBuf,
}

impl Vendored {
    /// The copy under `root` (the repository's `spec/upstream/`).
    pub fn at(root: &Path) -> Vendored {
        Vendored::in_dir(root.join(DIR))
    }

    /// A copy in any folder (`cargo xtask upstream bump --dir`).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Vendored {
        Vendored { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of one vendored file (`v2/schema.unstable.json`, …).
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// The manifest, when something is vendored.
    pub fn manifest(&self) -> Result<Option<Manifest>, Error> {
        let path = self.dir.join("manifest.json");
        match std::fs::read_to_string(&path) {
            Ok(text) => Manifest::parse(&text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path)(e)),
        }
    }

    /// The vendored files' contents, by path (those that exist).
    pub fn files(&self) -> Result<BTreeMap<String, Vec<u8>>, Error> {
        let mut out = BTreeMap::new();
        for file in FILES {
            let path = self.path(file);
            match std::fs::read(&path) {
                Ok(bytes) => {
                    out.insert(file.to_owned(), bytes);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(path)(e)),
            }
        }
        Ok(out)
    }

    /// Every problem with the copy: a file missing or changed since the manifest was written,
    /// or a file the manifest does not name. Empty when the copy is exactly what it says.
    pub fn verify(&self) -> Result<Vec<String>, Error> {
        let Some(manifest) = self.manifest()? else { return Ok(vec![format!("{DIR}/manifest.json is missing")]) };
        let files = self.files()?;
        let mut problems = Vec::new();
        for file in FILES {
            match (manifest.files.get(file), files.get(file)) {
                (Some(want), Some(bytes)) if *want != sha256(bytes) => {
                    problems.push(format!("{DIR}/{file} was changed by hand (its checksum is not the manifest's)"))
                }
                (Some(_), None) => problems.push(format!("{DIR}/{file} is missing")),
                (None, _) => problems.push(format!("the manifest does not name {file}")),
                _ => {}
            }
        }
        problems.extend(
            manifest.files.keys().filter(|k| !FILES.contains(&k.as_str())).map(|k| format!("the manifest names an unknown file {k}")),
        );
        Ok(problems)
    }

    /// Replaces the copy with these files and their manifest. Returns the paths written (only
    /// those whose bytes changed).
    pub fn write(&self, manifest: &Manifest, files: &BTreeMap<String, Vec<u8>>) -> Result<Vec<PathBuf>, Error> {
        let mut written = Vec::new();
        let mut put = |path: PathBuf, bytes: &[u8]| -> Result<(), Error> {
            if std::fs::read(&path).ok().as_deref() == Some(bytes) {
                return Ok(());
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(Error::io(parent))?;
            }
            std::fs::write(&path, bytes).map_err(Error::io(&path))?;
            written.push(path);
            Ok(())
        };
        for (file, bytes) in files {
            put(self.path(file), bytes)?;
        }
        put(self.dir.join("manifest.json"), manifest.to_text().as_bytes())?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("acp-upstream-{name}-{}", std::process::id()))
    }

    fn some_files() -> BTreeMap<String, Vec<u8>> {
        FILES.iter().map(|f| (f.to_string(), format!("{{\"f\":\"{f}\"}}").into_bytes())).collect()
    }

    fn generation() -> Generation {
        Generation {
            schemars: "1.2.3".into(),
            upstream_lock: true,
            features: FILES
                .iter()
                .zip([&[][..], &["unstable"], &["unstable_protocol_v2"], &["unstable_protocol_v2", "unstable"]])
                .map(|(f, list)| (f.to_string(), list.iter().map(|s| s.to_string()).collect()))
                .collect(),
        }
    }

    #[test]
    fn the_vendored_copy_is_what_its_manifest_says() {
        let vendored = Vendored::at(&crate::repo_root());
        let problems = vendored.verify().unwrap();
        assert!(problems.is_empty(), "{problems:#?}\nrestore it with `cargo xtask upstream bump --npm|--crate NAME@VERSION`");
        assert_eq!(vendored.manifest().unwrap().unwrap().files.len(), FILES.len());
    }

    #[test]
    fn a_changed_file_is_caught() {
        let dir = scratch("vendored");
        let vendored = Vendored::in_dir(&dir);
        let files = some_files();
        let manifest = Manifest::npm("9.9.9", "sha512-x", &files);
        assert_eq!(vendored.write(&manifest, &files).unwrap().len(), FILES.len() + 1);
        assert!(vendored.verify().unwrap().is_empty());
        assert!(vendored.write(&manifest, &files).unwrap().is_empty(), "writing the same bytes changes nothing");
        std::fs::write(vendored.path("v2/schema.json"), b"{}").unwrap();
        std::fs::remove_file(vendored.path("v1/schema.json")).unwrap();
        let problems = vendored.verify().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("v1/schema.json is missing"));
        assert!(problems[1].contains("v2/schema.json was changed by hand"));
    }

    #[test]
    fn manifests_of_both_authorities_read_back_as_written() {
        let files = some_files();
        let npm = Manifest::npm("2.4.0", "sha512-abc", &files);
        let text = npm.to_text();
        assert!(text.starts_with("{\n  \"authority\": \"npm\",\n  \"package\": \"@agentclientprotocol/sdk\",\n"), "{text}");
        assert_eq!(Manifest::parse(&text).unwrap(), npm);

        let krate = Manifest::krate("1.20.0", "563da494a1e0", generation(), &files);
        let text = krate.to_text();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["authority"], "crates.io");
        assert_eq!(v["crate"], CRATE);
        assert_eq!(v["checksum"], "563da494a1e0");
        assert_eq!(v["features"]["v2/schema.unstable.json"], json!(["unstable_protocol_v2", "unstable"]));
        assert_eq!(v["dependencies"], "the crate's own Cargo.lock");
        assert!(v.get("package").is_none() && v.get("integrity").is_none(), "{text}");
        assert_eq!(Manifest::parse(&text).unwrap(), krate);

        let dir = scratch("vendored-crate");
        let vendored = Vendored::in_dir(&dir);
        vendored.write(&krate, &files).unwrap();
        assert!(vendored.verify().unwrap().is_empty());
        assert_eq!(vendored.manifest().unwrap(), Some(krate));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_manifest_from_before_the_authorities_is_an_npm_one() {
        let text = r#"{"package": "@agentclientprotocol/sdk", "version": "2.4.0", "from": "x", "integrity": "sha512-y",
                       "files": {"v1/schema.json": "sha256:00"}}"#;
        let m = Manifest::parse(text).unwrap();
        assert_eq!(m.source, Source::npm("2.4.0"));
        assert_eq!((m.integrity.as_str(), m.generation), ("sha512-y", None));
        let other = text.replace("@agentclientprotocol/sdk", "left-pad");
        assert!(Manifest::parse(&other).unwrap_err().to_string().contains("names package left-pad"));
        let unknown = text.replacen('{', r#"{"authority": "pypi", "#, 1);
        assert!(Manifest::parse(&unknown).unwrap_err().to_string().contains("unknown authority"));
    }

    #[test]
    fn a_source_is_name_at_version_or_a_bare_version() {
        assert_eq!(Source::parse(Authority::Npm, "@agentclientprotocol/sdk@2.4.0").unwrap(), Source::npm("2.4.0"));
        assert_eq!(Source::parse(Authority::Npm, "2.4.0").unwrap(), Source::npm("2.4.0"));
        assert_eq!(Source::parse(Authority::Crate, "agent-client-protocol-schema@1.20.0").unwrap(), Source::krate("1.20.0"));
        assert_eq!(Source::parse(Authority::Crate, "2.0.0-alpha.1").unwrap(), Source::krate("2.0.0-alpha.1"));
        for (authority, bad, says) in [
            (Authority::Npm, "@agentclientprotocol/sdk", "names no version"),
            (Authority::Npm, "agent-client-protocol-schema@1.20.0", "is not a release of"),
            (Authority::Crate, "@agentclientprotocol/sdk@2.4.0", "is not a release of"),
            (Authority::Crate, "agent-client-protocol-schema@", "is not a version"),
            (Authority::Crate, "agent-client-protocol-schema@1.0; rm -rf /", "is not a version"),
            (Authority::Npm, "latest", "is not a version"),
        ] {
            let err = Source::parse(authority, bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        assert_eq!(Source::krate("1.20.0").to_string(), "agent-client-protocol-schema@1.20.0 (crates.io)");
    }
}
