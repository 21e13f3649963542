//! The rules that keep bootmark from destroying data it was not told to:
//! which device may be the target, and when it may be formatted.

use super::devices::BlockDev;
use std::path::{Path, PathBuf};

/// A file on a filesystem that says "bootmark may format this".
pub const SCRATCH_MARKER: &str = ".bootmark-scratch";

/// The target must not share a disk with the results stick (which is also
/// usually the boot medium), and must be a partition if its disk has any.
pub fn check_target(target: &BlockDev, results: Option<&BlockDev>, devices: &[BlockDev]) -> Result<(), String> {
    if let Some(r) = results
        && r.disk == target.disk
    {
        return Err(format!(
            "the target {} is on the same disk ({}) as the results stick {}: refusing; choose a partition on another disk",
            target.name, target.disk, r.name
        ));
    }
    if target.partition.is_none() && devices.iter().any(|d| d.disk == target.name && d.partition.is_some()) {
        return Err(format!(
            "the target {} is a whole disk that has partitions: name the partition to use (e.g. /dev/{}1 or its LABEL=)",
            target.name, target.name
        ));
    }
    Ok(())
}

/// Entries that an empty filesystem may contain.
fn ignorable(name: &str) -> bool {
    matches!(name, "lost+found" | SCRATCH_MARKER | ".journal" | "System Volume Information")
}

/// May a filesystem whose root holds `entries` be formatted? Only when it is
/// empty or carries the scratch marker from an earlier bootmark format.
pub fn may_format(entries: &[String]) -> Result<(), String> {
    if entries.iter().any(|e| e == SCRATCH_MARKER) {
        return Ok(());
    }
    let data: Vec<&String> = entries.iter().filter(|e| !ignorable(e)).collect();
    if data.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = data.iter().take(5).map(|s| s.as_str()).collect();
    Err(format!(
        "the target holds a filesystem with data ({} entries: {}{}): refusing to format it. Empty it, or create a file named {SCRATCH_MARKER} at its top to allow bootmark to format it",
        data.len(),
        shown.join(", "),
        if data.len() > 5 { ", …" } else { "" }
    ))
}

/// The mkfs program for `fs` inside the image: for ext2/3/4 the static
/// mke2fs the image builder makes (it runs on 2.6 kernels), else mkfs.<fs>.
pub fn mkfs_tool(fs: &str, root: &Path) -> Result<PathBuf, String> {
    let names = if matches!(fs, "ext2" | "ext3" | "ext4") {
        vec!["mke2fs".to_string(), format!("mkfs.{fs}")]
    } else {
        vec![format!("mkfs.{fs}")]
    };
    names
        .iter()
        .flat_map(|n| ["sbin", "usr/sbin", "bin", "usr/bin"].iter().map(move |d| root.join(d).join(n)))
        .find(|p| p.exists())
        .ok_or_else(|| {
            format!(
                "bootmark.format={fs} but the image has no mkfs.{fs}: rebuild the image with --mkfs {fs}, or format the partition beforehand and drop bootmark.format"
            )
        })
}

/// mkfs arguments that keep the label/UUID the target was named by, so the
/// next boot still finds it.
pub fn mkfs_args(fs: &str, label: Option<&str>, uuid: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = match fs {
        // Inode tables and journal zeroed now: lazy init would leave the
        // kernel writing them in the background during the measurements.
        "ext2" | "ext3" | "ext4" => {
            ["-t", fs, "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"].map(String::from).to_vec()
        }
        "xfs" => vec!["-f".into(), "-q".into()],
        "reiserfs" => vec!["-f".into(), "-f".into(), "-q".into()],
        _ => vec![],
    };
    let (label_flag, uuid_flag) = match fs {
        "xfs" => ("-L", Some("-m")),
        "vfat" => ("-n", Some("-i")),
        "reiserfs" => ("-l", Some("-u")),
        _ => ("-L", Some("-U")),
    };
    if let Some(l) = label {
        a.extend([label_flag.to_string(), l.to_string()]);
    }
    if let (Some(u), Some(flag)) = (uuid, uuid_flag) {
        let value = match fs {
            "xfs" => format!("uuid={u}"),
            "vfat" => u.replace('-', ""),
            _ => u.to_string(),
        };
        a.extend([flag.to_string(), value]);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str, disk: &str, part: Option<u32>) -> BlockDev {
        BlockDev {
            sysfs: crate::image_side::sysfs_block::Entry {
                name: name.into(),
                disk: disk.into(),
                major: 8,
                minor: 0,
                partition: part,
                removable: false,
                size_bytes: 1 << 30,
                disk_dir: PathBuf::from("/sys/block").join(disk),
            },
            node: PathBuf::from("/dev").join(name),
            fs: None,
            partuuid: None,
        }
    }

    #[test]
    fn target_never_shares_the_results_disk() {
        let devs = [
            dev("sda", "sda", None),
            dev("sda1", "sda", Some(1)),
            dev("sdb", "sdb", None),
            dev("sdb1", "sdb", Some(1)),
        ];
        assert!(check_target(&devs[1], Some(&devs[3]), &devs).is_ok());
        assert!(check_target(&devs[3], Some(&devs[3]), &devs).unwrap_err().contains("same disk"));
        let other_part_same_disk = dev("sdb2", "sdb", Some(2));
        assert!(check_target(&other_part_same_disk, Some(&devs[3]), &devs).unwrap_err().contains("same disk"));
        assert!(check_target(&devs[0], None, &devs).unwrap_err().contains("whole disk that has partitions"));
        let bare = [dev("sdc", "sdc", None)];
        assert!(check_target(&bare[0], None, &bare).is_ok(), "a whole disk without partitions may be used");
    }

    #[test]
    fn only_empty_or_marked_filesystems_may_be_formatted() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(may_format(&s(&[])).is_ok());
        assert!(may_format(&s(&["lost+found"])).is_ok());
        assert!(may_format(&s(&["lost+found", "home", SCRATCH_MARKER])).is_ok());
        let err = may_format(&s(&["lost+found", "home", "etc", "var"])).unwrap_err();
        assert!(err.contains("3 entries: home, etc, var"), "{err}");
    }

    #[test]
    fn mkfs_keeps_the_name_the_target_was_found_by() {
        assert_eq!(
            mkfs_args("ext3", Some("SCRATCH"), None),
            ["-t", "ext3", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-L", "SCRATCH"]
        );
        assert_eq!(mkfs_args("xfs", None, Some("0123-ab")), ["-f", "-q", "-m", "uuid=0123-ab"]);
        assert_eq!(mkfs_args("vfat", Some("X"), Some("abcd-1234")), ["-n", "X", "-i", "abcd1234"]);
    }
}
