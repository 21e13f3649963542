//! Mounting the target and the results stick with options written as for
//! `mount -o`: known flags become MS_* bits, the rest go to the filesystem.

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use std::path::Path;

/// Split "noatime,data=ordered,ro" into flags and the filesystem's data string.
pub fn split_options(options: &str) -> (MsFlags, String) {
    let mut flags = MsFlags::empty();
    let mut data = Vec::new();
    for o in options.split(',').filter(|o| !o.is_empty()) {
        match o {
            "ro" => flags |= MsFlags::MS_RDONLY,
            "rw" | "defaults" => {}
            "noatime" => flags |= MsFlags::MS_NOATIME,
            "nodiratime" => flags |= MsFlags::MS_NODIRATIME,
            "relatime" => flags |= MsFlags::MS_RELATIME,
            "sync" => flags |= MsFlags::MS_SYNCHRONOUS,
            "dirsync" => flags |= MsFlags::MS_DIRSYNC,
            "nodev" => flags |= MsFlags::MS_NODEV,
            "nosuid" => flags |= MsFlags::MS_NOSUID,
            "noexec" => flags |= MsFlags::MS_NOEXEC,
            other => data.push(other),
        }
    }
    (flags, data.join(","))
}

pub fn mount_dev(node: &Path, point: &Path, fs: &str, options: &str) -> Result<(), String> {
    std::fs::create_dir_all(point).map_err(|e| format!("cannot create {}: {e}", point.display()))?;
    let (flags, data) = split_options(options);
    let data = (!data.is_empty()).then_some(data.as_str());
    mount(Some(node), point, Some(fs), flags, data)
        .map_err(|e| format!("mount {} ({fs}, {options}) on {}: {e}", node.display(), point.display()))
}

pub fn unmount(point: &Path) -> Result<(), String> {
    // SAFETY: sync(2) cannot fail.
    unsafe { libc::sync() };
    umount2(point, MntFlags::empty()).map_err(|e| format!("unmount {}: {e}", point.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_split_into_flags_and_data() {
        let (f, d) = split_options("noatime,data=writeback,ro,barrier=0");
        assert!(f.contains(MsFlags::MS_NOATIME | MsFlags::MS_RDONLY));
        assert_eq!(d, "data=writeback,barrier=0");
        assert_eq!(split_options("defaults"), (MsFlags::empty(), String::new()));
    }
}
