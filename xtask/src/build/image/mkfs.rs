//! `--mkfs`: mkfs programs put into the initramfs so /init can format the
//! target (confirmed formatting, sequences over filesystems).
//!
//! ext2/ext3/ext4 get a static mke2fs and reiserfs a static mkreiserfs,
//! built from pinned sources (`static_mkfs`) for the image's architecture;
//! they run on every kernel from 2.6 on. xfs and vfat get the host's
//! programs with the shared libraries they load: x86_64 glibc binaries,
//! which run on kernels glibc supports (3.2+ for Debian 12), not on 2.6
//! kernels — format those targets beforehand.

use crate::build::arch::Arch;
use crate::host::process::{cmd, run, shell};
use crate::host::project::Result;
use std::path::{Path, PathBuf};

/// Files to add: (path inside the initramfs, content, mode).
pub type Files = Vec<(String, Vec<u8>, u32)>;

fn find_tool(fs: &str) -> Result<PathBuf> {
    ["/sbin", "/usr/sbin", "/bin", "/usr/bin"]
        .iter()
        .map(|d| Path::new(d).join(format!("mkfs.{fs}")))
        .find(|p| p.exists())
        .ok_or_else(|| {
            let pkg = match fs {
                "xfs" => "xfsprogs",
                "reiserfs" => "reiserfsprogs",
                "vfat" => "dosfstools",
                _ => "e2fsprogs",
            };
            format!("--mkfs {fs}: no mkfs.{fs} on this machine (apt-get install {pkg})")
        })
}

/// The libraries `ldd` says a program loads, and its ELF interpreter.
fn libraries(program: &Path) -> Result<Vec<PathBuf>> {
    let sh = shell()?;
    let out = run(cmd!(sh, "ldd {program}"))?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// The mkfs files for an `arch` initramfs. The host's programs are x86_64,
/// so an i686 image gets only the static mke2fs: its other filesystems are
/// named in the warning this prints.
pub fn files(filesystems: &[String], arch: Arch, install_deps: bool) -> Result<Files> {
    let mut out: Files = Vec::new();
    let mut add = |inside: String, from: &Path, mode: u32| -> Result<()> {
        if !out.iter().any(|(p, _, _)| *p == inside) {
            // fs::read follows symlinks: the archive holds the real content.
            out.push((inside, std::fs::read(from).map_err(|e| format!("{}: {e}", from.display()))?, mode));
        }
        Ok(())
    };
    for fs in filesystems {
        if is_ext(fs) {
            add("sbin/mke2fs".into(), &super::static_mkfs::mke2fs(arch, install_deps)?, 0o755)?;
            continue;
        }
        if fs == "reiserfs" {
            add("sbin/mkfs.reiserfs".into(), &super::static_mkfs::mkreiserfs(arch, install_deps)?, 0o755)?;
            continue;
        }
        if arch != Arch::X86_64 {
            eprintln!(
                "image: no mkfs.{fs} for {arch} entries (the host's is x86_64): format their {fs} targets beforehand"
            );
            continue;
        }
        let tool = find_tool(fs)?;
        add(format!("sbin/mkfs.{fs}"), &tool, 0o755)?;
        for lib in libraries(&tool)? {
            add(lib.to_string_lossy().trim_start_matches('/').to_string(), &lib, 0o755)?;
        }
    }
    // No /etc/mke2fs.conf: the static mke2fs's built-in profile is the one
    // of its pinned version, the same on every build host.
    Ok(out)
}

fn is_ext(fs: &str) -> bool {
    matches!(fs, "ext2" | "ext3" | "ext4")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_mkfs_comes_with_its_libraries_and_interpreter() {
        let f = files(&["xfs".into()], Arch::X86_64, false).unwrap();
        let paths: Vec<&str> = f.iter().map(|(p, _, _)| p.as_str()).collect();
        assert!(paths.contains(&"sbin/mkfs.xfs"), "{paths:?}");
        assert!(paths.iter().any(|p| p.contains("ld-linux")), "the ELF interpreter: {paths:?}");
        assert!(f.iter().all(|(_, data, _)| !data.is_empty()));
        assert!(files(&["nosuchfs".into()], Arch::X86_64, false).unwrap_err().contains("no mkfs.nosuchfs"));
        assert!(files(&["xfs".into()], Arch::I686, false).unwrap().is_empty(), "no x86_64 program in an i686 image");
    }
}
