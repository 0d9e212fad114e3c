//! `cargo xtask upstream bump [--npm @agentclientprotocol/sdk@VERSION | --crate
//! agent-client-protocol-schema@VERSION | VERSION] [--dir DIR]`: replaces the vendored schemas
//! with those of a release of either upstream authority, and reports what changed, per language.
//!
//! - `--npm`: the official TypeScript SDK's npm package, fetched with `npm pack` into the cache;
//!   its files are vendored byte for byte ([`crate::npm`]). A bare `VERSION` is the same (the
//!   command's first form, kept).
//! - `--crate`: the official Rust schema crate; the files are generated from its types in a
//!   throwaway project in the cache, as upstream generates its published schema
//!   ([`crate::schema_crate`]).
//! - Neither: the newest release of each is looked up (`npm view`, `cargo info`), both are
//!   fetched, and the newer schema wins ([`choose`]: by the content of the v2 draft, which this
//!   toolkit builds on), with the reason printed.
//!
//! `--dir DIR` writes the copy into DIR instead of `spec/upstream/` (to try a release without
//! touching the repository's copy). xtask then regenerates every language (unless `--dir`
//! names another folder) and runs the differ against the new unstable v2 schema. A bump to the
//! release already vendored changes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use heck::{ToLowerCamelCase, ToShoutySnakeCase, ToSnakeCase, ToUpperCamelCase};
use serde_json::Value;

use crate::diff::{compare, Allowlist, Difference};
use crate::vendored::{Authority, Manifest, Source, Vendored, FILES};
use crate::{npm, schema_crate, Error};

/// `cargo xtask upstream bump`'s arguments.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// A release of the npm package: the same as `--npm @agentclientprotocol/sdk@VERSION`
    #[arg(value_name = "VERSION", conflicts_with_all = ["npm", "krate"])]
    pub version: Option<String>,
    /// Vendor the schemas a release of the official TypeScript SDK's npm package carries
    /// (fetched with npm pack into the cache)
    #[arg(long, value_name = "@agentclientprotocol/sdk@VERSION", conflicts_with = "krate")]
    pub npm: Option<String>,
    /// Generate the schemas from a release of the official Rust schema crate (built in a
    /// throwaway project in the cache), as upstream generates its published ones
    #[arg(long = "crate", value_name = "agent-client-protocol-schema@VERSION")]
    pub krate: Option<String>,
    /// Write the copy into DIR instead of spec/upstream/ (then nothing is regenerated; the differ
    /// still runs against DIR/v2/schema.unstable.json)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl Args {
    /// The release asked for; `None` when none is: then the newer of both authorities' newest
    /// ([`newest`]).
    pub fn source(&self) -> Result<Option<Source>, Error> {
        match (&self.version, &self.npm, &self.krate) {
            (None, None, None) => Ok(None),
            (Some(spec), None, None) | (None, Some(spec), None) => Source::parse(Authority::Npm, spec).map(Some),
            (None, None, Some(spec)) => Source::parse(Authority::Crate, spec).map(Some),
            _ => Err(Error::Invalid("name one release: --npm, --crate or a bare VERSION".into())),
        }
    }
}

/// A release fetched (npm) or generated (crate), not written yet.
#[derive(Debug)]
pub struct Fetched {
    pub manifest: Manifest,
    pub files: BTreeMap<String, Vec<u8>>,
    /// How the files were made, for the report (a crate's features and root per file).
    pub notes: Vec<String>,
}

