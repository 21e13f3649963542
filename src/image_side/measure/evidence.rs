//! Evidence: the facts that make a record trustworthy and reproducible —
//! kernel, hardware, the storage under the test directory, vm sysctls.
//! Everything is read from /proc and /sys; whatever a kernel lacks is null.

use super::procstat;
use crate::fsutil::read_trimmed;
use crate::image_side::sysfs_block;
use crate::image_side::tunables::active_scheduler;
use crate::schema::machine::{Device, Firmware, Host, Kernel, Storage};
use serde::Serialize;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Everything but the per-run parts, gathered once per run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Evidence {
    pub kernel: Kernel,
    pub host: Host,
    pub storage: Storage,
    pub vm: BTreeMap<String, Option<i64>>,
}

/// vm sysctls recorded beside those a sweep may change.
const VM_RECORDED_ONLY: [&str; 2] = ["vfs_cache_pressure", "overcommit_memory"];

pub fn gather(dir: &Path) -> Evidence {
    Evidence { kernel: kernel(), host: host(), storage: storage(dir), vm: vm() }
}

pub fn kernel() -> Kernel {
    let uname = nix::sys::utsname::uname().ok();
    Kernel {
        release: read_trimmed("/proc/sys/kernel/osrelease")
            .or_else(|| uname.as_ref().map(|u| u.release().to_string_lossy().into_owned())),
        version: read_trimmed("/proc/version"),
        cmdline: read_trimmed("/proc/cmdline"),
        arch: uname.as_ref().map(|u| u.machine().to_string_lossy().into_owned()),
    }
}

pub fn host() -> Host {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| cpuinfo_field(&cpuinfo, name);
    let mem = procstat::meminfo();
    Host {
        hostname: nix::unistd::gethostname().ok().map(|h| h.to_string_lossy().into_owned()),
        cpu_model: field("model name").or_else(|| arm_cpu_model(&field)),
        cpus: cpuinfo.lines().filter(|l| l.starts_with("processor")).count(),
        cpu_mhz: field("cpu MHz").and_then(|v| v.parse().ok()),
        bogomips: field("bogomips").and_then(|v| v.parse().ok()),
        mem_total_kib: mem.get("MemTotal").copied(),
        low_total_kib: mem.get("LowTotal").copied(),
        high_total_kib: mem.get("HighTotal").copied(),
        dmi_vendor: read_trimmed("/sys/class/dmi/id/sys_vendor"),
        dmi_product: read_trimmed("/sys/class/dmi/id/product_name"),
        dmi_asset_tag: read_trimmed("/sys/class/dmi/id/chassis_asset_tag"),
        firmware: Some(firmware(Path::new("/sys"))),
    }
}

/// The first value of `name` in /proc/cpuinfo's text (the first CPU's).
fn cpuinfo_field(cpuinfo: &str, name: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim().eq_ignore_ascii_case(name)).then(|| v.trim().to_string())
    })
}

/// An arm64 CPU as its /proc/cpuinfo says it: no "model name" there, only
/// the MIDR's fields. Named for the cores servers use (Ampere Altra and
/// Graviton 2 are Neoverse N1, Graviton 3 V1, Graviton 4 and Grace V2),
/// with the raw fields always kept.
fn arm_cpu_model(field: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let implementer = field("CPU implementer")?;
    let part = field("CPU part")?;
    let name = match (implementer.as_str(), part.as_str()) {
        ("0x41", "0xd03") => Some("ARM Cortex-A53"),
        ("0x41", "0xd07") => Some("ARM Cortex-A57"),
        ("0x41", "0xd08") => Some("ARM Cortex-A72"),
        ("0x41", "0xd0c") => Some("ARM Neoverse N1"),
        ("0x41", "0xd40") => Some("ARM Neoverse V1"),
        ("0x41", "0xd49") => Some("ARM Neoverse N2"),
        ("0x41", "0xd4f") => Some("ARM Neoverse V2"),
        ("0xc0", "0xac3") => Some("Ampere AmpereOne"),
        _ => None,
    };
    let midr = format!(
        "MIDR implementer {implementer} part {part} variant {} revision {}",
        field("CPU variant").unwrap_or_else(|| "?".into()),
        field("CPU revision").unwrap_or_else(|| "?".into())
    );
    Some(match name {
        Some(name) => format!("{name} ({midr})"),
        None => midr,
    })
}

/// The GUID of the UEFI global variables (SecureBoot, SetupMode, …).
const EFI_GLOBAL: &str = "8be4df61-93ca-11d2-aa0d-00e098032b8c";

