//! Secure Boot: Debian's signed boot chain in the image, and the check that
//! every kernel of such an image is signed.
//!
//! The chain is the one Debian installs: shim (signed by Microsoft's UEFI
//! CA, which server firmware trusts) as `EFI/BOOT/BOOTX64.EFI`, GRUB
//! signed by Debian beside it as `grubx64.efi` (shim loads that name from
//! its own directory), and MokManager (`mmx64.efi`) for enrolling a key of
//! one's own; for arm64 the same packages' arm64 builds (`BOOTAA64.EFI`,
//! `grubaa64.efi`, `mmaa64.efi`), one stick carrying both. GRUB then asks shim to verify the kernel: Debian's kernels
//! are signed; others must be (sbsign, mokutil). The initramfs is not
//! checked by anything, so ours goes in unsigned.
//!
//! The signed files come from Debian's packages, taken as files (apt-get
//! download, dpkg-deb -x into target/cache) when they are not installed:
//! installing grub-efi-amd64-signed would run its postinst, which may
//! reinstall the build machine's own bootloader.

use super::deb;
use crate::build::arch::Arch;
use crate::host::apt_suite::{ARM64_SUITE, Archive, Suite};
use crate::host::process::{cmd, shell};
use crate::host::project::{Result, project_root};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One architecture's signed binaries, each as (package, path inside it),
/// and the names the firmware and shim look for.
struct Packaged {
    shim: (&'static str, &'static str),
    mok_manager: (&'static str, &'static str),
    /// GRUB for disks (prefix /EFI/debian), CDs (prefix /boot/grub) and the network (prefix /grub).
    grub_disk: (&'static str, &'static str),
    grub_cd: (&'static str, &'static str),
    grub_net: (&'static str, &'static str),
    names: Names,
}

/// The names of a chain's files where they are put.
#[derive(Clone, Copy, Debug)]
pub struct Names {
    /// The removable-media loader under EFI/BOOT/: shim.
    pub removable: &'static str,
    /// GRUB beside shim: shim loads it by this name from its own directory.
    pub grub: &'static str,
    pub mok_manager: &'static str,
    /// shim in pxe/: DHCP's boot file for this architecture's UEFI clients.
    pub pxe_shim: &'static str,
    /// The DHCP client architecture (RFC 4578) of those clients.
    pub dhcp_client_arch: u32,
}

const X86_64: Packaged = Packaged {
    shim: ("shim-signed", "usr/lib/shim/shimx64.efi.signed"),
    mok_manager: ("shim-helpers-amd64-signed", "usr/lib/shim/mmx64.efi.signed"),
    grub_disk: ("grub-efi-amd64-signed", "usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed"),
    grub_cd: ("grub-efi-amd64-signed", "usr/lib/grub/x86_64-efi-signed/gcdx64.efi.signed"),
    grub_net: ("grub-efi-amd64-signed", "usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed"),
    names: Names {
        removable: "BOOTX64.EFI",
        grub: "grubx64.efi",
        mok_manager: "mmx64.efi",
        pxe_shim: PXE_SHIM,
        dhcp_client_arch: 7,
    },
};

/// arm64's, the same packages built for arm64: shim signed by Microsoft's
/// UEFI CA as on x86, GRUB by Debian.
const AARCH64: Packaged = Packaged {
    shim: ("shim-signed", "usr/lib/shim/shimaa64.efi.signed"),
    mok_manager: ("shim-helpers-arm64-signed", "usr/lib/shim/mmaa64.efi.signed"),
    grub_disk: ("grub-efi-arm64-signed", "usr/lib/grub/arm64-efi-signed/grubaa64.efi.signed"),
    grub_cd: ("grub-efi-arm64-signed", "usr/lib/grub/arm64-efi-signed/gcdaa64.efi.signed"),
    grub_net: ("grub-efi-arm64-signed", "usr/lib/grub/arm64-efi-signed/grubnetaa64.efi.signed"),
    names: Names {
        removable: "BOOTAA64.EFI",
        grub: "grubaa64.efi",
        mok_manager: "mmaa64.efi",
        pxe_shim: PXE_SHIM_AA64,
        dhcp_client_arch: 11,
    },
};

/// Where Debian's signed disk GRUB looks for its config, relative to the
/// partition it was loaded from.
pub const GRUB_DISK_PREFIX: &str = "EFI/debian";
/// x86_64's shim in pxe/ (DHCP's boot file for UEFI clients); the signed
/// netboot GRUB beside it, as `grubx64.efi`, reads `(tftp)/grub/grub.cfg`.
pub const PXE_SHIM: &str = "shimx64.efi";
/// arm64's shim in pxe/, beside its signed netboot GRUB as `grubaa64.efi`.
pub const PXE_SHIM_AA64: &str = "shimaa64.efi";

