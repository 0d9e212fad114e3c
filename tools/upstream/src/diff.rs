//! `cargo xtask upstream-diff PATH [--allowlist FILE] [--json FILE] [--all] [--ours FILE]`: every
//! difference between the canonical schema (`spec/acp-inject.schema.json`, or `--ours`) and an
//! upstream ACP v2 schema, minus the intended ones named in `spec/upstream-allowlist.json`.
//! Exits non-zero while any unintended difference (drift) remains.
//!
//! # What is compared
//!
//! - **methods** (`x-method` on definitions) present on one side, and their `x-side`;
//! - **definitions** present on one side; a definition that is only reachable through another
//!   reported difference (a missing method, member or variant) is *implied* by it and not
//!   counted again;
//! - per common object (a definition, or a tagged-union variant `Union[tag]`): **members**
//!   added or missing, **required** ↔ optional, **type** changes, and the **markers**
//!   `x-deserialize-default-on-error` / `x-deserialize-skip-invalid-items`;
//! - **values**: enum values and openness, union tags and openness, and error codes (upstream's
//!   `ErrorCode` against the codes our `Error` definition constrains).
//!
//! # Conventions that are normalised away
//!
//! Both schemas are read by the codegen model (`acp_inject_codegen::model`, the reading the
//! generator and the wire crate's drift test use too); this module compares what it reads.
//! Our tagged-union variants are written inline with a `title` naming the body; upstream's refer
//! to a body definition through `allOf`. Both become `Union[tag]` with the body's members, so
//! upstream's body definitions (`UserMessage`, `ContentChunk`, …) are not "definitions only
//! upstream". `{"allOf": [{"$ref": X}]}` is read as `{"$ref": X}`; `x-rust: inline` definitions
//! (`Meta`) are inlined; `x-rust`, `x-aliases`, `x-tristate`, titles, descriptions and the form
//! of the open `other` branch are ignored. Some type differences are reported with a class, so
//! the allowlist can name them as a group: `semantic-string` (upstream `AbsolutePath`,
//! `MediaType`, `PlanId` … vs a plain string), `format` (`format: uri` vs none), `nullability`
//! (only `null` differs) and `untyped` (we keep a value as a raw object where upstream types it).
//! Validation keywords (`minItems`, `pattern`, `minimum`, `if`/`then` …) are not compared.
//!
//! # Reports
//!
//! A human-readable report on stdout (the unintended differences; `--all` adds the allowlisted
//! and implied ones) and, with `--json FILE` (`-` for stdout, then the text goes to stderr), a
//! JSON report of every difference with its key, status, reason and what implies it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use acp_inject_codegen::model::{self, Body, Definition, Enumeration, JsonType, Members, Shape, TaggedUnion, Type, Variant};
use acp_inject_codegen::Error;
use serde_json::{json, Map, Value};

use crate::repo_root as root;

const MARKERS: [&str; 2] = ["x-deserialize-default-on-error", "x-deserialize-skip-invalid-items"];

/// The classes a type difference may carry (and an allowlist entry may name).
const CLASSES: [&str; 4] = ["semantic-string", "format", "nullability", "untyped"];

/// `cargo xtask upstream-diff`'s arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The upstream schema (the ACP repository's schema.json or schema.unstable.json)
    upstream: PathBuf,
    /// The intended differences [default: spec/upstream-allowlist.json]
    #[arg(long, value_name = "FILE")]
    allowlist: Option<PathBuf>,
    /// Also write the whole report as JSON to FILE (`-`: to stdout, the text to stderr)
    #[arg(long, value_name = "FILE|-")]
    json: Option<String>,
    /// List every difference, intended ones included
    #[arg(long)]
    all: bool,
    /// Our schema [default: spec/acp-inject.schema.json]
    #[arg(long, value_name = "FILE")]
    ours: Option<PathBuf>,
}

/// Parses `args` (the program name first) as the command line would, and runs the differ.
pub fn run_args(args: &[String]) -> Result<(), String> {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }
    execute(Cli::try_parse_from(args).map_err(|e| e.to_string())?.args)
}

/// The tests' entry point: `args` without the program name.
#[cfg(test)]
fn run(args: &[String]) -> Result<(), String> {
    run_args(&std::iter::once("upstream-diff".to_owned()).chain(args.iter().cloned()).collect::<Vec<_>>())
}

pub fn execute(args: Args) -> Result<(), String> {
    let Args { upstream: upstream_path, allowlist, json: json_out, all, ours } = args;
    let allowlist_path = allowlist.unwrap_or_else(|| root().join("spec/upstream-allowlist.json"));
    let ours_path = ours.unwrap_or_else(|| root().join("spec/acp-inject.schema.json"));
    let ours = load_json(&ours_path)?;
    let upstream = load_json(&upstream_path)?;
    let allowlist = Allowlist::parse(&load_json(&allowlist_path)?).map_err(|e| format!("{}: {e}", allowlist_path.display()))?;
    let report = compare(&ours, &upstream, &allowlist)?;

    let shown = |p: &Path| p.strip_prefix(root()).unwrap_or(p).display().to_string();
    let text = report.render(&shown(&ours_path), &shown(&upstream_path), all);
    match json_out.as_deref() {
        Some("-") => {
            eprint!("{text}");
            println!("{}", serde_json::to_string_pretty(&report.to_json()).unwrap_or_default());
        }
        Some(file) => {
            print!("{text}");
            let body = serde_json::to_string_pretty(&report.to_json()).unwrap_or_default();
            std::fs::write(file, body + "\n").map_err(|e| format!("cannot write {file}: {e}"))?;
        }
        None => print!("{text}"),
    }
    match report.count(Status::Unintended) {
        0 => Ok(()),
        n => Err(format!(
            "{n} unintended difference(s) from {}: fix the schema, or name the intended ones in {} with a reason",
            upstream_path.display(),
            shown(&allowlist_path)
        )),
    }
}

