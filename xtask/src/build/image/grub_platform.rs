//! GRUB's EFI platform for each architecture an image boots: the
//! directory of modules that grub-mkstandalone and grub-mknetdir build
//! from, and the removable-media file UEFI firmware starts from a stick.
//!
//! x86 takes `x86_64-efi` from the host's grub-efi-amd64-bin (a test and
//! image tool). arm64 takes `arm64-efi` from Debian's grub-efi-arm64-bin,
//! fetched through the arm64 apt state of the GRUB suite and unpacked
//! under target/cache/grub/: the host's grub-mkstandalone builds for any
//! platform whose directory it is given, so no arm64 host is needed.

use crate::build::arch::Arch;
use crate::host::apt_suite::{ARM64_SUITE, Archive, Suite};
use crate::host::project::{Result, project_root};
use std::path::PathBuf;

const ARM64_PACKAGE: &str = "grub-efi-arm64-bin";

/// One architecture's GRUB.
#[derive(Clone, Debug)]
pub struct Platform {
    /// GRUB's name for it: `x86_64-efi`, `arm64-efi`.
    pub name: &'static str,
    /// Its modules (`linux.mod`, `fat.mod`, …).
    pub modules: PathBuf,
    /// The file UEFI firmware starts from removable media, under EFI/BOOT/.
    pub removable: &'static str,
    /// The package and version the modules came from, for the manifest.
    pub package: String,
}

/// The GRUB platform that boots `arch`'s kernels. i686 kernels are booted
/// by the x86_64 GRUB: the servers that boot UEFI are 64-bit.
pub fn for_arch(arch: Arch) -> Result<Platform> {
    match arch {
        Arch::X86_64 | Arch::I686 => Ok(Platform {
            name: "x86_64-efi",
            modules: PathBuf::from("/usr/lib/grub/x86_64-efi"),
            removable: "BOOTX64.EFI",
            package: "grub-efi-amd64-bin (installed)".into(),
        }),
        Arch::Aarch64 => {
            let (modules, package) = arm64_modules()?;
            Ok(Platform { name: "arm64-efi", modules, removable: "BOOTAA64.EFI", package })
        }
    }
}

/// grub-efi-arm64-bin's modules, unpacked once per version.
fn arm64_modules() -> Result<(PathBuf, String)> {
    let cache = project_root().join("target/cache");
    let got = Suite::arm64(ARM64_SUITE, Archive::debian(), &cache.join("apt"))?.download(ARM64_PACKAGE)?;
    let dir = cache.join("grub").join(format!("arm64-efi-{}", got.version.replace(':', "_")));
    let modules = got.unpacked_into(&dir, "usr/lib/grub/arm64-efi/linux.mod")?.join("usr/lib/grub/arm64-efi");
    Ok((modules, format!("{} {}", got.package, got.version)))
}
