//! LAVA job logs: the YAML log stream `lava-run` prints and lava-server
//! keeps (`output.yaml`, `lavacli jobs logs --raw`): one flow mapping per
//! line, `{"dt": …, "lvl": …, "msg": …}`, optionally as a list item (`- {…}`).
//! The console's lines are the `msg` of `lvl: target`; they are turned back
//! into the console text and read like any serial capture.
//!
//! What LAVA did to a console line is undone: the mapping is YAML with
//! double-quoted scalars (escapes such as `\"`, `\\`, `\x..`, `\u....`), and
//! before that LAVA's shell logger escaped every `"` as `\"` (and dropped
//! `\r`, ESC and empty lines, which cannot be restored and do not matter).

use std::io::{self, BufRead, Read};

/// Does this look like the start of a LAVA job log?
pub fn is_lava_log(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let first = first.strip_prefix("- ").unwrap_or(first);
    first.starts_with("{\"dt\": \"") && first.contains("\"lvl\": \"")
}

/// The console text inside a LAVA log, as a reader: one output line per
/// log line (an empty one for anything but console output), so that line
/// numbers in problems are the log's own.
pub struct ConsoleText<R: BufRead> {
    input: R,
    line: Vec<u8>,
    out: Vec<u8>,
    at: usize,
}

impl<R: BufRead> ConsoleText<R> {
    pub fn new(input: R) -> Self {
        ConsoleText { input, line: Vec::new(), out: Vec::new(), at: 0 }
    }
}

impl<R: BufRead> Read for ConsoleText<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() {
            self.line.clear();
            if self.input.read_until(b'\n', &mut self.line)? == 0 {
                return Ok(0);
            }
            self.out.clear();
            self.at = 0;
            if let Some(text) = console_line(&String::from_utf8_lossy(&self.line)) {
                self.out.extend_from_slice(text.as_bytes());
            }
            self.out.push(b'\n');
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The console text of one log line, if it is console output (`lvl: target`).
pub fn console_line(line: &str) -> Option<String> {
    let line = line.trim_end_matches(['\r', '\n']);
    let line = line.strip_prefix("- ").unwrap_or(line);
    let mut p = Parser { s: line.as_bytes(), i: 0 };
    p.expect(b'{')?;
    let (mut lvl, mut msg) = (None, None);
    loop {
        p.spaces();
        let key = p.quoted()?;
        p.spaces();
        p.expect(b':')?;
        p.spaces();
        match key.as_str() {
            "lvl" => lvl = Some(p.quoted()?),
            "msg" if p.peek() == Some(b'"') => msg = Some(p.quoted()?),
            _ => p.skip_value()?,
        }
        p.spaces();
        match p.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    if lvl.as_deref() != Some("target") {
        return None;
    }
    msg.map(|m| unescape_shell_logger(&m))
}

/// LAVA's shell logger wrote every `"` of the console as `\"`: the
/// backslash right before each `"` is LAVA's, so it goes.
fn unescape_shell_logger(msg: &str) -> String {
    msg.replace("\\\"", "\"")
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }
    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }

    /// A YAML double-quoted scalar, escapes decoded.
    fn quoted(&mut self) -> Option<String> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.next()? {
                b'"' => return Some(String::from_utf8_lossy(&out).into_owned()),
                b'\\' => {
                    let c = match self.next()? {
                        b'0' => '\0',
                        b'a' => '\x07',
                        b'b' => '\x08',
                        b't' | b'\t' => '\t',
                        b'n' => '\n',
                        b'v' => '\x0b',
                        b'f' => '\x0c',
                        b'r' => '\r',
                        b'e' => '\x1b',
                        b' ' => ' ',
                        b'"' => '"',
                        b'/' => '/',
                        b'\\' => '\\',
                        b'N' => '\u{85}',
                        b'_' => '\u{a0}',
                        b'L' => '\u{2028}',
                        b'P' => '\u{2029}',
                        b'x' => self.hex(2)?,
                        b'u' => self.hex(4)?,
                        b'U' => self.hex(8)?,
                        _ => return None,
                    };
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                c => out.push(c),
            }
        }
    }

    fn hex(&mut self, digits: usize) -> Option<char> {
        let text = std::str::from_utf8(self.s.get(self.i..self.i + digits)?).ok()?;
        self.i += digits;
        char::from_u32(u32::from_str_radix(text, 16).ok()?).or(Some('\u{fffd}'))
    }

    /// Any other value: a tagged or plain scalar, or a nested mapping or
    /// sequence (results), skipped up to the `,` or `}` that ends it.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.quoted()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.i += 1;
                }
                b',' | b'}' if depth == 0 => return Some(()),
                _ => self.i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_lines_come_out_of_lava_mappings_as_the_console_had_them() {
        // As lava-run printed them (lava-dispatcher 2023.01), quotes escaped by its shell logger.
        let target = r#"{"dt": "2026-11-30T18:56:55.946250", "lvl": "target", "msg": "bootmark: \\\"q\\\" \\ \x07 \u00e9 done"}"#;
        assert_eq!(console_line(target).as_deref(), Some("bootmark: \"q\" \\ \x07 \u{e9} done"));
        let listed = format!("- {target}\n");
        assert_eq!(console_line(&listed), console_line(target));
        let results = r#"{"dt": "2026-11-30T18:56:55.974836", "lvl": "results", "msg": {"case": "manyfiles", "extra": {"test_case_id": "manyfiles"}, "measurement": ! "57.0", "result": "pass"}}"#;
        assert_eq!(console_line(results), None);
        assert_eq!(console_line(r#"{"dt": "x", "lvl": "info", "msg": "start: 0 validate"}"#), None);
        assert_eq!(console_line("@BM1 H run 0 1 2 abc *00000000"), None, "a raw console line is not a LAVA line");
        assert_eq!(console_line(r#"{"dt": "x", "lvl": "target", "msg": "cut"#), None);
    }

    #[test]
    fn the_console_text_keeps_the_logs_line_numbers() {
        let log = concat!(
            "{\"dt\": \"a\", \"lvl\": \"info\", \"msg\": \"start\"}\n",
            "{\"dt\": \"b\", \"lvl\": \"target\", \"msg\": \"Linux version 6.1\"}\n",
            "{\"dt\": \"c\", \"lvl\": \"target\", \"msg\": \"@BM1 x\"}\n",
        );
        assert!(is_lava_log(log.as_bytes()));
        assert!(is_lava_log(format!("- {log}").as_bytes()));
        assert!(!is_lava_log(b"Linux version 6.1\n@BM1 H"));
        let mut text = String::new();
        ConsoleText::new(log.as_bytes()).read_to_string(&mut text).unwrap();
        assert_eq!(text, "\nLinux version 6.1\n@BM1 x\n");
    }
}
