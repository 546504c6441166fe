//! The SQL statements written in the server's source that change a table:
//! what the tests of each memo's rule check, so that a new statement which
//! could make a memory stale fails a test instead of waiting for a review.
//!
//! It reads every `.rs` file under `server/src` (not the `mod tests` at
//! the end of a file, files under `tests/` directories, nor this file) and takes each string literal as
//! one piece of SQL, continuation lines joined. A statement put together
//! at run time (`format!("UPDATE {table} …")`) is not seen: the store
//! writes its SQL as literals, and should go on doing so.

use std::path::{Path, PathBuf};

/// How a statement changes its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    /// `INSERT INTO t` that leaves existing rows alone (plain, or
    /// `ON CONFLICT … DO NOTHING`).
    Insert,
    /// `INSERT INTO t … ON CONFLICT … DO UPDATE`, `INSERT OR REPLACE INTO
    /// t`, `REPLACE INTO t`: may change an existing row.
    Upsert,
    /// `UPDATE t`.
    Update,
    /// `DELETE FROM t`.
    Delete,
}

/// One statement that changes a table.
#[derive(Debug, Clone)]
pub(crate) struct Write {
    /// The file, relative to `server/src`.
    pub file: String,
    /// How.
    pub verb: Verb,
    /// The literal holding it, whitespace collapsed.
    pub sql: String,
}

/// Every statement in the server's source that changes `table`.
pub(crate) fn writing(table: &str) -> Vec<Write> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 20, "the server's sources are under {root:?}");
    let mut found = Vec::new();
    for path in files {
        let file = path
            .strip_prefix(&root)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if file.ends_with("memo/statements.rs") || file.split('/').any(|part| part == "tests") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a readable source file");
        // A file's test module (last, by the house's habit) is not the
        // server's SQL: the tests of the rules quote statements there.
        let source = source
            .split_once("\n#[cfg(test)]\nmod tests")
            .map_or(source.as_str(), |(code, _)| code);
        for literal in string_literals(source) {
            for verb in writes(&literal, table) {
                found.push(Write {
                    file: file.clone(),
                    verb,
                    sql: literal.split_whitespace().collect::<Vec<_>>().join(" "),
                });
            }
        }
    }
    found
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// How `sql` changes `table`, once per statement that does.
fn writes(sql: &str, table: &str) -> Vec<Verb> {
    let upper = sql.to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let table = table.to_ascii_uppercase();
    let is = |i: usize, w: &str| words.get(i).is_some_and(|x| *x == w);
    let mut found = Vec::new();
    for i in 0..words.len() {
        if is(i, "UPDATE") && is(i + 1, &table) {
            found.push(Verb::Update);
        } else if is(i, "DELETE") && is(i + 1, "FROM") && is(i + 2, &table) {
            found.push(Verb::Delete);
        } else if is(i, "REPLACE") && is(i + 1, "INTO") && is(i + 2, &table) {
            found.push(Verb::Upsert);
        } else if i > 0 && is(i - 1, "INSERT") && is(i, "INTO") && is(i + 1, &table) {
            let replaces = words[i..].windows(2).any(|w| w == ["DO", "UPDATE"]);
            found.push(if replaces { Verb::Upsert } else { Verb::Insert });
        }
    }
    found
}

/// The contents of the string literals of Rust `source` (plain, byte and
/// raw), escapes kept but line continuations joined; comments and
/// character literals skipped.
fn string_literals(source: &str) -> Vec<String> {
    let chars: Vec<char> = source.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            '\'' => {
                // A character literal ('"', '\'', 'x') or a lifetime ('a).
                if chars.get(i + 1) == Some(&'\\') {
                    // The quote, the backslash and the escaped character.
                    i += 3;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            'r' if matches!(chars.get(i + 1), Some('"' | '#'))
                && (i == 0
                    || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
                    || chars[i - 1] == 'b') =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while chars.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if chars.get(j) != Some(&'"') {
                    i += 1;
                    continue;
                }
                let start = j + 1;
                let mut k = start;
                loop {
                    if k >= chars.len() {
                        break;
                    }
                    if chars[k] == '"' && (1..=hashes).all(|h| chars.get(k + h) == Some(&'#')) {
                        break;
                    }
                    k += 1;
                }
                found.push(chars[start..k.min(chars.len())].iter().collect());
                i = k + 1 + hashes;
            }
            '"' => {
                let mut literal = String::new();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        if chars.get(i + 1) == Some(&'\n') {
                            // A continuation: the newline and the next
                            // line's indentation are not in the string.
                            i += 2;
                            while i < chars.len() && chars[i].is_whitespace() {
                                i += 1;
                            }
                            continue;
                        }
                        literal.push(chars[i]);
                        i += 1;
                    }
                    if i < chars.len() {
                        literal.push(chars[i]);
                        i += 1;
                    }
                }
                i += 1;
                found.push(literal);
            }
            _ => i += 1,
        }
    }
    found
}

#[test]
fn literals_are_read_as_rust_reads_them() {
    let source = r##"
        // "UPDATE commented SET"
        /* "DELETE FROM commented" */
        let quote = '"';
        let escaped = ['\'', '\\', '\u{22}'];
        fn f<'a>(x: &'a str) {}
        const A: &str = "UPDATE t SET a = 1, \
                         version = version + 1 WHERE \"id\" = $1";
        const B: &str = r#"DELETE FROM t WHERE a = "b""#;
        let c = b"INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 2";
    "##;
    let literals = string_literals(source);
    assert_eq!(
        literals,
        [
            r#"UPDATE t SET a = 1, version = version + 1 WHERE \"id\" = $1"#,
            r#"DELETE FROM t WHERE a = "b""#,
            "INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 2",
        ]
    );
    let verbs: Vec<Vec<Verb>> = literals.iter().map(|l| writes(l, "t")).collect();
    assert_eq!(
        verbs,
        [vec![Verb::Update], vec![Verb::Delete], vec![Verb::Upsert]]
    );
    assert_eq!(
        writes("INSERT INTO t (a) VALUES ($1) ON CONFLICT DO NOTHING", "t"),
        [Verb::Insert]
    );
    assert_eq!(
        writes("INSERT OR REPLACE INTO t VALUES (1)", "t"),
        [Verb::Upsert]
    );
    assert_eq!(writes("UPDATE other SET t = 1", "t"), []);
}

#[test]
fn the_statements_of_the_store_are_found() {
    let keys = writing("api_keys");
    assert!(
        keys.iter()
            .any(|w| w.verb == Verb::Insert && w.file == "store/api_keys.rs"),
        "{keys:?}"
    );
}
