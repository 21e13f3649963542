//! The architectures bootmark's /init is built for, and every name that
//! differs between them: the Rust target of the static /init and its
//! linker, the kernel's `ARCH=`, the C compiler for static mkfs, QEMU's
//! binary and CPU model, Debian's kernel package, the oldest kernel the
//! /init is meant for. One place decides them, instead of string
//! comparisons wherever one of them is needed.

use crate::host::project::Result;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Arch {
    #[value(name = "x86_64")]
    X86_64,
    #[value(name = "i686")]
    I686,
    /// arm64 servers (Ampere, Graviton, Grace): UEFI only, Linux 3.7 and later.
    #[value(name = "aarch64", alias = "arm64")]
    Aarch64,
}

impl Arch {
    pub const ALL: [Arch; 3] = [Arch::X86_64, Arch::I686, Arch::Aarch64];
    /// The architectures Linux 2.6 ran on, which the old-kernel harness
    /// simulates (arm64 came with 3.7).
    pub const X86: [Arch; 2] = [Arch::X86_64, Arch::I686];

    /// The name records, manifests and kernel-configs/ file names use.
    pub const fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::I686 => "i686",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// `x86_64`, `i686` or `aarch64`, as `name` writes them.
    pub fn parse(name: &str) -> Result<Arch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| format!("unknown arch '{name}': use x86_64, i686 or aarch64"))
    }

    /// A package's architecture: Debian's `amd64`/`i386`/`arm64`, RPM's
    /// `x86_64`/`i386`…`athlon`/`aarch64`.
    pub fn of_package(arch: &str) -> Option<Arch> {
        match arch {
            "x86_64" | "amd64" => Some(Arch::X86_64),
            "i386" | "i486" | "i586" | "i686" | "athlon" => Some(Arch::I686),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// The oldest kernel the static /init is meant for: 2.6.9 on x86 (the
    /// seed's servers; simulated by the old-kernel harness), 3.7 on arm64,
    /// the first kernel with the architecture.
    pub fn oldest_kernel(self) -> &'static str {
        match self {
            Arch::X86_64 | Arch::I686 => "2.6.9",
            Arch::Aarch64 => "3.7",
        }
    }

    /// The musl target the static /init is built for.
    pub fn rust_target(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-musl",
            Arch::I686 => "i686-unknown-linux-musl",
            Arch::Aarch64 => "aarch64-unknown-linux-musl",
        }
    }

    /// The linker for the static /init, when not the host's `cc`: rustup's
    /// rust-lld for aarch64, so no cross gcc is needed (the musl target is
    /// self-contained: its crt objects and libc.a come with the target).
    pub fn rust_linker(self) -> Option<&'static str> {
        match self {
            Arch::X86_64 | Arch::I686 => None,
            Arch::Aarch64 => Some("rust-lld"),
        }
    }

    /// The kernel build's `ARCH=`.
    pub fn kernel_arch(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::I686 => "i386",
            Arch::Aarch64 => "arm64",
        }
    }

    /// The kernel build's make target and where it leaves the file a
    /// bootloader starts: x86's bzImage; arm64's uncompressed `Image`,
    /// whose PE header (the EFI stub) GRUB for arm64 starts (it does not
    /// start `Image.gz`).
    pub fn kernel_image(self) -> (&'static str, &'static str) {
        match self {
            Arch::X86_64 | Arch::I686 => ("bzImage", "arch/x86/boot/bzImage"),
            Arch::Aarch64 => ("Image", "arch/arm64/boot/Image"),
        }
    }

    /// The prefix of the compiler and binutils that build a kernel for
    /// this architecture on this host: none for x86 on x86 (gcc -m32 builds
    /// i686), Debian's `aarch64-linux-gnu-` (gcc-aarch64-linux-gnu) for
    /// arm64 elsewhere.
    pub fn kernel_cross_compile(self) -> &'static str {
        match (self, std::env::consts::ARCH) {
            (Arch::Aarch64, "aarch64") | (Arch::X86_64 | Arch::I686, _) => "",
            (Arch::Aarch64, _) => "aarch64-linux-gnu-",
        }
    }

    /// The C compiler command for static musl programs: musl's gcc wrapper
    /// for x86_64; for i686, gcc -m32 with musl's i386 specs (Debian's
    /// musl-dev:i386) and the 32-bit linker mode, which those specs' link
    /// line would otherwise drop; for aarch64, Debian's cross gcc with
    /// arm64's musl (`musl_arm64.rs`: fetched, so `install_deps` matters).
    pub fn musl_cc(self, install_deps: bool) -> Result<String> {
        Ok(match self {
            Arch::X86_64 => "musl-gcc".into(),
            Arch::I686 => "gcc -m32 -specs /usr/lib/i386-linux-musl/musl-gcc.specs -Wl,-melf_i386".into(),
            Arch::Aarch64 => crate::build::musl_arm64::cc(install_deps)?,
        })
    }

    /// QEMU's system emulator and CPU model. An Intel model for both:
    /// Linux before about 2.6.2x panics on QEMU's AMD-vendor default, and
    /// the i686 /init needs SSE2 (a Core Duo). Both with RDRAND, as every
    /// server since 2012: the kernel then seeds its random pool before the
    /// second CPU starts. Without it, 6.x seeds it mid-run from interrupts
    /// and flips the `crng_is_ready` static key, patching its own text
    /// while the other CPU runs, and QEMU's TCG can livelock there (CI saw
    /// a 261 s soft lockup at that key's site in `add_timer_randomness`
    /// and no power-off). arm64: a Cortex-A72, the core of the first arm64
    /// servers' generation (Graviton 1's); arm64 patches a jump label as
    /// one instruction, without x86's breakpoint-and-sync sequence.
    pub fn qemu(self) -> (&'static str, &'static str) {
        match self {
            Arch::I686 => ("qemu-system-i386", "coreduo,+rdrand"),
            Arch::X86_64 => ("qemu-system-x86_64", "qemu64,vendor=GenuineIntel,+rdrand"),
            Arch::Aarch64 => ("qemu-system-aarch64", "cortex-a72"),
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_packages_map() {
        for a in Arch::ALL {
            assert_eq!(Arch::parse(a.name()).unwrap(), a);
            assert_eq!(<Arch as clap::ValueEnum>::from_str(a.name(), false).unwrap(), a);
        }
        assert!(Arch::parse("arm").unwrap_err().contains("x86_64, i686 or aarch64"));
        assert_eq!(<Arch as clap::ValueEnum>::from_str("arm64", false).unwrap(), Arch::Aarch64);
        assert_eq!(Arch::of_package("amd64"), Some(Arch::X86_64));
        assert_eq!(Arch::of_package("athlon"), Some(Arch::I686));
        assert_eq!(Arch::of_package("arm64"), Some(Arch::Aarch64));
        assert_eq!(Arch::of_package("aarch64"), Some(Arch::Aarch64));
        assert_eq!(Arch::of_package("noarch"), None);
    }

    #[test]
    fn aarch64_has_its_init_target_floor_and_machine() {
        assert_eq!(Arch::Aarch64.rust_target(), "aarch64-unknown-linux-musl");
        assert_eq!(Arch::Aarch64.oldest_kernel(), "3.7");
        assert!(Arch::X86.iter().all(|a| a.oldest_kernel() == "2.6.9"));
        assert_eq!(Arch::Aarch64.qemu(), ("qemu-system-aarch64", "cortex-a72"));
    }

    #[test]
    fn each_arch_builds_its_own_kernel_file() {
        assert_eq!(Arch::X86_64.kernel_image(), ("bzImage", "arch/x86/boot/bzImage"));
        assert_eq!(Arch::I686.kernel_image().0, "bzImage");
        assert_eq!(Arch::Aarch64.kernel_image(), ("Image", "arch/arm64/boot/Image"));
        assert_eq!(Arch::I686.kernel_cross_compile(), "");
        let cross = Arch::Aarch64.kernel_cross_compile();
        assert_eq!(cross.is_empty(), std::env::consts::ARCH == "aarch64", "{cross}");
    }
}
