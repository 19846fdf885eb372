//! Graphviz DOT output shared by the front ends that export one (explicit graphs'
//! `Graph::to_dot`, the DAG runtime's `Context::to_dot`): how a label becomes the contents of
//! a DOT quoted string.
//!
//! DOT itself escapes only `"` in a quoted string, but Graphviz reads more into a label: a
//! backslash starts an escape (`\n`, `\l`, `\N`, ...), `&...;` is a character reference, and
//! control characters have no spelling at all. [`escape`] writes every one of those so that
//! the label Graphviz shows is the string it was given, and the quoted string stays on one
//! line.

/// The contents of a DOT quoted string (without the quotes) that Graphviz reads back as `s`.
///
/// - `\` and `"` are escaped with a backslash (`\\`, `\"`);
/// - a newline becomes the label line break `\n`;
/// - `&` becomes `&amp;`, so that a label never reads as a character reference;
/// - every other control character (C0, DEL, C1, tab and carriage return included) becomes a
///   numeric character reference, `&#13;` for a carriage return.
///
/// Everything else, all other Unicode included, is kept as it is. The result has no control
/// characters and no unescaped `"`, so `format!("\"{}\"", escape(s))` is one DOT string
/// whatever `s` holds.
///
/// ```
/// use hoplite_core::dot::escape;
/// assert_eq!(escape(r#"say "hi""#), r#"say \"hi\""#);
/// assert_eq!(escape("a\\b\nc"), r"a\\b\nc");
/// assert_eq!(escape("x & y\t\r"), "x &amp; y&#9;&#13;");
/// assert_eq!(escape("ünïcödé ✓"), "ünïcödé ✓");
/// ```
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

/// Appends [`escape`]`(s)` to `out`, without a temporary string.
///
/// ```
/// use hoplite_core::dot::escape_into;
/// let mut line = String::from("  n0 [label=\"");
/// escape_into(&mut line, "load \"a\"");
/// line.push_str("\"];");
/// assert_eq!(line, r#"  n0 [label="load \"a\""];"#);
/// ```
pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => {
                out.push_str("&#");
                out.push_str(&u32::from(c).to_string());
                out.push(';');
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reads one DOT quoted string as Graphviz shows it, for the escapes [`escape`] writes:
    /// the string that `quoted` (quotes included) stands for, or why it is not one such string.
    fn read_dot_string(quoted: &str) -> Result<String, String> {
        let body = quoted.strip_prefix('"').ok_or("no opening quote")?;
        let mut out = String::new();
        let mut chars = body.chars();
        loop {
            let c = chars.next().ok_or("no closing quote")?;
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('\\') => out.push('\\'),
                    Some('"') => out.push('"'),
                    Some('n') => out.push('\n'),
                    other => return Err(format!("unknown escape {other:?}")),
                },
                '&' => {
                    let rest = chars.as_str();
                    let end = rest.find(';').ok_or("unterminated reference")?;
                    let name = &rest[..end];
                    let decoded = if name == "amp" {
                        '&'
                    } else {
                        let n: u32 = name
                            .strip_prefix('#')
                            .and_then(|d| d.parse().ok())
                            .ok_or_else(|| format!("bad reference &{name};"))?;
                        char::from_u32(n).ok_or("reference to no character")?
                    };
                    out.push(decoded);
                    chars = rest[end + 1..].chars();
                }
                c if c.is_control() => return Err(format!("raw control character {c:?}")),
                c => out.push(c),
            }
        }
        if chars.as_str().is_empty() {
            Ok(out)
        } else {
            Err(format!("text after the closing quote: {:?}", chars.as_str()))
        }
    }

    /// Any character, with the ones DOT and Graphviz treat specially drawn often.
    fn label_char() -> impl Strategy<Value = char> {
        prop_oneof![
            4 => any::<char>(),
            2 => (0u32..0x20).prop_map(|n| char::from_u32(n).expect("a C0 control")),
            1 => (0x7fu32..0xa0).prop_map(|n| char::from_u32(n).expect("DEL or a C1 control")),
            2 => prop::sample::select(vec!['\\', '"', '&', ';', '#', 'n', 'l', 'N', '<', '>', '{', '|']),
        ]
    }

    fn label() -> impl Strategy<Value = String> {
        prop::collection::vec(label_char(), 0..48).prop_map(String::from_iter)
    }

    proptest! {
        #[test]
        #[cfg_attr(miri, ignore = "proptest reads the working directory, which Miri isolates")]
        fn an_escaped_label_reads_back_as_itself(s in label()) {
            let escaped = escape(&s);
            prop_assert!(!escaped.chars().any(char::is_control), "{escaped:?}");
            prop_assert_eq!(read_dot_string(&format!("\"{escaped}\"")), Ok(s));
        }
    }

    #[test]
    fn each_special_character_has_its_spelling() {
        assert_eq!(escape("\\"), "\\\\");
        assert_eq!(escape("\""), "\\\"");
        assert_eq!(escape("\n"), "\\n");
        assert_eq!(escape("&"), "&amp;");
        assert_eq!(
            escape("\0\t\r\u{1b}\u{7f}\u{85}"),
            "&#0;&#9;&#13;&#27;&#127;&#133;"
        );
        assert_eq!(
            escape("\\n"),
            "\\\\n",
            "a backslash never starts a Graphviz escape"
        );
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }

    #[test]
    fn the_reader_refuses_what_is_not_one_escaped_string() {
        assert!(read_dot_string("\"a\"b\"").is_err());
        assert!(read_dot_string("\"a\\").is_err());
        assert!(read_dot_string("\"a\nb\"").is_err());
        assert!(read_dot_string("\"&#x41;\"").is_err());
    }
}
