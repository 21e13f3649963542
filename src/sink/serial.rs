//! The serial console sink: every record as framed lines (see `framing`)
//! plus one human summary line, with the kernel's console loglevel lowered
//! while a record is printed so printk output does not cut our lines.

use super::Sink;
use crate::framing;
use crate::record::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub struct Serial {
    out: File,
}

const SYSLOG_ACTION_CONSOLE_LEVEL: libc::c_int = 8;

impl Serial {
    /// Open /dev/NAME (e.g. ttyS0), falling back to /dev/console.
    pub fn open(dev_dir: &Path, name: &str) -> io::Result<Serial> {
        let open = |p: &Path| OpenOptions::new().append(true).custom_flags(libc::O_NOCTTY).open(p);
        let out = open(&dev_dir.join(name)).or_else(|_| open(&dev_dir.join("console")))?;
        Ok(Serial { out })
    }

    /// Wrap any writable file (tests use a plain file).
    pub fn from_file(out: File) -> Serial {
        Serial { out }
    }

    pub fn line(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(format!("{text}\r\n").as_bytes())
    }

    /// Print a framed document (a record or the run record) with printk quieted.
    pub fn framed(&mut self, run_id: &str, seq: u32, json: &[u8]) -> io::Result<()> {
        let quiet = QuietConsole::new();
        let mut text = String::new();
        for l in framing::encode(run_id, seq, json) {
            text.push_str(&l);
            text.push_str("\r\n");
        }
        let r = self.out.write_all(text.as_bytes());
        drop(quiet);
        r
    }
}

impl Sink for Serial {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        let json = serde_json::to_vec(record)?;
        self.framed(&record.run_id, record.seq, &json)?;
        self.line(&format!("bootmark: {}", record.summary_line()))
    }
}

/// Lowers the console loglevel to "emergencies only" and restores it on drop.
struct QuietConsole {
    previous: Option<libc::c_int>,
}

impl QuietConsole {
    fn new() -> QuietConsole {
        let previous = std::fs::read_to_string("/proc/sys/kernel/printk")
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()));
        // Only as root (PID 1): elsewhere klogctl fails harmlessly.
        // SAFETY: CONSOLE_LEVEL takes no buffer.
        if previous.is_some() && unsafe { libc::klogctl(SYSLOG_ACTION_CONSOLE_LEVEL, std::ptr::null_mut(), 1) } == 0 {
            return QuietConsole { previous };
        }
        QuietConsole { previous: None }
    }
}

impl Drop for QuietConsole {
    fn drop(&mut self) {
        if let Some(level) = self.previous {
            // SAFETY: as above.
            unsafe { libc::klogctl(SYSLOG_ACTION_CONSOLE_LEVEL, std::ptr::null_mut(), level) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::{Assembler, Fed, parse_line};

    #[test]
    fn framed_output_decodes_to_the_same_bytes() {
        let path = std::env::temp_dir().join(format!("bootmark-serial-{}", std::process::id()));
        let mut s = Serial::from_file(std::fs::File::create(&path).unwrap());
        s.line("booting").unwrap();
        s.framed("run", 3, b"{\"x\":1}").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut a = Assembler::default();
        let fed: Vec<Fed> = text.lines().filter_map(parse_line).map(|l| a.feed(l.unwrap())).collect();
        assert_eq!(fed.last(), Some(&Fed::Record("run".into(), 3, b"{\"x\":1}".to_vec())), "{text}");
        std::fs::remove_file(&path).unwrap();
    }
}
