//! Saying where a configuration or session file is broken without
//! repeating what it holds.
//!
//! These files hold API keys and session tokens, and an error message is
//! shown on a terminal, pasted in a ticket, kept in a CI log. The TOML
//! parser's own message quotes the line it stopped at, so a secret would
//! travel with it: this tells the file, the line and column, the key's
//! name and what is wrong, and never a value.

use std::path::Path;

/// Why `path` (holding `text`) is not a valid file, without a value from
/// it: the file, the line and column, the key's name and what is wrong.
///
/// The TOML parser's own message shows the whole line (an API key or a
/// session token with it) and quotes a value of the wrong type; this says
/// `~/.config/shipctl/config.toml is not valid at line 2, column 52 (key
/// `api_key` in [profiles.default]): unexpected key or value, expected
/// newline, `#``.
pub(super) fn not_valid(path: &Path, text: &str, e: &toml::de::Error) -> String {
    let mut said = format!("{} is not valid", path.display());
    if let Some(span) = e.span() {
        let at = span.start.min(text.len());
        let before = text.get(..at).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text
            .get(line_start..at)
            .map_or(1, |part| part.chars().count() + 1);
        said.push_str(&format!(" at line {line}, column {column}"));
        let (key, table) = key_at(text, line - 1);
        match (key, table) {
            (Some(key), Some(table)) => said.push_str(&format!(" (key `{key}` in [{table}])")),
            (Some(key), None) => said.push_str(&format!(" (key `{key}`)")),
            (None, Some(table)) => said.push_str(&format!(" (in [{table}])")),
            (None, None) => {}
        }
    }
    said.push_str(": ");
    said.push_str(&reason(e.message()));
    said
}

/// The key whose line is `index` (0-based) or the nearest line above that
/// starts one, and the table it is in; each only if it is safe to show
/// (see [`shown_name`]).
fn key_at(text: &str, index: usize) -> (Option<String>, Option<String>) {
    let lines: Vec<&str> = text.lines().take(index + 1).collect();
    let mut key = None;
    for line in lines.iter().rev() {
        let line = line.trim_start();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_start_matches('[');
            let name = header.split(']').next().unwrap_or_default();
            return (key, shown_name(name));
        }
        if key.is_none()
            && let Some((name, _)) = line.split_once('=')
        {
            key = Some(shown_name(name).unwrap_or_else(|| "(not shown)".to_owned()));
        }
    }
    (key, None)
}

/// A key or table name as written, if it cannot be a credential pasted in
/// the wrong place: dotted parts of letters, digits, `-` and `_`, none
/// longer than 24 characters (keys and tokens are longer) nor starting
/// like a key.
fn shown_name(name: &str) -> Option<String> {
    let name = name.trim();
    let safe = |part: &str| {
        let part = part.trim().trim_matches('"').trim_matches('\'');
        !part.is_empty()
            && part.len() <= 24
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !shipment_sdk::keys::looks_like_secret(part)
    };
    (!name.is_empty() && name.split('.').all(safe)).then(|| name.to_owned())
}

/// The parser's message without anything it quotes from the file: serde's
/// "invalid type: string \"sk_live_…\", expected …" keeps only what was
/// expected, and a message that quotes more than grammar (`=`, `#`,
/// `]]`) or a field name of ours is replaced by a general one.
fn reason(message: &str) -> String {
    let message = message.trim().replace('\n', "; ");
    let expected = || {
        message
            .split_once(", expected ")
            .map(|(_, e)| format!(", expected {e}"))
            .unwrap_or_default()
    };
    if message.starts_with("invalid type:") {
        return format!("a value of the wrong type{}", expected());
    }
    if message.starts_with("invalid value:") || message.starts_with("invalid length") {
        return format!("a value that is not valid{}", expected());
    }
    if message.starts_with("unknown field") {
        return format!("an unknown key{}", expected());
    }
    const OURS: &[&str] = &[
        "default_profile",
        "profiles",
        "environment",
        "base_url",
        "api_key",
        "email",
        "token",
        "expires_at",
    ];
    // Between backticks (odd parts) the parser names grammar or our own
    // field names; outside them, nothing is quoted.
    let safe = message.split('`').enumerate().all(|(i, part)| {
        if i % 2 == 0 {
            !part.contains(['"', '\''])
        } else {
            let len = part.chars().count();
            len <= 1 || len <= 3 && !part.chars().any(char::is_alphanumeric) || OURS.contains(&part)
        }
    });
    if safe {
        message
    } else {
        "not valid TOML here".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigFile;

    #[test]
    fn a_broken_file_is_described_without_any_value_from_it() {
        let cases = [
            (
                "[profiles.default]\napi_key = \"sk_test_LEAK\" x\n",
                "c.toml is not valid at line 2, column 26 (key `api_key` in [profiles.default]): \
                 unexpected key or value, expected newline, `#`",
            ),
            (
                "[profiles.default]\napi_key = 'LEAK\n",
                "c.toml is not valid at line 2, column 16 (key `api_key` in [profiles.default]): \
                 invalid literal string, expected `'`",
            ),
            (
                "[profiles.default]\napi_key = \"LEAK\\q\"\n",
                "c.toml is not valid at line 2, column 17 (key `api_key` in [profiles.default]): \
                 missing escaped value, expected `b`, `e`, `f`, `n`, `r`, `\\`, `\"`, `x`, `u`, `U`",
            ),
            (
                "default_profile = 1234LEAK\n",
                "c.toml is not valid at line 1, column 23 (key `default_profile`): invalid float",
            ),
            (
                "[profiles.x]\napi_key = 42424242\n",
                "c.toml is not valid at line 2, column 11 (key `api_key` in [profiles.x]): \
                 a value of the wrong type, expected a string",
            ),
            (
                "[profiles.x]\nemail = [\"LEAK\"]\n",
                "c.toml is not valid at line 2, column 9 (key `email` in [profiles.x]): \
                 a value of the wrong type, expected a string",
            ),
            // A key pasted where a name goes is not named.
            (
                "[profiles.x]\nsk_test_LEAK0123456789abcdefghij = 1\n",
                "c.toml is not valid at line 2, column 1 (key `(not shown)` in [profiles.x]): \
                 an unknown key, expected one of `environment`, `base_url`, `api_key`, `email`",
            ),
            (
                "[profiles.LEAK0123456789abcdefghijklmnop]\napi_key = 1\n",
                "c.toml is not valid at line 2, column 11 (key `api_key`): a value of the wrong type",
            ),
            (
                "sk_test_LEAK0123456789abcdefghij\n",
                "c.toml is not valid at line 1, column 33: key with no value, expected `=`",
            ),
        ];
        for (text, said) in cases {
            let e = toml::from_str::<ConfigFile>(text).unwrap_err();
            let got = not_valid(Path::new("c.toml"), text, &e);
            assert!(got.starts_with(said), "{text:?}\n{got}\n{said}");
            assert!(!got.contains("LEAK") && !got.contains("4242"), "{got}");
        }
        // And what the parser says (the value's line) is indeed a leak.
        let e = toml::from_str::<ConfigFile>(cases[0].0).unwrap_err();
        assert!(e.to_string().contains("LEAK"), "{e}");
    }
}
