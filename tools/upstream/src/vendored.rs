//! The vendored upstream schemas: `spec/upstream/{v1,v2}/schema{,.unstable}.json`, byte for
//! byte as the official TypeScript SDK's npm package carries them under `package/schema/`, and
//! `spec/upstream/manifest.json` saying which package, which version, the tarball's integrity
//! as npm reports it, and the SHA-256 of every file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::Error;

/// The npm package whose release carries the schemas.
pub const PACKAGE: &str = "@agentclientprotocol/sdk";

/// The schema files vendored, by their path under the package's `schema/` folder.
pub const FILES: [&str; 4] = ["v1/schema.json", "v1/schema.unstable.json", "v2/schema.json", "v2/schema.unstable.json"];

/// The folder of the vendored copy, relative to the repository.
pub const DIR: &str = "spec/upstream";

/// What `manifest.json` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The npm package.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The tarball's integrity (`sha512-…`), as npm reports it.
    pub integrity: String,
    /// `sha256:<hex>` of every vendored file, by path under `schema/`.
    pub files: BTreeMap<String, String>,
}

impl Manifest {
    /// The manifest for these file contents.
    pub fn new(version: &str, integrity: &str, files: &BTreeMap<String, Vec<u8>>) -> Manifest {
        Manifest {
            package: PACKAGE.to_owned(),
            version: version.to_owned(),
            integrity: integrity.to_owned(),
            files: files.iter().map(|(p, bytes)| (p.clone(), sha256(bytes))).collect(),
        }
    }

    /// The manifest as written (keys sorted, two-space indentation, a final newline).
    pub fn to_text(&self) -> String {
        let value = json!({
            "package": self.package,
            "version": self.version,
            "from": "the package's tarball as `npm pack` fetches it: package/schema/<file>, unchanged",
            "integrity": self.integrity,
            "files": self.files,
        });
        serde_json::to_string_pretty(&value).expect("JSON values serialize") + "\n"
    }

    /// Reads a manifest.
    pub fn parse(text: &str) -> Result<Manifest, Error> {
        let v: Value = serde_json::from_str(text).map_err(|e| Error::Invalid(format!("manifest.json is not JSON: {e}")))?;
        let field = |k: &str| {
            v.get(k).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| Error::Invalid(format!("manifest.json has no `{k}`")))
        };
        let files = v
            .get("files")
            .and_then(Value::as_object)
            .ok_or_else(|| Error::Invalid("manifest.json has no `files` object".into()))?
            .iter()
            .map(|(k, h)| {
                Ok((k.clone(), h.as_str().ok_or_else(|| Error::Invalid(format!("manifest.json: {k} is not a string")))?.to_owned()))
            })
            .collect::<Result<_, Error>>()?;
        Ok(Manifest { package: field("package")?, version: field("version")?, integrity: field("integrity")?, files })
    }
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
    /// The copy under `root`.
    pub fn at(root: &Path) -> Vendored {
        Vendored { dir: root.join(DIR) }
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
        if manifest.package != PACKAGE {
            problems.push(format!("the manifest names package {}, not {PACKAGE}", manifest.package));
        }
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

    #[test]
    fn the_vendored_copy_is_what_its_manifest_says() {
        let vendored = Vendored::at(&crate::repo_root());
        let problems = vendored.verify().unwrap();
        assert!(problems.is_empty(), "{problems:#?}\nrestore it with `cargo xtask upstream bump VERSION`");
        assert_eq!(vendored.manifest().unwrap().unwrap().files.len(), FILES.len());
    }

    #[test]
    fn a_changed_file_is_caught() {
        let dir = std::env::temp_dir().join(format!("acp-upstream-vendored-{}", std::process::id()));
        let vendored = Vendored { dir: dir.clone() };
        let files: BTreeMap<String, Vec<u8>> =
            FILES.iter().map(|f| (f.to_string(), format!("{{\"f\":\"{f}\"}}").into_bytes())).collect();
        let manifest = Manifest::new("9.9.9", "sha512-x", &files);
        assert_eq!(vendored.write(&manifest, &files).unwrap().len(), FILES.len() + 1);
        assert!(vendored.verify().unwrap().is_empty());
        assert!(vendored.write(&manifest, &files).unwrap().is_empty(), "writing the same bytes changes nothing");
        assert_eq!(Manifest::parse(&manifest.to_text()).unwrap(), manifest);
        std::fs::write(vendored.path("v2/schema.json"), b"{}").unwrap();
        std::fs::remove_file(vendored.path("v1/schema.json")).unwrap();
        let problems = vendored.verify().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("v1/schema.json is missing"));
        assert!(problems[1].contains("v2/schema.json was changed by hand"));
    }
}
