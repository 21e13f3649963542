//! A plan's variant as written (a sweep's named set of settings, what
//! `bootmark capture` prints and `bootmark bisect settings` reads) and what
//! a record says about the variant it ran under. The image side's
//! `variant` applies the settings and fills `Applied` in.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The vm sysctls a variant may set (/proc/sys/vm/NAME).
pub const VM_SETTINGS: [&str; 7] = [
    "dirty_ratio",
    "dirty_background_ratio",
    "dirty_bytes",
    "dirty_background_bytes",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
    "swappiness",
];

/// The target disk's queue settings a variant may set (/sys/block/DISK/queue/NAME).
/// `max_sectors_kb`: the largest request the kernel sends the disk (Debian 13's 6.12
/// sends 1.1 MiB writes to an AHCI disk where 6.1 sent 128 KiB ones).
pub const QUEUE_SETTINGS: [&str; 5] = ["scheduler", "nr_requests", "read_ahead_kb", "wbt_lat_usec", "max_sectors_kb"];

/// The variant a same-boot comparison's runs as found carry
/// (`bootmark.set=+NAME:…`: each repetition as found, then under NAME).
pub const FOUND_BESIDE: &str = "asfound";

/// Whether vm setting `key` of `vm` is not the one in force of a dirty
/// ratio and its byte limit (the kernel pairs them: writing one zeroes the
/// other): a ratio whose byte limit is set, or a byte limit of 0.
pub fn not_in_force(vm: &BTreeMap<String, u64>, key: &str) -> bool {
    let bytes_set = |b: &str| vm.get(b).is_some_and(|x| *x > 0);
    match key {
        "dirty_ratio" => bytes_set("dirty_bytes"),
        "dirty_background_ratio" => bytes_set("dirty_background_bytes"),
        k => k.ends_with("_bytes") && vm.get(k) == Some(&0),
    }
}

/// A named set of settings, as a plan writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    /// vm sysctls: name → value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vm: BTreeMap<String, u64>,
    /// The target disk's queue: name → value (`scheduler` takes a name).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub queue: BTreeMap<String, String>,
    /// Mount options for the target under this variant (`data=writeback`,
    /// `barrier=1`), added to the boot's own: the boot image unmounts and
    /// mounts the target with them (ext3 cannot change `data=` on a remount);
    /// `bootmark run` never remounts your filesystem, so there it is not applied.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mount_options: String,
    /// Kernel parameters only a boot can set (`elevator=deadline` before
    /// 2.6.10, `sysctl.vm.dirty_ratio=15` on 5.8+): `cargo xtask image` makes
    /// a boot entry with them for this variant; a boot without them skips it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cmdline: String,
    /// Why this variant exists, for the report (e.g. "protections removed on purpose").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Variant {
    pub fn validate(&self) -> Result<(), String> {
        let plain = |s: &str| !s.is_empty() && s.len() <= 64 && !s.contains(['/', ',', ' ', '\0']);
        if !plain(&self.name) {
            return Err(format!("variant name '{}' must be a short word without '/', ',' or spaces", self.name));
        }
        if let Some(k) = self.vm.keys().find(|k| !VM_SETTINGS.contains(&k.as_str())) {
            return Err(format!(
                "variant '{}': vm.{k} is not a setting a variant may change ({})",
                self.name,
                VM_SETTINGS.join(", ")
            ));
        }
        if let Some(k) = self.queue.keys().find(|k| !QUEUE_SETTINGS.contains(&k.as_str())) {
            return Err(format!(
                "variant '{}': queue.{k} is not a setting a variant may change ({})",
                self.name,
                QUEUE_SETTINGS.join(", ")
            ));
        }
        if let Some((k, v)) = self.queue.iter().find(|(_, v)| !plain(v)) {
            return Err(format!("variant '{}': queue.{k} = '{v}' is not a plain value", self.name));
        }
        let mount_option =
            |o: &str| !o.is_empty() && o.chars().all(|c| c.is_ascii_alphanumeric() || "=_-.".contains(c));
        if !self.mount_options.is_empty() && !self.mount_options.split(',').all(mount_option) {
            return Err(format!(
                "variant '{}': mount_options '{}' are not comma-separated mount options",
                self.name, self.mount_options
            ));
        }
        let param = |w: &str| {
            !w.starts_with("bootmark.")
                && w.len() <= 128
                && w.chars().all(|c| c.is_ascii_alphanumeric() || "=._-,:/".contains(c))
        };
        if let Some(w) = self.cmdline.split_whitespace().find(|w| !param(w)) {
            return Err(format!(
                "variant '{}': cmdline word '{w}' is not a plain kernel parameter (and bootmark.* ones are set by bootmark)",
                self.name
            ));
        }
        Ok(())
    }

    /// Needs a boot of its own: it has kernel parameters.
    pub fn needs_boot(&self) -> bool {
        !self.cmdline.trim().is_empty()
    }
}

/// What a record says about its variant: what was asked, what the kernel
/// shows afterwards, and what could not be applied and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub name: String,
    /// "vm.dirty_ratio" → "10", "queue.scheduler" → "none".
    pub asked: BTreeMap<String, String>,
    /// The same keys as read back after writing (null: nothing to read).
    pub read_back: BTreeMap<String, Option<String>>,
    /// Keys not in effect → why ("this kernel has no /proc/sys/vm/dirty_bytes").
    pub not_applied: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Applied {
    pub fn fully(&self) -> bool {
        self.not_applied.is_empty()
    }

    /// Not one of the settings it asked for is in effect (a scheduler this
    /// kernel lacks): running it would only measure the settings as found
    /// again, so it is skipped and said so.
    pub fn nothing_applied(&self) -> bool {
        !self.asked.is_empty() && self.asked.keys().all(|k| self.not_applied.contains_key(k))
    }
}

#[cfg(test)]
mod tests {
    use super::not_in_force;
    use std::collections::BTreeMap;

    #[test]
    fn of_a_dirty_ratio_and_its_byte_limit_only_the_one_in_force_counts() {
        let vm = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        let ratios = vm(&[("dirty_ratio", 20), ("dirty_bytes", 0), ("dirty_background_ratio", 10)]);
        assert!(!not_in_force(&ratios, "dirty_ratio") && !not_in_force(&ratios, "dirty_background_ratio"));
        assert!(not_in_force(&ratios, "dirty_bytes"));
        let bytes = vm(&[("dirty_ratio", 0), ("dirty_bytes", 67_108_864), ("swappiness", 60)]);
        assert!(not_in_force(&bytes, "dirty_ratio") && !not_in_force(&bytes, "dirty_bytes"));
        assert!(!not_in_force(&bytes, "swappiness"));
    }
}
