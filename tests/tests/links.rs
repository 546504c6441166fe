//! Every relative link of the docs resolves: the README, the crates'
//! READMEs, `BENCHMARKS.md` and the book under `docs/src/`. A link names a
//! file or folder of the repository that exists and, when it has a
//! `#fragment`, a heading of that Markdown file (the slug GitHub and mdBook
//! both make). The book's `{{#include path}}` directives are checked the same
//! way. Links in code (fenced blocks, inline code) are not links and are
//! skipped, and so are absolute URLs.
//!
//! Why a test: the docs moved from one long README into a book, and a
//! renamed heading or a moved file otherwise breaks a newcomer's path
//! silently.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The repository's root (this crate lives in `tests/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The Markdown files whose links are checked.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    for krate in ["sdk", "cli", "webhook-verify", "server", "testkit"] {
        let readme = root.join(krate).join("README.md");
        if readme.is_file() {
            files.push(readme);
        }
    }
    let book = root.join("docs/src");
    assert!(book.is_dir(), "the book is missing: {}", book.display());
    markdown_under(&book, &mut files);
    files
}

fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_under(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            out.push(path);
        }
    }
}

/// The lines of `text` outside fenced code blocks, with their numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// `line` without its inline code spans.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for ch in line.chars() {
        if ch == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(ch);
        }
    }
    out
}

/// The targets of the inline links and images of `line`: what stands
/// between `](` and its `)`, without a title.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(|c| c == '<' || c == '>').to_owned());
        rest = &rest[end..];
    }
    targets
}

/// The paths of the mdBook `{{#include path}}` directives of `line`,
/// without a line range or anchor (`path:10:20`, `path:name`).
fn includes(line: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("{{#include ") {
        rest = &rest[start + "{{#include ".len()..];
        let Some(end) = rest.find("}}") else { break };
        let path = rest[..end].trim();
        paths.push(path.split(':').next().unwrap_or(path).to_owned());
        rest = &rest[end..];
    }
    paths
}

/// The anchor GitHub and mdBook give a heading: lowercase, letters, digits,
/// `-` and `_` kept, white space made `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|ch| {
            if ch.is_alphanumeric() || ch == '-' || ch == '_' {
                Some(ch.to_lowercase().next().unwrap_or(ch))
            } else if ch.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The anchors of a Markdown file's headings (the second of a name gets
/// `-1`, as both renderers do), the headings of the files it includes whole
/// counted in.
fn anchors(file: &Path) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut out = HashSet::new();
    collect_headings(file, &mut seen, &mut out);
    out
}

fn collect_headings(file: &Path, seen: &mut HashSet<String>, out: &mut HashSet<String>) {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    for (_, line) in prose_lines(&text) {
        if let Some(heading) = line.strip_prefix('#') {
            let title = heading.trim_start_matches('#');
            if title.starts_with(' ') {
                let base = slug(&link_text(title));
                let mut anchor = base.clone();
                let mut n = 0;
                while !seen.insert(anchor.clone()) {
                    n += 1;
                    anchor = format!("{base}-{n}");
                }
                out.insert(anchor);
            }
        }
        for included in includes(line) {
            let path = file.parent().expect("a file has a folder").join(&included);
            if path.extension().is_some_and(|ext| ext == "md") && path.is_file() {
                collect_headings(&path, seen, out);
            }
        }
    }
}

/// A heading's text as rendered: `[text](url)` becomes `text`.
fn link_text(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(end)) if close < end => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// What is wrong with `target`, a link of `file`, if anything.
fn check(file: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".to_owned());
    }
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().expect("a file has a folder").join(path)
    };
    if !resolved.exists() {
        return Some(format!("`{target}`: no such file or folder"));
    }
    if let Some(fragment) = fragment {
        let is_markdown = resolved.extension().is_some_and(|ext| ext == "md");
        if is_markdown && !anchors(&resolved).contains(fragment) {
            return Some(format!(
                "`{target}`: {} has no heading whose anchor is `{fragment}`",
                resolved.display()
            ));
        }
    }
    None
}

#[test]
fn every_relative_link_of_the_docs_resolves() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in documents(&root) {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let prose: HashSet<usize> = prose_lines(&text).iter().map(|(n, _)| *n).collect();
        for (i, line) in text.lines().enumerate() {
            let number = i + 1;
            // An include is one in code blocks too (that is where code is
            // included); a link is one only in prose.
            let mut targets = includes(line);
            if prose.contains(&number) {
                targets.extend(link_targets(line).into_iter().filter(|t| !is_external(t)));
            }
            for target in targets {
                checked += 1;
                if let Some(problem) = check(&file, &target) {
                    broken.push(format!("{shown}:{number}: {problem}"));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the scan broken?"
    );
    assert!(
        broken.is_empty(),
        "broken links in the docs:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_readme_stays_a_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; at most 250: move the detail into the book (docs/src/)"
    );
}

#[test]
fn benchmarks_stay_todays_figures() {
    let benchmarks = std::fs::read_to_string(root().join("BENCHMARKS.md")).expect("BENCHMARKS.md");
    let lines = benchmarks.lines().count();
    assert!(
        lines <= 300,
        "BENCHMARKS.md has {lines} lines; at most 300: today's figures with their commands, \
         the history in docs/src/appendix/benchmarks-history.md"
    );
}

#[test]
fn the_scanner_reads_links_and_headings_as_the_renderers_do() {
    assert_eq!(
        link_targets("see [a](b.md#c \"title\"), `[no](code.md)` and ![i](img.png)"),
        ["b.md#c", "img.png"]
    );
    assert_eq!(includes("{{#include ../../x.rs:10:20}}"), ["../../x.rs"]);
    assert_eq!(
        slug("Diagnose your set-up: `shipctl doctor`"),
        "diagnose-your-set-up-shipctl-doctor"
    );
    assert_eq!(
        slug("One `Arc` per request, mimalloc"),
        "one-arc-per-request-mimalloc"
    );
    assert_eq!(link_text("See [the API](api.md) here"), "See the API here");
    assert!(is_external("https://example.com/x.md"));
}
