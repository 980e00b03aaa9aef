//! Text made safe for HTML, written once for the two places dyno writes
//! HTML: the report's pages (`dyno-report`) and the pages the test server
//! serves (`dyno-serve`). Both put untrusted text (command names, posted
//! messages) into element content and double-quoted attribute values, so
//! one escaping serves both: the five characters that could end either.

/// Appends `text` to `out` made safe for HTML content and for attribute
/// values in double (or single) quotes: `&`, `<`, `>`, `"` and `'` become
/// entities, everything else stays as it is.
pub fn push_escaped(out: &mut String, text: &str) {
    let special = |c: char| matches!(c, '&' | '<' | '>' | '"' | '\'');
    // Most text has nothing to escape: copy it whole.
    if !text.contains(special) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// `text` made safe for HTML as [`push_escaped`] makes it, as a new string.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_becomes_text() {
        assert_eq!(
            escape("</script><img src=x onerror=\"a\">'&"),
            "&lt;/script&gt;&lt;img src=x onerror=&quot;a&quot;&gt;&#39;&amp;"
        );
    }

    #[test]
    fn plain_text_is_appended_unchanged() {
        let mut out = String::from("<p>");
        push_escaped(&mut out, "ünïcode, 12.5 ms");
        push_escaped(&mut out, "");
        assert_eq!(out, "<p>ünïcode, 12.5 ms");
        assert_eq!(escape("a & b"), "a &amp; b");
    }
}
