//! The kernel's message buffer (dmesg) via syslog(2), with the lines that
//! explain a slow or failed run counted: hung tasks, I/O errors, OOM, panics.

use crate::schema::measures::KernelLog;

const SYSLOG_ACTION_READ_ALL: libc::c_int = 3;
const SYSLOG_ACTION_SIZE_BUFFER: libc::c_int = 10;

/// Patterns worth counting, by name.
const PATTERNS: [(&str, &str); 8] = [
    ("hung_task", "blocked for more than"),
    ("io_error", "I/O error"),
    ("fs_error", "-fs error"),
    ("oom", "Out of memory"),
    ("allocation_failure", "page allocation failure"),
    ("soft_lockup", "soft lockup"),
    ("oops", "Oops"),
    ("bug", "BUG:"),
];

/// The most of the ring buffer ever read (its usual size is 16 KiB–1 MiB).
const MAX_READ: usize = 8 << 20;

/// Read the whole ring buffer; empty if not permitted.
pub fn read() -> String {
    // SAFETY: SIZE_BUFFER takes no buffer (2.6.6+; fall back to 1 MiB).
    let size = unsafe { libc::klogctl(SYSLOG_ACTION_SIZE_BUFFER, std::ptr::null_mut(), 0) };
    // Capped: the value comes from the kernel, and PID 1 must not allocate blindly.
    let size = if size > 0 { (size as usize).min(MAX_READ) } else { 1 << 20 };
    let mut buf = vec![0u8; size];
    // SAFETY: buf has `size` bytes.
    let n = unsafe { libc::klogctl(SYSLOG_ACTION_READ_ALL, buf.as_mut_ptr().cast(), size as libc::c_int) };
    if n <= 0 {
        return String::new();
    }
    buf.truncate(n as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

pub fn summarize(text: &str, tail: usize) -> KernelLog {
    let lines: Vec<&str> = text.lines().collect();
    let counts = PATTERNS
        .iter()
        .map(|(name, pat)| (name.to_string(), lines.iter().filter(|l| l.contains(pat)).count()))
        .collect();
    KernelLog {
        lines: lines.len(),
        counts,
        tail: lines[lines.len().saturating_sub(tail)..].iter().map(|l| l.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_lines_that_explain_a_bad_run() {
        let log = "<6>[  1.0] sd 0:0:0:0: [sda] Attached SCSI disk\n\
                   <3>[ 240.1] INFO: task ls:812 blocked for more than 120 seconds.\n\
                   <3>[ 300.2] end_request: I/O error, dev sda, sector 1234\n\
                   <3>[ 300.3] Buffer I/O error on device sda1\n";
        let k = summarize(log, 2);
        assert_eq!(k.lines, 4);
        assert_eq!(k.counts["hung_task"], 1);
        assert_eq!(k.counts["io_error"], 2);
        assert_eq!(k.counts["oops"], 0);
        assert_eq!(k.tail.len(), 2);
        assert!(k.tail[1].contains("Buffer I/O error"));
    }
}
