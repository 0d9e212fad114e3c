//! The link checker of `cargo xtask docs`: every `.html` page under the site, parsed with
//! scraper (html5ever, as a browser parses), and every relative `href` and `src` in it checked:
//!
//! - the file it names exists (a directory means its `index.html`; `/x` is from the site's
//!   root, which is where the DocC part's absolute links point, as it is built for the `swift/`
//!   base path);
//! - its `#fragment`, when it names a static HTML page, is an `id` (or an `<a name>`) of that
//!   page. Pages whose content is drawn by JavaScript have no such ids: a fragment into one of
//!   those is not checkable statically and is counted, not failed.
//!
//! External links (`http:`, `https:`, `//host`) are not fetched (the build runs without the
//! network); they are counted. `mailto:`, `javascript:` and `data:` URLs are skipped.
//!
//! DocC's output is a JavaScript app: every page under `swift/documentation/` is the same
//! `index.html` shell, whose scripts load the page's content from `swift/data/documentation/…
//! .json` and render its links in the browser. What is checked statically there: the shell's
//! own references (scripts, styles, icons), that each documentation page has its JSON, and that
//! every page a JSON file's `references` point to (`"url": "/documentation/…"`) exists. What is
//! not: that the app renders, and fragments inside rendered pages, which only a browser sees.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use scraper::{ElementRef, Html};

use acp_inject_tool_support::Error;

/// What the checker found.
#[derive(Debug, Default)]
pub struct Report {
    /// HTML pages parsed.
    pub pages: usize,
    /// Relative links and sources checked.
    pub links: usize,
    /// Links to other sites (not fetched).
    pub external: usize,
    /// Fragments into pages drawn by JavaScript (not checkable statically).
    pub unchecked_fragments: usize,
    /// rustdoc's optional implementor scripts that were not written (see [`check`]).
    pub optional_scripts: usize,
    /// DocC JSON files read, and their references checked.
    pub docc_json: usize,
    pub docc_references: usize,
    /// Every broken link: `page: what`.
    pub broken: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} pages, {} relative links checked, {} external (not fetched), {} fragments into pages drawn by JavaScript (not checkable), \
             {} optional rustdoc implementor scripts absent, {} DocC JSON files with {} references checked; {} broken",
            self.pages,
            self.links,
            self.external,
            self.unchecked_fragments,
            self.optional_scripts,
            self.docc_json,
            self.docc_references,
            self.broken.len()
        )
    }
}

/// One parsed page: its ids, whether it is drawn by JavaScript, and its links.
struct Page {
    ids: HashSet<String>,
    /// `<meta http-equiv="refresh" content="0;URL=…">`: rustdoc's pages for an item's path
    /// through a private module send the browser (and the fragment, by script) to its page.
    redirect: Option<String>,
    scripted: bool,
    links: Vec<String>,
}

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::read(dir, e))? {
        let path = entry.map_err(|e| Error::read(dir, e))?.path();
        if path.is_dir() {
            html_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    Ok(())
}

fn parse(text: &str) -> Page {
    let doc = Html::parse_document(text);
    let mut page = Page { ids: HashSet::new(), redirect: None, scripted: false, links: Vec::new() };
    let mut noscript = false;
    for el in doc.root_element().descendants().filter_map(ElementRef::wrap) {
        let v = el.value();
        if let Some(id) = v.attr("id") {
            page.ids.insert(id.to_owned());
        }
        if v.name() == "a" {
            if let Some(name) = v.attr("name") {
                page.ids.insert(name.to_owned());
            }
        }
        if v.name() == "meta" && v.attr("http-equiv").is_some_and(|h| h.eq_ignore_ascii_case("refresh")) {
            let content = v.attr("content").unwrap_or_default();
            page.redirect = content.split_once(['=']).map(|(_, url)| url.trim().to_owned());
        }
        if v.name() == "noscript" {
            noscript = true;
        }
        for attr in ["href", "src"] {
            if let Some(link) = v.attr(attr) {
                page.links.push(link.trim().to_owned());
            }
        }
    }
    // A JavaScript app's shell (DocC's): an empty mount point and a note for browsers without
    // scripts. (rustdoc's pages have a `<noscript>` too, but their content is static.)
    page.scripted = noscript && page.ids.contains("app");
    page
}

/// `%20` and the like, as a browser decodes a path.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `base/../x/./y` without the dots (not touching the file system).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

enum Kind {
    External,
    Skipped,
    Relative { path: String, fragment: Option<String> },
}

fn classify(link: &str) -> Kind {
    let lower = link.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("//") {
        return Kind::External;
    }
    let scheme = link.find(':').filter(|&i| link[..i].chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)));
    if scheme.is_some() {
        return Kind::Skipped; // mailto:, javascript:, data:, …
    }
    let (rest, fragment) = match link.split_once('#') {
        Some((p, f)) => (p, Some(f.to_owned())),
        None => (link, None),
    };
    let path = rest.split('?').next().unwrap_or_default().to_owned();
    Kind::Relative { path, fragment }
}

