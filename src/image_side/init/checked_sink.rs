//! The sink /init hands to the runner: before a record goes to the stick and
//! the serial console, the kernel log since the previous record is read, and
//! I/O or filesystem errors in it (a journal abort, EIO, a remount
//! read-only) make the record's status `error` with the evidence lines: a
//! disk that failed mid-run must not yield `ok, durable 1.8 s`. It also
//! counts what it passed on, for the run record.

use crate::image_side::measure::klog;
use crate::image_side::sink::Sink;
use crate::schema::record::{Record, Status};
use std::io;

/// Kernel log lines that mean the storage under test failed.
const STORAGE_ERRORS: [&str; 8] = [
    "I/O error",
    "Aborting journal",
    "Remounting filesystem read-only",
    "-fs error",
    "EXT4-fs error",
    "XFS (", // followed by a shutdown or corruption message
    "critical medium error",
    "Buffer I/O error",
];

fn is_storage_error(line: &str) -> bool {
    STORAGE_ERRORS[..5].iter().chain(&STORAGE_ERRORS[6..]).any(|p| line.contains(p))
        || (line.contains(STORAGE_ERRORS[5]) && (line.contains("shut") || line.contains("orrupt")))
}

pub struct CheckedSink<'a> {
    pub inner: &'a mut dyn Sink,
    /// Kernel log lines already seen (the log is read whole each time; the
    /// ring buffer only grows during a run unless it wraps).
    seen_lines: usize,
    pub written: u32,
    pub not_ok: u32,
}

impl<'a> CheckedSink<'a> {
    pub fn new(inner: &'a mut dyn Sink) -> CheckedSink<'a> {
        CheckedSink { inner, seen_lines: klog::read().lines().count(), written: 0, not_ok: 0 }
    }
}

/// Mark `record` as failed if `new_lines` show storage errors.
pub fn apply_kernel_errors(record: &mut Record, new_lines: &[&str]) {
    let evidence: Vec<&str> = new_lines.iter().copied().filter(|l| is_storage_error(l)).collect();
    if evidence.is_empty() {
        return;
    }
    record.status = Status::Error;
    let first = evidence[0].trim();
    record.error.get_or_insert_with(|| format!("the kernel reported storage errors during this workload: {first}"));
    record.notes.push(format!("{} kernel log lines report storage errors; the first 10:", evidence.len()));
    record.notes.extend(evidence.iter().take(10).map(|l| l.trim().to_string()));
}

impl Sink for CheckedSink<'_> {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        let log = klog::read();
        let lines: Vec<&str> = log.lines().collect();
        // A wrapped ring buffer has fewer lines than before: look at all of it.
        let new = if lines.len() >= self.seen_lines { &lines[self.seen_lines..] } else { &lines[..] };
        let mut checked = record.clone();
        apply_kernel_errors(&mut checked, new);
        self.seen_lines = lines.len();
        self.written += 1;
        if checked.status != Status::Ok {
            self.not_ok += 1;
        }
        self.inner.write(&checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_errors_turn_a_record_into_an_error_with_evidence() {
        let mut r = crate::schema::record::tests::record();
        let quiet = ["<6>[ 3.1] EXT4-fs (sda): mounted filesystem", "<6>[ 4.0] XFS (sdb): Mounting V5 Filesystem"];
        apply_kernel_errors(&mut r, &quiet);
        assert_eq!(r.status, Status::Ok, "ordinary messages change nothing");
        let failing = [
            "<3>[ 9.2] blk_update_request: I/O error, dev sda, sector 2048 op 0x1:(WRITE)",
            "<2>[ 9.3] Aborting journal on device sda-8.",
            "<2>[ 9.4] EXT4-fs (sda): Remounting filesystem read-only",
        ];
        apply_kernel_errors(&mut r, &failing);
        assert_eq!(r.status, Status::Error);
        assert!(r.error.as_deref().unwrap().contains("I/O error, dev sda"));
        assert_eq!(r.notes.len(), 4, "{:?}", r.notes);
        let mut x = crate::schema::record::tests::record();
        apply_kernel_errors(
            &mut x,
            &["<1>[ 5.0] XFS (sdb): Corruption of in-memory data detected. Shutting down filesystem"],
        );
        assert_eq!(x.status, Status::Error);
    }
}
