//! The machine a record was made on, as the record carries it: the
//! kernel, the host and its firmware, the storage under the test directory.
//! `measure::evidence` gathers these from /proc and /sys; the workstation
//! reads them from every record.

use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Kernel {
    pub release: Option<String>,
    pub version: Option<String>,
    pub cmdline: Option<String>,
    pub arch: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Host {
    pub hostname: Option<String>,
    pub cpu_model: Option<String>,
    pub cpus: usize,
    pub cpu_mhz: Option<f64>,
    pub bogomips: Option<f64>,
    pub mem_total_kib: Option<u64>,
    pub low_total_kib: Option<u64>,
    pub high_total_kib: Option<u64>,
    pub dmi_vendor: Option<String>,
    pub dmi_product: Option<String>,
    /// The chassis asset tag (/sys/class/dmi/id/chassis_asset_tag): a lab's
    /// own label for the machine, or "Not Specified"; `xtask qemu` writes
    /// there the disk throttle it gave ("qemu: disk throttled to …"). Null
    /// where unreadable; absent from records made before bootmark read it.
    #[serde(default)]
    pub dmi_asset_tag: Option<String>,
    /// How the firmware booted this kernel and what it enforced. Absent
    /// from records made before bootmark read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<Firmware>,
}

/// What the firmware enforced: a Secure Boot kernel locks itself down,
/// which changes what it allows (unsigned modules, /dev/mem, kexec), so a
/// reviewer comparing kernels must see it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Firmware {
    /// `uefi` when the kernel shows /sys/firmware/efi, else `bios`.
    pub boot_mode: Option<String>,
    /// The firmware's SecureBoot variable; false on a BIOS boot, null
    /// when the UEFI variables cannot be read.
    pub secure_boot: Option<bool>,
    /// /sys/kernel/security/lockdown's mode in use (`none`, `integrity`,
    /// `confidentiality`); null before 5.4 or without securityfs.
    pub lockdown: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Device {
    /// Kernel name of the block device holding the directory (e.g. sda1).
    pub name: String,
    /// The whole disk it belongs to (e.g. sda).
    pub disk: String,
    pub major: u32,
    pub minor: u32,
    pub model: Option<String>,
    pub rotational: Option<bool>,
    pub size_bytes: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Storage {
    pub dir: String,
    pub fs: Option<String>,
    pub mount_point: Option<String>,
    pub mount_source: Option<String>,
    pub mount_options: Option<String>,
    /// Null for filesystems without a block device (tmpfs, overlay, nfs).
    pub device: Option<Device>,
    /// The active I/O scheduler; on kernels before 2.6.10 there is no
    /// per-device file and this is the `elevator=` boot parameter, if any.
    pub scheduler: Option<String>,
    pub nr_requests: Option<u64>,
    /// The drive's write cache: `write back` (data is durable only after a
    /// cache flush, which the filesystem may or may not issue) or `write
    /// through`; from queue/write_cache (4.7+) or the SCSI disk's cache_type.
    #[serde(default)]
    pub write_cache: Option<String>,
    /// The disk's queue settings behind the causes findings name, keyed by
    /// their sysfs path under /sys/block/DISK (`queue/max_sectors_kb`,
    /// `queue/wbt_lat_usec`, `device/queue_depth`, the scheduler's
    /// `queue/iosched/*`); a file the kernel lacks is left out.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub queue: std::collections::BTreeMap<String, String>,
    /// What the device sits on, top first, when it is an LV or an md array
    /// (device-mapper targets, RAID level and chunk, member disks with
    /// their schedulers); empty for a plain disk or partition.
    #[serde(default)]
    pub layers: Vec<super::layer::Layer>,
}

impl Firmware {
    /// One line for the console and the report: `UEFI, Secure Boot on, lockdown integrity`.
    pub fn summary(&self) -> String {
        firmware_summary(self.boot_mode.as_deref(), self.secure_boot, self.lockdown.as_deref())
    }
}

/// [`Firmware::summary`] from its parts (the report reads them borrowed).
pub fn firmware_summary(boot_mode: Option<&str>, secure_boot: Option<bool>, lockdown: Option<&str>) -> String {
    {
        let mode = match boot_mode {
            Some("uefi") => "UEFI",
            Some("bios") => "BIOS",
            Some("devicetree") => {
                return format!(
                    "device tree, no UEFI{}",
                    lockdown.map(|l| format!(", lockdown {l}")).unwrap_or_default()
                );
            }
            _ => return "unknown (sysfs not mounted)".into(),
        };
        let sb = match (mode, secure_boot) {
            ("BIOS", _) => String::new(),
            (_, Some(true)) => ", Secure Boot on".into(),
            (_, Some(false)) => ", Secure Boot off".into(),
            (_, None) => ", Secure Boot unknown (no UEFI variables)".into(),
        };
        let lockdown = lockdown.map(|l| format!(", lockdown {l}")).unwrap_or_default();
        format!("{mode}{sb}{lockdown}")
    }
}