/// The subject names of the certificates that signed Debian's own kernels
/// chain up to this CA, which Debian's shim carries built in.
const DEBIAN_CA: &str = "Debian Secure Boot CA";

/// Each kernel's certificate names, by its boot directory (k0, k1, …).
pub type Signers = std::collections::BTreeMap<String, Vec<String>>;

/// One architecture's signed chain, as files on this machine.
pub struct Chain {
    pub shim: PathBuf,
    pub mok_manager: PathBuf,
    pub grub_disk: PathBuf,
    pub grub_cd: PathBuf,
    pub grub_net: PathBuf,
    pub names: Names,
    /// For the manifest: each package and the SHA-256 of each file taken.
    pub facts: Facts,
}

/// manifest.json's `secure_boot`: where the chain came from and who signed each kernel.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Facts {
    /// Package → its version (an arm64 package as `NAME:arm64`).
    pub packages: std::collections::BTreeMap<String, String>,
    /// File in the chain → SHA-256.
    pub files: std::collections::BTreeMap<String, String>,
    /// Boot directory (k0, k1, …) → the certificate names in its kernel's signature.
    pub kernel_signers: Signers,
}

impl Facts {
    /// The facts of several chains as one.
    pub fn merged<'a>(chains: impl IntoIterator<Item = &'a Chain>) -> Facts {
        let mut all = Facts::default();
        for c in chains {
            all.packages.extend(c.facts.packages.clone());
            all.files.extend(c.facts.files.clone());
        }
        all
    }
}

/// Find or fetch the signed chain that boots `platform`'s kernels (x86_64
/// or aarch64: i686 kernels have none).
pub fn chain(platform: Arch) -> Result<Chain> {
    let (packaged, arm64) = match platform {
        Arch::Aarch64 => (&AARCH64, true),
        _ => (&X86_64, false),
    };
    let mut facts = Facts::default();
    let mut get = |(package, inside): (&str, &str)| -> Result<PathBuf> {
        let (path, version) = if arm64 { locate_arm64(package, inside)? } else { locate(package, inside)? };
        let key = if arm64 { format!("{package}:arm64") } else { package.to_string() };
        facts.packages.insert(key, version);
        facts
            .files
            .insert(inside.rsplit('/').next().unwrap_or(inside).to_string(), crate::host::fs::sha256_file(&path)?);
        Ok(path)
    };
    let (shim, mok_manager) = (get(packaged.shim)?, get(packaged.mok_manager)?);
    let (grub_disk, grub_cd, grub_net) = (get(packaged.grub_disk)?, get(packaged.grub_cd)?, get(packaged.grub_net)?);
    Ok(Chain { shim, mok_manager, grub_disk, grub_cd, grub_net, names: packaged.names, facts })
}

/// A file of `package`: installed, or from its .deb unpacked under target/cache.
fn locate(package: &str, inside: &str) -> Result<(PathBuf, String)> {
    let installed = Path::new("/").join(inside);
    if installed.is_file() {
        let sh = shell()?;
        let version = crate::host::process::run(cmd!(sh, "dpkg-query -W -f").arg("${Version}").arg(package))
            .unwrap_or_else(|_| "installed".into());
        return Ok((installed, version));
    }
    let cache = project_root().join("target/cache");
    let deb = deb::fetch_deb(package, &cache.join("debs")).map_err(|e| {
        format!("--secure-boot needs Debian's signed {package}: {e}\nOn Debian/Ubuntu: apt-get update, or install {package}.")
    })?;
    let version = deb.file_stem().and_then(|s| s.to_str()).and_then(|s| s.split('_').nth(1)).unwrap_or("").to_string();
    Ok((unpacked(&deb, inside)?, version))
}

/// A file of arm64's `package`, from its .deb fetched through the arm64
/// apt state (this machine's apt lists only its own architecture).
fn locate_arm64(package: &str, inside: &str) -> Result<(PathBuf, String)> {
    let cache = project_root().join("target/cache");
    let got = Suite::arm64(ARM64_SUITE, Archive::debian(), &cache.join("apt"))?
        .download(package)
        .map_err(|e| format!("--secure-boot for arm64 needs Debian's signed {package} for arm64: {e}"))?;
    Ok((unpacked(&got.deb, inside)?, got.version))
}

/// `inside` of `deb`, unpacked once under target/cache/secure-boot/.
fn unpacked(deb: &Path, inside: &str) -> Result<PathBuf> {
    let stem = deb.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = project_root().join("target/cache/secure-boot").join(&stem);
    if !dir.join(inside).is_file() {
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let sh = shell()?;
        crate::host::process::run(cmd!(sh, "dpkg-deb -x {deb} {dir}"))?;
    }
    let path = dir.join(inside);
    if !path.is_file() {
        return Err(format!("{} holds no {inside}: not the package bootmark knows", deb.display()));
    }
    Ok(path)
}