pub(crate) fn load_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

// ----------------------------------------------------------------------------------------------
// The allowlist
// ----------------------------------------------------------------------------------------------

/// Intended differences: each entry matches difference keys (`*` is a wildcard), optionally only
/// those of one class, and says why.
#[derive(Debug, Clone, Default)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    pattern: String,
    class: Option<String>,
    reason: String,
}

impl Allowlist {
    pub fn parse(value: &Value) -> Result<Allowlist, String> {
        let entries = value.get("entries").and_then(Value::as_array).ok_or("the allowlist needs an `entries` array")?;
        let mut out = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let obj = e.as_object().ok_or_else(|| format!("entry {i} is not an object"))?;
            if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "match" | "class" | "reason")) {
                return Err(format!("entry {i}: unknown field {k:?} (fields: match, class, reason)"));
            }
            let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
            let pattern = text("match").ok_or_else(|| format!("entry {i} has no `match`"))?.to_owned();
            let reason = text("reason").ok_or_else(|| format!("entry {i} ({pattern}) has no `reason`"))?.to_owned();
            let class = match obj.get("class") {
                None => None,
                Some(Value::String(c)) if CLASSES.contains(&c.as_str()) => Some(c.clone()),
                Some(other) => return Err(format!("entry {i} ({pattern}): `class` {other} is not one of {CLASSES:?}")),
            };
            out.push(Entry { pattern, class, reason });
        }
        Ok(Allowlist { entries: out })
    }

    fn find(&self, d: &Difference) -> Option<usize> {
        self.entries.iter().position(|e| glob(&e.pattern, &d.key) && e.class.as_deref().is_none_or(|c| d.class == Some(c)))
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text[first.len()..].ends_with(last) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

// ----------------------------------------------------------------------------------------------
// Differences
// ----------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Unintended,
    Allowlisted,
    Implied,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Unintended => "unintended",
            Status::Allowlisted => "allowlisted",
            Status::Implied => "implied",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Difference {
    /// `category:location`, what allowlist entries match.
    pub key: String,
    pub category: &'static str,
    /// `only-ours`, `only-upstream` or `differs`.
    pub change: &'static str,
    pub location: String,
    pub ours: Option<String>,
    pub upstream: Option<String>,
    pub class: Option<&'static str>,
    pub status: Status,
    pub reason: Option<String>,
    /// The differences this one follows from (definitions reachable only through them).
    pub implied_by: Vec<String>,
}

const CATEGORIES: [&str; 9] = ["method", "side", "definition", "shape", "property", "required", "type", "value", "marker"];

pub struct Report {
    pub upstream_title: String,
    pub differences: Vec<Difference>,
    /// Allowlist entries that matched nothing.
    pub unused: Vec<String>,
}

impl Report {
    pub fn count(&self, status: Status) -> usize {
        self.differences.iter().filter(|d| d.status == status).count()
    }

    #[cfg(test)]
    fn unintended_keys(&self) -> Vec<&str> {
        self.differences.iter().filter(|d| d.status == Status::Unintended).map(|d| d.key.as_str()).collect()
    }

    fn render(&self, ours: &str, upstream: &str, all: bool) -> String {
        let mut out = format!("upstream-diff: {ours} vs {upstream} ({})\n\n", self.upstream_title);
        out.push_str(&format!("{:<12} {:>6} {:>12} {:>8} {:>11}\n", "category", "total", "allowlisted", "implied", "unintended"));
        let row = |name: &str, ds: Vec<&Difference>| {
            let n = |s| ds.iter().filter(|d| d.status == s).count();
            format!(
                "{:<12} {:>6} {:>12} {:>8} {:>11}\n",
                name,
                ds.len(),
                n(Status::Allowlisted),
                n(Status::Implied),
                n(Status::Unintended)
            )
        };
        for c in CATEGORIES {
            let ds: Vec<&Difference> = self.differences.iter().filter(|d| d.category == c).collect();
            if !ds.is_empty() {
                out.push_str(&row(c, ds));
            }
        }
        out.push_str(&row("total", self.differences.iter().collect()));
        let mut section = |title: &str, status: Status| {
            let ds: Vec<&Difference> = self.differences.iter().filter(|d| d.status == status).collect();
            if ds.is_empty() {
                return;
            }
            out.push_str(&format!("\n{title} ({}):\n", ds.len()));
            for d in ds {
                out.push_str(&format!("  {:<10} {:<13} {}", d.category, d.change, d.describe()));
                if let Some(r) = &d.reason {
                    out.push_str(&format!("\n{:27}allowed: {r}", ""));
                }
                if !d.implied_by.is_empty() {
                    out.push_str(&format!("\n{:27}follows from: {}", "", d.implied_by.join(", ")));
                }
                out.push('\n');
            }
        };
        section("unintended drift", Status::Unintended);
        if all {
            section("allowlisted", Status::Allowlisted);
            section("implied by the differences above", Status::Implied);
        }
        if !self.unused.is_empty() {
            out.push_str(&format!("\nallowlist entries that match nothing ({}):\n", self.unused.len()));
            for u in &self.unused {
                out.push_str(&format!("  {u}\n"));
            }
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let mut summary = Map::new();
        for c in CATEGORIES.iter().copied().chain(["total"]) {
            let ds: Vec<&Difference> = self.differences.iter().filter(|d| c == "total" || d.category == c).collect();
            let n = |s| ds.iter().filter(|d| d.status == s).count();
            summary.insert(
                c.to_owned(),
                json!({ "total": ds.len(), "allowlisted": n(Status::Allowlisted), "implied": n(Status::Implied), "unintended": n(Status::Unintended) }),
            );
        }
        let differences: Vec<Value> = self
            .differences
            .iter()
            .map(|d| {
                json!({
                    "key": d.key, "category": d.category, "change": d.change, "location": d.location,
                    "ours": d.ours, "upstream": d.upstream, "class": d.class, "status": d.status.name(),
                    "reason": d.reason, "impliedBy": d.implied_by,
                })
            })
            .collect();
        json!({ "upstream": self.upstream_title, "summary": summary, "differences": differences, "unusedAllowlistEntries": self.unused })
    }
}

impl Difference {
    fn describe(&self) -> String {
        let ty = |t: &Option<String>| t.clone().unwrap_or_else(|| "-".into());
        let class = self.class.map(|c| format!(" [{c}]")).unwrap_or_default();
        match (self.category, self.change) {
            ("required", _) => format!("{}: {}{class}", self.location, ty(&self.ours)),
            (_, "differs") => format!("{}: ours {}, upstream {}{class}", self.location, ty(&self.ours), ty(&self.upstream)),
            (_, "only-ours") => match &self.ours {
                Some(t) => format!("{}: {t}{class}", self.location),
                None => format!("{}{class}", self.location),
            },
            _ => match &self.upstream {
                Some(t) => format!("{}: {t}{class}", self.location),
                None => format!("{}{class}", self.location),
            },
        }
    }
}

// ----------------------------------------------------------------------------------------------
// One schema, read by the codegen model
// ----------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Ours,
    Upstream,
}

fn label(side: Side) -> &'static str {
    match side {
        Side::Ours => "our schema",
        Side::Upstream => "the upstream schema",
    }
}

