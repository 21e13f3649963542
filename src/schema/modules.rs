//! The module set: which kernel modules an image carries for one kernel,
//! in load order, and when /init loads each. The image builder writes it
//! to /etc/bootmark/modules.json in the initramfs; /init reads it
//! (`init::modules` loads them).

use serde::{Deserialize, Serialize};

/// Where the set lies in the initramfs.
pub const SET: &str = "/etc/bootmark/modules.json";

/// The modules of one kernel, as the image builder resolved them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleSet {
    pub release: String,
    /// Load order: every module after everything it needs.
    pub modules: Vec<Module>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Module {
    /// As the kernel names it (`usb_storage`).
    pub name: String,
    /// Inside the initramfs, without the leading '/'.
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub params: String,
    /// Modules that must be loaded before this one (depends + soft pre-dependencies).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    pub when: When,
    /// Device patterns, for `When::Device`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// Always (disk drivers, USB storage, filesystems).
    Always,
    /// When a present device matches one of its aliases.
    Device,
    /// Only as something else's need.
    Needed,
    /// Just before a filesystem it provides is mounted; its aliases are
    /// the filesystem names (`ext3`, `ext4`; old kernels: the module name).
    Filesystem,
    /// Only when the target is inside a storage layer that needs it
    /// (dm_mod for an LV, md_mod and the RAID level's module for an array).
    Layer,
}
