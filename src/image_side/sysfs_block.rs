//! Block devices as `/sys/block` lists them: one walk, shared by /init's
//! device finding (`init::devices`) and the records' storage evidence
//! (`measure::evidence`), so both name, number and size a device the same way.
//!
//! Uses only what every 2.6 kernel has: `/sys/block/<disk>/dev`, `size`,
//! `removable` and `<disk>/<part>/dev` (`/sys/dev/block` came in 2.6.27,
//! a partition's `partition` file in 2.6.27 too: before that the number is
//! the name's trailing digits).

use crate::fsutil::read_trimmed;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A disk's files behind the causes a finding names, relative to its sysfs
/// directory: the largest request the kernel sends and the controller takes,
/// writeback throttling's target latency (4.10+), the queue's depth on the
/// kernel's side and on the device's, read-ahead, whether it spins, its
/// write cache (4.7+); and the disk's own share of the dirty limit, from
/// its backing device (`bdi`, a link to /sys/class/bdi/MAJ:MIN, 2.6.24+):
/// `min_ratio` and `max_ratio` (percent of the limit), `strict_limit` (6.2+:
/// throttled by its own share even below the machine's freerun ceiling).
const QUEUE_FILES: [&str; 11] = [
    "queue/max_sectors_kb",
    "queue/max_hw_sectors_kb",
    "queue/wbt_lat_usec",
    "queue/nr_requests",
    "queue/read_ahead_kb",
    "queue/rotational",
    "queue/write_cache",
    "device/queue_depth",
    "bdi/min_ratio",
    "bdi/max_ratio",
    "bdi/strict_limit",
];

/// The queue settings of the disk whose sysfs directory is `disk_dir`,
/// keyed by their path under it (`queue/max_sectors_kb`), with the active
/// scheduler's tunables (`queue/iosched/read_expire`). A file this kernel
/// lacks is left out; nothing is written.
pub fn queue_settings(disk_dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in QUEUE_FILES {
        if let Some(v) = read_trimmed(disk_dir.join(file)) {
            out.insert(file.to_string(), v);
        }
    }
    let iosched = disk_dir.join("queue/iosched");
    let mut tunables: Vec<PathBuf> =
        std::fs::read_dir(&iosched).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    tunables.sort();
    for path in tunables {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(v) = read_trimmed(&path) {
            out.insert(format!("queue/iosched/{name}"), v);
        }
    }
    out
}

/// One disk or partition.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Kernel name (sda, sda1, cciss/c0d0p1): sysfs spells '/' as '!'.
    pub name: String,
    /// The whole disk this is or belongs to.
    pub disk: String,
    pub major: u32,
    pub minor: u32,
    /// The partition number; none for a whole disk.
    pub partition: Option<u32>,
    /// The disk's `removable` flag (a partition has its disk's).
    pub removable: bool,
    /// 0 when sysfs has no size (empty card reader slots, unattached loop devices).
    pub size_bytes: u64,
    /// The disk's directory: its `device/` (model) and `queue/` (scheduler).
    pub disk_dir: PathBuf,
}

/// Every disk and partition under `sys`/block, disks in name order, each
/// followed by its partitions.
pub fn walk(sys: &Path) -> Vec<Entry> {
    let mut found = Vec::new();
    for disk_dir in sorted_dirs(&sys.join("block")) {
        let disk = kernel_name(&disk_dir);
        let removable = read_trimmed(disk_dir.join("removable")).as_deref() == Some("1");
        let Some(whole) = entry_at(&disk_dir, &disk_dir, &disk, removable, None) else { continue };
        found.push(whole);
        for part_dir in sorted_dirs(&disk_dir).into_iter().filter(|p| p.join("dev").exists()) {
            let name = kernel_name(&part_dir);
            let number = read_trimmed(part_dir.join("partition"))
                .and_then(|p| p.parse().ok())
                .or_else(|| trailing_number(&name));
            // Some(0): a partition whose number cannot be told is still a partition.
            found.extend(entry_at(&part_dir, &disk_dir, &disk, removable, number.or(Some(0))));
        }
    }
    found
}

/// The disk or partition with device number `major:minor`.
pub fn by_number(sys: &Path, major: u32, minor: u32) -> Option<Entry> {
    walk(sys).into_iter().find(|e| (e.major, e.minor) == (major, minor))
}

/// What sysfs calls a device by its kernel name (cciss/c0d0 → cciss!c0d0).
pub fn sysfs_name(name: &str) -> String {
    name.replace('/', "!")
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs
}

fn kernel_name(dir: &Path) -> String {
    dir.file_name().map(|n| n.to_string_lossy().replace('!', "/")).unwrap_or_default()
}

