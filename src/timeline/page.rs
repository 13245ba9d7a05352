//! One self-contained HTML page: escaping, the shell every page shares
//! (inline CSS, at most one inline script, no network), and data embedded
//! as JSON.
//!
//! Every text a page shows comes from a run (model text, tool arguments,
//! reasons, agent names) and may be hostile: it is escaped for the place
//! it goes (element text, attribute, embedded JSON). The page's Content
//! Security Policy allows nothing from the network and only the page's
//! own script, by its SHA-256: text that slipped past escaping still
//! could not run.

use std::fmt::Write as _;

use base64::Engine as _;

/// The style every page shares.
pub(crate) const STYLE: &str = include_str!("page.css");

/// `text` escaped for HTML element text and quoted attribute values.
///
/// ```
/// assert_eq!(
///     livesim::timeline::escape(r#"<b onclick="x()">&'"#),
///     "&lt;b onclick=&quot;x()&quot;&gt;&amp;&#39;"
/// );
/// ```
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    escape_into(&mut out, text);
    out
}

/// Appends `text`, escaped, to `out`.
pub(crate) fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters have no business in a page.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

/// The format version a timeline's JSON and page carry (`"v"`, with
/// `"kind": "timeline"`): raised when a key changes meaning or goes, so a
/// tool that reads timelines can tell which it was given.
///
/// ```
/// use livesim::executor::Trace;
/// use livesim::timeline::{TIMELINE_VERSION, Timeline};
///
/// let json = Timeline::from_trace(&Trace::default()).to_json();
/// assert_eq!(json["v"], TIMELINE_VERSION);
/// assert_eq!(json["kind"], "timeline");
/// ```
pub const TIMELINE_VERSION: u32 = 1;

/// The format version a soak report's JSON and page carry (`"v"`, with
/// `"kind": "soak_report"`).
pub const SOAK_REPORT_VERSION: u32 = 1;

/// `value` (an object) as JSON led by its format: `{"v": version, "kind":
/// kind, …value's members}`, the way every other file livesim writes
/// starts.
pub(crate) fn versioned(kind: &str, version: u32, value: serde_json::Value) -> serde_json::Value {
    let mut object = serde_json::Map::new();
    object.insert("v".into(), version.into());
    object.insert("kind".into(), kind.into());
    if let serde_json::Value::Object(members) = value {
        object.extend(members);
    }
    serde_json::Value::Object(object)
}

/// `value` as JSON safe inside `<script type="application/json">`: no
/// `<`, `>` or `&` that could end the element or start markup (each is
/// written as its `\u` escape, which JSON reads back unchanged).
pub(crate) fn embedded_json(value: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_string());
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The policy that lets a page run its own script and nothing else.
fn policy(script: Option<&str>) -> String {
    let script = match script {
        Some(code) => {
            let digest = ring::digest::digest(&ring::digest::SHA256, code.as_bytes());
            let hash = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
            format!("'sha256-{hash}'")
        }
        None => "'none'".to_string(),
    };
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {script}; \
         form-action 'none'; base-uri 'none'"
    )
}

/// What a page is, for a tool that reads it: its kind and format version,
/// written in a `<meta name="livesim-format" content="kind/v">`.
pub(crate) struct Format {
    pub kind: &'static str,
    pub version: u32,
}

/// A whole page of `format`: `title` (escaped here), `body` (already
/// HTML), the shared style plus `style`, and `script` (run last, allowed
/// by its hash).
pub(crate) fn page(
    format: Format,
    title: &str,
    style: &str,
    body: &str,
    script: Option<&str>,
) -> String {
    let mut out = String::with_capacity(body.len() + STYLE.len() + 2048);
    out.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(
        out,
        "<meta name=\"livesim-format\" content=\"{}/{}\">",
        format.kind, format.version
    );
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        policy(script)
    );
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n<title>");
    escape_into(&mut out, title);
    out.push_str("</title>\n<style>\n");
    out.push_str(STYLE);
    out.push_str(style);
    out.push_str("</style>\n</head>\n<body>\n");
    out.push_str(body);
    if let Some(code) = script {
        out.push_str("<script>");
        out.push_str(code);
        out.push_str("</script>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// Writes `html` to `path`, creating its folder; errors name the file.
pub(crate) fn write(path: &std::path::Path, html: &str) -> std::io::Result<()> {
    let named =
        |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(named)?;
    }
    std::fs::write(path, html).map_err(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_its_element() {
        let json = embedded_json(&serde_json::json!({"t": "</script><b>&amp;\u{2028}"}));
        assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["t"], "</script><b>&amp;\u{2028}");
    }

    fn test_page(script: Option<&str>) -> String {
        let format = Format {
            kind: "test",
            version: 7,
        };
        page(format, "t", "", "", script)
    }

    #[test]
    fn a_page_says_its_kind_and_version() {
        assert!(test_page(None).contains("<meta name=\"livesim-format\" content=\"test/7\">"));
    }

    #[test]
    fn a_versioned_document_leads_with_its_version_and_kind() {
        let json = versioned("test", 7, serde_json::json!({"a": 1, "b": [2]}));
        assert_eq!(json.to_string(), r#"{"v":7,"kind":"test","a":1,"b":[2]}"#);
    }

    #[test]
    fn the_policy_names_the_script_by_its_hash() {
        let html = test_page(Some("1+1"));
        // sha256("1+1"), base64.
        assert!(
            html.contains("script-src 'sha256-Shsh2HauAMjtXE0c3gnGH4phtQ/jcKgBsQwzmDHzcKs='"),
            "{html}"
        );
        assert!(test_page(None).contains("script-src 'none'"));
    }

    #[test]
    fn control_characters_do_not_reach_the_page() {
        assert_eq!(escape("a\u{1b}[31mb\nc"), "a\u{fffd}[31mb\nc");
    }
}