/// The firmware facts under a sysfs root. efivarfs files hold 4 bytes of
/// attributes, then the value; the sysfs efivars of kernels before 3.8 (and
/// after, when efivarfs is not mounted) keep the bare value in `data`.
pub fn firmware(sys: &Path) -> Firmware {
    if !sys.join("kernel").is_dir() {
        return Firmware::default(); // sysfs not mounted: nothing can be said
    }
    let efi = sys.join("firmware/efi");
    if !efi.is_dir() {
        // No UEFI: a PC's BIOS, or (arm64, other boards) a kernel handed a
        // device tree by U-Boot or by QEMU's direct kernel boot.
        let mode = if sys.join("firmware/devicetree").is_dir() { "devicetree" } else { "bios" };
        return Firmware { boot_mode: Some(mode.into()), secure_boot: Some(false), lockdown: lockdown(sys) };
    }
    let efivarfs = std::fs::read(efi.join(format!("efivars/SecureBoot-{EFI_GLOBAL}"))).ok();
    let value = efivarfs
        .and_then(|v| v.get(4).copied())
        .or_else(|| std::fs::read(efi.join(format!("vars/SecureBoot-{EFI_GLOBAL}/data"))).ok()?.first().copied());
    Firmware { boot_mode: Some("uefi".into()), secure_boot: value.map(|b| b == 1), lockdown: lockdown(sys) }
}

/// The bracketed mode of `none [integrity] confidentiality`.
pub fn lockdown(sys: &Path) -> Option<String> {
    let text = read_trimmed(sys.join("kernel/security/lockdown"))?;
    crate::image_side::tunables::bracketed(&text).map(str::to_string)
}

/// The vm sysctls that shape writeback: those a sweep may change and a few more.
pub fn vm() -> BTreeMap<String, Option<i64>> {
    crate::schema::variant::VM_SETTINGS
        .iter()
        .chain(&VM_RECORDED_ONLY)
        .map(|k| (k.to_string(), read_trimmed(format!("/proc/sys/vm/{k}")).and_then(|v| v.parse().ok())))
        .collect()
}

/// Total RAM in bytes (0 when /proc/meminfo is unreadable).
pub fn mem_total_bytes() -> u64 {
    procstat::meminfo().get("MemTotal").copied().unwrap_or(0) * 1024
}

/// A line of /proc/mounts.
#[derive(Clone, Debug, PartialEq)]
pub struct Mount {
    pub source: String,
    pub point: String,
    pub fs: String,
    pub options: String,
}

/// /proc/mounts fields escape space, tab, newline and backslash as octal.
fn unescape_mount_field(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let digits: String = chars.clone().take(3).collect();
            if digits.len() == 3
                && let Ok(v) = u8::from_str_radix(&digits, 8)
            {
                out.push(v as char);
                chars.nth(2);
                continue;
            }
        }
        out.push(c);
    }
    out
}

pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| Mount {
                source: unescape_mount_field(f[0]),
                point: unescape_mount_field(f[1]),
                fs: f[2].to_string(),
                options: f[3].to_string(),
            })
        })
        .collect()
}

/// The mount holding `dir`: the longest mount point that is a prefix of it;
/// among equal ones the last (it is mounted on top).
pub fn mount_of(mounts: &[Mount], dir: &Path) -> Option<Mount> {
    mounts
        .iter()
        .filter(|m| dir.starts_with(&m.point))
        .max_by_key(|m| m.point.len())
        .cloned()
        .and_then(|best| mounts.iter().rev().find(|m| m.point == best.point).cloned())
}

pub fn storage(dir: &Path) -> Storage {
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mounts = parse_mounts(&std::fs::read_to_string("/proc/mounts").unwrap_or_default());
    let mount = mount_of(&mounts, &canonical);
    let device = std::fs::metadata(&canonical).ok().and_then(|m| device_of(m.dev(), Path::new("/sys")));
    let queue = |file: &str| {
        device
            .as_ref()
            .and_then(|d| read_trimmed(format!("/sys/block/{}/queue/{file}", sysfs_block::sysfs_name(&d.disk))))
    };
    let scheduler = queue("scheduler").map(|s| active_scheduler(&s)).or_else(elevator_from_cmdline);
    Storage {
        dir: canonical.display().to_string(),
        fs: mount.as_ref().map(|m| m.fs.clone()),
        mount_point: mount.as_ref().map(|m| m.point.clone()),
        mount_source: mount.as_ref().map(|m| m.source.clone()),
        mount_options: mount.as_ref().map(|m| m.options.clone()),
        nr_requests: queue("nr_requests").and_then(|v| v.parse().ok()),
        write_cache: queue("write_cache").or_else(|| {
            device
                .as_ref()
                .and_then(|d| scsi_cache_type(&Path::new("/sys/block").join(sysfs_block::sysfs_name(&d.disk))))
        }),
        scheduler,
        queue: device
            .as_ref()
            .map(|d| sysfs_block::queue_settings(&Path::new("/sys/block").join(sysfs_block::sysfs_name(&d.disk))))
            .unwrap_or_default(),
        layers: device.as_ref().map(|d| crate::image_side::layers::stack::of_device(&d.name)).unwrap_or_default(),
        device,
    }
}

