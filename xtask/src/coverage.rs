//! The rule-coverage table (`generated/docs/vector-coverage.md`): every rule id of the
//! semantics brief and the vectors naming it. Written by `cargo xtask codegen`, so it cannot
//! drift from the vectors.

use std::collections::BTreeMap;
use std::path::Path;

/// Rule ids (`R-…`, `C-…`) in order of first appearance, with the sentence that defines them.
fn rules(semantics: &str) -> Vec<(String, String)> {
    let mut ids: Vec<String> = Vec::new();
    for word in semantics.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        let is_rule = (word.starts_with("R-") || word.starts_with("C-")) && word.ends_with(|c: char| c.is_ascii_digit());
        if is_rule && !ids.iter().any(|id| id == word) {
            ids.push(word.to_owned());
        }
    }
    // Defined rules (`- **R-…**`) in the brief's order, then ids only mentioned elsewhere.
    let defined = |id: &String| semantics.find(&format!("**{id}**"));
    ids.sort_by_key(|id| defined(id).unwrap_or(usize::MAX));
    ids.into_iter()
        .map(|id| {
            let summary = semantics
                .lines()
                .find_map(|l| l.split_once(&format!("**{id}**")).map(|(_, rest)| rest.trim()))
                .unwrap_or("(mentioned in the wire surface)");
            let mut summary: String = summary.replace('|', "\\|").chars().take(110).collect();
            if summary.chars().count() >= 110 {
                summary.push('…');
            }
            (id, summary)
        })
        .collect()
}

pub fn render(root: &Path, semantics: &str) -> Result<String, String> {
    let mut by_rule: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut count = BTreeMap::new();
    for side in ["agent", "client"] {
        let dir = root.join("spec/vectors").join(side);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        *count.entry(side).or_insert(0) += files.len();
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
            let name = format!("{side}/{}", f.file_name().unwrap_or_default().to_string_lossy());
            for r in v["rules"].as_array().into_iter().flatten().filter_map(|r| r.as_str()) {
                by_rule.entry(r.to_owned()).or_default().push(format!("`{name}`"));
            }
        }
    }
    let mut s = String::from("# Rule coverage of the conformance vectors\n\n");
    s.push_str(&format!(
        "Every rule id of the semantics brief (`SEMANTICS.md`) and the vectors in `spec/vectors/` that name it. \
         {} vectors: {} agent-side, {} client-side. `cargo test` fails while a rule has none.\n\n",
        count.values().sum::<usize>(),
        count["agent"],
        count["client"]
    ));
    s.push_str("| rule | summary | vectors |\n|---|---|---|\n");
    for (id, summary) in rules(semantics) {
        let vectors = by_rule.get(&id).map(|v| v.join("<br>")).unwrap_or_else(|| "**none**".into());
        s.push_str(&format!("| {id} | {summary} | {vectors} |\n"));
    }
    Ok(s)
}
