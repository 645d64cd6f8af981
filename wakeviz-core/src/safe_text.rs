//! Text bound for a terminal or a text file, made safe to show.
//!
//! Recordings come from other machines and other people: a command line, a label, a hostname
//! or a metric name can carry ESC, CSI (`\x1b[2J`, or the one-byte C1 form U+009B), OSC 52
//! (a clipboard write) or a bidi override that reorders what the reader sees. Every text that
//! leaves wakeviz for a terminal or a text file goes through [`escape`] once, at the point
//! where it is written, so no renderer has to remember it.
//!
//! The escape is `\uXXXX`, the JSON spelling: it is visible in text, and inside a JSON string
//! it means the very same character, so a JSON document passed through [`escape`] stays valid
//! and decodes to the same value. Escaping runs on the finished text, after any truncation, so
//! a cut can never fall inside an escape.
use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw: C0 controls other than newline and tab, DEL,
/// C1 controls (U+0080-U+009F: U+009B alone starts a CSI on many terminals) and the bidi
/// embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069).
#[must_use]
pub fn is_unsafe(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// `s` with every [`is_unsafe`] character written as `\uXXXX`; borrowed when nothing needed
/// escaping (the common case costs one scan).
#[must_use]
pub fn escape(s: &str) -> Cow<'_, str> {
    let Some(first) = s.find(is_unsafe) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        if is_unsafe(c) {
            // Infallible: writing to a String.
            let _ = std::fmt::Write::write_fmt(&mut out, format_args!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// At most `max` characters of `s`, made safe: the cut is on the raw text, at a character
/// boundary, and the escape comes after it, so the result never ends inside an escape. A cut
/// text ends in `~`.
#[must_use]
pub fn truncate(s: &str, max: usize) -> String {
    let cut = match s.char_indices().nth(max) {
        Some(_) => {
            let keep: String = s.chars().take(max.saturating_sub(1)).collect();
            keep + "~"
        }
        None => s.to_string(),
    };
    escape(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_sequences_come_out_visible() {
        for (raw, want) in [
            ("a\x1b[2Jb", "a\\u001b[2Jb"),
            ("\x1b]52;c;aGk=\x07", "\\u001b]52;c;aGk=\\u0007"),
            ("x\u{9b}31m", "x\\u009b31m"),
            ("del\x7f", "del\\u007f"),
            ("cr\rnul\0", "cr\\u000dnul\\u0000"),
            ("rtl\u{202e}gnp.exe", "rtl\\u202egnp.exe"),
            ("iso\u{2066}x\u{2069}", "iso\\u2066x\\u2069"),
        ] {
            assert_eq!(escape(raw), want, "{raw:?}");
            assert!(!escape(raw).chars().any(is_unsafe));
        }
    }

    #[test]
    fn plain_text_is_untouched_and_borrowed() {
        let s = "cpu 3\tllc 1\nnaïve 名前 ✓\n";
        assert!(matches!(escape(s), Cow::Borrowed(_)));
        assert_eq!(escape(s), s);
    }

    #[test]
    fn json_stays_json() {
        let v = serde_json::json!({ "host": "h\u{9b}2J\u{202e}x", "c": "\x1b]52;c;x\x07" });
        let raw = serde_json::to_string_pretty(&v).expect("json");
        let safe = escape(&raw);
        assert!(!safe.chars().any(is_unsafe));
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still json");
        assert_eq!(back, v);
    }

    #[test]
    fn truncation_never_cuts_an_escape() {
        let s = "ab\x1b[2Jcdef";
        for max in 0..12 {
            let t = truncate(s, max);
            assert!(!t.chars().any(is_unsafe), "{t:?}");
            // Every backslash starts a whole escape.
            for (i, _) in t.match_indices('\\') {
                let esc = &t[i..];
                assert!(esc.len() >= 6 && esc[1..2] == *"u", "{t:?} at {max}");
                assert!(esc[2..6].chars().all(|c| c.is_ascii_hexdigit()), "{t:?}");
            }
        }
        assert_eq!(truncate("abcdef", 4), "abc~");
        assert_eq!(truncate("ab", 4), "ab");
    }
}