/// Checks every page under `site`.
pub fn check(site: &Path) -> Result<Report, Error> {
    let site = normalize(&std::path::absolute(site).map_err(|e| Error::read(site, e))?);
    let mut files = Vec::new();
    html_files(&site, &mut files)?;
    files.sort();
    let mut pages: HashMap<PathBuf, Page> = HashMap::with_capacity(files.len());
    for file in &files {
        let text = std::fs::read(file).map_err(|e| Error::read(file, e))?;
        pages.insert(file.clone(), parse(&String::from_utf8_lossy(&text)));
    }
    let mut report = Report { pages: pages.len(), ..Report::default() };
    let shown = |p: &Path| p.strip_prefix(&site).unwrap_or(p).display().to_string();
    for file in &files {
        let page = &pages[file];
        let dir = file.parent().unwrap_or(&site);
        for link in &page.links {
            let (path, fragment) = match classify(link) {
                Kind::External => {
                    report.external += 1;
                    continue;
                }
                Kind::Skipped => continue,
                Kind::Relative { path, fragment } => (path, fragment),
            };
            report.links += 1;
            let decoded = percent_decode(&path);
            let target = if decoded.is_empty() {
                file.clone()
            } else if let Some(from_root) = decoded.strip_prefix('/') {
                normalize(&site.join(from_root))
            } else {
                normalize(&dir.join(&decoded))
            };
            let target = if target.is_dir() { target.join("index.html") } else { target };
            // rustdoc asks for `trait.impl/…/trait.X.js` and `type.impl/…` (the implementors
            // in other documented crates) on every trait's page and writes the file only when
            // there are some; its loader does without (an `async` script whose absence only
            // means no further implementors). Counted, not failed.
            let optional = ["trait.impl", "type.impl"]
                .iter()
                .any(|d| target.strip_prefix(&site).is_ok_and(|r| r.components().nth(1).is_some_and(|c| c.as_os_str() == *d)));
            if optional && !target.is_file() {
                report.optional_scripts += 1;
                continue;
            }
            if !target.starts_with(&site) || !target.is_file() {
                report.broken.push(format!("{}: {link} (no file {})", shown(file), shown(&target)));
                continue;
            }
            let Some(fragment) = fragment.filter(|f| !f.is_empty()) else { continue };
            let Some(mut to) = pages.get(&target) else { continue }; // not HTML: a fragment means nothing to check
            let mut at = target.clone();
            // Follow redirect pages (a few hops at most) to the page that holds the ids.
            for _ in 0..4 {
                let Some(next) = to.redirect.as_deref() else { break };
                let next = normalize(&at.parent().unwrap_or(&site).join(percent_decode(next.split('#').next().unwrap_or_default())));
                match pages.get(&next) {
                    Some(page) => {
                        to = page;
                        at = next;
                    }
                    None => break,
                }
            }
            // As a browser looks it up: the fragment as written (rustdoc's and Dokka's ids keep
            // their percent escapes: `impl-Into%3CU%3E-for-T`), then decoded.
            let decoded = percent_decode(&fragment);
            if to.ids.contains(&fragment) || to.ids.contains(&decoded) {
                continue;
            }
            // rustdoc's source pages: `#12-40` is a range of lines, which its script highlights
            // from the line ids (`12`, `40`).
            if let Some((first, last)) = decoded.split_once('-') {
                if to.ids.contains(first) && to.ids.contains(last) && first.bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
            }
            if to.scripted {
                report.unchecked_fragments += 1;
            } else {
                report.broken.push(format!("{}: {link} (no id {fragment:?} in {})", shown(file), shown(&target)));
            }
        }
    }
    check_docc(&site.join("swift"), &mut report)?;
    Ok(report)
}

