//! The README's commands are commands `shipctl` accepts: what doc tests are
//! for a library's README, for a binary's. Every `shipctl ...` in a `sh`
//! block of `README.md` (the crate's page on crates.io, and the book's
//! chapter) is parsed by the real command tree, so a renamed flag or
//! subcommand fails here instead of in a reader's terminal.

use std::path::Path;

/// The `shipctl` invocations of the `sh` blocks of `markdown`, each with
/// its line number: continuation lines joined, comments dropped, and a
/// command cut where a pipe, redirection or list operator ends it.
fn commands(markdown: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let fence = line.trim_start();
        if fence.starts_with("```") {
            in_sh = !in_sh && fence == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let (start, mut text) = match pending.take() {
            Some((start, text)) => (start, text + " " + line.trim()),
            None => (i + 1, line.trim().to_owned()),
        };
        if let Some(joined) = text.strip_suffix('\\') {
            text = joined.trim_end().to_owned();
            pending = Some((start, text));
            continue;
        }
        for segment in text.split(['|', ';', '>', '<', '&']) {
            let segment = segment.split(" #").next().unwrap_or_default().trim();
            if segment.starts_with("shipctl ") {
                found.push((start, segment.to_owned()));
            }
        }
    }
    found
}

/// `command` split into words as a shell would, for the quoting the README
/// uses: single and double quotes, no escapes or expansions.
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for ch in command.chars() {
        match (quote, ch) {
            (None, '"' | '\'') => {
                quote = Some(ch);
                word.get_or_insert_with(String::new);
            }
            (Some(q), _) if ch == q => quote = None,
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "an unclosed quote in `{command}`");
    words.extend(word);
    words
}

#[test]
fn every_command_in_the_readme_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("the crate's README.md");
    let commands = commands(&readme);
    assert!(
        commands.len() >= 20,
        "found only {} commands: is the README's `sh` fencing intact?",
        commands.len()
    );
    let mut refused = Vec::new();
    for (line, command) in &commands {
        if let Err(e) = shipctl::cli::command().try_get_matches_from(words(command)) {
            use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
            if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                refused.push(format!("README.md:{line}: `{command}`:\n{e}"));
            }
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

#[test]
fn the_extraction_joins_lines_and_cuts_at_operators() {
    let markdown = "```sh\nshipctl a --b 1 \\\n    --c \"d e\"   # note\n\
                    x | shipctl f - > out\n```\n```text\nshipctl ignored\n```\n";
    assert_eq!(
        commands(markdown),
        [
            (2, "shipctl a --b 1 --c \"d e\"".to_owned()),
            (4, "shipctl f -".to_owned()),
        ]
    );
    assert_eq!(
        words("shipctl a --c \"d e\" 'f'"),
        ["shipctl", "a", "--c", "d e", "f"]
    );
}