/// Fetches (npm) or generates (crate) one release; `cache` holds the tarballs and the
/// generator's projects.
pub fn fetch(cache: &Path, source: &Source) -> Result<Fetched, Error> {
    match source.authority {
        Authority::Npm => {
            let packed = npm::fetch(cache, &source.version)?;
            let manifest = Manifest::npm(&source.version, &packed.integrity, &packed.files);
            Ok(Fetched { manifest, files: packed.files, notes: Vec::new() })
        }
        Authority::Crate => {
            let generated = schema_crate::generate(cache, &source.version)?;
            let g = &generated.generation;
            let lock =
                if g.upstream_lock { "dependencies as the crate's own Cargo.lock names them" } else { "dependencies resolved now" };
            let mut notes = vec![format!("generated from {source}: checksum {}, schemars {}, {lock}", generated.checksum, g.schemars)];
            for (file, root) in &generated.roots {
                let features = g.features.get(file).filter(|f| !f.is_empty()).map(|f| f.join(", ")).unwrap_or_else(|| "none".into());
                notes.push(format!("  {file:<24} features: {features:<34} root: {}", root.join(", ")));
            }
            let manifest = Manifest::krate(&source.version, &generated.checksum, generated.generation, &generated.files);
            Ok(Fetched { manifest, files: generated.files, notes })
        }
    }
}

/// Which release a bump without a flag vendors, and why.
#[derive(Debug)]
pub struct Choice {
    pub fetched: Fetched,
    pub why: String,
}

/// The newest release of each authority (`npm view`, `cargo info`), both fetched, and the
/// newer one ([`choose`]).
pub fn newest(cache: &Path) -> Result<Choice, Error> {
    let npm = Source::npm(&npm::latest()?);
    let krate = Source::krate(&schema_crate::latest(cache)?);
    eprintln!("newest releases: {npm} and {krate}");
    let npm = fetch(cache, &npm)?;
    let krate = fetch(cache, &krate)?;
    choose(npm, krate)
}

/// The file "newer" is decided on: the v2 draft, which this toolkit's schema is assembled from.
pub const DECIDING_FILE: &str = "v2/schema.unstable.json";

/// Picks the newer of an npm release and a crate release by their v2 drafts, compared with the
/// differ (methods, definitions, members, types, values, markers):
///
/// - no difference: the npm release (its files are upstream's published bytes);
/// - one has everything the other has, and more: that one;
/// - each has something the other lacks (or a member differs): the crate. The npm package's
///   schemas are cut from a release of the upstream repository that publishes the crate, so
///   they diverge when the crate moved on since; `--npm` vendors the package anyway.
pub fn choose(npm: Fetched, krate: Fetched) -> Result<Choice, Error> {
    let draft = |f: &Fetched| json(f.files.get(DECIDING_FILE).map(Vec::as_slice).unwrap_or_default(), DECIDING_FILE);
    let report = compare(&draft(&npm)?, &draft(&krate)?, &Allowlist::default()).map_err(Error::Invalid)?;
    let (n, k) = (npm.manifest.source.clone(), krate.manifest.source.clone());
    let keys =
        |change: &str| -> Vec<&str> { report.differences.iter().filter(|d| d.change == change).map(|d| d.key.as_str()).collect() };
    let (only_npm, only_crate, differ) = (keys("only-ours"), keys("only-upstream"), keys("differs"));
    let some = |keys: &[&str]| {
        let shown: Vec<&str> = keys.iter().take(4).copied().collect();
        format!("{}{}", shown.join(", "), if keys.len() > shown.len() { ", …" } else { "" })
    };
    let (winner, why) = if report.differences.is_empty() {
        (npm, format!("the {DECIDING_FILE} of {n} and of {k} do not differ: the npm release is vendored, as published"))
    } else if only_npm.is_empty() && differ.is_empty() {
        (krate, format!("the {DECIDING_FILE} of {k} has everything {n}'s has, and {} more ({})", only_crate.len(), some(&only_crate)))
    } else if only_crate.is_empty() && differ.is_empty() {
        (npm, format!("the {DECIDING_FILE} of {n} has everything {k}'s has, and {} more ({})", only_npm.len(), some(&only_npm)))
    } else {
        let mut parts = Vec::new();
        for (what, keys) in
            [("only the crate's has", &only_crate), ("only the npm package's has", &only_npm), ("both have, differently", &differ)]
        {
            if !keys.is_empty() {
                parts.push(format!("{} {what} ({})", keys.len(), some(keys)));
            }
        }
        let why = format!(
            "the {DECIDING_FILE} of {n} and of {k} diverge: {}. The npm package's schemas are cut from a release of the \
             upstream repository that publishes the crate, so the crate is taken as the newer; say --npm to vendor the \
             package instead",
            parts.join("; ")
        );
        (krate, why)
    };
    Ok(Choice { fetched: winner, why })
}

