//! The storage stack under a block device as sysfs shows it, top first:
//! a device-mapper device (an LV) over an md array over partitions over
//! disks. Each layer's `slaves/` names what it sits on (2.6.x); md's and
//! dm's own sysfs directories say level, chunk and name. Records carry it
//! so the report can group by layout and the findings can look at the
//! disks' queues, not only the top device's.

use super::dm;
use crate::fsutil;
use crate::image_side::sysfs_block::{self, Entry};
use crate::image_side::tunables::active_scheduler;
pub use crate::schema::layer::Layer;
use std::path::{Path, PathBuf};

/// A sysfs value, None when absent or empty (an inactive array's `md/level`).
fn read_trimmed(p: impl AsRef<Path>) -> Option<String> {
    fsutil::read_trimmed(p).filter(|s| !s.is_empty())
}

/// The stack under the block device named `top` (empty when it is a plain
/// disk or partition: nothing is layered there). `table` reads a dm
/// device's target types (through /dev/mapper/control on the machine).
pub fn stack(sys: &Path, top: &str, table: &dyn Fn(&str) -> Vec<String>) -> Vec<Layer> {
    let entries = sysfs_block::walk(sys);
    let dir_of = |e: &Entry| -> PathBuf {
        if e.partition.is_some() { e.disk_dir.join(sysfs_block::sysfs_name(&e.name)) } else { e.disk_dir.clone() }
    };
    let mut out: Vec<Layer> = Vec::new();
    let mut todo = std::collections::VecDeque::from([top.to_string()]);
    while let Some(name) = todo.pop_front() {
        if out.iter().any(|l| l.name == name) {
            continue;
        }
        let Some(e) = entries.iter().find(|e| e.name == name) else { continue };
        let dir = dir_of(e);
        let mut below: Vec<String> = std::fs::read_dir(dir.join("slaves"))
            .map(|r| r.flatten().map(|s| s.file_name().to_string_lossy().replace('!', "/")).collect())
            .unwrap_or_default();
        below.sort();
        if e.partition.is_some() {
            below = vec![e.disk.clone()];
        }
        let mut layer = Layer { name: name.clone(), below: below.clone(), ..Layer::default() };
        if dir.join("dm").is_dir() || name.starts_with("dm-") {
            layer.kind = "dm".into();
            layer.dm_name = read_trimmed(dir.join("dm/name"));
            layer.dm_targets = layer.dm_name.as_deref().map(table).unwrap_or_default();
        } else if dir.join("md").is_dir() {
            layer.kind = "md".into();
            layer.md_level = read_trimmed(dir.join("md/level"));
            layer.md_chunk_kib =
                read_trimmed(dir.join("md/chunk_size")).and_then(|c| c.parse::<u64>().ok()).map(|b| b / 1024);
            layer.md_raid_disks = read_trimmed(dir.join("md/raid_disks")).and_then(|c| c.parse().ok());
            layer.md_state = read_trimmed(dir.join("md/array_state"));
        } else if e.partition.is_some() {
            layer.kind = "partition".into();
        } else {
            layer.kind = "disk".into();
            layer.scheduler = read_trimmed(dir.join("queue/scheduler")).map(|s| active_scheduler(&s));
            layer.rotational = read_trimmed(dir.join("queue/rotational")).map(|r| r == "1");
            layer.write_cache = read_trimmed(dir.join("queue/write_cache"));
            layer.queue = crate::image_side::sysfs_block::queue_settings(&dir);
        }
        todo.extend(below);
        out.push(layer);
    }
    if out.len() == 1 || out.first().is_some_and(|l| l.kind == "partition" || l.kind == "disk") {
        return Vec::new();
    }
    out
}

/// `stack` on the running machine, dm tables read through device-mapper's
/// control device — opened only when a dm layer is met, not for every
/// record on a plain partition.
pub fn of_device(top: &str) -> Vec<Layer> {
    let control = std::cell::OnceCell::new();
    let table = |name: &str| {
        control
            .get_or_init(|| dm::Control::open(Path::new("/dev/mapper/control")).ok())
            .as_ref()
            .and_then(|c| c.table(name).ok())
            .map(|t| t.into_iter().map(|t| t.kind).collect())
            .unwrap_or_default()
    };
    stack(Path::new("/sys"), top, &table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::layer::{disks, per_disk, summary};

    fn file(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// sysfs as a 6.1 kernel shows an LV (dm-0) on md127 (raid1) on sda1 and sdb1.
    fn lvm_on_md(root: &Path) {
        let b = root.join("block");
        for (disk, n) in [("sda", 0), ("sdb", 16)] {
            file(&b.join(disk).join("dev"), &format!("8:{n}\n"));
            file(&b.join(disk).join("size"), "524288\n");
            file(&b.join(disk).join("queue/scheduler"), "[mq-deadline] none\n");
            file(&b.join(disk).join("queue/rotational"), "1\n");
            file(&b.join(disk).join(format!("{disk}1/dev")), &format!("8:{}\n", n + 1));
            file(&b.join(disk).join(format!("{disk}1/size")), "522240\n");
            file(&b.join(disk).join(format!("{disk}1/partition")), "1\n");
            file(&b.join("md127/slaves").join(format!("{disk}1")), "");
        }
        file(&b.join("md127/dev"), "9:127\n");
        file(&b.join("md127/size"), "518144\n");
        file(&b.join("md127/md/level"), "raid1\n");
        file(&b.join("md127/md/chunk_size"), "0\n");
        file(&b.join("md127/md/raid_disks"), "2\n");
        file(&b.join("md127/md/array_state"), "read-auto\n");
        file(&b.join("dm-0/dev"), "253:0\n");
        file(&b.join("dm-0/size"), "245760\n");
        file(&b.join("dm-0/dm/name"), "bmvg-target\n");
        file(&b.join("dm-0/slaves/md127"), "");
    }

    #[test]
    fn an_lv_on_raid1_reads_down_to_its_member_disks() {
        let root = std::env::temp_dir().join(format!("bootmark-stack-{}", std::process::id()));
        lvm_on_md(&root);
        let layers = stack(&root, "dm-0", &|name| if name == "bmvg-target" { vec!["linear".into()] } else { vec![] });
        let names: Vec<(&str, &str)> = layers.iter().map(|l| (l.name.as_str(), l.kind.as_str())).collect();
        assert_eq!(
            names,
            [
                ("dm-0", "dm"),
                ("md127", "md"),
                ("sda1", "partition"),
                ("sdb1", "partition"),
                ("sda", "disk"),
                ("sdb", "disk")
            ]
        );
        assert_eq!(layers[0].dm_targets, ["linear"]);
        assert_eq!((layers[1].md_level.as_deref(), layers[1].md_raid_disks), (Some("raid1"), Some(2)));
        assert_eq!(layers[1].below, ["sda1", "sdb1"]);
        assert_eq!(disks(&layers).iter().map(|d| d.scheduler.as_deref()).collect::<Vec<_>>(), [Some("mq-deadline"); 2]);
        assert!(stack(&root, "sda1", &|_| vec![]).is_empty(), "a plain partition has no stack to tell");
        assert_eq!(summary(&layers), "dm linear → md raid1 → 2 disks");
        assert_eq!(summary(&[]), "plain");
        assert_eq!(per_disk(&layers, |d| d.scheduler.as_deref()), "sda mq-deadline, sdb mq-deadline");
        std::fs::remove_dir_all(root).unwrap();
    }
}
