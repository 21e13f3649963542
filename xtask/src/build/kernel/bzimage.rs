//! A bzImage read through its boot-protocol header (Documentation/arch/x86/boot.rst):
//! is it a Linux x86 kernel at all, its version string, 32- or 64-bit, and
//! how long a command line it keeps.

use crate::build::arch::Arch;
use crate::host::project::Result;

/// What the boot-protocol header says about a bzImage.
#[derive(Clone, Debug, PartialEq)]
pub struct BzImage {
    pub version: String,
    pub protocol: (u8, u8),
    /// Some("x86_64") when the header says it is 64-bit (protocol 2.12+),
    /// Some("i686") when it says it is not; None when it cannot say.
    pub arch: Option<Arch>,
    /// The longest command line every bootloader hands this kernel whole
    /// and the kernel keeps, without its NUL: from protocol 2.06 (Linux
    /// 2.6.22) the header's `cmdline_size` less one (syslinux counts the
    /// NUL in it, GRUB and the kernel do not), before it 255 (boot.rst).
    /// A longer line is cut, silently.
    pub cmdline_max: usize,
}

/// What boot.rst gives a kernel whose header predates `cmdline_size`
/// (protocol 2.05 and earlier): 255 bytes and the NUL.
pub const OLD_PROTOCOL_CMDLINE_MAX: usize = 255;

/// Where protocol 2.06 put `cmdline_size` in the header.
const CMDLINE_SIZE_AT: usize = 0x238;

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
    let arch =
        if protocol >= (2, 12) { Some(if data[0x236] & 1 != 0 { Arch::X86_64 } else { Arch::I686 }) } else { None };
    let cmdline_max = match protocol >= (2, 6) {
        true => {
            let size = u32::from_le_bytes(data[CMDLINE_SIZE_AT..CMDLINE_SIZE_AT + 4].try_into().unwrap_or_default());
            // 0 or absurd: a damaged header; the old limit is the safe reading.
            match size as usize {
                2..=0x10_0000 => size as usize - 1,
                _ => OLD_PROTOCOL_CMDLINE_MAX - 1,
            }
        }
        false => OLD_PROTOCOL_CMDLINE_MAX,
    };
    Ok(BzImage { version, protocol, arch, cmdline_max })
}

/// The release part of the version string: "6.1.0-57-amd64 (debian-kernel@…) #1 …" → "6.1.0-57-amd64".
pub fn release_of(version: &str) -> String {
    version.split_whitespace().next().unwrap_or("").to_string()
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A bzImage header of boot `protocol`, `xload` (1: 64-bit) and
    /// `version` string: what the tests of the image builder use as an x86 kernel too.
    pub fn header(protocol: (u8, u8), xload: u8, version: &str) -> Vec<u8> {
        header_with_cmdline(protocol, xload, version, 2047)
    }

    /// `header` whose `cmdline_size` (read from protocol 2.06) is `cmdline_size`.
    pub fn header_with_cmdline(protocol: (u8, u8), xload: u8, version: &str, cmdline_size: u32) -> Vec<u8> {
        let mut d = vec![0u8; 0x1000];
        d[0x238..0x23c].copy_from_slice(&cmdline_size.to_le_bytes());
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
        assert_eq!(k.arch, Some(Arch::X86_64));
        let old = parse_bzimage(&header((2, 4), 0, "2.6.16.1 (root@build) #1"), "k").unwrap();
        assert_eq!(old.arch, None, "protocol 2.04 cannot tell");
        assert_eq!(parse_bzimage(&header((2, 12), 0, "x"), "k").unwrap().arch, Some(Arch::I686));
    }

    /// The command line a kernel is handed whole: its header's
    /// `cmdline_size` less syslinux's NUL from protocol 2.06 on, 255 before
    /// it (Ubuntu 5.04's 2.6.10 is protocol 2.03), whatever the field's bytes hold.
    #[test]
    fn reads_the_command_line_limit() {
        let max =
            |protocol, size| parse_bzimage(&header_with_cmdline(protocol, 0, "v", size), "k").unwrap().cmdline_max;
        assert_eq!(max((2, 15), 2047), 2046, "Debian's 5.10");
        assert_eq!(max((2, 6), 255), 254, "a 2.06 header that says 255");
        assert_eq!(max((2, 3), 2047), 255, "before 2.06 the field is not there");
        assert_eq!(max((2, 10), 0), 254, "a zero field is read as the smallest limit");
    }

    #[test]
    fn rejects_what_is_not_a_kernel() {
        assert!(parse_bzimage(b"hello", "notes.txt").unwrap_err().contains("not a Linux x86 kernel"));
        let mut elf = vec![0u8; 0x1000];
        elf[..4].copy_from_slice(b"\x7fELF");
        assert!(parse_bzimage(&elf, "vmlinux").unwrap_err().contains("boot sector"));
    }
}
