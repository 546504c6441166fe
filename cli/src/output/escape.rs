//! Keeping control characters away from the merchant's terminal.
//!
//! What `shipctl` prints comes mostly from outside it: the service's
//! answers, the listener stream, a local app's errors. None of it is
//! trusted, and a terminal obeys control characters (move the cursor,
//! clear the screen, set the window title, forge a line of output), so
//! none may reach it raw, whichever way the text is written. The rule for
//! human output ([`escape`]) and the one for JSON ([`TerminalSafe`]) live
//! together here so that one place says what is let through.

use std::borrow::Cow;
use std::io::{self, Write};

/// Shows the control characters of `text` visibly, so that writing it to a
/// terminal cannot move the cursor, clear the screen, set the window title
/// or anything else a terminal obeys: every C0 character (below U+0020),
/// DEL (U+007F) and every C1 character (U+0080 to U+009F, which some
/// terminals obey as one-byte escape sequences) becomes its Rust escape,
/// `\u{1b}`. Tab, newline and carriage return become `\t`, `\n` and
/// `\r`: every field, table cell and message stays on its own line, so a
/// service cannot forge a line of output either. Everything else
/// (printable Unicode included) is kept as it is.
///
/// Every human output path uses it: table cells and detail views (through
/// [`Cell`](super::Cell)), errors and hints, notes, `listen` lines,
/// `doctor`. JSON output does not: it stays exact (see
/// [`json`](super::json)).
///
/// ```
/// use shipctl::output::escape;
/// assert_eq!(escape("a\u{1b}[2Jb"), r"a\u{1b}[2Jb");
/// assert_eq!(escape("Zürich → Köln"), "Zürich → Köln");
/// ```
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    use std::fmt::Write as _;
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => shown.push_str(r"\t"),
            '\n' => shown.push_str(r"\n"),
            '\r' => shown.push_str(r"\r"),
            // `char::is_control` is exactly C0, DEL and C1 (category Cc).
            c if c.is_control() => {
                let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
            }
            c => shown.push(c),
        }
    }
    Cow::Owned(shown)
}

/// A JSON formatter that also escapes DEL and C1 inside strings; the
/// layout is `F`'s.
pub(super) struct TerminalSafe<F>(pub(super) F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for TerminalSafe<F> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((at, c)) = rest.char_indices().find(|(_, c)| c.is_control()) {
            writer.write_all(&rest.as_bytes()[..at])?;
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    // The layout: every method `PrettyFormatter` has its own version of.
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }
    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }
    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped_and_the_rest_kept() {
        let table: &[(&str, &str)] = &[
            // Sets the window title (OSC ... BEL).
            ("\u{1b}]0;title\u{7}", r"\u{1b}]0;title\u{7}"),
            // Clears the screen (CSI 2 J).
            ("\u{1b}[2J", r"\u{1b}[2J"),
            // The one-byte C1 CSI, NEL and the last C1.
            ("\u{9b}31m", r"\u{9b}31m"),
            ("\u{85}", r"\u{85}"),
            ("\u{9f}", r"\u{9f}"),
            ("a\u{7f}b", r"a\u{7f}b"),
            ("nul\u{0}", r"nul\u{0}"),
            ("\u{1f}\u{8}", r"\u{1f}\u{8}"),
            // A field stays on its line.
            ("over\rwrite", r"over\rwrite"),
            ("two\nlines", r"two\nlines"),
            ("tab\there", r"tab\there"),
            // Printable text is kept, from the space up, and after C1.
            (" ~", " ~"),
            ("\u{a0}", "\u{a0}"),
            ("Zürich → 東京 🚚", "Zürich → 東京 🚚"),
            (r"C:\path", r"C:\path"),
            ("", ""),
        ];
        for (raw, shown) in table {
            assert_eq!(escape(raw), *shown, "{raw:?}");
            assert!(!escape(raw).chars().any(char::is_control), "{raw:?}");
        }
        // Text without control characters is not copied.
        assert!(matches!(escape("SHP-7K3M-Q9ZX"), Cow::Borrowed(_)));
    }
}