/// DocC's pages and their JSON (see the module docs); nothing when the part is absent.
fn check_docc(swift: &Path, report: &mut Report) -> Result<(), Error> {
    let docs = swift.join("documentation");
    let data = swift.join("data/documentation");
    if !docs.is_dir() {
        return Ok(());
    }
    let mut pages = Vec::new();
    html_files(&docs, &mut pages)?;
    for page in &pages {
        // documentation/a/b/index.html is drawn from data/documentation/a/b.json.
        let Ok(relative) = page.parent().unwrap_or(&docs).strip_prefix(&docs) else { continue };
        if relative.as_os_str().is_empty() {
            continue;
        }
        // Appended, not `with_extension`: a disambiguated page (`notifications-swift.struct`)
        // keeps its whole name.
        let mut name = data.join(relative).into_os_string();
        name.push(".json");
        let json = std::path::PathBuf::from(name);
        if !json.is_file() {
            report.broken.push(format!(
                "swift/{}: its content {} is missing",
                page.strip_prefix(swift).unwrap_or(page).display(),
                json.display()
            ));
        }
    }
    let mut jsons = Vec::new();
    json_files(&data, &mut jsons)?;
    for json in &jsons {
        let text = std::fs::read_to_string(json).map_err(|e| Error::read(json, e))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", json.display())))?;
        report.docc_json += 1;
        let Some(references) = v["references"].as_object() else { continue };
        for reference in references.values() {
            let Some(url) = reference["url"].as_str().filter(|u| u.starts_with("/documentation/")) else { continue };
            report.docc_references += 1;
            let path = url.split('#').next().unwrap_or_default().trim_start_matches('/');
            if !swift.join(path).join("index.html").is_file() {
                let from = json.strip_prefix(swift).unwrap_or(json).display().to_string();
                report.broken.push(format!("swift/{from}: reference {url} (no page swift/{path}/index.html)"));
            }
        }
    }
    Ok(())
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries {
        let path = entry.map_err(|e| Error::read(dir, e))?.path();
        if path.is_dir() {
            json_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_missing_files_and_fragments_and_counts_external_links() {
        let site = std::env::temp_dir().join(format!("acp-inject-links-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&site);
        std::fs::create_dir_all(site.join("guide")).unwrap();
        std::fs::create_dir_all(site.join("app")).unwrap();
        std::fs::write(site.join("style.css"), "").unwrap();
        std::fs::write(
            site.join("guide/a.html"),
            "<link rel=stylesheet href=../style.css><h2 id=top>x</h2><a href=b.html#there>ok</a> <a href=b.html#gone>bad id</a> \
             <a href=missing.html>bad file</a> <a href='#top'>self</a> <a href=https://example.invalid/>ext</a> \
             <a href=mailto:a@b.c>mail</a> <img src=/style.css> <a href=../app/#route>scripted</a> <a href=../app/>dir</a>",
        )
        .unwrap();
        std::fs::write(site.join("guide/b.html"), "<p id=there>b</p><a href='a.html?x=1#top'>query</a>").unwrap();
        std::fs::write(site.join("app/index.html"), "<noscript>needs JavaScript</noscript><div id=app></div>").unwrap();
        let report = check(&site).unwrap();
        assert_eq!(report.pages, 3);
        assert_eq!(report.external, 1);
        assert_eq!(report.unchecked_fragments, 1);
        assert_eq!(report.links, 9, "{report:?}");
        assert_eq!(report.broken.len(), 2, "{:#?}", report.broken);
        assert!(report.broken[0].starts_with("guide/a.html: b.html#gone"), "{:?}", report.broken);
        assert!(report.broken[1].starts_with("guide/a.html: missing.html"), "{:?}", report.broken);
        std::fs::remove_dir_all(&site).unwrap();
    }

    #[test]
    fn decodes_percent_escapes() {
        assert_eq!(percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
