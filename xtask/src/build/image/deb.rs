//! A Debian kernel package as an input: downloaded with apt-get (or given as
//! a .deb), extracted with dpkg-deb, its vmlinuz and modules tree found
//! (`lib/modules` or, from Debian 13, `usr/lib/modules`) and its compressed
//! modules decompressed.

use crate::build::arch::Arch;
use crate::host::process::{cmd, shell, shell_in};
use crate::host::project::Result;
use std::path::{Path, PathBuf};

/// A kernel package unpacked: its vmlinuz, modules tree, and where it came from.
#[derive(Clone, Debug)]
pub struct DebKernel {
    pub package: String,
    pub version: String,
    pub arch: Arch,
    pub vmlinuz: PathBuf,
    pub modules: PathBuf,
    pub release: String,
    /// Compressed modules (`.ko.xz` in Debian 13) decompressed on unpacking.
    pub modules_decompressed: usize,
}

/// `NAME` (downloaded with apt-get into `cache`) or a path to a .deb.
pub fn fetch_deb(name_or_path: &str, cache: &Path) -> Result<PathBuf> {
    let path = Path::new(name_or_path);
    if name_or_path.ends_with(".deb") {
        return if path.exists() { Ok(path.to_path_buf()) } else { Err(format!("{name_or_path}: no such file")) };
    }
    std::fs::create_dir_all(cache).map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let _apt = crate::host::apt::one_at_a_time();
    if let Some(found) = cached_deb(cache, name_or_path) {
        eprintln!("image: using cached {}", found.display());
        return Ok(found);
    }
    eprintln!("image: downloading {name_or_path} with apt-get download …");
    let sh = shell_in(cache)?;
    let out = crate::host::process::output(cmd!(sh, "apt-get download {name_or_path}"))
        .map_err(|e| format!("{e}: give a path to the .deb instead"))?;
    if !out.status.success() {
        return Err(format!(
            "apt-get download {name_or_path} failed: {}\nCheck the name with `apt-cache search linux-image`, run `apt-get update`, or give a .deb path.",
            crate::host::process::stderr_tail(&out)
        ));
    }
    let deb = cached_deb(cache, name_or_path)
        .ok_or_else(|| format!("apt-get download {name_or_path} left no .deb in {}", cache.display()))?;
    eprintln!("image: downloaded {} ({})", deb.display(), crate::host::fs::human_size(&deb));
    Ok(deb)
}

fn cached_deb(cache: &Path, package: &str) -> Option<PathBuf> {
    // "linux-image-6.1.0-50-686:i386" is downloaded as linux-image-6.1.0-50-686_…_i386.deb
    let prefix = format!("{}_", package.split(':').next().unwrap_or(package));
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix) && n.to_string_lossy().ends_with(".deb"))
        })
        .collect();
    found.sort();
    found.pop()
}

fn deb_field(deb: &Path, field: &str) -> Result<String> {
    let sh = shell()?;
    let out = crate::host::process::output(cmd!(sh, "dpkg-deb -f {deb} {field}"))
        .map_err(|e| format!("{e} (apt-get install dpkg)"))?;
    if !out.status.success() {
        return Err(format!(
            "{} is not a Debian package: {}",
            deb.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// In an unpacked kernel package: `boot/vmlinuz-R`, the release R, and
/// `lib/modules/R` (or `usr/lib/modules/R`) if it is there.
pub fn find_kernel_files(dir: &Path, package: &str) -> Result<(PathBuf, String, Option<PathBuf>)> {
    let vmlinuz = std::fs::read_dir(dir.join("boot"))
        .map_err(|_| format!("{package} has no /boot: not a kernel image package"))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-")))
        .ok_or_else(|| format!("{package} has no boot/vmlinuz-*"))?;
    let release = vmlinuz.file_name().unwrap().to_string_lossy().trim_start_matches("vmlinuz-").to_string();
    let modules = ["lib/modules", "usr/lib/modules"].iter().map(|d| dir.join(d).join(&release)).find(|p| p.is_dir());
    Ok((vmlinuz, release, modules))
}

/// Unpack a kernel .deb into `dir` and find its vmlinuz and modules.
pub fn unpack_deb(deb: &Path, dir: &Path) -> Result<DebKernel> {
    let package = deb_field(deb, "Package")?;
    if !package.starts_with("linux-image-") {
        return Err(format!("{} is the package '{package}', not a kernel (linux-image-…)", deb.display()));
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    eprintln!("image: extracting {package}");
    let sh = shell()?;
    crate::host::process::run_shown(cmd!(sh, "dpkg-deb -x {deb} {dir}"))?;
    let (vmlinuz, release, modules) = find_kernel_files(dir, &package).map_err(|e| {
        format!("{e} (a meta or -dbg package is not the kernel image; try its versioned dependency: apt-cache depends {package})")
    })?;
    let modules = modules.ok_or_else(|| format!("{package} has no lib/modules/{release}"))?;
    let modules_decompressed = super::compressed::decompress_module_tree(&modules)?;
    if modules_decompressed > 0 {
        eprintln!("image: {modules_decompressed} compressed modules of {package} decompressed");
    }
    let deb_arch = deb_field(deb, "Architecture")?;
    let arch = Arch::of_package(&deb_arch)
        .ok_or_else(|| format!("{package} is for {deb_arch}; bootmark runs on x86_64, i686 and aarch64"))?;
    Ok(DebKernel {
        version: deb_field(deb, "Version")?,
        package,
        arch,
        vmlinuz,
        modules,
        release,
        modules_decompressed,
    })
}