/// A SCSI disk's cache_type: under `device/scsi_disk/H:C:T:L/` on current
/// kernels, under a `device/scsi_disk:H:C:T:L` link on 2.6.
fn scsi_cache_type(disk_dir: &Path) -> Option<String> {
    let device = disk_dir.join("device");
    for e in std::fs::read_dir(&device).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("scsi_disk:") {
            return read_trimmed(e.path().join("cache_type"));
        }
        if name == "scsi_disk" {
            let inner = std::fs::read_dir(e.path()).ok()?.flatten().next()?;
            return read_trimmed(inner.path().join("cache_type"));
        }
    }
    None
}

fn elevator_from_cmdline() -> Option<String> {
    read_trimmed("/proc/cmdline")?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("elevator="))
        .map(|e| format!("{e} (elevator= boot parameter)"))
}

/// The block device with number `dev`, as sysfs describes it (none for
/// anonymous devices: tmpfs, overlay, nfs).
pub fn device_of(dev: u64, sys: &Path) -> Option<Device> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let entry = sysfs_block::by_number(sys, major, minor)?;
    let vendor = read_trimmed(entry.disk_dir.join("device/vendor"));
    let model = read_trimmed(entry.disk_dir.join("device/model"));
    Some(Device {
        model: match (vendor, model) {
            (Some(v), Some(m)) if !v.is_empty() => Some(format!("{v} {m}")),
            (_, m) => m,
        },
        rotational: read_trimmed(entry.disk_dir.join("queue/rotational")).map(|r| r == "1"),
        size_bytes: Some(entry.size_bytes).filter(|s| *s > 0),
        name: entry.name,
        disk: entry.disk,
        major,
        minor,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_arm64_cpu_is_named_from_its_midr_fields() {
        // An Ampere Altra's first CPU, as Linux 6.1 prints it.
        let altra = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\n\
                     CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n";
        let field = |n: &str| cpuinfo_field(altra, n);
        assert_eq!(
            arm_cpu_model(&field).as_deref(),
            Some("ARM Neoverse N1 (MIDR implementer 0x41 part 0xd0c variant 0x3 revision 1)")
        );
        let unknown = altra.replace("0xd0c", "0xfff");
        let field = |n: &str| cpuinfo_field(&unknown, n);
        assert_eq!(arm_cpu_model(&field).as_deref(), Some("MIDR implementer 0x41 part 0xfff variant 0x3 revision 1"));
        let x86 = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU 5160 @ 3.00GHz\n";
        assert_eq!(arm_cpu_model(&|n: &str| cpuinfo_field(x86, n)), None);
    }

    use super::*;

    #[test]
    fn mounts_longest_prefix_wins_and_escapes_are_undone() {
        let text = "rootfs / rootfs rw 0 0\n/dev/sda1 / ext3 rw,data=ordered 0 0\n/dev/sdb1 /mnt/my\\040disk ext4 rw,noatime 0 0\ntmpfs /mnt tmpfs rw 0 0\n";
        let m = parse_mounts(text);
        let found = mount_of(&m, Path::new("/mnt/my disk/x")).unwrap();
        assert_eq!(found.fs, "ext4");
        assert_eq!(found.point, "/mnt/my disk");
        assert_eq!(mount_of(&m, Path::new("/home")).unwrap().fs, "ext3");
        assert_eq!(mount_of(&m, Path::new("/mnt/other")).unwrap().fs, "tmpfs");
    }

    /// Sysfs trees as a BIOS boot, a UEFI boot with Secure Boot on
    /// (efivarfs: attributes then the value), off, and a pre-3.8 kernel
    /// (sysfs efivars) show them.
    #[test]
    fn firmware_boot_mode_secure_boot_and_lockdown() {
        let root = std::env::temp_dir().join(format!("bootmark-fw-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let sys = |name: &str| {
            let s = root.join(name);
            std::fs::create_dir_all(s.join("kernel/security")).unwrap();
            s
        };
        assert_eq!(firmware(&root.join("unmounted")), Firmware::default());
        let bios = sys("bios");
        assert_eq!(
            firmware(&bios),
            Firmware { boot_mode: Some("bios".into()), secure_boot: Some(false), lockdown: None }
        );
        let dt = sys("devicetree");
        std::fs::create_dir_all(dt.join("firmware/devicetree/base")).unwrap();
        let booted_by_dt = firmware(&dt);
        assert_eq!(booted_by_dt.boot_mode.as_deref(), Some("devicetree"));
        assert_eq!(booted_by_dt.summary(), "device tree, no UEFI");
        let on = sys("on");
        std::fs::create_dir_all(on.join("firmware/efi/efivars")).unwrap();
        std::fs::write(on.join(format!("firmware/efi/efivars/SecureBoot-{EFI_GLOBAL}")), [6, 0, 0, 0, 1]).unwrap();
        std::fs::write(on.join("kernel/security/lockdown"), "none [integrity] confidentiality\n").unwrap();
        let want =
            Firmware { boot_mode: Some("uefi".into()), secure_boot: Some(true), lockdown: Some("integrity".into()) };
        assert_eq!(firmware(&on), want);
        assert_eq!(want.summary(), "UEFI, Secure Boot on, lockdown integrity");
        let off = sys("off");
        std::fs::create_dir_all(off.join("firmware/efi/efivars")).unwrap();
        std::fs::write(off.join(format!("firmware/efi/efivars/SecureBoot-{EFI_GLOBAL}")), [6, 0, 0, 0, 0]).unwrap();
        std::fs::write(off.join("kernel/security/lockdown"), "[none] integrity confidentiality\n").unwrap();
        assert_eq!(firmware(&off).secure_boot, Some(false));
        assert_eq!(firmware(&off).lockdown.as_deref(), Some("none"));
        let old = sys("old");
        std::fs::create_dir_all(old.join(format!("firmware/efi/vars/SecureBoot-{EFI_GLOBAL}"))).unwrap();
        std::fs::write(old.join(format!("firmware/efi/vars/SecureBoot-{EFI_GLOBAL}/data")), [1]).unwrap();
        assert_eq!(firmware(&old).secure_boot, Some(true));
        let unreadable = sys("unreadable");
        std::fs::create_dir_all(unreadable.join("firmware/efi")).unwrap();
        assert_eq!(firmware(&unreadable).secure_boot, None, "UEFI, but no variables: unknown, not false");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn device_found_in_a_fake_sysfs_including_partitions() {
        let sys = std::env::temp_dir().join(format!("bootmark-sys-{}", std::process::id()));
        let sda = sys.join("block/sda");
        std::fs::create_dir_all(sda.join("sda1")).unwrap();
        std::fs::create_dir_all(sda.join("device")).unwrap();
        std::fs::create_dir_all(sda.join("queue")).unwrap();
        std::fs::write(sda.join("dev"), "8:0\n").unwrap();
        std::fs::write(sda.join("size"), "1000\n").unwrap();
        std::fs::write(sda.join("sda1/dev"), "8:1\n").unwrap();
        std::fs::write(sda.join("sda1/size"), "800\n").unwrap();
        std::fs::write(sda.join("device/vendor"), "ATA\n").unwrap();
        std::fs::write(sda.join("device/model"), "WDC WD800\n").unwrap();
        std::fs::write(sda.join("queue/rotational"), "1\n").unwrap();
        let d = device_of(libc::makedev(8, 1), &sys).unwrap();
        assert_eq!((d.name.as_str(), d.disk.as_str()), ("sda1", "sda"));
        assert_eq!(d.size_bytes, Some(800 * 512));
        assert_eq!(d.model.as_deref(), Some("ATA WDC WD800"));
        assert_eq!(d.rotational, Some(true));
        assert_eq!(device_of(libc::makedev(8, 0), &sys).unwrap().size_bytes, Some(1000 * 512));
        assert!(device_of(libc::makedev(9, 9), &sys).is_none());
        // The SCSI cache type, in 2.6's layout and in today's.
        std::fs::create_dir_all(sda.join("device/scsi_disk:0:0:0:0")).unwrap();
        std::fs::write(sda.join("device/scsi_disk:0:0:0:0/cache_type"), "write back\n").unwrap();
        assert_eq!(scsi_cache_type(&sda).as_deref(), Some("write back"));
        crate::fsutil::remove_tree(&sda.join("device/scsi_disk:0:0:0:0")).unwrap();
        std::fs::create_dir_all(sda.join("device/scsi_disk/2:0:0:0")).unwrap();
        std::fs::write(sda.join("device/scsi_disk/2:0:0:0/cache_type"), "write through\n").unwrap();
        assert_eq!(scsi_cache_type(&sda).as_deref(), Some("write through"));
        assert!(device_of(libc::makedev(0, 40), &sys).is_none());
        crate::fsutil::remove_tree(&sys).unwrap();
    }
}
