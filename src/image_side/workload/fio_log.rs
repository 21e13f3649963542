//! fio's logs over time: what a job file asks for with `write_lat_log`,
//! `write_bw_log` or `write_iops_log` — files fio leaves in the workload's
//! directory when the job ends (`NAME_clat.1.log`, `NAME_bw.1.log`, …) —
//! read into series a record can carry: per direction, per second (wider
//! for long runs), the mean and the largest value fio logged.
//!
//! A line is `time_ms, value, direction, block_size, offset[, priority]`
//! (fio's HOWTO, "Log File Formats"): the time since the job started, a
//! latency in ns, a bandwidth in KiB/s or an IOPS count; direction 0 read,
//! 1 write, 2 trim. A latency is logged when its I/O completes, so a second
//! in which nothing completed has no point: the gap is the stall, and the
//! I/O that ends it shows how long it waited.

use serde::Serialize;
use std::io::{self, Read};
use std::path::Path;

/// Logs read per workload; more are named in a note.
const MAX_LOGS: usize = 12;
/// Points per series: a longer run gets wider buckets.
const MAX_POINTS: usize = 120;
/// Seconds into a job past which a line is not read (a day: a bucket a
/// second up to it is 2 MB per direction).
const MAX_SECONDS: u64 = 86_400;
/// Bytes of a line read: fio's are under 100.
const MAX_LINE: usize = 256;

/// What a log holds, from its file name's suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Completion, submission, total latency (ns in the file).
    Clat,
    Slat,
    Lat,
    /// KiB/s in the file.
    Bw,
    Iops,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Clat => "clat",
            Kind::Slat => "slat",
            Kind::Lat => "lat",
            Kind::Bw => "bw",
            Kind::Iops => "iops",
        }
    }

    /// The unit a series is in, and the factor from the file's values.
    fn unit(self) -> (&'static str, f64) {
        match self {
            Kind::Clat | Kind::Slat | Kind::Lat => ("ms", 1e-6),
            Kind::Bw => ("MiB/s", 1.0 / 1024.0),
            Kind::Iops => ("IOPS", 1.0),
        }
    }

    /// `reader_clat.1.log` → Clat; `reader_clat.log` (per_job_logs=0) too.
    /// Not a histogram log (`_hist`), not any other file.
    fn of_file(name: &str) -> Option<Kind> {
        let stem = name.strip_suffix(".log")?;
        let stem = match stem.rsplit_once('.') {
            Some((s, index)) if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) => s,
            _ => stem,
        };
        let (_, suffix) = stem.rsplit_once('_')?;
        [Kind::Clat, Kind::Slat, Kind::Lat, Kind::Bw, Kind::Iops].into_iter().find(|k| k.name() == suffix)
    }
}

/// One direction of one log over time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    /// The file fio wrote, in the workload's directory.
    pub file: String,
    /// `clat`, `slat`, `lat`, `bw` or `iops`.
    pub log: &'static str,
    pub direction: &'static str,
    pub unit: &'static str,
    /// The lines it was made of.
    pub entries: u64,
    /// Each point's width, seconds.
    pub bucket_s: u64,
    /// Each point's start, seconds since the job started; a bucket in
    /// which fio logged nothing has no point.
    pub t_s: Vec<u64>,
    /// The mean and the largest of the values logged in each bucket.
    pub mean: Vec<f64>,
    pub max: Vec<f64>,
}

/// Every log of `dir`, in file name order, and notes on what was left out.
pub fn read_dir(dir: &Path) -> (Vec<Series>, Vec<String>) {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| Kind::of_file(name).is_some())
        .collect();
    // Names alone, sorted (a Vec<String> sort /init already has); each
    // name's kind is read again below, rather than sorting (name, kind) pairs.
    files.sort();
    let mut notes = Vec::new();
    if files.len() > MAX_LOGS {
        notes.push(format!("fio logs not read (over {MAX_LOGS}): {}", files[MAX_LOGS..].join(", ")));
        files.truncate(MAX_LOGS);
    }
    let mut series = Vec::new();
    for name in files {
        let Some(kind) = Kind::of_file(&name) else { continue };
        let path = dir.join(&name);
        match std::fs::File::open(&path).and_then(|f| read(f, &name, kind)) {
            Ok((mut s, skipped)) => {
                if skipped > 0 {
                    notes.push(format!("fio log {name}: {skipped} lines not of fio's log format skipped"));
                }
                series.append(&mut s);
            }
            Err(e) => notes.push(format!("fio log {name} not read: {e}")),
        }
    }
    (series, notes)
}

/// Sum, count and largest of the values of one second.
#[derive(Clone, Copy, Default)]
struct Bucket {
    sum: f64,
    n: u64,
    max: f64,
}

impl Bucket {
    fn add(&mut self, other: Bucket) {
        self.sum += other.sum;
        self.n += other.n;
        self.max = self.max.max(other.max);
    }
}