/// What a bump did.
#[derive(Debug)]
pub struct Bumped {
    /// The release vendored before (`None` when nothing was).
    pub from: Option<Source>,
    /// The release vendored now.
    pub to: Source,
    /// How the new files were made.
    pub notes: Vec<String>,
    /// The files whose bytes changed.
    pub written: Vec<PathBuf>,
    /// The upstream changes between the two releases, per vendored file.
    pub changes: BTreeMap<String, Vec<Difference>>,
}

impl Bumped {
    /// The report for people: per file, each change and how each language will spell it.
    pub fn render(&self) -> String {
        let mut out = match &self.from {
            // The same authority: `@agentclientprotocol/sdk: 2.2.0 -> 2.4.0`.
            Some(from) if from.authority == self.to.authority => {
                format!("{}: {} -> {}\n", self.to.authority.name(), from.version, self.to.version)
            }
            Some(from) => format!("{from} -> {}\n", self.to),
            None => format!("{}: (nothing vendored) -> {}\n", self.to.authority.name(), self.to.version),
        };
        for note in &self.notes {
            out.push_str(note);
            out.push('\n');
        }
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
                let what = if changes.is_empty() {
                    "only the text changed (no difference the differ sees)"
                } else {
                    "only decoding markers (x-deserialize-*) changed"
                };
                out.push_str(&format!("\n{file}: {what}\n"));
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

/// Replaces the copy in `dir` with a fetched release, and compares it with what was there.
pub fn bump(dir: &Path, fetched: Fetched) -> Result<Bumped, Error> {
    let vendored = Vendored::in_dir(dir);
    let before = vendored.manifest()?;
    let old = vendored.files()?;
    let Fetched { manifest, files, notes } = fetched;
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
    Ok(Bumped { from: before.map(|m| m.source), to: manifest.source, notes, written, changes })
}

fn json(bytes: &[u8], file: &str) -> Result<Value, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Invalid(format!("{file} is not JSON: {e}")))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vendored::{Generation, CRATE, PACKAGE};
    use clap::Parser;
    use serde_json::json;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(args: &[&str]) -> Result<Option<Source>, String> {
        let cli = Cli::try_parse_from(std::iter::once("bump").chain(args.iter().copied())).map_err(|e| e.to_string())?;
        cli.args.source().map_err(|e| e.to_string())
    }

    #[test]
    fn the_arguments_name_one_release_of_one_authority_or_none() {
        assert_eq!(parse(&["--npm", "@agentclientprotocol/sdk@2.4.0"]), Ok(Some(Source::npm("2.4.0"))));
        assert_eq!(parse(&["--crate", "agent-client-protocol-schema@1.20.0"]), Ok(Some(Source::krate("1.20.0"))));
        assert_eq!(parse(&["--crate=1.20.0"]), Ok(Some(Source::krate("1.20.0"))));
        // The first form of the command: a bare version is the npm package's.
        assert_eq!(parse(&["2.4.0"]), Ok(Some(Source::npm("2.4.0"))));
        assert_eq!(parse(&[]), Ok(None));
        for conflicting in [
            &["--npm", "2.4.0", "--crate", "1.20.0"][..],
            &["2.4.0", "--crate", "agent-client-protocol-schema@1.20.0"],
            &["2.4.0", "--npm", "@agentclientprotocol/sdk@2.4.0"],
        ] {
            let err = parse(conflicting).unwrap_err();
            assert!(err.contains("cannot be used with"), "{conflicting:?}: {err}");
        }
        assert!(parse(&["--crate", "@agentclientprotocol/sdk@2.4.0"])
            .unwrap_err()
            .contains("is not a release of agent-client-protocol-schema"));
        assert!(parse(&["agent-client-protocol-schema@1.20.0"]).unwrap_err().contains("is not a release of @agentclientprotocol/sdk"));
        let cli = Cli::try_parse_from(["bump", "--crate", "1.20.0", "--dir", "/tmp/x"]).unwrap();
        assert_eq!(cli.args.dir, Some(PathBuf::from("/tmp/x")));
    }

