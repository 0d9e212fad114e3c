//! The guide: `docs/guide/*.md` rendered to `DIR/guide/*.html` with pulldown-cmark, every page
//! with the same navigation (the guide's pages in order, then the API references).
//!
//! What the renderer adds to CommonMark (with tables):
//!
//! - `{{#include PATH}}` on a line of its own is replaced by that file (a path relative to the
//!   Markdown file), and `{{#include PATH | START | END}}` by the lines from the first that
//!   contains `START` to the first after it that contains `END`, dedented. The snippets in the
//!   guide are the real examples, consumer programs and tools, so they cannot drift from the
//!   code; a missing file or marker fails the build, naming the page.
//! - A link to a sibling page (`inject.md`, `inject.md#a-recorded-session`) goes to its HTML
//!   page; a link or image starting with `site:` is relative to the site's root (`DIR`), for
//!   the API references and the timeline picture, which exist only once the docs are built
//!   (written so, the repository's tidy rule, which resolves Markdown links in the repository,
//!   leaves them alone).
//! - Headings get ids (`## A recorded session` is `#a-recorded-session`), for links into a page.

use std::path::{Path, PathBuf};

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use acp_inject_tool_support::Error;

/// The guide's pages, in reading order: file and the title the navigation shows.
pub const PAGES: [(&str, &str); 7] = [
    ("index.md", "Overview"),
    ("install.md", "Install"),
    ("first-session.md", "A first session"),
    ("inject.md", "Inject: queue, steer, revoke, replace"),
    ("agent.md", "Write an agent"),
    ("durability.md", "Durability"),
    ("remote.md", "Over the network"),
];

/// The API references, as the navigation links them (relative to the site's root).
pub const REFERENCES: [(&str, &str); 4] = [
    ("Rust", "rust/acp_inject_core/index.html"),
    ("Python", "python/acp_inject.html"),
    ("Kotlin", "kotlin/index.html"),
    ("Swift", "swift/documentation/acpinject/index.html"),
];