/// One log's series, a direction each, and how many lines were not log lines.
/// Read in blocks and split here (a per-I/O log of a big job is megabytes;
/// `BufRead::lines` would be kilobytes more of /init for the same).
fn read(mut text: impl Read, file: &str, kind: Kind) -> io::Result<(Vec<Series>, u64)> {
    // Per direction (0 read, 1 write, 2 trim), per second since the job started.
    let mut seconds: [Vec<Bucket>; 3] = Default::default();
    let mut skipped = 0;
    let mut take = |line: &[u8]| {
        let line = std::str::from_utf8(line).unwrap_or("?");
        if line.trim().is_empty() {
            return;
        }
        match parse_line(line) {
            Some((ms, value, dir)) if ms / 1000 < MAX_SECONDS => {
                let second = (ms / 1000) as usize;
                if seconds[dir].len() <= second {
                    seconds[dir].resize(second + 1, Bucket::default());
                }
                seconds[dir][second].add(Bucket { sum: value, n: 1, max: value });
            }
            _ => skipped += 1,
        }
    };
    let (mut block, mut line) = (vec![0u8; 64 << 10], Vec::new());
    loop {
        let n = text.read(&mut block)?;
        if n == 0 {
            break;
        }
        for &b in &block[..n] {
            match b {
                b'\n' => {
                    take(&line);
                    line.clear();
                }
                // No log line is this long: the rest of one that is is not read.
                _ if line.len() < MAX_LINE => line.push(b),
                _ => {}
            }
        }
    }
    take(&line);
    let (unit, factor) = kind.unit();
    let series = seconds
        .iter()
        .zip(["read", "write", "trim"])
        .filter(|(s, _)| !s.is_empty())
        .map(|(s, direction)| {
            let (bucket_s, buckets) = widen(s);
            Series {
                file: file.to_string(),
                log: kind.name(),
                direction,
                unit,
                entries: s.iter().map(|b| b.n).sum(),
                bucket_s,
                t_s: buckets.iter().map(|(t, _)| *t).collect(),
                mean: buckets.iter().map(|(_, b)| round(b.sum / b.n as f64 * factor)).collect(),
                max: buckets.iter().map(|(_, b)| round(b.max * factor)).collect(),
            }
        })
        .collect();
    Ok((series, skipped))
}

/// `1000, 12345, 0, 4096, 0` → (1000 ms, 12345.0, direction 0). fio
/// writes every value as an integer (`%llu`, averaged ones too); parsing
/// only integers keeps a float parser (10 KB of /init) out.
fn parse_line(line: &str) -> Option<(u64, f64, usize)> {
    let mut fields = line.split(',').map(str::trim);
    let ms = fields.next()?.parse::<u64>().ok()?;
    let value = fields.next()?.parse::<u64>().ok()? as f64;
    let dir = fields.next()?.parse::<usize>().ok().filter(|d| *d < 3)?;
    Some((ms, value, dir))
}

/// Seconds merged into buckets wide enough for MAX_POINTS over the run:
/// the width, and each non-empty bucket by its start.
fn widen(seconds: &[Bucket]) -> (u64, Vec<(u64, Bucket)>) {
    let last = seconds.len().saturating_sub(1) as u64;
    let width = (last / MAX_POINTS as u64) + 1;
    let mut out: Vec<(u64, Bucket)> = Vec::new();
    for (second, &b) in seconds.iter().enumerate().filter(|(_, b)| b.n > 0) {
        let start = second as u64 / width * width;
        match out.last_mut() {
            Some((t, kept)) if *t == start => kept.add(b),
            _ => out.push((start, b)),
        }
    }
    (width, out)
}

/// Three decimals: what a figure over a noisy serial line needs, and no more.
fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_files_are_known_by_their_suffix() {
        assert_eq!(Kind::of_file("reader_clat.1.log"), Some(Kind::Clat));
        assert_eq!(Kind::of_file("reader_lat.12.log"), Some(Kind::Lat));
        assert_eq!(Kind::of_file("my_job_bw.log"), Some(Kind::Bw), "per_job_logs=0: no index");
        assert_eq!(Kind::of_file("w_iops.2.log"), Some(Kind::Iops));
        for other in ["reader_hist.1.log", "fio-output.json", "job.fio", "clat.log", "x_clat.1.txt"] {
            assert_eq!(Kind::of_file(other), None, "{other}");
        }
    }

    #[test]
    fn a_latency_log_becomes_per_second_means_and_maxima_with_its_gaps() {
        // fio 3.33's per-I/O lines (log_offset=0 still writes the offset column).
        let text = "12, 2000000, 0, 4096, 0, 0\n\
                    980, 4000000, 0, 4096, 0, 0\n\
                    1500, 1000000, 1, 16384, 0, 0\n\
                    3999, 250000000, 0, 4096, 0, 0\n\
                    not a line\n";
        let (series, skipped) = read(text.as_bytes(), "r_clat.1.log", Kind::Clat).unwrap();
        assert_eq!(skipped, 1);
        let read_ = &series[0];
        assert_eq!((read_.direction, read_.unit, read_.entries, read_.bucket_s), ("read", "ms", 3, 1));
        // Seconds 1 and 2 had no read complete: no points, the gap the 250 ms read ended.
        assert_eq!(read_.t_s, [0, 3]);
        assert_eq!(read_.mean, [3.0, 250.0]);
        assert_eq!(read_.max, [4.0, 250.0]);
        assert_eq!(
            (series[1].direction, series[1].t_s.as_slice(), series[1].mean.as_slice()),
            ("write", &[1][..], &[1.0][..])
        );
    }

    #[test]
    fn a_long_run_is_merged_into_wider_buckets() {
        // One bandwidth line a second for 600 s (log_avg_msec=1000), 1024 KiB/s then 2048.
        let text: String =
            (0..600).map(|s| format!("{}, {}, 1, 0, 0\n", s * 1000 + 999, if s < 300 { 1024 } else { 2048 })).collect();
        let (series, _) = read(text.as_bytes(), "w_bw.1.log", Kind::Bw).unwrap();
        let s = &series[0];
        assert_eq!((s.unit, s.entries, s.bucket_s), ("MiB/s", 600, 5));
        assert_eq!(s.t_s.len(), 120);
        assert!(s.t_s.len() <= MAX_POINTS);
        assert_eq!((s.mean[0], s.mean[59], s.mean[60], s.max[119]), (1.0, 1.0, 2.0, 2.0));
    }
}
