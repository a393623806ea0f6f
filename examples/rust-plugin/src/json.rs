//! A small, strict JSON reader and a string quoter: just what this plugin needs to read the
//! host's request and write its response without pulling a crate.
//!
//! Limitations, on purpose (a real plugin would use serde_json):
//! - the whole document is parsed into memory, although the plugin needs two or three members
//!   (the request also carries `state_view`, which can be large);
//! - numbers are validated but kept as their text (the plugin reads none);
//! - a member that appears twice keeps its first value;
//! - nesting deeper than `MAX_DEPTH` is refused rather than risking the worker thread's stack
//!   (a stack overflow aborts the process; it is not a panic that catch_unwind could stop).

use std::fmt::Write as _;

const MAX_DEPTH: usize = 128;

#[derive(Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object; `None` for a missing member or a value that is no object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }
}

/// Parses one JSON document. The error says what was wrong and at which byte.
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {}", e))?;
    let mut parser = Parser { text, pos: 0 };
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != text.len() {
        return Err(parser.error("unexpected text after the JSON value"));
    }
    Ok(value)
}

/// `text` as a JSON string literal, quotes included.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Parser<'a> {
    text: &'a str,
    pos: usize, // a byte offset, always on a char boundary
}

impl<'a> Parser<'a> {
    fn error(&self, what: &str) -> String {
        format!("{} at byte {}", what, self.pos)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", byte as char)))
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, String> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.skip_ws();
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("expected a JSON value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.expect(b'{')?;
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            let key = self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let leading_zero = self.peek() == Some(b'0');
        let int_digits = self.digits();
        if int_digits == 0 || (leading_zero && int_digits > 1) {
            return Err(self.error("malformed number"));
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("malformed number"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("malformed number"));
            }
        }
        Ok(Value::Number(self.text[start..self.pos].to_string()))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.error("truncated \\u escape"))?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.error("malformed \\u escape"));
        }
        self.pos += 4;
        u32::from_str_radix(digits, 16).map_err(|_| self.error("malformed \\u escape"))
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            // Copy the run of plain characters up to the next quote, backslash or control byte.
            let plain = rest
                .find(|c: char| c == '"' || c == '\\' || (c as u32) < 0x20)
                .ok_or_else(|| self.error("unterminated string"))?;
            out.push_str(&rest[..plain]);
            self.pos += plain;
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => self.pos += 1,
                _ => return Err(self.error("control character in a string")),
            }
            let escape = self.peek().ok_or_else(|| self.error("unterminated string"))?;
            self.pos += 1;
            match escape {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                b'u' => {
                    let mut code = self.hex4()?;
                    if (0xD800..0xDC00).contains(&code) {
                        // A high surrogate: the low half must follow as another \u escape.
                        if !self.text[self.pos..].starts_with("\\u") {
                            return Err(self.error("lone surrogate in \\u escape"));
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err(self.error("lone surrogate in \\u escape"));
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    }
                    // None for a lone low surrogate, which no Rust string can hold.
                    let ch = char::from_u32(code)
                        .ok_or_else(|| self.error("lone surrogate in \\u escape"))?;
                    out.push(ch);
                }
                _ => return Err(self.error("unknown escape")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_members() {
        let v = parse(
            br#" {"node": {"id": "n", "writes": ["a"]}, "args": {"text": "hi", "n": -1.5e3}} "#,
        )
        .unwrap();
        assert_eq!(v.get("node").and_then(|n| n.get("id")).and_then(Value::as_str), Some("n"));
        let writes = v.get("node").and_then(|n| n.get("writes")).and_then(Value::as_array);
        assert_eq!(writes, Some(&[Value::String("a".into())][..]));
        assert_eq!(v.get("args").and_then(|a| a.get("n")), Some(&Value::Number("-1.5e3".into())));
        assert_eq!(v.get("missing"), None);
    }

    #[test]
    fn decodes_escapes_and_surrogate_pairs() {
        let v = parse(br#""a\"b\\c\/\n\u00e9\ud83e\udd80""#).unwrap();
        assert_eq!(v.as_str(), Some("a\"b\\c/\n\u{e9}\u{1f980}"));
    }

    #[test]
    fn refuses_malformed_input() {
        for bad in [
            &b"{"[..],
            b"{\"a\" 1}",
            b"[1,]",
            b"01",
            b"1.",
            b"\"\\ud800\"",
            b"\"\\udc00\"",
            b"\"\\x\"",
            b"\"a\nb\"",
            b"\"abc",
            b"tru",
            b"{} x",
            b"\xff",
        ] {
            assert!(parse(bad).is_err(), "accepted {:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn refuses_deep_nesting_without_overflowing_the_stack() {
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes()).unwrap_err().contains("nested too deeply"));
    }

    #[test]
    fn quote_round_trips() {
        let text = "say \"hi\"\\\n\t\u{1}é🦀";
        let quoted = quote(text);
        assert_eq!(quoted, "\"say \\\"hi\\\"\\\\\\n\\t\\u0001é🦀\"");
        assert_eq!(parse(quoted.as_bytes()).unwrap().as_str(), Some(text));
    }
}
