//! Static mkfs programs for the image, built here from pinned upstream
//! sources with musl. The host's mkfs programs are glibc binaries, which
//! refuse to start on kernels before 3.2 ("FATAL: kernel too old"); a static
//! musl binary runs on every kernel from 2.6 on, so one program formats the
//! target under Linux 2.6.9 and 6.x alike.
//!
//! Sources come from Debian's archive (a package registry this project may
//! reach), checked against a SHA-256 pinned here, and the build is cached
//! in target/cache/static-mkfs/ (about 30 s the first time).

use super::tools;
use crate::{Result, project_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A pinned upstream source tarball.
pub struct Source {
    pub name: &'static str,
    pub version: &'static str,
    pub url: &'static str,
    pub sha256: &'static str,
}

/// e2fsprogs 1.47.0, as Debian 12 ships it (the orig tarball is upstream's).
pub const E2FSPROGS: Source = Source {
    name: "e2fsprogs",
    version: "1.47.0",
    url: "http://deb.debian.org/debian/pool/main/e/e2fsprogs/e2fsprogs_1.47.0.orig.tar.gz",
    sha256: "6667afde56eef0c6af26684974400e4d2288ea49e9441bf5e6229195d51a3578",
};

/// What building for x86_64 needs on the host.
const BUILD_TOOLS: [(&str, &str); 4] =
    [("musl-gcc", "musl-tools"), ("curl", "curl"), ("make", "make"), ("strip", "binutils")];

/// The C compiler command for `arch`: musl's gcc wrapper for x86_64; for
/// i686, gcc -m32 with musl's i386 specs (Debian's musl-dev:i386) and the
/// 32-bit linker mode, which those specs' link line would otherwise drop.
fn compiler(arch: &str) -> Result<&'static str> {
    match arch {
        "x86_64" => Ok("musl-gcc"),
        "i686" => Ok("gcc -m32 -specs /usr/lib/i386-linux-musl/musl-gcc.specs -Wl,-melf_i386"),
        other => Err(format!("no static mke2fs for {other}: x86_64 or i686")),
    }
}

/// Install (or name) what building for `arch` needs.
fn ensure_build_tools(arch: &str, install_deps: bool) -> Result<()> {
    tools::ensure(&BUILD_TOOLS, install_deps, "--install-deps")?;
    if arch != "i686" {
        return Ok(());
    }
    // gcc -m32 links with the 32-bit libgcc of the host's gcc version.
    let major =
        tools::run(Command::new("gcc").arg("-dumpversion"))?.trim().split('.').next().unwrap_or("12").to_string();
    let libgcc: &'static str = Box::leak(format!("/usr/lib/gcc/x86_64-linux-gnu/{major}/32/libgcc.a").into_boxed_str());
    let package: &'static str = Box::leak(format!("lib32gcc-{major}-dev").into_boxed_str());
    if install_deps {
        crate::deps::add_i386_architecture()?;
    }
    tools::ensure(
        &[("/usr/lib/i386-linux-musl/libc.a", "musl-dev:i386"), (libgcc, package)],
        install_deps,
        "--install-deps",
    )
}

/// The static mke2fs (ext2, ext3, ext4) for `arch`, built if not cached.
pub fn mke2fs(arch: &str, install_deps: bool) -> Result<PathBuf> {
    let cc = compiler(arch)?;
    let dir = project_root()
        .join("target/cache/static-mkfs")
        .join(format!("{}-{}-{arch}", E2FSPROGS.name, E2FSPROGS.version));
    let program = dir.join("mke2fs");
    if program.exists() {
        return Ok(program);
    }
    ensure_build_tools(arch, install_deps)?;
    let tarball = fetch(&E2FSPROGS, &project_root().join("target/cache/static-mkfs"))?;
    let src = dir.join("src");
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).map_err(|e| e.to_string())?;
    eprintln!("image: building a static {arch} mke2fs from {} {} with musl", E2FSPROGS.name, E2FSPROGS.version);
    tools::run(Command::new("tar").arg("xzf").arg(&tarball).arg("-C").arg(&src).arg("--strip-components=1"))?;
    // Only the libraries and mke2fs: no NLS (no locale files in the image),
    // nothing that needs more than libc.
    let configure = [
        "--disable-nls",
        "--disable-fuse2fs",
        "--disable-debugfs",
        "--disable-imager",
        "--disable-resizer",
        "--disable-defrag",
        "--disable-e2initrd-helper",
        "--disable-tdb",
        "--disable-uuidd",
        "--without-libarchive",
        "--enable-libuuid",
        "--enable-libblkid",
    ];
    let jobs = format!("-j{}", std::thread::available_parallelism().map_or(2, |n| n.get()));
    let in_src = |program: &str| {
        let mut c = Command::new(program);
        c.current_dir(&src).env("CC", cc).env("LDFLAGS", "-static");
        c
    };
    tools::run(in_src("./configure").arg("--quiet").args(configure))?;
    tools::run(in_src("make").args([jobs.as_str(), "libs"]))?;
    tools::run(in_src("make").args([jobs.as_str(), "-C", "misc", "mke2fs"]))?;
    tools::run(Command::new("strip").arg("-o").arg(&program).arg(src.join("misc/mke2fs")))?;
    check_static(&program)?;
    let _ = std::fs::remove_dir_all(&src);
    Ok(program)
}

