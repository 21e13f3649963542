//! Readers for /proc/meminfo, /proc/vmstat, /proc/diskstats, /proc/pressure
//! and a task's state in /proc/PID/stat that accept
//! every kernel's layout: a field or file a kernel lacks is simply absent.
//!
//! All three are parsed here. vmstat is a flat `name value` file (procfs's
//! parser of it cost /init 7 KB of gzip for five lines). procfs's Meminfo
//! insists on fields (e.g. VmallocChunk, Committed_AS) and its DiskStat on
//! the 14-field layout, but
//! 2.6.9–2.6.24 print partitions in /proc/diskstats with only 4 counters, and
//! losing the whole file on such a kernel would lose the evidence that matters.

use std::collections::BTreeMap;

/// /proc/meminfo as `key → kB` (values without a unit are kept as they are).
pub fn meminfo() -> BTreeMap<String, u64> {
    std::fs::read_to_string("/proc/meminfo").map(|s| parse_meminfo(&s)).unwrap_or_default()
}

pub fn parse_meminfo(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (key, rest) = line.split_once(':')?;
            let value = rest.split_whitespace().next()?.parse().ok()?;
            Some((key.trim().to_string(), value))
        })
        .collect()
}

/// /proc/vmstat counters; empty when the file is absent.
pub fn vmstat() -> BTreeMap<String, i64> {
    std::fs::read_to_string("/proc/vmstat").map(|s| parse_vmstat(&s)).unwrap_or_default()
}

/// `name value` lines; a line that is not one is left out.
pub fn parse_vmstat(text: &str) -> BTreeMap<String, i64> {
    text.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(' ')?;
            Some((key.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// One block device's counters from /proc/diskstats.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct DiskStat {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub reads: u64,
    pub sectors_read: u64,
    pub writes: u64,
    pub sectors_written: u64,
    /// Only in the full layout (disks; partitions since 2.6.25).
    pub ms_writing: Option<u64>,
    pub in_flight: Option<u64>,
    pub ms_io: Option<u64>,
    pub ms_weighted: Option<u64>,
}

pub fn diskstats() -> Vec<DiskStat> {
    std::fs::read_to_string("/proc/diskstats").map(|s| parse_diskstats(&s)).unwrap_or_default()
}

pub fn parse_diskstats(text: &str) -> Vec<DiskStat> {
    text.lines().filter_map(parse_diskstats_line).collect()
}

fn parse_diskstats_line(line: &str) -> Option<DiskStat> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let n: Vec<u64> = f.get(3..)?.iter().map(|v| v.parse().ok()).collect::<Option<_>>()?;
    let base =
        DiskStat { major: f[0].parse().ok()?, minor: f[1].parse().ok()?, name: f[2].to_string(), ..Default::default() };
    match n.len() {
        4 => Some(DiskStat { reads: n[0], sectors_read: n[1], writes: n[2], sectors_written: n[3], ..base }),
        l if l >= 11 => Some(DiskStat {
            reads: n[0],
            sectors_read: n[2],
            writes: n[4],
            sectors_written: n[6],
            ms_writing: Some(n[7]),
            in_flight: Some(n[8]),
            ms_io: Some(n[9]),
            ms_weighted: Some(n[10]),
            ..base
        }),
        _ => None,
    }
}

/// The `total=` of a PSI file's `some` and `full` lines (/proc/pressure/*,
/// 4.20+), in µs.
pub fn psi_totals(text: &str) -> [Option<u64>; 2] {
    let total = |kind: &str| {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        line.split_whitespace().find_map(|w| w.strip_prefix("total="))?.parse().ok()
    };
    [total("some "), total("full ")]
}

/// A task's state letter from /proc/PID/stat (`R`, `D`, `S`…): the field
/// after the command, which is in parentheses and may hold anything.
pub fn task_state(pid: libc::pid_t) -> Option<String> {
    state_of(&crate::fsutil::read_capped(format!("/proc/{pid}/stat"), 4096)?)
}

fn state_of(stat: &[u8]) -> Option<String> {
    let after = stat.iter().rposition(|b| *b == b')')?;
    let state = stat.get(after + 1..)?.iter().find(|b| !b.is_ascii_whitespace())?;
    state.is_ascii_alphabetic().then(|| (*state as char).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diskstats_old_partition_lines_and_new_lines() {
        let text = "   3    0 hda 446216 784926 9550688 4382310 424847 312726 5922052 19310380 0 3376340 23705160\n\
                    3    1 hda1 35486 38030 38030 38030\n\
                    8    0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n\
                    garbage line\n";
        let d = parse_diskstats(text);
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].name, "hda");
        assert_eq!(d[0].sectors_written, 5922052);
        assert_eq!(d[0].ms_io, Some(3376340));
        assert_eq!(d[1].name, "hda1");
        assert_eq!((d[1].reads, d[1].sectors_read, d[1].writes, d[1].sectors_written), (35486, 38030, 38030, 38030));
        assert_eq!(d[1].ms_io, None);
        assert_eq!(d[2].sectors_written, 7);
    }

    #[test]
    fn vmstat_counters_and_nothing_else() {
        let v = parse_vmstat("nr_dirty 1234\nnr_writeback 0\npgpgout 98765432109\nnot a counter\nbroken x\n");
        let want: BTreeMap<String, i64> =
            [("nr_dirty", 1234), ("nr_writeback", 0), ("pgpgout", 98_765_432_109)].map(|(k, v)| (k.into(), v)).into();
        assert_eq!(v, want);
    }

    #[test]
    fn meminfo_of_a_2_6_9_kernel() {
        let text = "MemTotal:      1027396 kB\nMemFree:        12345 kB\nHighTotal:     131008 kB\nDirty:           400 kB\nWriteback:         0 kB\nHugePages_Total:     0\n";
        let m = parse_meminfo(text);
        assert_eq!(m["MemTotal"], 1027396);
        assert_eq!(m["HighTotal"], 131008);
        assert_eq!(m["Dirty"], 400);
        assert_eq!(m["HugePages_Total"], 0);
        assert!(!m.contains_key("MemAvailable"));
    }

    /// /proc/pressure/io as 6.x writes it; a kernel without PSI has no file.
    #[test]
    fn psi_totals_are_read_from_some_and_full() {
        let io =
            "some avg10=1.50 avg60=0.40 avg300=0.10 total=123456\nfull avg10=1.00 avg60=0.20 avg300=0.05 total=98765";
        assert_eq!(psi_totals(io), [Some(123456), Some(98765)]);
        // 4.20's cpu file has no full line; a cut line gives nothing, not a guess.
        assert_eq!(psi_totals("some avg10=0.00 avg60=0.00 avg300=0.00 total=7"), [Some(7), None]);
        assert_eq!(psi_totals("some avg10=0.00 tot"), [None, None]);
    }

    #[test]
    fn the_state_is_read_after_the_command_whatever_it_holds() {
        // This thread, reading its own stat, is running.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::pid_t;
        assert_eq!(task_state(tid).as_deref(), Some("R"));
        assert_eq!(task_state(-1), None);
        assert_eq!(state_of(b"4242 (my (odd) D cmd) D 1 4242 0").as_deref(), Some("D"));
        assert_eq!(state_of(b"4242 (cut"), None);
    }
}
