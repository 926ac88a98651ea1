//! Escaping, the one place text becomes markup: every string the report's HTML pages (run page,
//! reports index, compare page) and XML files (JUnit) show — node names, error texts a database
//! sent, spec and test names — goes through [`esc`] or [`esc_xml`], so no value can open a tag,
//! close an attribute or start an entity. Does not build pages (`page`, `compare`, `junit`).

/// Escape text for HTML element content and attribute values (`&`, `<`, `>`, `"`, `'`).
pub fn esc(s: &str) -> String {
    escape(s, "&#39;", false)
}

/// Escape text for XML 1.0 element content and attribute values: as [`esc`] (with `&apos;`),
/// and the control characters XML 1.0 forbids (all below U+0020 but tab, CR and LF) become a
/// space.
pub fn esc_xml(s: &str) -> String {
    escape(s, "&apos;", true)
}

fn escape(s: &str, apos: &str, xml_controls: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str(apos),
            c if xml_controls && (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => {
                out.push(' ')
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_escaped_and_others_kept() {
        let hostile = "<script>alert('x')</script> \"a\" & b\u{1}é";
        assert_eq!(
            esc(hostile),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &quot;a&quot; &amp; b\u{1}é"
        );
        assert_eq!(
            esc_xml(hostile),
            "&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &quot;a&quot; &amp; b é"
        );
        assert_eq!(esc_xml("a\tb\nc\rd"), "a\tb\nc\rd");
        assert_eq!(esc("&amp;"), "&amp;amp;");
    }
}
