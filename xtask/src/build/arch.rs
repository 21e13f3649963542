//! The two architectures bootmark images run on, and every name that
//! differs between them: the Rust target of the static /init, the kernel's
//! `ARCH=`, the C compiler for static mkfs, QEMU's binary and CPU model,
//! Debian's kernel package. One place decides them, instead of string
//! comparisons wherever one of them is needed.

use crate::host::project::Result;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Arch {
    #[value(name = "x86_64")]
    X86_64,
    #[value(name = "i686")]
    I686,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::I686];

    /// The name records, manifests and kernel-configs/ file names use.
    pub const fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::I686 => "i686",
        }
    }

    /// `x86_64` or `i686`, as `name` writes them.
    pub fn parse(name: &str) -> Result<Arch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| format!("unknown arch '{name}': use x86_64 or i686"))
    }

    /// A package's architecture: Debian's `amd64`/`i386`, RPM's `x86_64`/`i386`…`athlon`.
    pub fn of_package(arch: &str) -> Option<Arch> {
        match arch {
            "x86_64" | "amd64" => Some(Arch::X86_64),
            "i386" | "i486" | "i586" | "i686" | "athlon" => Some(Arch::I686),
            _ => None,
        }
    }

    /// The musl target the static /init is built for.
    pub fn rust_target(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-musl",
            Arch::I686 => "i686-unknown-linux-musl",
        }
    }

    /// The kernel build's `ARCH=`.
    pub fn kernel_arch(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::I686 => "i386",
        }
    }

    /// The C compiler command for static musl programs: musl's gcc wrapper
    /// for x86_64; for i686, gcc -m32 with musl's i386 specs (Debian's
    /// musl-dev:i386) and the 32-bit linker mode, which those specs' link
    /// line would otherwise drop.
    pub fn musl_cc(self) -> &'static str {
        match self {
            Arch::X86_64 => "musl-gcc",
            Arch::I686 => "gcc -m32 -specs /usr/lib/i386-linux-musl/musl-gcc.specs -Wl,-melf_i386",
        }
    }

    /// QEMU's system emulator and CPU model. An Intel model for both:
    /// Linux before about 2.6.2x panics on QEMU's AMD-vendor default, and
    /// the i686 /init needs SSE2 (a Core Duo).
    pub fn qemu(self) -> (&'static str, &'static str) {
        match self {
            Arch::X86_64 => ("qemu-system-x86_64", "qemu64,vendor=GenuineIntel"),
            Arch::I686 => ("qemu-system-i386", "coreduo"),
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
        assert!(Arch::parse("arm64").unwrap_err().contains("x86_64 or i686"));
        assert_eq!(Arch::of_package("amd64"), Some(Arch::X86_64));
        assert_eq!(Arch::of_package("athlon"), Some(Arch::I686));
        assert_eq!(Arch::of_package("noarch"), None);
    }
}
