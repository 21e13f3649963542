//! What a kernel is, read from its files: the bzImage's boot header
//! (`bzimage.rs`), the arm64 Image's (`arm64_image.rs`) and the build
//! configuration (`config.rs`). A leaf under both the image builder
//! (kernels in) and `kernel_src` (kernels built).

pub mod arm64_image;
pub mod bzimage;
pub mod config;

use crate::build::arch::Arch;
use crate::host::project::Result;

/// What a kernel file says about itself, whichever architecture's it is.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelFile {
    /// The version string ("6.1.0-57-amd64 (debian-kernel@…) #1 SMP …").
    pub version: String,
    /// Its first word: "6.1.0-57-amd64".
    pub release: String,
    /// None for a bzImage whose boot protocol predates the 64-bit flag (2.12).
    pub arch: Option<Arch>,
    /// The x86 boot protocol (major, minor); None for arm64.
    pub protocol: Option<(u8, u8)>,
    /// The longest command line it keeps, without the NUL (it cuts the rest).
    pub cmdline_max: usize,
}

/// arm64's COMMAND_LINE_SIZE is 2048 with the NUL (mainline, from its
/// first kernel on); the EFI stub cuts a longer line there.
pub const ARM64_CMDLINE_MAX: usize = 2047;

/// Read a kernel file: an x86 bzImage, or an arm64 Image (with the EFI
/// stub: UEFI servers start nothing else). Anything else is refused with
/// what the bzImage reader found wrong.
pub fn read(data: &[u8], name: &str) -> Result<KernelFile> {
    let not_bzimage = match bzimage::parse_bzimage(data, name) {
        Ok(bz) => {
            let release = bzimage::release_of(&bz.version);
            let (arch, protocol, cmdline_max) = (bz.arch, Some(bz.protocol), bz.cmdline_max);
            return Ok(KernelFile { version: bz.version, release, arch, protocol, cmdline_max });
        }
        Err(e) => e,
    };
    let Ok(arm64) = arm64_image::parse_arm64_image(data, name) else { return Err(not_bzimage) };
    let (Some(version), Some(release)) = (arm64.version.clone(), arm64.release.clone()) else {
        return Err(format!("{name} is an arm64 kernel ({}) without a \"Linux version\" banner", arm64.describe()));
    };
    if !arm64.efi_stub {
        return Err(format!("{name} is an arm64 kernel ({}): UEFI cannot start it", arm64.describe()));
    }
    Ok(KernelFile { version, release, arch: Some(Arch::Aarch64), protocol: None, cmdline_max: ARM64_CMDLINE_MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_architectures_kernels_are_read_and_anything_else_refused() {
        let banner = "Linux version 6.1.0-57-arm64 (debian-kernel@lists.debian.org) #1 SMP Debian 6.1.192-3\n";
        let mut arm64 = arm64_image::tests::image(0, 0, banner);
        let k = read(&arm64, "vmlinuz-6.1.0-57-arm64").unwrap();
        assert_eq!((k.release.as_str(), k.arch, k.protocol), ("6.1.0-57-arm64", Some(Arch::Aarch64), None));
        assert!(k.version.ends_with("Debian 6.1.192-3"), "{}", k.version);
        arm64[..2].copy_from_slice(b"\0\0");
        assert!(read(&arm64, "Image").unwrap_err().contains("UEFI cannot start it"));
        let text = read(b"just some notes, long enough to be read as a header of a kernel.", "notes.txt").unwrap_err();
        assert!(text.contains("notes.txt is not a Linux x86 kernel (bzImage)"), "{text}");
    }
}
