//! Static musl C programs for arm64, built on this x86 machine: Debian's
//! cross gcc (`gcc-aarch64-linux-gnu`) with musl's arm64 headers, start
//! files and libc from Debian's `musl-dev` for arm64. That package comes
//! through the arm64 apt state (this machine's apt lists only its own
//! architecture), unpacked under target/cache/musl-arm64/; its own
//! `musl-gcc.specs` names /usr/lib/aarch64-linux-musl, so a copy of it is
//! written with the unpacked tree's paths, and gcc is pointed at that.
//! The kernel's headers for arm64 come the same way (linux-libc-dev).

use crate::host::apt_suite::{ARM64_SUITE, Archive, Suite};
use crate::host::fs;
use crate::host::project::{Result, project_root};
use crate::host::tools;

/// The cross compiler and its Debian package.
pub const CROSS_GCC: (&str, &str) = ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu");
/// musl-dev's directory of libraries (and of its specs file).
const LIB: &str = "usr/lib/aarch64-linux-musl";
const INCLUDE: &str = "usr/include/aarch64-linux-musl";

/// The C compiler command for static musl arm64 programs, the cross gcc
/// installed (with `install_deps`) or named, musl fetched once.
pub fn cc(install_deps: bool) -> Result<String> {
    tools::ensure(&[CROSS_GCC], install_deps, "--install-deps")?;
    let cache = project_root().join("target/cache");
    let got = Suite::arm64(ARM64_SUITE, Archive::debian(), &cache.join("apt"))?.download("musl-dev")?;
    let root = got.unpacked_into(
        &cache.join("musl-arm64").join(got.version.replace(':', "_")),
        &format!("{LIB}/musl-gcc.specs"),
    )?;
    let specs = root.join("bootmark-musl-gcc.specs");
    if !specs.is_file() {
        let theirs = root.join(LIB).join("musl-gcc.specs");
        let text = std::fs::read_to_string(&theirs).map_err(|e| format!("{}: {e}", theirs.display()))?;
        fs::write(&specs, relocated(&text, &root.display().to_string()))?;
    }
    Ok(format!("{} -specs {}", CROSS_GCC.0, specs.display()))
}

/// The kernel's UAPI headers for arm64 (Debian's linux-libc-dev for arm64,
/// unpacked once): the include directory holding linux/, asm-generic/ and
/// aarch64-linux-gnu/asm/, for the static mkfs programs and fio.
pub fn uapi_headers() -> Result<std::path::PathBuf> {
    let cache = project_root().join("target/cache");
    let got = Suite::arm64(ARM64_SUITE, Archive::debian(), &cache.join("apt"))?.download("linux-libc-dev")?;
    let dir = cache.join("linux-libc-dev-arm64").join(got.version.replace(':', "_"));
    Ok(got.unpacked_into(&dir, "usr/include/aarch64-linux-gnu/asm/unistd.h")?.join("usr/include"))
}

/// musl-gcc.specs with its absolute paths (/usr/lib/aarch64-linux-musl,
/// /usr/include/aarch64-linux-musl) under `root`.
fn relocated(specs: &str, root: &str) -> String {
    specs
        .replace(&format!("/{LIB}"), &format!("{root}/{LIB}"))
        .replace(&format!("/{INCLUDE}"), &format!("{root}/{INCLUDE}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specs_paths_move_under_the_unpacked_tree() {
        let theirs = "*cpp_options:\n-nostdinc -isystem /usr/include/aarch64-linux-musl -isystem include%s %(old_cpp_options)\n\n\
                      *link_libgcc:\n-L/usr/lib/aarch64-linux-musl -L .%s\n\n*startfile:\n%{!shared: /usr/lib/aarch64-linux-musl/Scrt1.o}\n";
        let ours = relocated(theirs, "/t/musl");
        assert!(ours.contains("-isystem /t/musl/usr/include/aarch64-linux-musl "), "{ours}");
        assert!(
            ours.contains("-L/t/musl/usr/lib/aarch64-linux-musl ")
                && ours.contains(" /t/musl/usr/lib/aarch64-linux-musl/Scrt1.o")
        );
        assert!(!ours.contains(" /usr/"), "{ours}");
    }
}