    /// A small v2 draft (the differ's fixture) with extra definitions.
    fn draft(extra: &[&str]) -> Vec<u8> {
        let text = std::fs::read_to_string(crate::repo_root().join("tools/upstream/tests/fixtures/upstream-diff-upstream-same.json"))
            .unwrap();
        let mut schema: Value = serde_json::from_str(&text).unwrap();
        for name in extra {
            schema["$defs"][*name] = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        }
        serde_json::to_vec_pretty(&schema).unwrap()
    }

    fn fetched(source: Source, extra: &[&str]) -> Fetched {
        let files: BTreeMap<String, Vec<u8>> = FILES.iter().map(|f| (f.to_string(), draft(extra))).collect();
        let manifest = match source.authority {
            Authority::Npm => Manifest::npm(&source.version, "sha512-x", &files),
            Authority::Crate => {
                let generation = Generation { schemars: "1.2.3".into(), upstream_lock: false, features: BTreeMap::new() };
                Manifest::krate(&source.version, "abc", generation, &files)
            }
        };
        Fetched { manifest, files, notes: vec![] }
    }

    fn chosen(npm: &[&str], krate: &[&str]) -> (Authority, String) {
        let choice = choose(fetched(Source::npm("2.4.0"), npm), fetched(Source::krate("1.20.0"), krate)).unwrap();
        (choice.fetched.manifest.source.authority, choice.why)
    }

    #[test]
    fn the_newer_schema_is_the_one_whose_v2_draft_has_more() {
        let (who, why) = chosen(&[], &[]);
        assert_eq!(who, Authority::Npm, "{why}");
        assert!(why.contains("do not differ"), "{why}");
        let (who, why) = chosen(&[], &["Added"]);
        assert_eq!(who, Authority::Crate, "{why}");
        assert!(
            why.contains("has everything @agentclientprotocol/sdk@2.4.0 (npm)'s has, and 1 more (definition:def:Added)")
                || why.contains("1 more"),
            "{why}"
        );
        let (who, why) = chosen(&["Added"], &[]);
        assert_eq!(who, Authority::Npm, "{why}");
        let (who, why) = chosen(&["OnlyNpm"], &["OnlyCrate"]);
        assert_eq!(who, Authority::Crate, "{why}");
        assert!(why.contains("diverge") && why.contains("say --npm"), "{why}");
    }

    #[test]
    fn a_bump_writes_the_release_and_reports_across_authorities() {
        let dir = std::env::temp_dir().join(format!("acp-upstream-bump-{}", std::process::id()));
        let first = bump(&dir, fetched(Source::npm("2.4.0"), &[])).unwrap();
        assert_eq!((first.from.as_ref(), first.written.len()), (None, FILES.len() + 1));
        assert!(first.render().starts_with(&format!("{PACKAGE}: (nothing vendored) -> 2.4.0\n")), "{}", first.render());
        let again = bump(&dir, fetched(Source::npm("2.4.0"), &[])).unwrap();
        assert!(again.written.is_empty());
        assert!(again.render().ends_with("nothing changed\n"), "{}", again.render());
        let mut krate = fetched(Source::krate("1.20.0"), &["Added"]);
        krate.notes.push("generated from here".into());
        let moved = bump(&dir, krate).unwrap();
        let text = moved.render();
        assert!(text.starts_with(&format!("{PACKAGE}@2.4.0 (npm) -> {CRATE}@1.20.0 (crates.io)\ngenerated from here\n")), "{text}");
        assert!(text.contains("definition added    Added: object"), "{text}");
        assert_eq!(Vendored::in_dir(&dir).manifest().unwrap().unwrap().source, Source::krate("1.20.0"));
        assert!(Vendored::in_dir(&dir).verify().unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