/// One side of the comparison: the schema as the codegen model reads it, and what the
/// comparison looks up in it.
struct Schema {
    side: Side,
    model: model::Schema,
    /// Upstream-style body definitions: name → the `Union[tag]` owners they are the body of.
    bodies: BTreeMap<String, Vec<String>>,
    /// Methods (`x-method`) → `x-side`.
    methods: BTreeMap<String, Option<String>>,
    /// Definitions by method.
    method_defs: BTreeMap<String, String>,
}

impl Schema {
    fn parse(value: &Value, side: Side) -> Result<Schema, String> {
        let model = model::Schema::read(value).map_err(|e| match e {
            Error::Schema { def, message } if def == "(root)" => format!("{}: {message}", label(side)),
            Error::Schema { def, message } => format!("{}: definition {def}: {message}", label(side)),
            other => format!("{}: {other}", label(side)),
        })?;
        let mut s = Schema { side, model, bodies: BTreeMap::new(), methods: BTreeMap::new(), method_defs: BTreeMap::new() };
        for def in &s.model.defs {
            if let Some(m) = &def.method {
                s.methods.entry(m.clone()).or_insert_with(|| def.side.clone());
                s.method_defs.insert(def.name.clone(), m.clone());
            }
            if let Shape::TaggedUnion(u) = &def.shape {
                for v in &u.variants {
                    if let Body::Definition(body) = &v.body {
                        s.bodies.entry(body.clone()).or_default().push(format!("{}[{}]", def.name, v.value));
                    }
                }
            }
        }
        Ok(s)
    }

    /// The definitions by name, the order the report lists shapes and members in.
    fn sorted(&self) -> Vec<&Definition> {
        let mut defs: Vec<&Definition> = self.model.defs.iter().collect();
        defs.sort_by(|x, y| x.name.cmp(&y.name));
        defs
    }

    fn shape(&self, name: &str) -> Option<&Shape> {
        self.model.def(name).map(|d| &d.shape)
    }

    /// Whether a member schema carries `marker`, itself or through an inlined definition it
    /// references (ours: `_meta` → `Meta`, which carries the marker once for every `_meta`).
    fn has_marker(&self, member: &Value, marker: &str) -> bool {
        member.get(marker) == Some(&Value::Bool(true))
            || model::ref_name(member)
                .and_then(|name| self.model.def(name))
                .is_some_and(|def| def.is_inline() && def.schema.get(marker) == Some(&Value::Bool(true)))
    }

    /// A normalised type description: refs by name (inline definitions inlined), unions sorted.
    fn desc(&self, s: &Value) -> String {
        self.describe(&Type::of(s), 0)
    }

    fn describe(&self, t: &Type, depth: usize) -> String {
        if depth > 8 {
            return "…".into();
        }
        let sorted = |mut parts: Vec<String>| {
            parts.sort();
            parts.join(" | ")
        };
        match t {
            Type::Any => "any".into(),
            Type::Never => "false".into(),
            Type::Ref(name) => match self.model.def(name) {
                Some(def) if def.is_inline() => self.describe(&Type::of(&def.schema), depth + 1),
                _ => name.clone(),
            },
            Type::Const(c) => c.to_string(),
            Type::Enum(values) => sorted(values.iter().map(Value::to_string).collect()),
            Type::AnyOf(ts) => {
                let mut parts: Vec<String> = ts.iter().map(|t| self.describe(t, depth + 1)).collect();
                parts.sort();
                parts.dedup();
                parts.join(" | ")
            }
            Type::Json(ts) => sorted(
                ts.iter()
                    .map(|t| match t {
                        JsonType::Array(items) => format!("array<{}>", self.describe(items, depth + 1)),
                        JsonType::Named { name, format: Some(f) } if matches!(name.as_str(), "integer" | "string" | "number") => {
                            format!("{name}({f})")
                        }
                        JsonType::Named { name, .. } => name.clone(),
                    })
                    .collect(),
            ),
        }
    }

    /// Whether a definition is a plain string (an upstream "semantic string" such as `MediaType`).
    fn is_plain_string(&self, name: &str) -> bool {
        self.model.def(name).is_some_and(|d| {
            matches!(&Type::of(&d.schema), Type::Json(ts) if matches!(&ts[..], [JsonType::Named { name, .. }] if name == "string"))
        })
    }

    fn is_object_def(&self, name: &str) -> bool {
        matches!(self.shape(name), Some(Shape::Object(_) | Shape::TaggedUnion(_)))
    }

