//! Readers for /proc/meminfo, /proc/vmstat and /proc/diskstats that accept
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
}