/// What a kernel's Authenticode signature says: the certificate names in
/// it (signer and issuers). Read, not verified: shim verifies at boot;
/// this is to refuse, before anything is written, a kernel shim would
/// certainly refuse, and to say who signed the others.
#[derive(Debug, PartialEq)]
pub enum Signature {
    Signed(Vec<String>),
    Unsigned,
    /// No PE header: a kernel without the EFI stub (before 3.3, or built
    /// without CONFIG_EFI_STUB) cannot be started by GRUB under shim.
    NotEfi,
}

/// The Authenticode signature of a PE file (an EFI-stub bzImage).
pub fn signature(data: &[u8]) -> Signature {
    use object::LittleEndian as LE;
    use object::pe::{IMAGE_DIRECTORY_ENTRY_SECURITY, ImageDosHeader, ImageNtHeaders32, ImageNtHeaders64};
    use object::read::pe::ImageNtHeaders;
    /// Outer None: not a PE of this kind; inner None: no certificate table.
    fn security<H: ImageNtHeaders>(data: &[u8]) -> Option<Option<(usize, usize)>> {
        let dos = ImageDosHeader::parse(data).ok()?;
        let mut offset = dos.nt_headers_offset().into();
        let (_, dirs) = H::parse(data, &mut offset).ok()?;
        // The certificate table's address is a file offset, not an RVA.
        Some(
            dirs.get(IMAGE_DIRECTORY_ENTRY_SECURITY)
                .map(|d| (d.virtual_address.get(LE) as usize, d.size.get(LE) as usize)),
        )
    }
    let Some(table) = security::<ImageNtHeaders64>(data).or_else(|| security::<ImageNtHeaders32>(data)) else {
        return Signature::NotEfi;
    };
    let (at, size) = table.unwrap_or((0, 0));
    match data.get(at..at.saturating_add(size)) {
        Some(table) if size > 8 => Signature::Signed(certificate_names(table)),
        _ => Signature::Unsigned,
    }
}

/// The common names (OID 2.5.4.3) in DER, in order, each once: the
/// certificates' subjects and issuers inside the PKCS#7 signature.
fn certificate_names(der: &[u8]) -> Vec<String> {
    const COMMON_NAME: [u8; 5] = [0x06, 0x03, 0x55, 0x04, 0x03];
    let mut names = Vec::new();
    let mut i = 0;
    while let Some(pos) = der[i..].windows(5).position(|w| w == COMMON_NAME) {
        let at = i + pos + 5;
        i = at;
        // A string (UTF8String, PrintableString, …) with a short or one-byte length.
        let (Some(&tag), Some(&len)) = (der.get(at), der.get(at + 1)) else { break };
        let (start, len) = match len {
            0x81 => (at + 3, der.get(at + 2).copied().unwrap_or(0) as usize),
            n if n < 0x80 => (at + 2, n as usize),
            _ => continue,
        };
        if ![0x0c, 0x13, 0x14, 0x16].contains(&tag) {
            continue;
        }
        if let Some(text) = der.get(start..start + len).and_then(|b| std::str::from_utf8(b).ok())
            && !names.iter().any(|n| n == text)
        {
            names.push(text.to_string());
        }
    }
    names
}

/// Check every kernel can boot under shim: refuse an unsigned one (or one
/// without the EFI stub), naming it and the way out; warn about a kernel
/// signed by someone Debian's shim does not know. Returns each kernel's
/// certificate names by boot directory.
pub fn check_kernels(kernels: &[(String, PathBuf)]) -> Result<Signers> {
    let mut signers = std::collections::BTreeMap::new();
    let mut refused = Vec::new();
    for (dir, vmlinuz) in kernels {
        let data = std::fs::read(vmlinuz).map_err(|e| format!("{}: {e}", vmlinuz.display()))?;
        match signature(&data) {
            Signature::Signed(names) => {
                if !names.iter().any(|n| n.contains(DEBIAN_CA)) {
                    eprintln!(
                        "image: warning: {} is signed by {}: Debian's shim boots it only if that key is in the firmware's db or enrolled with mokutil",
                        vmlinuz.display(),
                        names.join(" / ")
                    );
                }
                signers.insert(dir.clone(), names);
            }
            Signature::Unsigned => refused.push(format!("  {} is not signed", vmlinuz.display())),
            Signature::NotEfi => refused.push(format!(
                "  {} has no EFI stub (a PE header): GRUB cannot start it under shim; it needs Linux 3.3+ built with CONFIG_EFI_STUB",
                vmlinuz.display()
            )),
        }
    }
    if refused.is_empty() {
        return Ok(signers);
    }
    Err(format!(
        "--secure-boot: firmware with Secure Boot on would stop at these kernels (shim: \"bad shim signature\"):\n{}\n\
         Debian's packaged kernels are signed; RPM and self-built kernels are not unless their vendor signed them. \
         Sign a kernel with a key of your own and enroll the key once per server:\n\
         \x20 openssl req -new -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=bootmark/ -keyout MOK.key -out MOK.crt\n\
         \x20 sbsign --key MOK.key --cert MOK.crt --output vmlinuz.signed vmlinuz\n\
         \x20 openssl x509 -in MOK.crt -outform DER -out MOK.der; mokutil --import MOK.der   (on the server, then confirm in MokManager at the next boot)\n\
         or build the image without --secure-boot and turn Secure Boot off in the server's firmware.",
        refused.join("\n")
    ))
}

