//! The storage stack under a record's device as it carries it: one
//! [`Layer`] per device-mapper device, md array, partition and disk, top
//! first, and the few words the report and the findings say of it.
//! `layers::stack` reads it from sysfs.

use serde::{Deserialize, Serialize};

/// One layer of the stack.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    /// The kernel's name (`dm-0`, `md127`, `sda1`, `sda`).
    pub name: String,
    /// `dm`, `md`, `partition` or `disk`.
    pub kind: String,
    /// What it sits on, by kernel name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<String>,
    /// device-mapper's name (`vg-lv`), 2.6.29+.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dm_name: Option<String>,
    /// The table's target types, in table order (`linear`, `striped`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dm_targets: Vec<String>,
    /// md's level (`raid1`), chunk size and member count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md_chunk_kib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md_raid_disks: Option<u32>,
    /// md's array_state (`clean`, `active`, `read-auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md_state: Option<String>,
    /// A disk's active I/O scheduler and whether it spins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// A disk's write cache (`write back`, `write through`; queue/write_cache, 4.7+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_cache: Option<String>,
    /// A disk's queue settings, as `storage.queue` has them for the target's disk.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub queue: std::collections::BTreeMap<String, String>,
}

/// The disks at the bottom of a stack (the member disks whose queues the
/// findings look at).
pub fn disks(layers: &[Layer]) -> Vec<&Layer> {
    layers.iter().filter(|l| l.kind == "disk").collect()
}

/// The stack in a few words, for grouping and sentences: `plain` when
/// there is none, else `lvm linear → md raid1 → 2 disks`.
pub fn summary(layers: &[Layer]) -> String {
    if layers.is_empty() {
        return "plain".into();
    }
    let mut parts: Vec<String> = layers
        .iter()
        .filter_map(|l| match l.kind.as_str() {
            "dm" => Some(format!("dm {}", if l.dm_targets.is_empty() { "?".into() } else { l.dm_targets.join("+") })),
            "md" => Some(format!("md {}", l.md_level.as_deref().unwrap_or("?"))),
            _ => None,
        })
        .collect();
    let n = disks(layers).len();
    parts.push(format!("{n} disk{}", if n == 1 { "" } else { "s" }));
    parts.join(" → ")
}

/// Each disk with this queue setting (`sda mq-deadline, sdb mq-deadline`).
pub fn per_disk(layers: &[Layer], value: impl Fn(&Layer) -> Option<&str>) -> String {
    disks(layers).iter().map(|d| format!("{} {}", d.name, value(d).unwrap_or("?"))).collect::<Vec<_>>().join(", ")
}
