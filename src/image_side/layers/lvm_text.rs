//! LVM2's text metadata format: the volume group description that every
//! physical volume carries in its metadata area (`vg { id = "…" … }`).
//!
//! The grammar is small: sections `name { … }`, assignments `key = value`,
//! values that are integers, quoted strings or `[ … ]` lists of those, and
//! `#` comments. lvm2 has written this format since 2002; the reader takes
//! what any version writes and ignores keys it does not know.

/// One value of the format.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Str(String),
    List(Vec<Value>),
    Section(Section),
}

/// A section's entries in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    pub entries: Vec<(String, Value)>,
}

impl Section {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn section(&self, key: &str) -> Option<&Section> {
        match self.get(key)? {
            Value::Section(s) => Some(s),
            _ => None,
        }
    }

    /// The sub-sections, by name, in file order.
    pub fn sections(&self) -> impl Iterator<Item = (&str, &Section)> {
        self.entries.iter().filter_map(|(k, v)| match v {
            Value::Section(s) => Some((k.as_str(), s)),
            _ => None,
        })
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A list of strings (`status = ["READ", "WRITE"]`); empty if absent.
    pub fn strings(&self, key: &str) -> Vec<&str> {
        match self.get(key) {
            Some(Value::List(items)) => items
                .iter()
                .filter_map(|v| match v {
                    Value::Str(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn list(&self, key: &str) -> &[Value] {
        match self.get(key) {
            Some(Value::List(items)) => items,
            _ => &[],
        }
    }
}

/// How deep sections and lists may nest. lvm2 writes at most five levels
/// (top, vg, logical_volumes, an LV, a segment) and flat lists; a text from
/// a disk is untrusted, and the parser recurses, so a crafted
/// `[[[[…` must end as an error, not as a stack overflow that kills PID 1.
pub const MAX_DEPTH: usize = 16;

/// Parse a whole metadata text. Errors say the line.
pub fn parse(text: &str) -> Result<Section, String> {
    let mut p = Parser { bytes: text.as_bytes(), pos: 0, depth: 0 };
    let top = p.entries(true)?;
    Ok(top)
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Sections and lists open around `pos`.
    depth: usize,
}

impl Parser<'_> {
    fn line(&self) -> usize {
        1 + self.bytes[..self.pos.min(self.bytes.len())].iter().filter(|b| **b == b'\n').count()
    }

    fn error(&self, what: &str) -> String {
        format!("LVM2 metadata, line {}: {what}", self.line())
    }

    /// Skip blanks, comments and the NULs that pad a metadata area.
    fn skip(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if b == b'#' {
                while self.bytes.get(self.pos).is_some_and(|b| *b != b'\n') {
                    self.pos += 1;
                }
            } else if b.is_ascii_whitespace() || b == 0 {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip();
        self.bytes.get(self.pos).copied()
    }

    /// Step into a section or list, refusing to nest deeper than lvm2 ever writes.
    fn descend(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(&format!("sections or lists nest deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn entries(&mut self, top: bool) -> Result<Section, String> {
        let mut section = Section::default();
        loop {
            match self.peek() {
                None if top => return Ok(section),
                None => return Err(self.error("the text ends inside a section")),
                Some(b'}') if !top => {
                    self.pos += 1;
                    return Ok(section);
                }
                Some(_) => {
                    let key = self.identifier()?;
                    match self.peek() {
                        Some(b'{') => {
                            self.pos += 1;
                            self.descend()?;
                            let inner = self.entries(false)?;
                            self.depth -= 1;
                            section.entries.push((key, Value::Section(inner)));
                        }
                        Some(b'=') => {
                            self.pos += 1;
                            let value = self.value()?;
                            section.entries.push((key, value));
                        }
                        _ => return Err(self.error(&format!("'{key}' is followed by neither '=' nor '{{'"))),
                    }
                }
            }
        }
    }

    fn identifier(&mut self) -> Result<String, String> {
        let start = self.pos;
        // VG, LV and PV names may hold letters, digits and `+_.-`.
        while self.bytes.get(self.pos).is_some_and(|b| b.is_ascii_alphanumeric() || b"+_.-".contains(b)) {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.error("expected a name"));
        }
        Ok(String::from_utf8_lossy(&self.bytes[start..self.pos]).into_owned())
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(b'"') => self.string().map(Value::Str),
            Some(b'[') => {
                self.pos += 1;
                self.descend()?;
                let mut items = Vec::new();
                loop {
                    match self.peek() {
                        Some(b']') => {
                            self.pos += 1;
                            self.depth -= 1;
                            return Ok(Value::List(items));
                        }
                        Some(b',') => self.pos += 1,
                        Some(_) => items.push(self.value()?),
                        None => return Err(self.error("the text ends inside a list")),
                    }
                }
            }
            Some(b) if b == b'-' || b.is_ascii_digit() => self.number(),
            _ => Err(self.error("expected a value")),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.bytes.get(self.pos) {
                None => return Err(self.error("the text ends inside a string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                Some(b'\\') if self.pos + 1 < self.bytes.len() => {
                    out.push(self.bytes[self.pos + 1]);
                    self.pos += 2;
                }
                Some(&b) => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        self.pos += 1;
        while self.bytes.get(self.pos).is_some_and(|b| b.is_ascii_digit() || *b == b'.') {
            self.pos += 1;
        }
        let text = String::from_utf8_lossy(&self.bytes[start..self.pos]).into_owned();
        // Floats appear only in keys bootmark does not read (none in current lvm2): kept as text.
        match text.parse::<i64>() {
            Ok(i) => Ok(Value::Int(i)),
            Err(_) if text.contains('.') => Ok(Value::Str(text)),
            Err(_) => Err(self.error(&format!("'{text}' is not a number"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_lists_strings_numbers_and_comments() {
        let text = "# Generated by LVM2\nvg0 {\nid = \"abc\"\nseqno = 3\nstatus = [\"READ\", \"WRITE\"]\n\
                    lv {\nsegment1 {\nstripes = [\n\"pv0\", 0,\n\"pv1\", -2\n]\n}\n}\n}\n\
                    contents = \"Text Format Volume Group\" # trailing\nversion = 1\n\0\0\0";
        let top = parse(text).unwrap();
        let vg = top.section("vg0").unwrap();
        assert_eq!(vg.str("id"), Some("abc"));
        assert_eq!(vg.int("seqno"), Some(3));
        assert_eq!(vg.strings("status"), ["READ", "WRITE"]);
        let seg = vg.section("lv").unwrap().section("segment1").unwrap();
        assert_eq!(
            seg.list("stripes"),
            [Value::Str("pv0".into()), Value::Int(0), Value::Str("pv1".into()), Value::Int(-2)]
        );
        assert_eq!(top.int("version"), Some(1));
        assert_eq!(top.sections().map(|(k, _)| k).collect::<Vec<_>>(), ["vg0"]);
    }

    #[test]
    fn a_cut_or_garbled_text_is_an_error_naming_its_line() {
        assert!(parse("vg {\nid = \"x\"\n").unwrap_err().contains("ends inside a section"));
        assert!(parse("vg {\nid \"x\"\n}").unwrap_err().contains("line 2"));
        assert!(parse("a = \"unterminated").unwrap_err().contains("inside a string"));
        assert!(parse("a = [1, 2").unwrap_err().contains("inside a list"));
    }

    #[test]
    fn nesting_deeper_than_lvm_writes_is_an_error_not_a_stack_overflow() {
        // 100,000 levels fit in a normal 1 MiB metadata area; without the limit this aborts the test process.
        let lists = format!("vg {{\nseqno = {}\n}}\n", "[".repeat(100_000));
        assert!(parse(&lists).unwrap_err().contains("nest deeper than 16 levels"));
        let sections = "a {\n".repeat(100_000);
        assert!(parse(&sections).unwrap_err().contains("line 17: sections or lists nest deeper"));
        // lvm2's own depth (five levels) and a flat list still read.
        let ok = "vg {\nlogical_volumes {\nlv {\nsegment1 {\nstripes = [\"pv0\", 0]\n}\n}\n}\n}\n";
        assert!(parse(ok).is_ok());
        assert!(parse(&format!("a = {}{}", "[".repeat(16), "]".repeat(16))).is_ok());
    }
}