fn trailing_number(name: &str) -> Option<u32> {
    let digits: String = name.chars().rev().take_while(char::is_ascii_digit).collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn entry_at(dir: &Path, disk_dir: &Path, disk: &str, removable: bool, partition: Option<u32>) -> Option<Entry> {
    let (major, minor) = parse_dev(&read_trimmed(dir.join("dev"))?)?;
    let sectors = read_trimmed(dir.join("size")).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    Some(Entry {
        name: kernel_name(dir),
        disk: disk.into(),
        major,
        minor,
        partition,
        removable,
        // sysfs counts 512-byte sectors whatever the device's sector size.
        size_bytes: sectors.saturating_mul(512),
        disk_dir: disk_dir.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of a fake sysfs tree under `root`, its directories made.
    fn write_under(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// A 6.1 SATA disk under mq-deadline, and a 2.6.9 one: what each kernel
    /// has is kept by its path, what it lacks is left out.
    #[test]
    fn queue_settings_are_read_by_path_and_a_missing_file_is_left_out() {
        let root = std::env::temp_dir().join(format!("bootmark-sysfs-queue-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mk = |p: &str, content: &str| write_under(&root, p, content);
        for (file, value) in [
            ("queue/max_sectors_kb", "1280\n"),
            ("queue/max_hw_sectors_kb", "32767\n"),
            ("queue/wbt_lat_usec", "75000\n"),
            ("queue/nr_requests", "64\n"),
            ("queue/read_ahead_kb", "128\n"),
            ("queue/rotational", "1\n"),
            ("queue/write_cache", "write back\n"),
            ("device/queue_depth", "32\n"),
            ("queue/iosched/read_expire", "500\n"),
            ("queue/iosched/fifo_batch", "16\n"),
        ] {
            mk(&format!("sda/{file}"), value);
        }
        // Its backing device is a link, as sysfs has it: read through it.
        for (file, value) in [("min_ratio", "0\n"), ("max_ratio", "100\n"), ("strict_limit", "0\n")] {
            mk(&format!("class/bdi/8:0/{file}"), value);
        }
        std::os::unix::fs::symlink("../class/bdi/8:0", root.join("sda/bdi")).unwrap();
        let q = queue_settings(&root.join("sda"));
        assert_eq!(q.len(), 13, "{q:?}");
        assert_eq!(q["bdi/max_ratio"], "100");
        assert_eq!(q["bdi/strict_limit"], "0");
        assert_eq!(q["queue/max_sectors_kb"], "1280");
        assert_eq!(q["queue/wbt_lat_usec"], "75000");
        assert_eq!(q["queue/write_cache"], "write back");
        assert_eq!(q["queue/iosched/read_expire"], "500");
        // 2.6.9: no wbt, no write_cache file, no iosched directory for noop.
        for (file, value) in [("queue/max_sectors_kb", "128\n"), ("queue/nr_requests", "128\n")] {
            mk(&format!("hda/{file}"), value);
        }
        let old = queue_settings(&root.join("hda"));
        assert_eq!(old.keys().collect::<Vec<_>>(), ["queue/max_sectors_kb", "queue/nr_requests"]);
        assert!(queue_settings(&root.join("none")).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn disks_and_partitions_with_numbers_sizes_and_odd_names() {
        let root = std::env::temp_dir().join(format!("bootmark-sysfs-block-{}", std::process::id()));
        let mk = |p: &str, content: &str| write_under(&root, p, content);
        mk("block/sdb/dev", "8:16\n");
        mk("block/sdb/size", "4000\n");
        mk("block/sdb/removable", "1\n");
        mk("block/sdb/sdb1/dev", "8:17\n");
        mk("block/sdb/sdb1/size", "3000\n");
        mk("block/sdb/sdb1/partition", "1\n");
        mk("block/sdb/queue/scheduler", "noop [cfq]\n"); // a directory without `dev`: not a partition
        mk("block/cciss!c0d0/dev", "104:0\n");
        mk("block/cciss!c0d0/size", "100\n");
        mk("block/cciss!c0d0/cciss!c0d0p12/dev", "104:12\n"); // 2.6.9: no `partition` file
        mk("block/sdc/size", "0\n"); // no `dev`: skipped
        let all = walk(&root);
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["cciss/c0d0", "cciss/c0d0p12", "sdb", "sdb1"]);
        assert_eq!(all[1].partition, Some(12), "the number from the name when sysfs has no file");
        assert_eq!((all[1].disk.as_str(), all[1].disk_dir.clone()), ("cciss/c0d0", root.join("block/cciss!c0d0")));
        assert_eq!((all[3].partition, all[3].removable, all[3].size_bytes), (Some(1), true, 3000 * 512));
        assert_eq!(all[2].partition, None);
        assert_eq!(by_number(&root, 104, 12).unwrap().name, "cciss/c0d0p12");
        assert!(by_number(&root, 8, 99).is_none());
        assert_eq!(sysfs_name("cciss/c0d0"), "cciss!c0d0");
        crate::fsutil::remove_tree(&root).unwrap();
    }
}
