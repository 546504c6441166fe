//! The README's commands are commands `shipctl` accepts: what doc tests are
//! for a library's README, for a binary's. Every `shipctl ...` in a `sh`
//! block of `README.md` (the crate's page on crates.io, and the book's
//! chapter) is parsed by the real command tree, so a renamed flag or
//! subcommand fails here instead of in a reader's terminal. A setting the
//! block gives with `export SHIPCTL_...=` counts when the command reads
//! that variable.

use std::path::Path;

/// A command of the README: its line, its text, and the variables an
/// `export NAME=value` earlier in its block set.
#[derive(Debug, PartialEq)]
struct Example {
    line: usize,
    command: String,
    exported: Vec<(String, String)>,
}

/// The `shipctl` invocations of the `sh` blocks of `markdown`:
/// continuation lines joined, comments dropped, and a command cut where a
/// pipe, redirection or list operator ends it.
fn commands(markdown: &str) -> Vec<Example> {
    let mut found = Vec::new();
    let mut in_sh = false;
    let mut exported = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let fence = line.trim_start();
        if fence.starts_with("```") {
            in_sh = !in_sh && fence == "```sh";
            exported.clear();
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
            if let Some((name, value)) = segment
                .strip_prefix("export ")
                .and_then(|set| set.split_once('='))
            {
                exported.push((name.to_owned(), value.to_owned()));
            } else if segment.starts_with("shipctl ") {
                found.push(Example {
                    line: start,
                    command: segment.to_owned(),
                    exported: exported.clone(),
                });
            }
        }
    }
    found
}

/// What the README's shell variables stand for, when a command takes one
/// as an argument (`--code "$CODE"`, set by an earlier command of the block):
/// a value of the shape the argument needs.
const SAMPLES: &[(&str, &str)] = &[("$CODE", "SHP-7K3M-Q9ZX")];

/// `command` split into words as a shell would, for the quoting the README
/// uses: single and double quotes, no escapes; a word that is one of the
/// [`SAMPLES`]' variables becomes its sample value.
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
    for word in &mut words {
        if let Some((_, sample)) = SAMPLES.iter().find(|(name, _)| word == name) {
            *word = (*sample).to_owned();
        }
    }
    words
}

/// Parses `words` as the shell would run them after the example's
/// `export`s. The tests cannot set the process's environment (other tests
/// run beside them), so an argument the parser misses is given as its flag
/// when an `export` set the variable it reads: the example still fails when
/// it exports a variable no argument of its command reads.
fn parse(example: &Example) -> Result<(), clap::Error> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let mut words = words(&example.command);
    let first = shipctl::cli::command().try_get_matches_from(&words);
    let Err(e) = first else { return Ok(()) };
    if e.kind() != ErrorKind::MissingRequiredArgument {
        return Err(e);
    }
    // The subcommand the words name, for its arguments' variables.
    let mut command = shipctl::cli::command();
    for word in &words[1..] {
        if let Some(sub) = command.find_subcommand(word) {
            command = sub.clone();
        }
    }
    let Some(ContextValue::Strings(missing)) = e.get(ContextKind::InvalidArg) else {
        return Err(e);
    };
    for usage in missing {
        let long = usage.split_whitespace().next().unwrap_or_default();
        let from_export = command
            .get_arguments()
            .find(|arg| arg.get_long().is_some_and(|l| format!("--{l}") == long))
            .and_then(|arg| arg.get_env())
            .and_then(|env| {
                let (_, value) = example
                    .exported
                    .iter()
                    .find(|(name, _)| env == name.as_str())?;
                Some(value.clone())
            });
        match from_export {
            Some(value) => words.extend([long.to_owned(), value]),
            None => return Err(e),
        }
    }
    shipctl::cli::command()
        .try_get_matches_from(&words)
        .map(drop)
}

#[test]
fn every_command_in_the_readme_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("the crate's README.md");
    assert_commands_parse("README.md", &readme, 20);
}

/// The book's chapter on restricted and expiring keys is a walk through
/// `shipctl` too. It is outside the crate, so a packaged crate (which has
/// no book beside it) skips it; in the repository it is always there.
#[test]
fn every_command_in_the_keys_chapter_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/keys.md");
    let Ok(chapter) = std::fs::read_to_string(&path) else {
        assert!(
            !Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../Cargo.toml")
                .exists(),
            "the workspace has no docs/src/keys.md"
        );
        return;
    };
    assert_commands_parse("docs/src/keys.md", &chapter, 6);
}

/// Parses every `shipctl` command of `markdown`'s `sh` blocks, expecting
/// at least `at_least` of them (fewer means the fencing broke).
fn assert_commands_parse(name: &str, markdown: &str, at_least: usize) {
    let examples = commands(markdown);
    assert!(
        examples.len() >= at_least,
        "found only {} commands: is the `sh` fencing of {name} intact?",
        examples.len()
    );
    let mut refused = Vec::new();
    for example in &examples {
        if let Err(e) = parse(example) {
            use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
            if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                refused.push(format!(
                    "{name}:{}: `{}`:\n{e}",
                    example.line, example.command
                ));
            }
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

#[test]
fn the_extraction_joins_lines_and_cuts_at_operators() {
    let markdown = "```sh\nexport SHIPCTL_X=1   # why\nshipctl a --b 1 \\\n    --c \"d e\"   # note\n\
                    x | shipctl f - > out\n```\n```text\nshipctl ignored\n```\n";
    let exported = vec![("SHIPCTL_X".to_owned(), "1".to_owned())];
    assert_eq!(
        commands(markdown),
        [
            Example {
                line: 3,
                command: "shipctl a --b 1 --c \"d e\"".to_owned(),
                exported: exported.clone(),
            },
            Example {
                line: 5,
                command: "shipctl f -".to_owned(),
                exported,
            },
        ]
    );
    assert_eq!(
        words("shipctl a --c \"d e\" 'f'"),
        ["shipctl", "a", "--c", "d e", "f"]
    );
}

#[test]
fn a_variable_counts_only_when_the_command_reads_it() {
    let command = "shipctl webhooks verify --signature sha256=00 --body-file d.json";
    let example = |exported: &[(&str, &str)]| Example {
        line: 1,
        command: command.to_owned(),
        exported: exported
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect(),
    };
    assert!(parse(&example(&[("SHIPCTL_SIGNING_KEY", "whsec_x")])).is_ok());
    assert!(parse(&example(&[])).is_err());
    assert!(parse(&example(&[("SHIPCTL_API_KEY", "sk_test_x")])).is_err());
}
