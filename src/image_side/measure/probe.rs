//! The responsiveness probe: the seed's "`ls` will hang" made a number.
//!
//! A process of its own (named `bootmark-probe`) wakes every `interval`,
//! records how late its timer fired, lists a directory on the filesystem
//! under test and stats every entry ("ls"), and reads 4 KiB of a file it
//! keeps out of the page cache with fadvise ("read"). Each tick goes to the
//! runner as one 32-byte sample on a pipe (atomic: below PIPE_BUF).
//! The runner turns samples into a [`Responsiveness`] summary: baseline
//! before the workload, stalls during it, and how long recovery took after.

use super::clock::{mono_ns, secs, sleep_until};
use super::histogram::Histogram;
use crate::image_side::process::{self, Child};
use crate::schema::measures::{Responsiveness, Spread};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

const ENTRIES: usize = 32;
const READ_FILE_PAGES: u64 = 64;
const PAGE: u64 = 4096;
pub const SAMPLE_BYTES: usize = 32;

/// One tick of the probe, all in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// When the tick was due (CLOCK_MONOTONIC).
    pub due_ns: u64,
    pub late_ns: u64,
    pub ls_ns: u64,
    pub read_ns: u64,
}

impl Sample {
    /// How long the probe's work took from the moment it was due: what a
    /// user typing `ls` would wait.
    pub fn response_ns(&self) -> u64 {
        self.late_ns + self.ls_ns + self.read_ns
    }

    pub fn encode(&self) -> [u8; SAMPLE_BYTES] {
        let mut b = [0u8; SAMPLE_BYTES];
        for (i, v) in [self.due_ns, self.late_ns, self.ls_ns, self.read_ns].iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> Sample {
        let f = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        Sample { due_ns: f(0), late_ns: f(1), ls_ns: f(2), read_ns: f(3) }
    }
}

/// Create the probe's directory: ENTRIES small files to list and a file to read.
pub fn prepare(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for i in 0..ENTRIES {
        std::fs::write(dir.join(format!("entry{i:02}")), b"bootmark probe entry\n")?;
    }
    let f = File::create(dir.join("read.dat"))?;
    f.write_all_at(&vec![0x42u8; (READ_FILE_PAGES * PAGE) as usize], 0)?;
    f.sync_all()?;
    Ok(())
}

/// Start the probe process over a directory made by [`prepare`].
pub fn start(dir: &Path, interval_ns: u64) -> io::Result<Child> {
    let dir = dir.to_path_buf();
    process::spawn("bootmark-probe", move |out| match run(&dir, interval_ns, out) {
        Ok(()) => 0,
        Err(_) => 1,
    })
}

/// The probe loop; ends when the runner kills the process or the pipe closes.
fn run(dir: &Path, interval_ns: u64, out: &mut File) -> io::Result<()> {
    let file = File::open(dir.join("read.dat"))?;
    let mut buf = vec![0u8; PAGE as usize];
    let mut due = mono_ns() + interval_ns;
    for tick in 0u64.. {
        sleep_until(due);
        let woke = mono_ns();
        list(dir)?;
        let listed = mono_ns();
        read_uncached(&file, (tick % READ_FILE_PAGES) * PAGE, &mut buf)?;
        let done = mono_ns();
        let sample = Sample { due_ns: due, late_ns: woke - due, ls_ns: listed - woke, read_ns: done - listed };
        out.write_all(&sample.encode())?;
        // After a stall, start again from now rather than firing a burst of
        // overdue ticks that would count the same stall twice.
        due = (due + interval_ns).max(mono_ns());
    }
    Ok(())
}

/// `ls -l`: read the directory and lstat each entry by path (no fstatat on 2.6.9).
fn list(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        std::fs::symlink_metadata(entry?.path())?;
    }
    Ok(())
}

fn read_uncached(f: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    // SAFETY: valid fd; dropping clean pages of our own file.
    unsafe {
        libc::posix_fadvise(f.as_raw_fd(), offset as libc::off_t, PAGE as libc::off_t, libc::POSIX_FADV_DONTNEED)
    };
    f.read_exact_at(buf, offset)
}

/// Consecutive good ticks that count as "recovered".
pub const RECOVERY_TICKS: usize = 3;

/// A tick is back to normal when its response is under twice the baseline
/// maximum, and never stricter than baseline max + 10 ms (timer noise).
pub fn recovery_threshold_ns(baseline: &[Sample]) -> u64 {
    let max = baseline.iter().map(Sample::response_ns).max().unwrap_or(0);
    (2 * max).max(max + 10_000_000)
}