/// Download `source` into `dir` (once) and check its SHA-256.
fn fetch(source: &Source, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = dir.join(source.url.rsplit('/').next().unwrap_or("source.tar.gz"));
    if !file.exists() {
        eprintln!("image: downloading {}", source.url);
        let partial = file.with_extension("partial");
        tools::run(Command::new("curl").args(["-fsSL", "--retry", "3", "-o"]).arg(&partial).arg(source.url))
            .map_err(|e| format!("cannot download {} {}: {e}", source.name, source.version))?;
        std::fs::rename(&partial, &file).map_err(|e| e.to_string())?;
    }
    let sum = super::manifest::sha256_file(&file)?;
    if sum != source.sha256 {
        let _ = std::fs::remove_file(&file);
        return Err(format!(
            "{}: SHA-256 {sum}, expected {}: the download is not the pinned {} {} (removed; try again)",
            file.display(),
            source.sha256,
            source.name,
            source.version
        ));
    }
    Ok(file)
}

/// A program for the image must need no ELF interpreter: static, not PIE
/// with a loader.
fn check_static(program: &Path) -> Result<()> {
    let elf = std::fs::read(program).map_err(|e| e.to_string())?;
    if has_interpreter(&elf) {
        return Err(format!("{} is dynamically linked: the image needs a static program", program.display()));
    }
    Ok(())
}

/// Whether an ELF file has a PT_INTERP program header (needs a loader).
/// Anything that does not parse counts as having one.
fn has_interpreter(elf: &[u8]) -> bool {
    use object::elf::{FileHeader32, FileHeader64, PT_INTERP};
    use object::read::elf::{FileHeader, ProgramHeader};
    fn interp<H: FileHeader<Endian = object::Endianness>>(elf: &[u8]) -> Option<bool> {
        let header = H::parse(elf).ok()?;
        let endian = header.endian().ok()?;
        let headers = header.program_headers(endian, elf).ok()?;
        Some(headers.iter().any(|p| p.p_type(endian) == PT_INTERP))
    }
    match elf.get(4) {
        Some(1) => interp::<FileHeader32<object::Endianness>>(elf),
        Some(2) => interp::<FileHeader64<object::Endianness>>(elf),
        _ => None,
    }
    .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF header (64- or 32-bit) with one program header of type `p_type`.
    fn elf_with(class64: bool, p_type: u32) -> Vec<u8> {
        let mut elf = vec![0u8; 64 + 56];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[5] = 1; // little-endian
        elf[6] = 1; // ELF version 1
        if class64 {
            elf[4] = 2;
            elf[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
            elf[0x36..0x38].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
            elf[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        } else {
            elf[4] = 1;
            elf[0x1c..0x20].copy_from_slice(&52u32.to_le_bytes());
            elf[0x2a..0x2c].copy_from_slice(&32u16.to_le_bytes());
            elf[0x2c..0x2e].copy_from_slice(&1u16.to_le_bytes());
        }
        let at = if class64 { 64 } else { 52 };
        elf[at..at + 4].copy_from_slice(&p_type.to_le_bytes());
        elf
    }

    #[test]
    fn a_program_with_an_elf_interpreter_is_not_static() {
        assert!(has_interpreter(&std::fs::read("/bin/sh").unwrap()), "/bin/sh is dynamically linked on Debian");
        for class64 in [true, false] {
            assert!(has_interpreter(&elf_with(class64, 3)), "PT_INTERP");
            assert!(!has_interpreter(&elf_with(class64, 1)), "PT_LOAD only: static");
        }
        assert!(has_interpreter(b"\x7fELF\x02"), "a truncated file is not trusted as static");
    }

    #[test]
    fn only_x86_64_and_i686_have_a_compiler() {
        assert_eq!(compiler("x86_64").unwrap(), "musl-gcc");
        assert!(compiler("i686").unwrap().contains("-m32"));
        assert!(compiler("arm64").unwrap_err().contains("x86_64 or i686"));
    }
}
