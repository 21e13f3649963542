//! Turning a bare kernel into a usable system: /proc, /sys, /dev and the
//! device nodes std and the console need, on any kernel from 2.6.9 on.

use nix::mount::{MsFlags, mount};
use nix::sys::stat::{Mode, SFlag, makedev, mknod};
use std::path::Path;

/// Character devices every run needs: (name, major, minor).
const CHAR_NODES: [(&str, u64, u64); 8] = [
    ("console", 5, 1),
    ("null", 1, 3),
    ("zero", 1, 5),
    ("random", 1, 8),
    ("urandom", 1, 9), // std reads it when getrandom(2) is missing (before 3.17)
    ("kmsg", 1, 11),
    ("tty", 5, 0),
    ("ttyS0", 4, 64),
];

/// What bring-up did, for the run record.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub devtmpfs: bool,
    pub steps: Vec<String>,
    pub problems: Vec<String>,
}

fn mount_fs(report: &mut Report, source: &str, target: &str, fstype: &str) -> bool {
    let _ = std::fs::create_dir_all(target);
    match mount(Some(source), target, Some(fstype), MsFlags::empty(), None::<&str>) {
        Ok(()) => {
            report.steps.push(format!("mounted {fstype} on {target}"));
            true
        }
        Err(nix::errno::Errno::EBUSY) => true, // already mounted (e.g. by a test harness)
        Err(e) => {
            report.problems.push(format!("mount {fstype} on {target}: {e}"));
            false
        }
    }
}

/// Mount proc and sysfs, then devtmpfs on /dev if the kernel has it (2.6.32+),
/// else a tmpfs; then make sure the nodes we rely on exist.
pub fn bring_up(serial: &str) -> Report {
    let mut report = Report::default();
    mount_fs(&mut report, "proc", "/proc", "proc");
    mount_fs(&mut report, "sysfs", "/sys", "sysfs");
    let has_devtmpfs = std::fs::read_to_string("/proc/filesystems").is_ok_and(|f| f.contains("devtmpfs"));
    if dev_already_mounted() {
        // Something mounted /dev for us (CONFIG_DEVTMPFS_MOUNT, a hybrid initramfs,
        // a test harness): use it as it is and only add missing nodes.
        report.steps.push("kept the /dev already mounted".into());
    } else if has_devtmpfs {
        report.devtmpfs = mount_fs(&mut report, "devtmpfs", "/dev", "devtmpfs");
    }
    // Without devtmpfs (before 2.6.32) /dev is the initramfs's own directory
    // (rootfs is writable): the nodes are made below and from sysfs later.
    ensure_char_nodes(Path::new("/dev"), serial, &mut report);
    report
}

/// The views the records read the firmware's state from: securityfs (the
/// lockdown mode, 5.4+) and, on a UEFI boot, efivarfs (the SecureBoot
/// variable, 3.8+). Each only where its mount point exists: older kernels
/// have neither, and what is missing is read as unknown. Mounted after the
/// modules, since efivarfs is a module on Debian's kernels.
pub fn mount_firmware_views(sys: &Path) -> Report {
    let mut report = Report::default();
    let known = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    let views = [("securityfs", "kernel/security", "lockdown"), ("efivarfs", "firmware/efi/efivars", "")];
    for (fs, point, shows) in views {
        let dir = sys.join(point);
        let mounted = if shows.is_empty() {
            std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some())
        } else {
            dir.join(shows).exists()
        };
        if dir.is_dir() && !mounted && known.split_whitespace().any(|f| f == fs) {
            mount_fs(&mut report, fs, &dir.to_string_lossy(), fs);
        }
    }
    report
}

fn dev_already_mounted() -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    crate::image_side::measure::evidence::parse_mounts(&mounts).iter().any(|m| m.point == "/dev")
}

/// Create missing character nodes (console, null, …, and the serial device).
pub fn ensure_char_nodes(dev: &Path, serial: &str, report: &mut Report) {
    let serial_node = serial_numbers(serial).map(|(ma, mi)| (serial, ma, mi));
    for (name, major, minor) in CHAR_NODES.iter().copied().chain(serial_node) {
        let path = dev.join(name);
        if path.exists() {
            continue;
        }
        match mknod(&path, SFlag::S_IFCHR, Mode::from_bits_truncate(0o600), makedev(major, minor)) {
            Ok(()) => report.steps.push(format!("made /dev/{name}")),
            Err(e) => report.problems.push(format!("mknod /dev/{name}: {e}")),
        }
    }
}

/// Device numbers of a serial console name: ttyS<n> is 4:(64+n).
pub fn serial_numbers(name: &str) -> Option<(u64, u64)> {
    let n: u64 = name.strip_prefix("ttyS")?.parse().ok()?;
    (n < 192).then_some((4, 64 + n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_device_numbers() {
        assert_eq!(serial_numbers("ttyS0"), Some((4, 64)));
        assert_eq!(serial_numbers("ttyS3"), Some((4, 67)));
        assert_eq!(serial_numbers("ttyUSB0"), None);
        assert_eq!(serial_numbers("ttyS"), None);
    }
}