const STYLE: &str = "\
body { margin: 0; font: 16px/1.55 system-ui, sans-serif; color: #212529; display: flex; }
nav { flex: 0 0 15rem; padding: 1.5rem 1rem; background: #f1f3f5; min-height: 100vh; box-sizing: border-box; font-size: 15px; }
nav ol, nav ul { padding-left: 1.2rem; }
nav .current { font-weight: bold; }
nav h2 { font-size: 0.85rem; text-transform: uppercase; color: #495057; margin: 1.5rem 0 0.3rem; }
main { flex: 1; max-width: 58rem; padding: 1.5rem 2.5rem 4rem; min-width: 0; }
a { color: #1864ab; }
pre { background: #f8f9fa; border: 1px solid #dee2e6; padding: 0.8rem; overflow-x: auto; font-size: 13.5px; line-height: 1.45; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.92em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #dee2e6; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
img { max-width: 100%; height: auto; border: 1px solid #dee2e6; }
";

/// Renders every page into `out` (which holds the timeline already); returns the pages written.
pub fn render(sources: &Path, out: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut found: Vec<String> = std::fs::read_dir(sources)
        .map_err(|e| Error::read(sources, e))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    found.sort();
    let listed: Vec<&str> = PAGES.iter().map(|(f, _)| *f).collect();
    if let Some(stray) = found.iter().find(|f| !listed.contains(&f.as_str())) {
        return Err(Error::msg(format!("{} is not in the guide's navigation (PAGES in {})", sources.join(stray).display(), file!())));
    }
    std::fs::create_dir_all(out).map_err(|e| Error::write(out, e))?;
    let style = out.join("style.css");
    std::fs::write(&style, STYLE).map_err(|e| Error::write(&style, e))?;
    let mut written = Vec::new();
    for (file, _) in PAGES {
        let source = sources.join(file);
        let markdown = std::fs::read_to_string(&source).map_err(|e| Error::read(&source, e))?;
        let expanded = expand_includes(&markdown, &source)?;
        let (title, body) = to_html(&expanded);
        let page = out.join(file.replace(".md", ".html"));
        std::fs::write(&page, layout(file, &title, &body)).map_err(|e| Error::write(&page, e))?;
        written.push(page);
    }
    Ok(written)
}

/// The page around a rendered body: head, navigation, main.
fn layout(file: &str, title: &str, body: &str) -> String {
    let mut nav = String::from("<nav>\n<p><a href=\"index.html\"><strong>acp-inject</strong></a></p>\n<h2>Guide</h2>\n<ol>\n");
    for (f, t) in PAGES {
        let class = if f == file { " class=\"current\"" } else { "" };
        nav += &format!("<li{class}><a href=\"{}\">{}</a></li>\n", f.replace(".md", ".html"), escape(t));
    }
    nav += "</ol>\n<h2>API reference</h2>\n<ul>\n";
    for (name, path) in REFERENCES {
        nav += &format!("<li><a href=\"../{path}\">{name}</a></li>\n");
    }
    nav += "</ul>\n<p><a href=\"../index.html\">All docs</a></p>\n</nav>\n";
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{} · acp-inject guide</title>\n<link rel=\"stylesheet\" href=\"style.css\">\n</head>\n<body>\n{nav}<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Replaces each `{{#include …}}` line (see the module docs).
fn expand_includes(markdown: &str, source: &Path) -> Result<String, Error> {
    let dir = source.parent().unwrap_or(Path::new("."));
    let mut out = String::new();
    for (n, line) in markdown.lines().enumerate() {
        let Some(spec) = line.trim().strip_prefix("{{#include ").and_then(|s| s.strip_suffix("}}")) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let at = || format!("{}:{}", source.display(), n + 1);
        let mut parts = spec.splitn(3, " | ").map(str::trim);
        let path = dir.join(parts.next().unwrap_or_default());
        let text =
            std::fs::read_to_string(&path).map_err(|e| Error::msg(format!("{}: cannot include {}: {e}", at(), path.display())))?;
        let snippet = match (parts.next(), parts.next()) {
            (None, _) => text.trim_end().to_owned(),
            (Some(start), Some(end)) => excerpt(&text, start, end).ok_or_else(|| {
                Error::msg(format!("{}: {} has no line with {start:?} followed by one with {end:?}", at(), path.display()))
            })?,
            (Some(_), None) => return Err(Error::msg(format!("{}: an excerpt needs `PATH | START | END`", at()))),
        };
        out.push_str(&snippet);
        out.push('\n');
    }
    Ok(out)
}

/// The lines from the first containing `start` to the first after it containing `end`,
/// without their common indentation.
fn excerpt(text: &str, start: &str, end: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.iter().position(|l| l.contains(start))?;
    let to = from + lines[from..].iter().position(|l| l.contains(end))?;
    let chosen = &lines[from..=to];
    let indent = chosen.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    Some(chosen.iter().map(|l| l.get(indent..).unwrap_or("").trim_end()).collect::<Vec<_>>().join("\n"))
}

/// A heading's id: lower case, letters and digits kept, spaces and hyphens as `-`.
fn slug(text: &str) -> String {
    let mut s = String::new();
    for c in text.trim().chars() {
        if c.is_alphanumeric() {
            s.extend(c.to_lowercase());
        } else if (c == ' ' || c == '-') && !s.ends_with('-') {
            s.push('-');
        }
    }
    s.trim_matches('-').to_owned()
}

/// Where a link of the guide goes in the built site.
fn target(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("site:") {
        return format!("../{rest}");
    }
    if url.contains("://") || url.starts_with('#') || url.starts_with("mailto:") {
        return url.to_owned();
    }
    let (path, fragment) = url.split_once('#').map_or((url, None), |(p, f)| (p, Some(f)));
    match (path.strip_suffix(".md"), fragment) {
        (Some(page), Some(f)) => format!("{page}.html#{f}"),
        (Some(page), None) => format!("{page}.html"),
        _ => url.to_owned(),
    }
}

/// The page's title (its first heading) and its HTML.
fn to_html(markdown: &str) -> (String, String) {
    let events: Vec<Event> = Parser::new_ext(markdown, Options::ENABLE_TABLES).collect();
    let mut title = None;
    let mut out: Vec<Event> = Vec::with_capacity(events.len());
    let mut i = 0;
    while i < events.len() {
        match &events[i] {
            Event::Start(Tag::Heading { level, id: None, classes, attrs }) => {
                let mut text = String::new();
                for e in events[i + 1..].iter().take_while(|e| !matches!(e, Event::End(TagEnd::Heading(_)))) {
                    if let Event::Text(t) | Event::Code(t) = e {
                        text.push_str(t);
                    }
                }
                if *level == HeadingLevel::H1 && title.is_none() {
                    title = Some(text.clone());
                }
                out.push(Event::Start(Tag::Heading {
                    level: *level,
                    id: Some(CowStr::from(slug(&text))),
                    classes: classes.clone(),
                    attrs: attrs.clone(),
                }));
            }
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => out.push(Event::Start(Tag::Link {
                link_type: *link_type,
                dest_url: CowStr::from(target(dest_url)),
                title: title.clone(),
                id: id.clone(),
            })),
            Event::Start(Tag::Image { link_type, dest_url, title, id }) => out.push(Event::Start(Tag::Image {
                link_type: *link_type,
                dest_url: CowStr::from(target(dest_url)),
                title: title.clone(),
                id: id.clone(),
            })),
            other => out.push(other.clone()),
        }
        i += 1;
    }
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, out.into_iter());
    (title.unwrap_or_else(|| "acp-inject".into()), html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_headings_and_titles() {
        let (title, html) = to_html(
            "# The guide\n\n## A recorded session\n\n[next](inject.md) [part](inject.md#a-b) [api](site:rust/x/index.html) \
             [web](https://example.invalid/a.md)\n\n![pic](site:guide/timeline.svg)\n",
        );
        assert_eq!(title, "The guide");
        for wanted in [
            "<h2 id=\"a-recorded-session\">",
            "href=\"inject.html\"",
            "href=\"inject.html#a-b\"",
            "href=\"../rust/x/index.html\"",
            "href=\"https://example.invalid/a.md\"",
            "src=\"../guide/timeline.svg\"",
        ] {
            assert!(html.contains(wanted), "no {wanted} in {html}");
        }
    }

    #[test]
    fn includes_whole_files_and_excerpts_and_fails_on_missing_ones() {
        let dir = std::env::temp_dir().join(format!("acp-inject-guide-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("code.rs"), "fn a() {}\nfn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n").unwrap();
        let page = dir.join("page.txt");
        let whole = expand_includes("```rust\n{{#include code.rs}}\n```\n", &page).unwrap();
        assert!(whole.contains("fn a() {}\nfn main() {"), "{whole}");
        let part = expand_includes("{{#include code.rs | let x | println!}}\n", &page).unwrap();
        assert_eq!(part, "let x = 1;\nprintln!(\"{x}\");\n");
        let missing = expand_includes("{{#include gone.rs}}\n", &page).unwrap_err().to_string();
        assert!(missing.contains("page.txt:1") && missing.contains("gone.rs"), "{missing}");
        let marker = expand_includes("{{#include code.rs | nothing | here}}\n", &page).unwrap_err().to_string();
        assert!(marker.contains("\"nothing\""), "{marker}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_guide_in_the_repository_renders() {
        let sources = acp_inject_tool_support::root().join("docs/guide");
        for (file, _) in PAGES {
            let source = sources.join(file);
            let markdown = std::fs::read_to_string(&source).unwrap();
            let expanded = expand_includes(&markdown, &source).unwrap_or_else(|e| panic!("{e}"));
            let (_, html) = to_html(&expanded);
            assert!(!html.contains("{{#include"), "{file}: an include was not expanded");
        }
    }
}
