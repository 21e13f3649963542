//! What a kernel is, read from its files: the bzImage's boot header
//! (`bzimage.rs`), the arm64 Image's (`arm64_image.rs`) and the build
//! configuration (`config.rs`). A leaf under both the image builder
//! (kernels in) and `kernel_src` (kernels built).

pub mod arm64_image;
pub mod bzimage;
pub mod config;

use crate::build::arch::Arch;
use crate::host::project::Result;

/// Read a kernel file for an x86 image. An arm64 kernel is named as one
/// (rather than "no boot sector signature"), and refused: images are x86
/// only so far.
pub fn read_x86(data: &[u8], name: &str) -> Result<bzimage::BzImage> {
    bzimage::parse_bzimage(data, name).map_err(|not_bzimage| match arm64_image::parse_arm64_image(data, name) {
        Ok(arm64) => format!(
            "{name} is an arm64 kernel ({}), not an x86 bzImage; {}",
            arm64.describe(),
            Arch::Aarch64.require_x86("an image").err().unwrap_or_default()
        ),
        Err(_) => not_bzimage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arm64_kernel_is_named_as_one_and_refused_for_an_x86_image() {
        let mut arm64 = vec![0u8; 0x1000];
        arm64[..2].copy_from_slice(b"MZ");
        arm64[56..60].copy_from_slice(b"ARM\x64");
        let banner = b"Linux version 6.1.0-50-arm64 (debian-kernel@lists.debian.org)";
        arm64[0x800..0x800 + banner.len()].copy_from_slice(banner);
        let refused = read_x86(&arm64, "vmlinuz-6.1.0-50-arm64").unwrap_err();
        assert!(refused.starts_with("vmlinuz-6.1.0-50-arm64 is an arm64 kernel (Linux 6.1.0-50-arm64"), "{refused}");
        assert!(refused.contains("an image for aarch64: not yet"), "{refused}");
        let text =
            read_x86(b"just some notes, long enough to be read as a header of a kernel.", "notes.txt").unwrap_err();
        assert!(text.contains("notes.txt is not a Linux x86 kernel (bzImage)"), "{text}");
    }
}