/// Does this pxe/ tree carry `arch`'s shim (an image built with --secure-boot)?
pub fn in_pxe(pxe: &Path, arch: Arch) -> bool {
    pxe.join(if arch == Arch::Aarch64 { PXE_SHIM_AA64 } else { PXE_SHIM }).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal PE32+ image: DOS header, NT headers with 16 data
    /// directories, and (when `cert` is given) a certificate table at the end.
    fn pe(cert: Option<&[u8]>) -> Vec<u8> {
        let mut d = vec![0u8; 0x200];
        d[0..2].copy_from_slice(b"MZ");
        d[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        d[0x80..0x84].copy_from_slice(b"PE\0\0");
        d[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes()); // machine
        d[0x94..0x96].copy_from_slice(&240u16.to_le_bytes()); // size of optional header
        let opt = 0x98;
        d[opt..opt + 2].copy_from_slice(&0x20bu16.to_le_bytes()); // PE32+
        d[opt + 108..opt + 112].copy_from_slice(&16u32.to_le_bytes()); // number of data directories
        if let Some(cert) = cert {
            let at = d.len();
            let security = opt + 112 + 4 * 8;
            d[security..security + 4].copy_from_slice(&(at as u32).to_le_bytes());
            d[security + 4..security + 8].copy_from_slice(&((cert.len() + 8) as u32).to_le_bytes());
            d.extend_from_slice(&((cert.len() + 8) as u32).to_le_bytes());
            d.extend_from_slice(&[0x00, 0x02, 0x02, 0x00]); // revision 2.0, PKCS_SIGNED_DATA
            d.extend_from_slice(cert);
        }
        d
    }

    fn common_name(text: &str) -> Vec<u8> {
        let mut v = vec![0x06, 0x03, 0x55, 0x04, 0x03, 0x0c, text.len() as u8];
        v.extend_from_slice(text.as_bytes());
        v
    }

    #[test]
    fn a_signed_pe_names_its_certificates_an_unsigned_one_is_unsigned() {
        let mut cert = vec![0x30, 0x82, 0x01, 0x00];
        cert.extend(common_name("Debian Secure Boot Signer 2022 - linux"));
        cert.extend(common_name("Debian Secure Boot CA"));
        cert.extend(common_name("Debian Secure Boot CA"));
        assert_eq!(
            signature(&pe(Some(&cert))),
            Signature::Signed(vec!["Debian Secure Boot Signer 2022 - linux".into(), "Debian Secure Boot CA".into()])
        );
        assert_eq!(signature(&pe(None)), Signature::Unsigned);
        let mut old_bzimage = vec![0u8; 0x400];
        old_bzimage[0x202..0x206].copy_from_slice(b"HdrS");
        assert_eq!(signature(&old_bzimage), Signature::NotEfi);
        assert_eq!(signature(b"not a kernel"), Signature::NotEfi);
    }

    #[test]
    fn unsigned_kernels_are_refused_with_the_way_out() {
        let dir = std::env::temp_dir().join(format!("bootmark-sb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let unsigned = dir.join("vmlinuz-unsigned");
        std::fs::write(&unsigned, pe(None)).unwrap();
        let err = check_kernels(&[("k0".into(), unsigned.clone())]).unwrap_err();
        assert!(err.contains(&format!("{} is not signed", unsigned.display())), "{err}");
        assert!(err.contains("sbsign --key") && err.contains("mokutil --import"), "{err}");
        let good = dir.join("vmlinuz-signed");
        std::fs::write(&good, pe(Some(&common_name("Debian Secure Boot CA")))).unwrap();
        let ok = check_kernels(&[("k0".into(), good)]).unwrap();
        assert_eq!(ok["k0"], ["Debian Secure Boot CA"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
