//! An arm64 kernel file that GRUB for arm64 cannot start as it is, made
//! into the `Image` it can start. GRUB 2.06 (Debian 12's, the one bootmark
//! puts on sticks and in pxe/) starts only an uncompressed Image: a PE
//! header (the EFI stub) and `ARM\x64` at offset 56. Kernels also come as:
//! - a compressed Image (`make Image.gz`; the whole file is gzip, or xz,
//!   zstd, bzip2), as some distributions ship their arm64 `vmlinuz`;
//! - EFI zboot (`make vmlinuz.efi`, CONFIG_EFI_ZBOOT, Linux 6.1+): a small
//!   PE program, "zimg" at offset 4, that decompresses the Image it carries
//!   (drivers/firmware/efi/libstub/zboot-header.S: the payload's offset and
//!   size at 8 and 12, the compression's name at 24).
//!
//! Either is decompressed on the host into the image's work directory, and
//! the manifest says so. A signature is then the inner Image's own: Secure
//! Boot's check runs on the file that is staged.

use super::compressed;
use crate::build::kernel::arm64_image;
use crate::host::project::Result;

/// An Image taken out of its wrapping.
#[derive(Debug, PartialEq)]
pub struct Unwrapped {
    pub image: Vec<u8>,
    /// "gzip", "EFI zboot (zstd22)": what it was, for messages and the manifest.
    pub from: String,
}

/// Where the arm64 header's magic is, and the zboot header's fields.
const ARM64_MAGIC_AT: usize = 56;
const ZBOOT_TYPE: &[u8; 4] = b"zimg";
const ZBOOT_COMPRESSION_AT: usize = 24;

/// The Image inside `data` when it is a compressed Image or EFI zboot;
/// None when it is already an Image, or no arm64 kernel at all (the
/// kernel reader then says what it is not).
pub fn unwrap(data: &[u8], name: &str) -> Result<Option<Unwrapped>> {
    if is_image(data) {
        return Ok(None);
    }
    if data.starts_with(b"MZ") && data.get(4..8) == Some(ZBOOT_TYPE) {
        return zboot(data, name).map(Some);
    }
    // lzma's weak magic is left out: a file that merely starts like it is no compressed Image.
    let Some(format) = compressed::Format::of(data).filter(|f| *f != compressed::Format::Lzma) else {
        return Ok(None);
    };
    let inner = compressed::decompress(data, name)?;
    Ok(is_image(&inner).then(|| Unwrapped { image: inner, from: format.name().into() }))
}

/// An EFI zboot file's payload, decompressed; it must be an arm64 Image.
fn zboot(data: &[u8], name: &str) -> Result<Unwrapped> {
    let u32_at = |o: usize| data.get(o..o + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()) as usize);
    let method: String = data
        .get(ZBOOT_COMPRESSION_AT..ARM64_MAGIC_AT)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    let what = format!("{name} (EFI zboot, {method})");
    let (Some(offset), Some(size)) = (u32_at(8), u32_at(12)) else {
        return Err(format!("{what}: the zboot header is cut"));
    };
    let payload = data.get(offset..offset.saturating_add(size)).ok_or_else(|| {
        format!("{what}: its payload ({size} bytes at {offset}) is past the file's end ({} bytes)", data.len())
    })?;
    let image = compressed::decompress(payload, &what).map_err(|e| {
        format!("{e}\n(bootmark reads zboot payloads of gzip, xz, lzma and zstd; rebuild the kernel with one of them, or give its uncompressed arch/arm64/boot/Image)")
    })?;
    if !is_image(&image) {
        return Err(format!(
            "{what}: its payload is not an arm64 Image (no 'ARM\\x64' magic at offset {ARM64_MAGIC_AT})"
        ));
    }
    arm64_image::parse_arm64_image(&image, &what)?;
    Ok(Unwrapped { image, from: format!("EFI zboot ({method})") })
}

fn is_image(data: &[u8]) -> bool {
    data.get(ARM64_MAGIC_AT..ARM64_MAGIC_AT + 4) == Some(b"ARM\x64")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// An Image with the EFI stub and a banner.
    fn image() -> Vec<u8> {
        arm64_image::tests::image(
            0b1010,
            0x2c0_0000,
            "Linux version 6.1.192-bootmark (bootmark@kernel-configs) #1 SMP\0",
        )
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// A zboot file as zboot-header.S lays it out, around `payload`.
    fn zboot_file(payload: &[u8], method: &str) -> Vec<u8> {
        let mut d = vec![0u8; 0x200];
        d[..2].copy_from_slice(b"MZ");
        d[4..8].copy_from_slice(ZBOOT_TYPE);
        d[8..12].copy_from_slice(&0x200u32.to_le_bytes());
        d[12..16].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        d[24..24 + method.len()].copy_from_slice(method.as_bytes());
        d.extend_from_slice(payload);
        d
    }

    #[test]
    fn an_image_stays_as_it_is_and_a_gzipd_one_is_unwrapped() {
        assert_eq!(unwrap(&image(), "Image").unwrap(), None);
        let got = unwrap(&gzip(&image()), "vmlinuz").unwrap().unwrap();
        assert_eq!((got.image, got.from.as_str()), (image(), "gzip"));
        // gzip of something else is not ours to unwrap: the kernel reader refuses it.
        assert_eq!(unwrap(&gzip(b"not a kernel"), "x.gz").unwrap(), None);
    }

    #[test]
    fn an_efi_zboot_file_gives_the_image_it_carries() {
        let got = unwrap(&zboot_file(&gzip(&image()), "gzip"), "vmlinuz.efi").unwrap().unwrap();
        assert_eq!((got.image, got.from.as_str()), (image(), "EFI zboot (gzip)"));
        let mut cut = zboot_file(&gzip(&image()), "gzip");
        cut.truncate(cut.len() - 8);
        assert!(unwrap(&cut, "v").unwrap_err().contains("past the file's end"));
        let lz4 = zboot_file(b"\x04\x22\x4d\x18 lz4 frame", "lz4_with_size");
        let e = unwrap(&lz4, "v").unwrap_err();
        assert!(e.contains("EFI zboot, lz4_with_size") && e.contains("gzip, xz, lzma and zstd"), "{e}");
        let other = zboot_file(&gzip(b"some other payload"), "gzip");
        assert!(unwrap(&other, "v").unwrap_err().contains("not an arm64 Image"));
    }
}
