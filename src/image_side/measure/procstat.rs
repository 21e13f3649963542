//! Readers for /proc/meminfo, /proc/vmstat, /proc/diskstats, /proc/pressure,
//! /proc/uptime and a task's state in /proc/PID/stat that accept every
//! kernel's layout: a field or file a kernel lacks is simply absent.
//!
//! procfs parses what its parsers read on every kernel we boot: a task's
//! stat (2.6.9's 41 fields are its minimum), PSI (4.20+, both lines) and
//! /proc/uptime. It is given bytes this module read itself, with open(2)
//! and read(2): procfs's own Process API opens through openat, which
//! 2.6.9–2.6.15 lack. The other files are parsed here, because procfs's
//! parser would lose the whole file on a kernel it does not expect:
//! vmstat is a flat `name value` file; procfs's Meminfo insists on fields
//! (e.g. VmallocChunk, Committed_AS) and its DiskStat on the 14-field
//! layout, but 2.6.9–2.6.24 print partitions in /proc/diskstats with only 4
//! counters; its Status insists on SigQ (2.6.12+), where /init reads only VmHWM.

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

/// The `total=` of an io or memory PSI file's `some` and `full` lines
/// (/proc/pressure/*, 4.20+), in µs; both absent if either line is
/// missing or cut (a file half read is not evidence).
pub fn psi_totals(text: &[u8]) -> [Option<u64>; 2] {
    use procfs::FromRead;
    if !psi_fits_procfs(text) {
        return [None, None];
    }
    match procfs::IoPressure::from_read(text) {
        Ok(p) => [Some(p.some.total), Some(p.full.total)],
        Err(_) => [None, None],
    }
}

/// procfs slices a PSI line past its first five bytes, and panics on a
/// shorter one: such text (never the kernel's, but /init must not die on
/// it) is left unparsed.
fn psi_fits_procfs(text: &[u8]) -> bool {
    text.is_ascii() && text.split(|b| *b == b'\n').take(2).all(|line| line.len() > 5)
}

/// A task's state letter from /proc/PID/stat (`R`, `D`, `S`…).
pub fn task_state(pid: libc::pid_t) -> Option<String> {
    state_of(&crate::fsutil::read_capped(format!("/proc/{pid}/stat"), 4096)?)
}

/// procfs finds the state after the command's last `)`: the command is in
/// parentheses and may hold anything, spaces and parentheses included.
fn state_of(stat: &[u8]) -> Option<String> {
    use procfs::FromRead;
    if !stat_fits_procfs(stat) {
        return None;
    }
    let state = procfs::process::Stat::from_read(stat).ok()?.state;
    state.is_ascii_alphabetic().then(|| state.to_string())
}

/// procfs slices a stat line around its command's parentheses and two bytes
/// past the last `)`, and panics where those are missing or out of order:
/// such text (never the kernel's) is left unparsed.
fn stat_fits_procfs(stat: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stat);
    let text = text.trim();
    match (text.find('('), text.rfind(')')) {
        (Some(open), Some(close)) => open >= 1 && close > open && text[close..].is_ascii() && text.len() >= close + 2,
        _ => false,
    }
}

/// Seconds since the kernel started: /proc/uptime's first figure.
pub fn uptime_s() -> Option<f64> {
    use procfs::FromRead;
    let text = crate::fsutil::read_capped("/proc/uptime", 256)?;
    Some(procfs::Uptime::from_read(&text[..]).ok()?.uptime).filter(|s| s.is_finite())
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
        let io = b"some avg10=1.50 avg60=0.40 avg300=0.10 total=123456\nfull avg10=1.00 avg60=0.20 avg300=0.05 total=98765\n";
        assert_eq!(psi_totals(io), [Some(123456), Some(98765)]);
        // A line missing or cut gives nothing, not a guess.
        assert_eq!(psi_totals(b"some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"), [None, None]);
        assert_eq!(psi_totals(b"some avg10=0.00 tot"), [None, None]);
        assert_eq!(psi_totals(b""), [None, None]);
        // Lines procfs would panic on: nothing, and no panic.
        assert_eq!(psi_totals(b"some"), [None, None]);
        assert_eq!(psi_totals(b"some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull"), [None, None]);
        assert_eq!(psi_totals("some\u{e9}avg10=1".as_bytes()), [None, None]);
    }

    /// /proc/PID/stat as 2.6.9 writes it on i386 (fs/proc/array.c: 41
    /// fields, ending at the policy) and as 6.1 does (52 fields).
    const STAT_2_6_9: &[u8] = b"1 (init) S 0 0 0 0 -1 256 512 3411 28 64 2 1 30 14 16 0 1 0 6 1605632 120 4294967295 134512640 134540984 3221224896 3221224180 1074123842 0 0 1475401980 671819267 3222430003 0 0 0 0 0 0\n";
    const STAT_6_1: &[u8] = b"4242 (my (odd) D cmd) D 1 4242 4242 0 -1 4194560 1190 0 0 0 3 41 0 0 20 0 1 0 5321 2334720 260 18446744073709551615 94458650337280 94458651037433 140725594640640 0 0 0 0 0 0 1 0 0 17 1 0 0 0 0 0 94458651212368 94458651236800 94458672013312 140725594648451 140725594648480 140725594648480 140725594652647 0\n";

    #[test]
    fn the_state_is_read_after_the_command_whatever_it_holds() {
        // This thread, reading its own stat, is running.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::pid_t;
        assert_eq!(task_state(tid).as_deref(), Some("R"));
        assert_eq!(task_state(-1), None);
        assert_eq!(state_of(STAT_2_6_9).as_deref(), Some("S"));
        assert_eq!(state_of(STAT_6_1).as_deref(), Some("D"));
        // Cut before the fields every kernel prints: nothing, not a guess.
        assert_eq!(state_of(b"4242 (cut"), None);
        assert_eq!(state_of(&STAT_6_1[..60]), None);
        // Shapes procfs would panic on: nothing, and no panic.
        for odd in [&b"4242 (x)"[..], b"(x) S 1", b"4242 )x( S 1", "4242 (x)\u{e9}S".as_bytes(), b"", b"  "] {
            assert_eq!(state_of(odd), None, "{:?}", String::from_utf8_lossy(odd));
        }
    }

    #[test]
    fn uptime_is_read_on_this_host() {
        assert!(uptime_s().is_some_and(|s| s > 0.0));
    }
}
