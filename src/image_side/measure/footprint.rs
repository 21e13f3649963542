//! What the boot image costs the server it measures: the memory its root
//! filesystem holds (an initramfs is ramfs: never reclaimed, and taken from
//! the memory the dirty limits are computed from), /init's own peak
//! resident memory, and how long the kernel had been up when the first
//! workload started. Measured once by /init, just before the plan runs, and
//! carried by every record of the boot.

use crate::schema::measures::Footprint;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Entries walked at most: an initramfs holds a few hundred.
const ENTRIES_AT_MOST: usize = 100_000;

pub fn measure() -> Footprint {
    Footprint { rootfs_kib: rootfs_kib(), init_peak_rss_kib: peak_rss_kib(), uptime_s: super::procstat::uptime_s() }
}

/// The regular files on the root filesystem (not below other mounts), in
/// pages as ramfs holds them. ramfs reports no statfs figures: the walk is
/// the only measure.
fn rootfs_kib() -> Option<u64> {
    let root = std::fs::symlink_metadata("/").ok()?.dev();
    let (mut pages, mut entries) = (0u64, 0usize);
    let mut dirs = vec![PathBuf::from("/")];
    while let Some(dir) = dirs.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else { continue };
        for entry in listing.flatten() {
            entries += 1;
            if entries > ENTRIES_AT_MOST {
                return None;
            }
            let path = entry.path();
            // lstat by path (no *at call: 2.6.9 has none), never following a link.
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if meta.dev() != root {
                continue;
            }
            if meta.is_dir() {
                dirs.push(path);
            } else if meta.is_file() {
                pages += meta.len().div_ceil(4096);
            }
        }
    }
    Some(pages * 4)
}

/// VmHWM of /proc/self/status (`key: value kB`, meminfo's layout): the
/// most memory /init has held resident. (procfs's Status needs SigQ, which
/// 2.6.9–2.6.11 lack; VmHWM itself came in 2.6.15, and is absent before.)
fn peak_rss_kib() -> Option<u64> {
    let status = crate::fsutil::read_trimmed("/proc/self/status")?;
    super::procstat::parse_meminfo(&status).get("VmHWM").copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On this host: the root filesystem is large but the walk is bounded
    /// (None past the bound, or a size), and this process has a peak and an uptime.
    #[test]
    fn each_figure_is_read_or_bounded() {
        let f = measure();
        assert!(f.init_peak_rss_kib.is_some_and(|k| k > 0), "{f:?}");
        assert!(f.uptime_s.is_some_and(|s| s > 0.0), "{f:?}");
        if let Some(kib) = f.rootfs_kib {
            assert!(kib > 0, "{f:?}");
        }
    }
}