    /// Every object to compare member by member: definitions, and union variants `Union[tag]`
    /// (the open branch's members as `Union[*]`).
    fn owners(&self) -> BTreeMap<String, &Members> {
        let mut out = BTreeMap::new();
        for def in &self.model.defs {
            match &def.shape {
                Shape::Object(m) => {
                    out.insert(def.name.clone(), m);
                }
                Shape::TaggedUnion(u) => {
                    for v in &u.variants {
                        out.insert(format!("{}[{}]", def.name, v.value), &v.members);
                    }
                    if let Some(m) = u.open.iter().filter_map(|o| o.members.as_ref()).next_back() {
                        out.insert(format!("{}[*]", def.name), m);
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Where each definition is referenced from: target → (owner, member) pairs. The member is
    /// empty when the reference is not inside a member (an alias, a nested union variant).
    fn references(&self) -> BTreeMap<String, Vec<(String, String)>> {
        let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        let mut add =
            |target: String, owner: &str, member: &str| out.entry(target).or_default().push((owner.to_owned(), member.to_owned()));
        // The root's own references (the message kinds a document validates), not those inside
        // members of inline objects there.
        for (target, member) in model::references(&Value::Object(self.model.root.clone())) {
            if member.is_none() {
                add(target, "(root)", "");
            }
        }
        for def in &self.model.defs {
            let name = &def.name;
            let Shape::TaggedUnion(u) = &def.shape else {
                for (target, member) in model::references(&def.schema) {
                    add(target, name, member.as_deref().unwrap_or(""));
                }
                continue;
            };
            for v in &u.variants {
                let owner = format!("{name}[{}]", v.value);
                for (member, s) in &v.members.properties {
                    for (target, _) in model::references(s) {
                        add(target, &owner, member);
                    }
                }
                if let Body::Union(n) = &v.body {
                    add(n.clone(), &owner, "");
                }
            }
            // Branches without a tag: the open branch (`Union[*]`), or an untagged form.
            for o in &u.open {
                for (target, member) in model::references(&o.schema) {
                    match member {
                        Some(m) => add(target, &format!("{name}[*]"), &m),
                        None => add(target, name, ""),
                    }
                }
            }
        }
        out
    }
}

fn sorted_members(m: &Members) -> BTreeMap<&String, &Value> {
    m.properties.iter().collect()
}

// ----------------------------------------------------------------------------------------------
// Comparing
// ----------------------------------------------------------------------------------------------

struct Diffs {
    items: Vec<Difference>,
}

impl Diffs {
    fn push(
        &mut self,
        category: &'static str,
        change: &'static str,
        key: String,
        location: String,
        ours: Option<String>,
        upstream: Option<String>,
    ) {
        self.items.push(Difference {
            key,
            category,
            change,
            location,
            ours,
            upstream,
            class: None,
            status: Status::Unintended,
            reason: None,
            implied_by: Vec::new(),
        });
    }
}

fn only(side: Side) -> &'static str {
    match side {
        Side::Ours => "only-ours",
        Side::Upstream => "only-upstream",
    }
}

/// Compares our schema with an upstream one and applies the allowlist.
pub fn compare(ours: &Value, upstream: &Value, allowlist: &Allowlist) -> Result<Report, String> {
    let a = Schema::parse(ours, Side::Ours)?;
    let b = Schema::parse(upstream, Side::Upstream)?;
    let mut d = Diffs { items: Vec::new() };

    // Methods.
    for (m, side) in &a.methods {
        match b.methods.get(m) {
            None => d.push("method", "only-ours", format!("method:{m}"), m.clone(), side.clone(), None),
            Some(other) if other != side => d.push("side", "differs", format!("side:{m}"), m.clone(), side.clone(), other.clone()),
            _ => {}
        }
    }
    for (m, side) in &b.methods {
        if !a.methods.contains_key(m) {
            d.push("method", "only-upstream", format!("method:{m}"), m.clone(), None, side.clone());
        }
    }

    // Definitions (upstream body definitions are compared as their variants, inline ones where
    // they are used).
    for (x, y) in [(&a, &b), (&b, &a)] {
        for def in &x.model.defs {
            let name = &def.name;
            if !def.is_inline() && !x.bodies.contains_key(name) && y.model.def(name).is_none() {
                let kind = Some(def.shape.kind().to_owned());
                let (ours, up) = if x.side == Side::Ours { (kind, None) } else { (None, kind) };
                d.push("definition", only(x.side), format!("def:{name}"), name.clone(), ours, up);
            }
        }
    }

    // Shapes of common definitions.
    for def in a.sorted() {
        let (name, sa) = (&def.name, &def.shape);
        let Some(sb) = b.shape(name) else {
            continue;
        };
        if def.is_inline() {
            continue;
        }
        match (sa, sb) {
            (Shape::Object(_), Shape::Object(_)) => {}
            (Shape::TaggedUnion(ua), Shape::TaggedUnion(ub)) => {
                if ua.tag != ub.tag {
                    d.push("value", "differs", format!("tagname:{name}"), name.clone(), Some(ua.tag.clone()), Some(ub.tag.clone()));
                }
                let (oa, ob) = (ua.is_open(), ub.is_open());
                if oa != ob {
                    d.push("value", "differs", format!("open:{name}"), name.clone(), Some(open_text(oa)), Some(open_text(ob)));
                }
                let (va, vb) = (variants(ua), variants(ub));
                for (tag, v) in &va {
                    match vb.get(tag) {
                        None => d.push(
                            "value",
                            "only-ours",
                            format!("tag:{name}[{tag}]"),
                            format!("{name}[{tag}]"),
                            Some(variant_text(v)),
                            None,
                        ),
                        Some(w) if nested(v) != nested(w) => d.push(
                            "type",
                            "differs",
                            format!("type:{name}[{tag}]"),
                            format!("{name}[{tag}]"),
                            Some(variant_text(v)),
                            Some(variant_text(w)),
                        ),
                        _ => {}
                    }
                }
                for (tag, w) in vb {
                    if !va.contains_key(tag) {
                        d.push(
                            "value",
                            "only-upstream",
                            format!("tag:{name}[{tag}]"),
                            format!("{name}[{tag}]"),
                            None,
                            Some(variant_text(w)),
                        );
                    }
                }
            }
            (Shape::Enum(ea), Shape::Enum(eb)) => {
                let (oa, ob) = (ea.is_open(), eb.is_open());
                if oa != ob {
                    d.push("value", "differs", format!("open:{name}"), name.clone(), Some(open_text(oa)), Some(open_text(ob)));
                }
                let values = |e: &Enumeration| e.values.iter().map(|(v, _)| v.clone()).collect::<BTreeSet<String>>();
                let (va, vb) = (values(ea), values(eb));
                for v in va.difference(&vb) {
                    d.push("value", "only-ours", format!("value:{name}={v}"), format!("{name} = {v}"), None, None);
                }
                for v in vb.difference(&va) {
                    d.push("value", "only-upstream", format!("value:{name}={v}"), format!("{name} = {v}"), None, None);
                }
            }
            (Shape::Other, Shape::Other) => {
                let (x, y) = (a.desc(&def.schema), b.desc(&b.model.def(name).expect("a common definition").schema));
                if x != y {
                    d.push("type", "differs", format!("type:{name}"), name.clone(), Some(x), Some(y));
                }
            }
            _ => d.push("shape", "differs", format!("shape:{name}"), name.clone(), Some(sa.kind().into()), Some(sb.kind().into())),
        }
    }

    // Members of every common object.
    let (oa, ob) = (a.owners(), b.owners());
    for (owner, ma) in &oa {
        let Some(mb) = ob.get(owner) else { continue };
        compare_members(&mut d, &a, &b, owner, ma, mb);
    }

    error_codes(&mut d, &a, &b);

    // Classes of type differences.
    for item in d.items.iter_mut().filter(|i| i.category == "type") {
        if let (Some(x), Some(y)) = (&item.ours, &item.upstream) {
            item.class = classify(&a, &b, x, y);
        }
    }

    // Definitions only reachable through other differences are implied by them.
    let keys: BTreeSet<String> = d.items.iter().map(|i| i.key.clone()).collect();
    let (ra, rb) = (a.references(), b.references());
    for i in 0..d.items.len() {
        if d.items[i].category != "definition" {
            continue;
        }
        let (s, refs) = if d.items[i].change == "only-ours" { (&a, &ra) } else { (&b, &rb) };
        let name = d.items[i].location.clone();
        // Implied when every reference to the definition goes through a reported difference
        // (a method's params/result definitions: through the method).
        let mut by = BTreeSet::new();
        let mut unexplained = false;
        if let Some(m) = s.method_defs.get(&name) {
            if keys.contains(&format!("method:{m}")) {
                by.insert(format!("method:{m}"));
            } else {
                unexplained = true;
            }
        }
        for (owner, member) in refs.get(&name).into_iter().flatten() {
            // References from an upstream body definition come from its variants.
            let owners: Vec<String> = s.bodies.get(owner).cloned().unwrap_or_else(|| vec![owner.clone()]);
            for o in owners {
                let union = o.split('[').next().unwrap_or(&o).to_owned();
                let candidates = [
                    format!("def:{o}"),
                    format!("def:{union}"),
                    format!("tag:{o}"),
                    format!("prop:{o}.{member}"),
                    format!("type:{o}.{member}"),
                    format!("type:{o}"),
                ];
                match candidates.iter().find(|k| keys.contains(*k)) {
                    Some(k) => {
                        by.insert(k.clone());
                    }
                    None => unexplained = true,
                }
            }
        }
        if !unexplained {
            d.items[i].implied_by = by.into_iter().collect();
        }
    }

    // The allowlist.
    let mut used = vec![false; allowlist.entries.len()];
    for item in &mut d.items {
        if let Some(e) = allowlist.find(item) {
            used[e] = true;
            item.status = Status::Allowlisted;
            item.reason = Some(allowlist.entries[e].reason.clone());
        } else if !item.implied_by.is_empty() {
            item.status = Status::Implied;
        }
    }
    let unused = allowlist.entries.iter().zip(&used).filter(|(_, u)| !**u).map(|(e, _)| e.pattern.clone()).collect();
    let upstream_title = upstream.get("title").and_then(Value::as_str).unwrap_or("untitled").to_owned();
    Ok(Report { upstream_title, differences: d.items, unused })
}

fn open_text(open: bool) -> String {
    if open { "open" } else { "closed" }.into()
}

/// A union's variants by tag value.
fn variants(u: &TaggedUnion) -> BTreeMap<&str, &Variant> {
    u.variants.iter().map(|v| (v.value.as_str(), v)).collect()
}

/// The union a variant's body is (ours: `state_update` → `StateUpdate`).
fn nested(v: &Variant) -> Option<&str> {
    match &v.body {
        Body::Union(n) => Some(n),
        _ => None,
    }
}

fn variant_text(v: &Variant) -> String {
    match &v.body {
        Body::Union(n) => format!("variant (body: union {n})"),
        Body::Definition(b) => format!("variant (body: {b})"),
        Body::Inline(_) => "variant".into(),
    }
}

fn compare_members(d: &mut Diffs, a: &Schema, b: &Schema, owner: &str, ma: &Members, mb: &Members) {
    for (member, sa) in sorted_members(ma) {
        let at = format!("{owner}.{member}");
        let Some(sb) = mb.properties.get(member) else {
            d.push("property", "only-ours", format!("prop:{at}"), at, Some(a.desc(sa)), None);
            continue;
        };
        let (ta, tb) = (a.desc(sa), b.desc(sb));
        if ta != tb {
            d.push("type", "differs", format!("type:{at}"), at.clone(), Some(ta), Some(tb));
        }
        let (ra, rb) = (ma.required.contains(member), mb.required.contains(member));
        if ra != rb {
            let text = if ra { "required here, optional upstream" } else { "optional here, required upstream" };
            d.push("required", "differs", format!("required:{at}"), at.clone(), Some(text.into()), None);
        }
        for marker in MARKERS {
            let (xa, xb) = (a.has_marker(sa, marker), b.has_marker(sb, marker));
            if xa != xb {
                let side = if xa { Side::Ours } else { Side::Upstream };
                d.push("marker", only(side), format!("marker:{at}:{marker}"), format!("{at}: {marker}"), None, None);
            }
        }
    }
    for (member, sb) in sorted_members(mb) {
        if !ma.properties.contains_key(member) {
            let at = format!("{owner}.{member}");
            d.push("property", "only-upstream", format!("prop:{at}"), at, None, Some(b.desc(sb)));
        }
    }
    // Required members declared without a schema (e.g. inherited) on one side only.
    for member in ma.required.difference(&mb.required) {
        if !ma.properties.contains_key(member) && mb.properties.contains_key(member) {
            let at = format!("{owner}.{member}");
            d.push("required", "differs", format!("required:{at}"), at, Some("required here, optional upstream".into()), None);
        }
    }
}

/// Upstream lists error codes in `ErrorCode`; ours constrains codes in `Error`'s `if`/`then`.
fn error_codes(d: &mut Diffs, a: &Schema, b: &Schema) {
    let ours: BTreeMap<String, Option<String>> = a
        .model
        .def("Error")
        .and_then(|e| e.schema.get("allOf"))
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| {
                    let code = p.pointer("/if/properties/code/const")?.to_string();
                    let message = p.pointer("/then/properties/message/const").and_then(Value::as_str).map(str::to_owned);
                    Some((code, message))
                })
                .collect()
        })
        .unwrap_or_default();
    let upstream: BTreeMap<String, Option<String>> = b
        .model
        .def("ErrorCode")
        .map(|e| {
            model::branches(&e.schema)
                .iter()
                .filter_map(|x| Some((x.get("const")?.to_string(), x.get("title").and_then(Value::as_str).map(str::to_owned))))
                .collect()
        })
        .unwrap_or_default();
    if ours.is_empty() || upstream.is_empty() {
        return;
    }
    for (code, message) in &ours {
        match upstream.get(code) {
            None => d.push("value", "only-ours", format!("code:{code}"), format!("error code {code}"), message.clone(), None),
            Some(m) if message.is_some() && m.is_some() && m != message => d.push(
                "value",
                "differs",
                format!("code-message:{code}"),
                format!("error code {code} message"),
                message.clone(),
                m.clone(),
            ),
            _ => {}
        }
    }
    for (code, message) in &upstream {
        if !ours.contains_key(code) {
            d.push("value", "only-upstream", format!("code:{code}"), format!("error code {code}"), None, message.clone());
        }
    }
}

/// The class of a type difference, when it is one of the named kinds.
fn classify(a: &Schema, b: &Schema, x: &str, y: &str) -> Option<&'static str> {
    let strip_null = |t: &str| union_parts(t).into_iter().filter(|p| p != "null").collect::<Vec<_>>().join(" | ");
    if x != y && strip_null(x) == strip_null(y) {
        return Some("nullability");
    }
    let loosen = |s: &Schema, t: &str| -> (String, bool) {
        let mut semantic = false;
        let text = tokens(t)
            .into_iter()
            .map(|tok| {
                if s.is_plain_string(&tok) {
                    semantic = true;
                    "string".to_owned()
                } else if let Some(base) = ["string(", "integer(", "number("].iter().find(|p| tok.starts_with(**p)) {
                    base.trim_end_matches('(').to_owned()
                } else {
                    tok
                }
            })
            .collect::<String>();
        (sorted_union(&text), semantic)
    };
    let ((lx, sx), (ly, sy)) = (loosen(a, x), loosen(b, y));
    if lx == ly {
        return Some(if sx || sy { "semantic-string" } else { "format" });
    }
    // We keep a raw object (or any value) where upstream names an object type.
    let untyped = sorted_union(
        &tokens(y).into_iter().map(|tok| if b.is_object_def(&tok) { "object".to_owned() } else { tok }).collect::<String>(),
    );
    let any_items = x.replace("array<any>", "array<object>");
    if untyped == x || untyped == any_items || (x == "any" && y != "any") {
        return Some("untyped");
    }
    None
}

