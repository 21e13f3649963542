//! Block devices as sysfs describes them, their /dev nodes, and finding the
//! one a `DiskSpec` names — by what is on it, never by name order.
//!
//! Works from sysfs alone (`/sys/block/*/dev`, `/sys/block/*/*/dev`), which
//! every 2.6 kernel has; /dev nodes are made here when there is no devtmpfs.

use super::cmdline::DiskSpec;
use super::fsprobe::{self, FsInfo};
use crate::image_side::sysfs_block;
use std::path::{Path, PathBuf};

/// A disk or partition /init may use: its sysfs entry (name, disk, numbers,
/// size; read through `Deref`) and what /init learned of it.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockDev {
    pub sysfs: sysfs_block::Entry,
    /// The node in /dev.
    pub node: PathBuf,
    pub fs: Option<FsInfo>,
    pub partuuid: Option<String>,
}

impl std::ops::Deref for BlockDev {
    type Target = sysfs_block::Entry;
    fn deref(&self) -> &sysfs_block::Entry {
        &self.sysfs
    }
}

/// Every disk and partition in `sys`/block, with its node under `dev`
/// (created if missing) and what is on it.
pub fn scan(sys: &Path, dev: &Path) -> Vec<BlockDev> {
    let mut found: Vec<BlockDev> = Vec::new();
    let mut partuuids = Vec::new();
    for entry in sysfs_block::walk(sys) {
        // Devices that never hold user filesystems, and empty ones (card reader
        // slots without a card, unattached loop devices).
        if ["ram", "fd", "sr", "zram", "nbd"].iter().any(|p| entry.disk.starts_with(p)) || entry.size_bytes == 0 {
            continue;
        }
        let node = dev.join(&entry.name);
        ensure_block_node(&node, entry.major, entry.minor);
        if entry.partition.is_none() {
            partuuids = fsprobe::partition_uuids(&node).unwrap_or_default();
        }
        let partuuid = entry.partition.and_then(|n| partuuids.iter().find(|(i, _)| *i == n).map(|(_, u)| u.clone()));
        found.push(BlockDev { fs: fsprobe::probe(&node).ok().flatten(), sysfs: entry, node, partuuid });
    }
    found
}

/// Make a block device node if none is there (no devtmpfs before 2.6.32).
pub fn ensure_block_node(node: &Path, major: u32, minor: u32) {
    if node.exists() {
        return;
    }
    if let Some(parent) = node.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = nix::sys::stat::mknod(
        node,
        nix::sys::stat::SFlag::S_IFBLK,
        nix::sys::stat::Mode::from_bits_truncate(0o600),
        nix::sys::stat::makedev(major as u64, minor as u64),
    );
}

