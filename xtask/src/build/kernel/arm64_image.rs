//! An arm64 kernel `Image` read through its header
//! (Documentation/arch/arm64/booting.rst): is it an arm64 Linux kernel at
//! all, its byte order and page size, whether it carries the EFI stub (a
//! PE/COFF header the firmware, shim and GRUB start it through: the only
//! way UEFI servers boot it), and its version string. Debian's arm64
//! `vmlinuz` is such an `Image`, uncompressed (team notes,
//! todays-servers.md).

use crate::host::project::Result;

/// Where the header's fields are (booting.rst, "The decompressed kernel image contains a 64-byte header").
const MAGIC_AT: usize = 56;
const MAGIC: &[u8; 4] = b"ARM\x64";
const HEADER_LEN: usize = 64;

/// What the header says about an arm64 Image.
#[derive(Clone, Debug, PartialEq)]
pub struct Arm64Image {
    /// The "Linux version …" banner's release ("6.1.0-50-arm64"), when found.
    pub release: Option<String>,
    /// The whole banner after "Linux version " (release, builder, compiler,
    /// build number and date), as x86's header points at its like.
    pub version: Option<String>,
    /// The kernel's page size, KiB (4, 16, 64); None when the header predates the field (3.17).
    pub page_size_kib: Option<u32>,
    /// A PE/COFF header ("MZ" at 0, "PE\0\0" where the header points): the EFI stub.
    pub efi_stub: bool,
    /// The header's image_size: the memory the kernel needs from its load address.
    pub image_size: u64,
}

impl Arm64Image {
    /// "Linux 6.1.0-50-arm64, 4K pages, EFI stub", for messages.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("Linux {}", self.release.as_deref().unwrap_or("of unknown release"))];
        parts.extend(self.page_size_kib.map(|k| format!("{k}K pages")));
        parts.push(if self.efi_stub { "EFI stub" } else { "no EFI stub" }.into());
        parts.join(", ")
    }
}

/// Read and check the header.
pub fn parse_arm64_image(data: &[u8], name: &str) -> Result<Arm64Image> {
    let not_kernel = |why: &str| format!("{name} is not an arm64 Linux kernel (Image): {why}");
    if data.len() < HEADER_LEN {
        return Err(not_kernel("too small"));
    }
    if &data[MAGIC_AT..MAGIC_AT + 4] != MAGIC {
        let hint = if data.starts_with(&[0x1f, 0x8b]) { " (a gzip'd Image: gunzip it first)" } else { "" };
        return Err(not_kernel(&format!("no 'ARM\\x64' magic at offset {MAGIC_AT}{hint}")));
    }
    let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap_or_default());
    let flags = u64_at(24);
    if flags & 1 != 0 {
        return Err(not_kernel("a big-endian kernel: bootmark's arm64 /init is little-endian"));
    }
    let image_size = u64_at(16);
    // image_size 0: a kernel before 3.17, whose flags mean nothing.
    let page_size_kib = match (image_size, (flags >> 1) & 3) {
        (0, _) | (_, 0) => None,
        (_, 1) => Some(4),
        (_, 2) => Some(16),
        _ => Some(64),
    };
    let pe_at = u32::from_le_bytes(data[60..64].try_into().unwrap_or_default()) as usize;
    let efi_stub = data.starts_with(b"MZ") && data.get(pe_at..pe_at + 4) == Some(b"PE\0\0");
    let version = banner_in(data);
    let release = version.as_deref().and_then(|v| v.split_whitespace().next()).map(str::to_string);
    Ok(Arm64Image { release, version, page_size_kib, efi_stub, image_size })
}

/// The kernel's "Linux version 6.1.0-50-arm64 (…) #1 SMP …" banner, after
/// its first two words (an uncompressed Image carries it as text; arm64
/// has no boot-protocol field that points at it, as x86's header does).
fn banner_in(data: &[u8]) -> Option<String> {
    const BANNER: &[u8] = b"Linux version ";
    let at = data.windows(BANNER.len()).position(|w| w == BANNER)? + BANNER.len();
    let text: String = data[at..]
        .iter()
        .take_while(|&&b| b != 0 && b != b'\n' && (b == b' ' || b.is_ascii_graphic()))
        .take(300)
        .map(|&b| b as char)
        .collect();
    let text = text.trim().to_string();
    (!text.is_empty() && !text.starts_with(' ')).then_some(text)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// An Image with its header as Debian 6.1's arm64 build writes it (EFI
    /// stub, `flags` 0b1010: 4K pages) and `banner` at 0x800: what the
    /// tests of the image builder use as an arm64 kernel too.
    pub fn image(flags: u64, image_size: u64, banner: &str) -> Vec<u8> {
        let mut d = vec![0u8; 0x1000];
        d[..2].copy_from_slice(b"MZ");
        d[16..24].copy_from_slice(&image_size.to_le_bytes());
        d[24..32].copy_from_slice(&flags.to_le_bytes());
        d[56..60].copy_from_slice(MAGIC);
        d[60..64].copy_from_slice(&0x40u32.to_le_bytes());
        d[0x40..0x44].copy_from_slice(b"PE\0\0");
        d[0x800..0x800 + banner.len()].copy_from_slice(banner.as_bytes());
        d
    }

    #[test]
    fn reads_page_size_stub_and_release() {
        let banner = "Linux version 6.1.0-50-arm64 (debian-kernel@lists.debian.org) (gcc-12) #1 SMP Debian 6.1.176-1\0";
        let k = parse_arm64_image(&image(0b1010, 0x2c0_0000, banner), "vmlinuz").unwrap();
        assert_eq!(
            k,
            Arm64Image {
                release: Some("6.1.0-50-arm64".into()),
                version: Some(
                    "6.1.0-50-arm64 (debian-kernel@lists.debian.org) (gcc-12) #1 SMP Debian 6.1.176-1".into()
                ),
                page_size_kib: Some(4),
                efi_stub: true,
                image_size: 0x2c0_0000
            }
        );
        assert_eq!(k.describe(), "Linux 6.1.0-50-arm64, 4K pages, EFI stub");
        let old = parse_arm64_image(&image(0, 0, ""), "Image").unwrap();
        assert_eq!((old.page_size_kib, old.release), (None, None), "before 3.17 the header cannot say");
        let mut no_stub = image(0b0110, 1, "");
        no_stub[..2].copy_from_slice(b"\0\0");
        assert!(!parse_arm64_image(&no_stub, "Image").unwrap().efi_stub);
        assert_eq!(parse_arm64_image(&image(0b0110, 1, ""), "Image").unwrap().page_size_kib, Some(64));
    }

    #[test]
    fn refuses_what_is_not_an_arm64_kernel() {
        assert!(parse_arm64_image(b"hello", "notes.txt").unwrap_err().contains("too small"));
        let mut bz = vec![0u8; 0x1000];
        bz[0x202..0x206].copy_from_slice(b"HdrS");
        assert!(parse_arm64_image(&bz, "bzImage").unwrap_err().contains("no 'ARM\\x64' magic"));
        let mut gz = vec![0u8; 0x100];
        gz[..2].copy_from_slice(&[0x1f, 0x8b]);
        assert!(parse_arm64_image(&gz, "Image.gz").unwrap_err().contains("gunzip it first"));
        assert!(parse_arm64_image(&image(1, 1, ""), "be").unwrap_err().contains("big-endian"));
    }
}