/// The top-level members of a `A | B` type description (not splitting inside `array<…>`).
fn union_parts(t: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    let bytes = t.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => depth -= 1,
            b'|' if depth == 0 && i > 0 && bytes[i - 1] == b' ' && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(t[start..i - 1].to_owned());
                start = i + 2;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(t[start..].to_owned());
    parts
}

/// A type description with its top-level union members sorted and deduplicated.
fn sorted_union(t: &str) -> String {
    let mut parts = union_parts(t);
    parts.sort();
    parts.dedup();
    parts.join(" | ")
}

/// A type description split into names and punctuation, so names can be replaced.
fn tokens(t: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in t.chars() {
        if c.is_alphanumeric() || c == '_' || c == '-' {
            word.push(c);
        } else {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            // Keep `(format)` attached to its base type.
            if c == '(' {
                word.push(c);
                continue;
            }
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    // Re-attach `(fmt)` groups: `string`, `(uri`, `)` → `string(uri)`.
    let mut merged: Vec<String> = Vec::new();
    let mut i = 0;
    while i < out.len() {
        if out[i].starts_with('(') && i + 1 < out.len() && out[i + 1] == ")" {
            if let Some(prev) = merged.last_mut() {
                prev.push_str(&out[i]);
                prev.push(')');
                i += 2;
                continue;
            }
        }
        merged.push(out[i].clone());
        i += 1;
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        root().join("tools/upstream/tests/fixtures").join(name)
    }

    fn load(name: &str) -> Value {
        load_json(&fixture(name)).expect("fixture")
    }

    fn allowlist() -> Allowlist {
        Allowlist::parse(&load("upstream-diff-allowlist.json")).expect("fixture allowlist")
    }

    fn status_of<'r>(report: &'r Report, key: &str) -> Option<&'r Difference> {
        report.differences.iter().find(|d| d.key == key)
    }

    /// Our conventions (inline variants, x-rust inline `Meta`, x-aliases, x-tristate) against the
    /// same shapes in upstream's (allOf bodies, allOf-wrapped refs, `other` with `not`): nothing
    /// but the allowlisted extension and what follows from it.
    #[test]
    fn conventions_are_not_differences() {
        let report = compare(&load("upstream-diff-ours.json"), &load("upstream-diff-upstream-same.json"), &allowlist()).unwrap();
        let keys: Vec<(&str, Status)> = report.differences.iter().map(|d| (d.key.as_str(), d.status)).collect();
        assert_eq!(
            keys,
            [
                ("method:session/inject", Status::Allowlisted),
                ("def:InjectRequest", Status::Implied),
                ("def:InjectResponse", Status::Implied),
                ("def:InjectMode", Status::Implied),
            ]
        );
        assert!(report.unused.is_empty());
    }

    /// Each planted difference is reported as drift; without them the same run passes.
    #[test]
    fn planted_differences_are_reported() {
        let report = compare(&load("upstream-diff-ours.json"), &load("upstream-diff-upstream-drift.json"), &allowlist()).unwrap();
        for (key, category, class) in [
            ("method:session/list", "method", None),
            ("prop:PromptRequest.priority", "property", None),
            ("required:PromptResponse._meta", "required", None),
            ("type:NewSessionRequest.cwd", "type", Some("semantic-string")),
            ("value:StopReason=refusal", "value", None),
            ("tag:SessionUpdate[agent_message]", "value", None),
            ("marker:SessionUpdate[user_message].content:x-deserialize-default-on-error", "marker", None),
        ] {
            let d = status_of(&report, key).unwrap_or_else(|| panic!("{key} not reported"));
            assert_eq!((d.category, d.status, d.class), (category, Status::Unintended, class), "{key}");
        }
        // Definitions that only the planted method or member needs follow from them.
        assert_eq!(
            status_of(&report, "def:SessionInfo").map(|d| d.implied_by.clone()),
            Some(vec!["def:ListSessionsResponse".to_owned()])
        );
        assert_eq!(status_of(&report, "def:AbsolutePath").map(|d| d.status), Some(Status::Implied));
        assert_eq!(report.count(Status::Unintended), 7, "{:#?}", report.unintended_keys());
    }

    /// The command fails on drift and passes without it; an allowlist entry silences its match.
    #[test]
    fn the_command_fails_only_on_unintended_drift() {
        let arg = |p: PathBuf| p.display().to_string();
        let base = |upstream: &str, allow: &str| {
            vec![
                arg(fixture(upstream)),
                "--ours".into(),
                arg(fixture("upstream-diff-ours.json")),
                "--allowlist".into(),
                arg(fixture(allow)),
            ]
        };
        assert!(run(&base("upstream-diff-upstream-same.json", "upstream-diff-allowlist.json")).is_ok());
        let err = run(&base("upstream-diff-upstream-drift.json", "upstream-diff-allowlist.json")).unwrap_err();
        assert!(err.starts_with("7 unintended difference(s)"), "{err}");

        let mut entries = load("upstream-diff-allowlist.json");
        let planted = ["method:session/list", "prop:PromptRequest.*", "required:*", "value:*", "tag:*", "marker:*"];
        let list = entries["entries"].as_array_mut().unwrap();
        for m in planted {
            list.push(json!({ "match": m, "reason": "planted in the fixture" }));
        }
        list.push(json!({ "match": "type:*", "class": "semantic-string", "reason": "a named string type" }));
        let allow = Allowlist::parse(&entries).unwrap();
        let report = compare(&load("upstream-diff-ours.json"), &load("upstream-diff-upstream-drift.json"), &allow).unwrap();
        assert_eq!(report.count(Status::Unintended), 0, "{:?}", report.unintended_keys());
        assert!(report.unused.is_empty(), "{:?}", report.unused);
    }

    #[test]
    fn the_json_report_carries_every_difference() {
        let report = compare(&load("upstream-diff-ours.json"), &load("upstream-diff-upstream-drift.json"), &allowlist()).unwrap();
        let json = report.to_json();
        assert_eq!(json["summary"]["total"]["unintended"], 7);
        assert_eq!(json["differences"].as_array().map(Vec::len), Some(report.differences.len()));
        let planted = json["differences"].as_array().unwrap().iter().find(|d| d["key"] == "prop:PromptRequest.priority").unwrap();
        assert_eq!(planted["status"], "unintended");
        assert_eq!(planted["upstream"], "integer(int32) | null");
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        let ours = load("upstream-diff-ours.json");
        for bad in [json!([]), json!({}), json!({ "$defs": [] }), json!({ "$defs": { "X": 3 } })] {
            assert!(compare(&ours, &bad, &Allowlist::default()).is_err(), "{bad}");
        }
        let two_tags = json!({ "$defs": { "U": { "anyOf": [
            { "type": "object", "properties": { "a": { "const": "x" } } },
            { "type": "object", "properties": { "b": { "const": "y" } } }
        ] } } });
        let err = compare(&ours, &two_tags, &Allowlist::default()).err().unwrap_or_default();
        assert!(err.contains("disagree on the tag"), "{err}");
        for bad in [
            json!({}),
            json!({ "entries": [{ "match": "def:X" }] }),
            json!({ "entries": [{ "match": "def:X", "reason": "r", "why": 1 }] }),
            json!({ "entries": [{ "match": "def:X", "reason": "r", "class": "nope" }] }),
        ] {
            assert!(Allowlist::parse(&bad).is_err(), "{bad}");
        }
        let missing = run(&["/no/such/upstream.json".to_owned()]).unwrap_err();
        assert!(missing.contains("cannot read"), "{missing}");
    }

    /// The real allowlist parses, and our schema compared with itself differs in nothing.
    #[test]
    fn the_canonical_schema_and_allowlist_are_well_formed() {
        let spec = load_json(&root().join("spec/acp-inject.schema.json")).unwrap();
        let allow = Allowlist::parse(&load_json(&root().join("spec/upstream-allowlist.json")).unwrap()).unwrap();
        assert!(!allow.entries.is_empty());
        let report = compare(&spec, &spec, &allow).unwrap();
        assert!(report.differences.is_empty(), "{:?}", report.unintended_keys());
    }

    /// Against the vendored upstream draft (spec/upstream/v2/schema.unstable.json) our schema
    /// differs in nothing the allowlist does not name, and every allowlist entry still names
    /// something: the allowlist is exactly the list of intended differences from what we follow.
    #[test]
    fn the_vendored_upstream_draft_differs_only_as_the_allowlist_says() {
        let spec = load_json(&root().join("spec/acp-inject.schema.json")).unwrap();
        let upstream = load_json(&root().join("spec/upstream/v2/schema.unstable.json")).unwrap();
        let allow = Allowlist::parse(&load_json(&root().join("spec/upstream-allowlist.json")).unwrap()).unwrap();
        let report = compare(&spec, &upstream, &allow).unwrap();
        assert!(report.unintended_keys().is_empty(), "unintended: {:?}", report.unintended_keys());
        assert!(report.unused.is_empty(), "allowlist entries that match nothing: {:?}", report.unused);
    }

    /// The allowlist entries named in the last column of spec/README.md's deviation table: an
    /// entry is written as its `match`, followed by ` [class]` when it has one.
    fn table_entries(readme: &str) -> Result<Vec<String>, String> {
        let start = readme.find("## Deviations from").ok_or("spec/README.md has no `## Deviations from` section")?;
        let rows: Vec<&str> = readme[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2) // the header and its rule
            .collect();
        if rows.is_empty() {
            return Err("the deviation table has no rows".into());
        }
        let mut names = Vec::new();
        for row in rows {
            // Cells are separated by ` | `; an escaped `\|` inside a cell has no space before it.
            let last = row.trim_end().trim_end_matches('|').rsplit(" | ").next().unwrap_or_default();
            let spans: Vec<&str> = last.split('`').skip(1).step_by(2).collect();
            if spans.is_empty() {
                return Err(format!("a deviation row names no allowlist entry: {row}"));
            }
            names.extend(spans.into_iter().map(str::to_owned));
        }
        Ok(names)
    }

    fn entry_names(allow: &Allowlist) -> Vec<String> {
        allow.entries.iter().map(|e| e.class.as_ref().map_or(e.pattern.clone(), |c| format!("{} [{c}]", e.pattern))).collect()
    }

    /// Every allowlist entry appears in exactly one row of spec/README.md's deviation table,
    /// and the table names nothing the allowlist does not hold.
    #[test]
    fn the_deviation_table_names_every_allowlist_entry() {
        let readme = std::fs::read_to_string(root().join("spec/README.md")).unwrap();
        let allow = Allowlist::parse(&load_json(&root().join("spec/upstream-allowlist.json")).unwrap()).unwrap();
        let named = table_entries(&readme).unwrap();
        let entries = entry_names(&allow);
        let mut problems = Vec::new();
        for e in &entries {
            match named.iter().filter(|n| *n == e).count() {
                1 => {}
                0 => problems.push(format!("allowlist entry `{e}` is not in spec/README.md's deviation table")),
                n => problems.push(format!("allowlist entry `{e}` is named by {n} rows of the deviation table")),
            }
        }
        for n in named.iter().filter(|n| !entries.contains(n)) {
            problems.push(format!("the deviation table names `{n}`, which spec/upstream-allowlist.json does not hold"));
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn the_deviation_table_is_read_from_its_last_column() {
        let readme = "# x\n\n## Deviations from upstream\n\n| What | Change | Entries |\n|---|---|---|\n\
                      | a | `x` \\| `y` | `method:a` `type:* [format]` |\n| b | c | `def:B` |\n\nprose `def:C`\n";
        assert_eq!(table_entries(readme).unwrap(), ["method:a", "type:* [format]", "def:B"]);
        assert!(table_entries("## Deviations from\n\n| a | b |\n|---|---|\n| x | none |\n").is_err());
        let allow = Allowlist::parse(&json!({ "entries": [
            { "match": "method:a", "reason": "r" },
            { "match": "type:*", "class": "format", "reason": "r" }
        ] }))
        .unwrap();
        assert_eq!(entry_names(&allow), ["method:a", "type:* [format]"]);
    }

    #[test]
    fn glob_matches_runs_of_characters() {
        assert!(glob("method:nes/*", "method:nes/start"));
        assert!(glob("*:ClientRequest.*", "type:ClientRequest.params"));
        assert!(!glob("*:ClientRequest.*", "type:ClientRequestX"));
        assert!(glob("code:-32010", "code:-32010"));
        assert!(!glob("code:-3201", "code:-32010"));
        assert!(glob("a*b*c", "axxbyyc") && !glob("a*b*c", "axxcyyb"));
    }

    #[test]
    fn type_classes() {
        assert_eq!(union_parts("array<A | B> | null"), ["array<A | B>", "null"]);
        assert_eq!(sorted_union("null | MediaType"), "MediaType | null");
        assert_eq!(tokens("string(uri) | null").concat(), "string(uri) | null");
    }
}