/// The one device `spec` names. Two matches are an error: never guess.
pub fn find<'a>(spec: &DiskSpec, devices: &'a [BlockDev]) -> Result<&'a BlockDev, String> {
    let matches: Vec<&BlockDev> = devices
        .iter()
        .filter(|d| match spec {
            DiskSpec::Label(l) => d.fs.as_ref().and_then(|f| f.label.as_deref()) == Some(l.as_str()),
            DiskSpec::Uuid(u) => d.fs.as_ref().and_then(|f| f.uuid.as_deref()) == Some(u.as_str()),
            DiskSpec::PartUuid(u) => d.partuuid.as_deref() == Some(u.as_str()),
            DiskSpec::Path(p) => p.strip_prefix("/dev/") == Some(d.name.as_str()),
            // Inside a layer: `init::assembly` activates it and names the device.
            DiskSpec::Lv { .. } | DiskSpec::Md(_) => false,
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(format!("no disk matches {spec}; disks seen: {}", inventory(devices))),
        many => Err(format!(
            "{} disks match {spec} ({}): refusing to guess; use UUID= or PARTUUID=",
            many.len(),
            many.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// "sda (8 GiB), sda1 ext3 'DATA', sdb1 vfat 'BOOTMARK'" for error messages.
pub fn inventory(devices: &[BlockDev]) -> String {
    if devices.is_empty() {
        return "none (is the storage driver loaded?)".into();
    }
    devices
        .iter()
        .map(|d| match &d.fs {
            Some(f) => format!("{} {} '{}'", d.name, f.fs, f.label.as_deref().unwrap_or("")),
            None => format!("{} ({})", d.name, crate::size::human(d.size_bytes)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Poll sysfs until `spec` can be found or `wait_s` passes (USB sticks appear late).
pub fn wait_for(spec: &DiskSpec, sys: &Path, dev: &Path, wait_s: f64) -> Result<BlockDev, String> {
    use crate::image_side::measure::clock::{mono_ns, sleep_until};
    let deadline = mono_ns() + (wait_s * 1e9) as u64;
    loop {
        let devices = scan(sys, dev);
        match find(spec, &devices) {
            Ok(d) => return Ok(d.clone()),
            Err(e) if e.contains("refusing to guess") => return Err(e),
            Err(e) if mono_ns() >= deadline => return Err(format!("after waiting {wait_s:.0} s: {e}")),
            Err(_) => sleep_until(mono_ns() + 250_000_000),
        }
    }
}

/// The disks the kernel found: with the modules line, what a missing
/// driver looks like in the serial log.
pub fn summary_line(all: &[BlockDev]) -> String {
    let disks: Vec<String> = all
        .iter()
        .filter(|d| d.partition.is_none())
        .map(|d| {
            let parts = all.iter().filter(|p| p.partition.is_some() && p.disk == d.name).count();
            format!(
                "{} ({}{}, {} partitions)",
                d.name,
                crate::size::human(d.size_bytes),
                if d.removable { ", removable" } else { "" },
                parts
            )
        })
        .collect();
    if disks.is_empty() {
        return "bootmark: block devices: none (no driver found a disk: see the modules line)".into();
    }
    format!("bootmark: block devices: {}", disks.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sys(root: &Path) {
        let mk = |p: &str, content: &str| {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        };
        mk("sys/block/sda/dev", "8:0\n");
        mk("sys/block/sda/size", "2000\n");
        mk("sys/block/sda/removable", "0\n");
        mk("sys/block/sda/sda1/dev", "8:1\n");
        mk("sys/block/sda/sda1/size", "1000\n");
        mk("sys/block/sda/sda1/partition", "1\n");
        mk("sys/block/sdb/dev", "8:16\n");
        mk("sys/block/sdb/size", "4000\n");
        mk("sys/block/sdb/removable", "1\n");
        mk("sys/block/sdb/sdb1/dev", "8:17\n");
        mk("sys/block/sdb/sdb1/size", "3000\n");
        mk("sys/block/sdc/dev", "8:32\n");
        mk("sys/block/sdc/size", "0\n"); // empty card reader
        mk("sys/block/cciss!c0d0/dev", "104:0\n");
        mk("sys/block/cciss!c0d0/size", "100\n");
        mk("sys/block/cciss!c0d0/cciss!c0d0p1/dev", "104:1\n");
        mk("sys/block/cciss!c0d0/cciss!c0d0p1/size", "50\n");
    }

    #[test]
    fn discovers_disks_and_partitions_from_sysfs() {
        let root = std::env::temp_dir().join(format!("bootmark-devs-{}", std::process::id()));
        fake_sys(&root);
        // Regular files stand in for the nodes (mknod would need root): a node that exists is kept.
        for n in ["sda", "sda1", "sdb", "sdb1", "cciss/c0d0", "cciss/c0d0p1"] {
            let p = root.join("dev").join(n);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, vec![0u8; 4096]).unwrap();
        }
        let devs = scan(&root.join("sys"), &root.join("dev"));
        let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["cciss/c0d0", "cciss/c0d0p1", "sda", "sda1", "sdb", "sdb1"]);
        let sdb1 = &devs[5];
        assert_eq!((sdb1.disk.as_str(), sdb1.major, sdb1.minor, sdb1.partition), ("sdb", 8, 17, Some(1)));
        assert!(sdb1.removable);
        assert_eq!(sdb1.size_bytes, 3000 * 512);
        assert_eq!(devs[1].partition, Some(1), "partition number from the name when sysfs lacks it");
        assert_eq!(devs[1].node, root.join("dev/cciss/c0d0p1"));
        assert_eq!(find(&DiskSpec::Path("/dev/sda1".into()), &devs).unwrap().minor, 1);
        let err = find(&DiskSpec::Label("NOPE".into()), &devs).unwrap_err();
        assert!(err.contains("no disk matches LABEL=NOPE") && err.contains("sdb1"), "{err}");
        crate::fsutil::remove_tree(&root).unwrap();
    }

    #[test]
    fn two_disks_with_one_label_are_refused() {
        let fs = |label: &str| Some(FsInfo { fs: "ext3".into(), label: Some(label.into()), uuid: None });
        let d = |name: &str, label: &str| BlockDev {
            sysfs: sysfs_block::Entry {
                name: name.into(),
                disk: name.into(),
                major: 8,
                minor: 0,
                partition: None,
                removable: false,
                size_bytes: 1,
                disk_dir: PathBuf::from("/sys/block").join(name),
            },
            node: PathBuf::from("/dev").join(name),
            fs: fs(label),
            partuuid: None,
        };
        let devs = [d("sda", "SCRATCH"), d("sdb", "SCRATCH"), d("sdc", "OTHER")];
        assert!(find(&DiskSpec::Label("SCRATCH".into()), &devs).unwrap_err().contains("refusing to guess"));
        assert_eq!(find(&DiskSpec::Label("OTHER".into()), &devs).unwrap().name, "sdc");
    }
}
