//! The rule-coverage table (`generated/docs/vector-coverage.md`): every rule id of
//! `spec/rules.md`, linked to its heading there, with the vectors naming it. Written by
//! `cargo xtask codegen`, so it cannot drift from the vectors or the catalogue.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::Error;

/// The catalogue, relative to the repository root.
pub const RULES: &str = "spec/rules.md";

/// One rule of the catalogue: its id and the first sentence of its text.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    pub id: String,
    pub summary: String,
}

fn is_rule_id(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(side), Some(topic), Some(n), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    matches!(side, "R" | "C")
        && topic.starts_with(|c: char| c.is_ascii_uppercase())
        && topic.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && !n.is_empty()
        && n.chars().all(|c| c.is_ascii_digit())
}

/// The rules of the catalogue in document order: every `### <ID>` heading, and the first
/// sentence of the paragraph under it (at most 110 characters).
pub fn rules(catalogue: &str) -> Result<Vec<Rule>, Error> {
    let lines: Vec<&str> = catalogue.lines().collect();
    let mut out: Vec<Rule> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(id) = line.strip_prefix("### ").map(str::trim) else { continue };
        if !is_rule_id(id) {
            continue;
        }
        if out.iter().any(|r| r.id == id) {
            return Err(Error::msg(format!("{RULES}: rule {id} is defined twice")));
        }
        let paragraph: Vec<&str> =
            lines[i + 1..].iter().map(|l| l.trim()).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
        let text = paragraph.join(" ");
        if text.is_empty() || text.starts_with('#') {
            return Err(Error::msg(format!("{RULES}: rule {id} has no text under its heading")));
        }
        let sentence = text.split_inclusive(". ").next().unwrap_or(&text).trim_end();
        let mut summary: String = sentence.replace('|', "\\|").chars().take(110).collect();
        if sentence.chars().count() > 110 {
            summary.push('…');
        }
        out.push(Rule { id: id.to_owned(), summary });
    }
    Ok(out)
}

/// GitHub's anchor for a heading that is only a rule id: lower case, dashes kept.
pub fn anchor(id: &str) -> String {
    id.to_ascii_lowercase()
}

pub fn render(root: &Path, catalogue: &str) -> Result<String, Error> {
    let rules = rules(catalogue)?;
    if rules.len() < 30 {
        return Err(Error::msg(format!("{RULES}: found only {} rule headings (`### R-…`)", rules.len())));
    }
    let mut by_rule: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut count = BTreeMap::new();
    for side in ["agent", "client"] {
        let dir = root.join("spec/vectors").join(side);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| Error::read(&dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        *count.entry(side).or_insert(0) += files.len();
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|e| Error::read(&f, e))?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", f.display())))?;
            let name = format!("{side}/{}", f.file_name().unwrap_or_default().to_string_lossy());
            for r in v["rules"].as_array().into_iter().flatten().filter_map(|r| r.as_str()) {
                if !rules.iter().any(|rule| rule.id == r) {
                    return Err(Error::msg(format!("spec/vectors/{name} names {r}, which {RULES} does not define")));
                }
                by_rule.entry(r.to_owned()).or_default().push(format!("`{name}`"));
            }
        }
    }
    let mut s = String::from("# Rule coverage of the conformance vectors\n\n");
    let _ = write!(
        s,
        "Every rule id of [`spec/rules.md`](../../spec/rules.md) and the vectors in `spec/vectors/` that name it. \
         {} vectors: {} agent-side, {} client-side. `cargo test` fails while a rule has none.\n\n",
        count.values().sum::<usize>(),
        count["agent"],
        count["client"]
    );
    s.push_str("| rule | summary | vectors |\n|---|---|---|\n");
    for Rule { id, summary } in rules {
        let vectors = by_rule.get(&id).map(|v| v.join("<br>")).unwrap_or_else(|| "**none**".into());
        let _ = writeln!(s, "| [{id}](../../spec/rules.md#{}) | {summary} | {vectors} |", anchor(&id));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rule_headings_and_their_first_sentence() {
        let text = "# Rules\n\n### R-WIRE-3\n\nOpen enums stay open. More text\nhere.\n\n### Not-a-rule\n\nx\n\n### C-MSG-1\nUpserts | keyed.\n";
        let rules = rules(text).unwrap();
        assert_eq!(
            rules,
            [
                Rule { id: "R-WIRE-3".into(), summary: "Open enums stay open.".into() },
                Rule { id: "C-MSG-1".into(), summary: "Upserts \\| keyed.".into() }
            ]
        );
        assert!(super::rules("### R-A-1\n\ntext\n\n### R-A-1\n\nagain\n").is_err());
        assert!(super::rules("### R-A-1\n\n### R-A-2\n\ntext\n").is_err());
    }

    #[test]
    fn the_catalogue_defines_every_rule_once_with_text() {
        let catalogue = std::fs::read_to_string(crate::root().join(RULES)).unwrap();
        let rules = rules(&catalogue).unwrap();
        assert!(rules.len() >= 30, "{rules:?}");
        // Every id mentioned anywhere in the catalogue is one of its headings.
        for word in catalogue.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            if is_rule_id(word) {
                assert!(rules.iter().any(|r| r.id == word), "{RULES} mentions {word} but has no `### {word}` heading");
            }
        }
    }
}