/// When the probe had recovered after `end_ns`: the due time of the first of
/// RECOVERY_TICKS consecutive normal ticks due after the end.
pub fn recovered_at(samples: &[Sample], end_ns: u64, threshold_ns: u64) -> Option<u64> {
    let after: Vec<&Sample> = samples.iter().filter(|s| s.due_ns >= end_ns).collect();
    after.windows(RECOVERY_TICKS).find(|w| w.iter().all(|s| s.response_ns() <= threshold_ns)).map(|w| w[0].due_ns)
}

fn spread(samples: &[&Sample], f: impl Fn(&Sample) -> u64) -> Spread {
    let mut h = Histogram::new();
    for s in samples {
        h.record(f(s));
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    Spread {
        p50_ms: ms(h.quantile_ns(0.5)),
        p90_ms: ms(h.quantile_ns(0.9)),
        p99_ms: ms(h.quantile_ns(0.99)),
        max_ms: ms(h.max_ns()),
        samples: h.count(),
    }
}

/// Summarise samples around a workload that ran from `start_ns` to `end_ns`.
pub fn summarize(samples: &[Sample], start_ns: u64, end_ns: u64, interval_ns: u64, probe_cpu_s: f64) -> Responsiveness {
    let baseline: Vec<Sample> = samples.iter().filter(|s| s.due_ns < start_ns).copied().collect();
    let threshold = recovery_threshold_ns(&baseline);
    let recovered = recovered_at(samples, end_ns, threshold);
    let window_end = recovered.unwrap_or(u64::MAX);
    let during: Vec<&Sample> = samples.iter().filter(|s| s.due_ns >= start_ns && s.due_ns <= window_end).collect();
    let all = spread(&during, Sample::response_ns);
    Responsiveness {
        interval_ms: interval_ns as f64 / 1e6,
        samples: during.len() as u64,
        p50_ms: all.p50_ms,
        p90_ms: all.p90_ms,
        p99_ms: all.p99_ms,
        max_ms: all.max_ms,
        stalls_over_100ms: during.iter().filter(|s| s.response_ns() > 100_000_000).count() as u64,
        stalls_over_1s: during.iter().filter(|s| s.response_ns() > 1_000_000_000).count() as u64,
        recovery_s: recovered.map(|t| secs(t.saturating_sub(end_ns))),
        baseline: spread(&baseline.iter().collect::<Vec<_>>(), Sample::response_ns),
        baseline_samples: baseline.len() as u64,
        ls: spread(&during, |s| s.ls_ns),
        read: spread(&during, |s| s.read_ns),
        timer_late: spread(&during, |s| s.late_ns),
        probe_cpu_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(due_ms: u64, response_ms: u64) -> Sample {
        Sample { due_ns: due_ms * 1_000_000, late_ns: 0, ls_ns: response_ms * 1_000_000, read_ns: 0 }
    }

    #[test]
    fn encode_decode_round_trip() {
        let s = Sample { due_ns: 1, late_ns: u64::MAX, ls_ns: 3, read_ns: 4 };
        assert_eq!(Sample::decode(&s.encode()), s);
    }

    #[test]
    fn a_stall_is_counted_and_recovery_measured_from_the_end() {
        // baseline 1 ms; workload 1000..2000 ms; a 1.5 s stall at 1500 ms;
        // slow (50 ms) ticks until 2300, then normal.
        let mut s: Vec<Sample> = (0..10).map(|i| tick(i * 100, 1)).collect();
        s.extend((10..15).map(|i| tick(i * 100, 2)));
        s.push(tick(1500, 1500));
        s.extend((20..23).map(|i| tick(i * 100, 50)));
        s.extend((23..30).map(|i| tick(i * 100, 1)));
        let r = summarize(&s, 1_000_000_000, 2_000_000_000, 100_000_000, 0.0);
        assert_eq!(r.baseline_samples, 10);
        assert_eq!(r.stalls_over_1s, 1);
        assert_eq!(r.stalls_over_100ms, 1);
        assert_eq!(r.max_ms, 1500.0);
        assert_eq!(r.recovery_s, Some(0.3));
        assert_eq!(r.samples, 5 + 1 + 3 + 1);
    }

    #[test]
    fn no_recovery_gives_null() {
        let mut s: Vec<Sample> = (0..5).map(|i| tick(i * 100, 1)).collect();
        s.extend((5..20).map(|i| tick(i * 100, 300)));
        let r = summarize(&s, 500_000_000, 1_000_000_000, 100_000_000, 0.0);
        assert_eq!(r.recovery_s, None);
        assert_eq!(r.stalls_over_100ms, 15);
    }
}
