//! Where a value sits in JSON text: the line and column of the value at a
//! path such as `steps[1].done`.
//!
//! serde_json reports line and column for syntax errors, but a spec file
//! that parses and still says something wrong (a guard of the wrong shape,
//! an `after` naming no step) is decoded from a `serde_json::Value`, which
//! has no positions. This scanner walks the original text along the path to
//! point the error at the right line. It expects text serde_json already
//! accepted; on anything unexpected it gives up and returns `None`, and the
//! error is reported without a position.

use std::fmt;

/// One segment of a path into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    /// A member of an object.
    Key(String),
    /// An element of an array.
    Index(usize),
}

/// A path into a JSON document, printed as `steps[1].done.all[0]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JsonPath(pub(crate) Vec<Seg>);

impl JsonPath {
    pub(crate) fn key(&self, key: &str) -> JsonPath {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.to_string()));
        JsonPath(segs)
    }

    pub(crate) fn index(&self, index: usize) -> JsonPath {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(index));
        JsonPath(segs)
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("the top level");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(key) if i == 0 => write!(f, "{key}")?,
                Seg::Key(key) => write!(f, ".{key}")?,
                Seg::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// The 1-based line and column where the value at `path` starts in `text`.
pub(crate) fn position(text: &str, path: &JsonPath) -> Option<(usize, usize)> {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    scanner.space();
    for seg in &path.0 {
        match seg {
            Seg::Key(key) => scanner.enter_member(key)?,
            Seg::Index(index) => scanner.enter_element(*index)?,
        }
    }
    Some(line_and_column(text, scanner.at))
}

fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.space();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Moves to the start of member `key` of the object here. When a key
    /// repeats, serde_json keeps the last, so the last is where we stop.
    fn enter_member(&mut self, key: &str) -> Option<()> {
        self.expect(b'{')?;
        let mut found = None;
        self.space();
        if self.peek()? == b'}' {
            return None;
        }
        loop {
            self.space();
            let name = self.string()?;
            self.expect(b':')?;
            self.space();
            if name == key {
                found = Some(self.at);
            }
            self.skip_value()?;
            self.space();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => break,
                _ => return None,
            }
        }
        self.at = found?;
        Some(())
    }

    /// Moves to the start of element `index` of the array here.
    fn enter_element(&mut self, index: usize) -> Option<()> {
        self.expect(b'[')?;
        for _ in 0..index {
            self.space();
            self.skip_value()?;
            self.expect(b',')?;
        }
        self.space();
        (self.peek()? != b']').then_some(())
    }

    /// Reads a string token and decodes it (escapes included).
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        self.skip_string()?;
        serde_json::from_str(&self.text[start..self.at]).ok()
    }

    fn skip_string(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.at += 1;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                _ => self.at += 1,
            }
        }
    }

    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.at += 1;
                self.space();
                if self.peek()? == close {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.space();
                    if open == b'{' {
                        self.skip_string()?;
                        self.expect(b':')?;
                        self.space();
                    }
                    self.skip_value()?;
                    self.space();
                    match self.peek()? {
                        b',' => self.at += 1,
                        c if c == close => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            // Numbers and literals: run to the next delimiter.
            _ => {
                let start = self.at;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_values() {
        let text = "{\n  \"v\": 1,\n  \"steps\": [\n    {\"id\": \"a\"},\n    {\"id\": \"b\", \"done\": {\"all\": [1, {\"x\": \"y\"}]}}\n  ]\n}\n";
        let path = JsonPath::default().key("steps").index(1).key("done");
        assert_eq!(position(text, &path), Some((5, 25)));
        assert_eq!(path.to_string(), "steps[1].done");
        let deeper = path.key("all").index(1);
        assert_eq!(position(text, &deeper), Some((5, 37)));
        assert_eq!(position(text, &JsonPath::default().key("v")), Some((2, 8)));
        assert_eq!(position(text, &JsonPath::default().key("nope")), None);
        assert_eq!(
            position(text, &JsonPath::default().key("steps").index(7)),
            None
        );
    }

    #[test]
    fn escaped_keys_and_strings_are_skipped_correctly() {
        let text = r#"{"a\"b": "x\\", "k": [true, null, -1.5e3, "]"]}"#;
        let at = position(text, &JsonPath::default().key("k").index(3)).unwrap();
        assert_eq!(at, (1, 43));
        assert_eq!(
            position(text, &JsonPath::default().key("a\"b")),
            Some((1, 10))
        );
    }
}
