//! The serial console sink: every record as framed lines (see `framing`)
//! plus one human summary line, with the kernel's console loglevel lowered
//! while a record is printed, and until the UART has sent it, so printk
//! output does not cut our lines.

use super::{Sink, lava};
use crate::schema::framing;
use crate::schema::record::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub struct Serial {
    out: File,
    /// Why the named device was not used and /dev/console was (None: it was used).
    pub fallback: Option<String>,
    /// The LAVA test cases this boot owes (see `lava`): set once the plan
    /// is about to run, so that runs that never came are reported as skipped.
    cases: Option<lava::Cases>,
}

const SYSLOG_ACTION_CONSOLE_LEVEL: libc::c_int = 8;

impl Serial {
    /// Open /dev/NAME (e.g. ttyS0), falling back to /dev/console. Either
    /// must be a terminal: a character device that answers tcgetattr. A
    /// block device given as the console (`bootmark.console=sda`) would
    /// otherwise get records written over its partition table, since
    /// O_APPEND means nothing to a block device.
    pub fn open(dev_dir: &Path, name: &str) -> io::Result<Serial> {
        match open_terminal(&dev_dir.join(name)) {
            Ok(out) => Ok(Serial { out, fallback: None, cases: None }),
            Err(first) => match open_terminal(&dev_dir.join("console")) {
                Ok(out) => Ok(Serial { out, fallback: Some(format!("/dev/{name}: {first}")), cases: None }),
                Err(e) => Err(io::Error::other(format!("/dev/{name}: {first}; /dev/console: {e}"))),
            },
        }
    }

    /// Wrap any writable file (tests use a plain file).
    pub fn from_file(out: File) -> Serial {
        Serial { out, fallback: None, cases: None }
    }

    /// The plan's runs, each owed a LAVA test case from now on.
    pub fn expect_cases(&mut self, cases: lava::Cases) {
        self.cases = Some(cases);
    }

    /// The LAVA cases of the end of a boot: the runs that never came as
    /// skipped, and whether the boot was clean (see `lava::Cases::finish`).
    pub fn finish_cases(&mut self, boot_ok: bool, records: u32, failed: u32) -> io::Result<()> {
        let lines = self.cases.get_or_insert_with(Default::default).finish(boot_ok, records, failed);
        self.quiet_lines(&lines)
    }

    /// Lines for machines (LAVA's monitors): each in one write() starting
    /// at column 0, with printk quieted so a kernel message cannot split it.
    fn quiet_lines(&mut self, lines: &[String]) -> io::Result<()> {
        let text: String = lines.iter().map(|l| format!("{l}\r\n")).collect();
        self.write_quietly(text.as_bytes())
    }

    pub fn line(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(format!("{text}\r\n").as_bytes())
    }

    /// Print a framed document (a record or the run record) with printk quieted.
    pub fn framed(&mut self, run_id: &str, seq: u32, json: &[u8]) -> io::Result<()> {
        let mut text = String::new();
        for l in framing::encode(run_id, seq, json) {
            text.push_str(&l);
            text.push_str("\r\n");
        }
        self.write_quietly(text.as_bytes())
    }

    /// Write `bytes` with printk quieted until they have left the UART.
    /// write() returns once the bytes are in the tty's buffer (4 KiB, a
    /// third of a second at 115200 baud), but the kernel's console writes
    /// go straight to the UART: a message printed while that buffer drains
    /// lands inside our last lines and their checksums fail. A failing disk
    /// prints dozens of such messages, so wait for the drain (tcdrain, the
    /// TCSBRK ioctl every 2.6 kernel has) before letting printk back in.
    fn write_quietly(&mut self, bytes: &[u8]) -> io::Result<()> {
        let quiet = QuietConsole::new();
        let written = self.out.write_all(bytes);
        // Not a terminal (tests write to a file): nothing to drain.
        let _ = nix::sys::termios::tcdrain(&self.out);
        drop(quiet);
        written
    }
}

impl Sink for Serial {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        let json = serde_json::to_vec(record)?;
        self.framed(&record.run_id, record.seq, &json)?;
        self.line(&format!("bootmark: {}", record.summary_line()))?;
        let lines = self.cases.get_or_insert_with(Default::default).lines_for(record);
        self.quiet_lines(&lines)
    }
}

/// Open `path` for writing only if it is a terminal. O_NONBLOCK while
/// opening, so a serial port without carrier cannot hang PID 1 here.
fn open_terminal(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path)?;
    if !meta.file_type().is_char_device() {
        return Err(io::Error::other("not a character device, so not a serial console"));
    }
    let f = OpenOptions::new().write(true).custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK).open(path)?;
    if nix::sys::termios::tcgetattr(&f).is_err() {
        return Err(io::Error::other("not a terminal (tcgetattr fails), so not a serial console"));
    }
    // Back to blocking writes: a record must not be cut by a full UART buffer.
    let fd = std::os::unix::io::AsRawFd::as_raw_fd(&f);
    // SAFETY: F_GETFL/F_SETFL on a descriptor we own.
    unsafe { libc::fcntl(fd, libc::F_SETFL, libc::fcntl(fd, libc::F_GETFL) & !libc::O_NONBLOCK) };
    Ok(f)
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
    use crate::schema::framing::{Assembler, Fed, parse_line};

    #[test]
    fn only_a_terminal_is_a_console() {
        let dir = std::env::temp_dir().join(format!("bootmark-console-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ttyS0"), b"").unwrap();
        std::os::unix::fs::symlink("/dev/null", dir.join("null")).unwrap();
        let e = Serial::open(&dir, "ttyS0").err().unwrap().to_string();
        assert!(e.contains("not a character device"), "{e}");
        // /dev/null is a character device but not a terminal.
        assert!(open_terminal(&dir.join("null")).unwrap_err().to_string().contains("not a terminal"));
        // A pseudo-terminal is one.
        let pty = nix::pty::openpty(None, None).unwrap();
        let name = nix::unistd::ttyname(&pty.slave).unwrap();
        assert!(open_terminal(&name).is_ok());
        crate::fsutil::remove_tree(&dir).unwrap();
    }

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
