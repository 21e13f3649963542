//! Kernel inputs: a bzImage read through its boot-protocol header, and a
//! Debian kernel package (downloaded with apt-get, extracted with dpkg-deb).

use crate::Result;
use crate::host::process::command;
use std::path::{Path, PathBuf};

/// What the boot-protocol header says about a bzImage.
#[derive(Clone, Debug, PartialEq)]
pub struct BzImage {
    pub version: String,
    pub protocol: (u8, u8),
    /// Some("x86_64") when the header says it is 64-bit (protocol 2.12+),
    /// Some("i686") when it says it is not; None when it cannot say.
    pub arch: Option<&'static str>,
}

/// Read and check the header (Documentation/arch/x86/boot.rst).
pub fn parse_bzimage(data: &[u8], name: &str) -> Result<BzImage> {
    let not_kernel = |why: &str| format!("{name} is not a Linux x86 kernel (bzImage): {why}");
    if data.len() < 0x300 {
        return Err(not_kernel("too small"));
    }
    if data[0x1fe..0x200] != [0x55, 0xaa] {
        return Err(not_kernel("no boot sector signature"));
    }
    if &data[0x202..0x206] != b"HdrS" {
        return Err(not_kernel("no 'HdrS' setup header (a kernel older than 2.0, or not a kernel)"));
    }
    let protocol = (data[0x207], data[0x206]);
    if protocol < (2, 0) || data[0x211] & 1 == 0 {
        return Err(not_kernel("not a bzImage (loaded high); zImages are not supported"));
    }
    let off = u16::from_le_bytes([data[0x20e], data[0x20f]]) as usize + 0x200;
    let version = data
        .get(off..)
        .map(|s| s.iter().take_while(|&&b| b != 0).take(200).map(|&b| b as char).collect::<String>())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| not_kernel("no version string"))?;
    let arch = if protocol >= (2, 12) { Some(if data[0x236] & 1 != 0 { "x86_64" } else { "i686" }) } else { None };
    Ok(BzImage { version, protocol, arch })
}

/// The release part of the version string: "6.1.0-57-amd64 (debian-kernel@…) #1 …" → "6.1.0-57-amd64".
pub fn release_of(version: &str) -> String {
    version.split_whitespace().next().unwrap_or("").to_string()
}

/// A kernel package unpacked: its vmlinuz, modules tree, and where it came from.
#[derive(Clone, Debug)]
pub struct DebKernel {
    pub package: String,
    pub version: String,
    pub arch: String,
    pub vmlinuz: PathBuf,
    pub modules: PathBuf,
    pub release: String,
}

/// `NAME` (downloaded with apt-get into `cache`) or a path to a .deb.
pub fn fetch_deb(name_or_path: &str, cache: &Path) -> Result<PathBuf> {
    let path = Path::new(name_or_path);
    if name_or_path.ends_with(".deb") {
        return if path.exists() { Ok(path.to_path_buf()) } else { Err(format!("{name_or_path}: no such file")) };
    }
    std::fs::create_dir_all(cache).map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    if let Some(found) = cached_deb(cache, name_or_path) {
        eprintln!("image: using cached {}", found.display());
        return Ok(found);
    }
    eprintln!("image: downloading {name_or_path} with apt-get download …");
    let out = crate::host::process::output(command("apt-get").args(["download", name_or_path]).current_dir(cache))
        .map_err(|e| format!("{e}: give a path to the .deb instead"))?;
    if !out.status.success() {
        return Err(format!(
            "apt-get download {name_or_path} failed: {}\nCheck the name with `apt-cache search linux-image`, run `apt-get update`, or give a .deb path.",
            crate::host::process::stderr_tail(&out)
        ));
    }
    let deb = cached_deb(cache, name_or_path)
        .ok_or_else(|| format!("apt-get download {name_or_path} left no .deb in {}", cache.display()))?;
    eprintln!("image: downloaded {} ({})", deb.display(), crate::build::image::human_size(&deb));
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
    let out = crate::host::process::output(command("dpkg-deb").args(["-f"]).arg(deb).arg(field))
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
    crate::host::process::run_shown(command("dpkg-deb").arg("-x").arg(deb).arg(dir))?;
    let (vmlinuz, release, modules) = find_kernel_files(dir, &package).map_err(|e| {
        format!("{e} (a meta or -dbg package is not the kernel image; try its versioned dependency: apt-cache depends {package})")
    })?;
    let modules = modules.ok_or_else(|| format!("{package} has no lib/modules/{release}"))?;
    let arch = match deb_field(deb, "Architecture")?.as_str() {
        "amd64" => "x86_64",
        "i386" => "i686",
        other => return Err(format!("{package} is for {other}; bootmark images are x86_64 or i686")),
    };
    Ok(DebKernel { version: deb_field(deb, "Version")?, package, arch: arch.into(), vmlinuz, modules, release })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(protocol: (u8, u8), xload: u8, version: &str) -> Vec<u8> {
        let mut d = vec![0u8; 0x1000];
        d[0x1fe] = 0x55;
        d[0x1ff] = 0xaa;
        d[0x202..0x206].copy_from_slice(b"HdrS");
        d[0x206] = protocol.1;
        d[0x207] = protocol.0;
        d[0x211] = 1;
        d[0x236] = xload;
        d[0x20e..0x210].copy_from_slice(&(0x400u16 - 0x200).to_le_bytes());
        d[0x400..0x400 + version.len()].copy_from_slice(version.as_bytes());
        d
    }

    #[test]
    fn reads_version_and_arch() {
        let k = parse_bzimage(&header((2, 15), 1, "6.1.0-57-amd64 (debian) #1 SMP"), "k").unwrap();
        assert_eq!(release_of(&k.version), "6.1.0-57-amd64");
        assert_eq!(k.arch, Some("x86_64"));
        let old = parse_bzimage(&header((2, 4), 0, "2.6.16.1 (root@build) #1"), "k").unwrap();
        assert_eq!(old.arch, None, "protocol 2.04 cannot tell");
        assert_eq!(parse_bzimage(&header((2, 12), 0, "x"), "k").unwrap().arch, Some("i686"));
    }

    #[test]
    fn rejects_what_is_not_a_kernel() {
        assert!(parse_bzimage(b"hello", "notes.txt").unwrap_err().contains("not a Linux x86 kernel"));
        let mut elf = vec![0u8; 0x1000];
        elf[..4].copy_from_slice(b"\x7fELF");
        assert!(parse_bzimage(&elf, "vmlinux").unwrap_err().contains("boot sector"));
    }
}
