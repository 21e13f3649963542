//! Static mkfs programs for the image, built here from pinned upstream
//! sources with musl. The host's mkfs programs are glibc binaries, which
//! refuse to start on kernels before 3.2 ("FATAL: kernel too old"); a static
//! musl binary runs on every kernel from 2.6 on, so one program formats the
//! target under Linux 2.6.9 and 6.x alike: mke2fs (ext2/3/4) from
//! e2fsprogs and mkreiserfs (reiserfs 3.6, SLES 9's filesystem) from
//! reiserfsprogs, which links e2fsprogs' com_err and uuid libraries.
//!
//! Sources come from Debian's archive (a package registry this project may
//! reach), checked against SHA-256s pinned here; both programs are built
//! together and cached per architecture in target/cache/static-mkfs/
//! (about a minute the first time). arm64's are cross builds: Debian's
//! cross gcc with arm64's musl and kernel headers (`musl_arm64.rs`).

use crate::build::arch::Arch;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{cmd, run, shell, shell_in};
use crate::host::project::{Result, project_root};
use crate::host::tools;
use std::path::{Path, PathBuf};

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

/// reiserfsprogs 3.6.27, as Debian 12 ships it.
pub const REISERFSPROGS: Source = Source {
    name: "reiserfsprogs",
    version: "3.6.27",
    url: "http://deb.debian.org/debian/pool/main/r/reiserfsprogs/reiserfsprogs_3.6.27.orig.tar.gz",
    sha256: "9bd5849dec1d0f9016e6c4ebae4794086b01fc1e01f591c2d813b09e135d8257",
};

/// What building for x86_64 needs on the host.
const BUILD_TOOLS: [(&str, &str); 5] = [
    ("musl-gcc", "musl-tools"),
    ("curl", "curl"),
    ("make", "make"),
    ("strip", "binutils"),
    ("/usr/include/linux/major.h", "linux-libc-dev"),
];

/// glibc-isms reiserfsprogs relies on, supplied for musl: included first
/// in every file it compiles.
const COMPAT_H: &str = "#define _GNU_SOURCE 1
#include <sys/types.h>
typedef off_t loff_t;
typedef int (*__compar_fn_t)(const void *, const void *);
typedef __compar_fn_t comparison_fn_t;
";

/// glibc's printf extension, as far as reiserfsprogs uses it (custom
/// conversions for keys and items in debugging messages): registering them
/// does nothing here, so such a message prints without the value. mkreiserfs
/// never prints one on its normal path.
const PRINTF_H: &str = "#ifndef BOOTMARK_PRINTF_H
#define BOOTMARK_PRINTF_H
#include <stdio.h>
#include <stddef.h>
struct printf_info { int width; unsigned int left; };
#define PA_FLAG_PTR (1 << 11)
typedef int printf_function(FILE *, const struct printf_info *, const void *const *);
typedef int printf_arginfo_function(const struct printf_info *, size_t, int *);
static inline int register_printf_function(int s, printf_function *f, printf_arginfo_function *a)
{
	(void)s; (void)f; (void)a;
	return 0;
}
#endif
";

/// Install (or name) what building for `arch` needs.
pub(crate) fn ensure_build_tools(arch: Arch, install_deps: bool) -> Result<()> {
    tools::ensure(&BUILD_TOOLS, install_deps, "--install-deps")?;
    match arch {
        Arch::X86_64 => return Ok(()),
        Arch::Aarch64 => return tools::ensure(&[crate::build::musl_arm64::CROSS_GCC], install_deps, "--install-deps"),
        Arch::I686 => {}
    }
    // gcc -m32 links with the 32-bit libgcc of the host's gcc version.
    let sh = shell()?;
    let major = run(cmd!(sh, "gcc -dumpversion"))?.trim().split('.').next().unwrap_or("12").to_string();
    let libgcc: &'static str = Box::leak(format!("/usr/lib/gcc/x86_64-linux-gnu/{major}/32/libgcc.a").into_boxed_str());
    let package: &'static str = Box::leak(format!("lib32gcc-{major}-dev").into_boxed_str());
    if install_deps {
        crate::host::deps::add_i386_architecture()?;
    }
    tools::ensure(
        &[("/usr/lib/i386-linux-musl/libc.a", "musl-dev:i386"), (libgcc, package)],
        install_deps,
        "--install-deps",
    )
}

/// The static mke2fs (ext2, ext3, ext4) for `arch`, built if not cached.
pub fn mke2fs(arch: Arch, install_deps: bool) -> Result<PathBuf> {
    Ok(build(arch, install_deps)?.join("mke2fs"))
}

/// The static mkreiserfs (reiserfs 3.6) for `arch`, built if not cached.
pub fn mkreiserfs(arch: Arch, install_deps: bool) -> Result<PathBuf> {
    Ok(build(arch, install_deps)?.join("mkreiserfs"))
}

/// Build both programs for `arch` (once): the directory holding them.
fn build(arch: Arch, install_deps: bool) -> Result<PathBuf> {
    // One build at a time: two lanes of the suite's boots build images at
    // once, and the sources' tarballs are fetched into one cache.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cc = &arch.musl_cc(install_deps)?;
    let cache = project_root().join("target/cache/static-mkfs");
    let dir = cache.join(format!(
        "{arch}-{}-{}-{}-{}",
        E2FSPROGS.name, E2FSPROGS.version, REISERFSPROGS.name, REISERFSPROGS.version
    ));
    if dir.join("mke2fs").exists() && dir.join("mkreiserfs").exists() {
        return Ok(dir);
    }
    ensure_build_tools(arch, install_deps)?;
    let work = dir.join("build");
    let _ = std::fs::remove_dir_all(&work);
    let e2fs = unpack(&fetch(&E2FSPROGS, &cache)?, &work.join("e2fsprogs"))?;
    let reiserfs = unpack(&fetch(&REISERFSPROGS, &cache)?, &work.join("reiserfsprogs"))?;
    eprintln!("image: building static {arch} mke2fs and mkreiserfs with musl");
    build_mke2fs(&e2fs, cc, arch)?;
    install_program(&e2fs.join("misc/mke2fs"), &dir.join("mke2fs"), arch)?;
    build_mkreiserfs(&reiserfs, &e2fs, &work.join("shim"), cc, arch)?;
    install_program(&reiserfs.join("mkreiserfs/mkreiserfs"), &dir.join("mkreiserfs"), arch)?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(dir)
}

pub(crate) fn unpack(tarball: &Path, into: &Path) -> Result<PathBuf> {
    fs::create_dir_all(into)?;
    let sh = shell()?;
    run(cmd!(sh, "tar xzf {tarball} -C {into} --strip-components=1"))?;
    Ok(into.to_path_buf())
}

pub(crate) fn jobs() -> String {
    format!("-j{}", std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// e2fsprogs' libraries and mke2fs: no NLS (no locale files in the
/// image), nothing that needs more than libc.
fn build_mke2fs(src: &Path, cc: &str, arch: Arch) -> Result<()> {
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
    let sh = shell_in(src)?;
    sh.set_var("CC", cc);
    sh.set_var("LDFLAGS", "-static");
    let jobs = jobs();
    let host = configure_host(arch);
    run(cmd!(sh, "./configure --quiet {host...} {configure...}"))?;
    run(cmd!(sh, "make {jobs} libs"))?;
    run(cmd!(sh, "make {jobs} -C misc mke2fs"))?;
    Ok(())
}

/// reiserfsprogs' libraries and mkreiserfs, against e2fsprogs' com_err and
/// uuid (built in `e2fs`), with the compatibility headers in `shim` and
/// the kernel's UAPI headers (musl-gcc leaves /usr/include out).
fn build_mkreiserfs(src: &Path, e2fs: &Path, shim: &Path, cc: &str, arch: Arch) -> Result<()> {
    let write = |rel: &str, text: &str| -> Result<()> {
        let p = shim.join(rel);
        fs::create_dir_all(p.parent().unwrap())?;
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    write("compat.h", COMPAT_H)?;
    write("printf.h", PRINTF_H)?;
    // Included by code mkreiserfs does not use; nothing of libacl is needed.
    write("sys/acl.h", "/* empty: see bootmark's static_mkfs.rs */\n")?;
    link_uapi_headers(shim, arch)?;
    let et = e2fs.join("lib/et");
    let lib = e2fs.join("lib");
    let cflags = format!(
        "-O2 -include {} -I{} -I{} -I{}",
        shim.join("compat.h").display(),
        shim.display(),
        lib.display(),
        et.display()
    );
    let path = format!("{}:{}", et.display(), std::env::var("PATH").unwrap_or_default());
    let sh = shell_in(src)?;
    sh.set_var("CC", cc);
    sh.set_var("CFLAGS", &cflags);
    // compile_et from the e2fsprogs build tree, with its templates.
    sh.set_var("PATH", &path);
    sh.set_var("_ET_DIR_OVERRIDE", &et);
    let ldflags = format!("-L{}", lib.display());
    let static_ldflags = format!("-static {ldflags}");
    let host = configure_host(arch);
    run(cmd!(sh, "./configure --quiet {host...} --disable-shared --enable-static").env("LDFLAGS", static_ldflags))?;
    let jobs = jobs();
    for dir in ["lib", "reiserfscore"] {
        run(cmd!(sh, "make {jobs} -C {dir}"))?;
    }
    // libtool links programs statically only when told -all-static.
    let all_static = format!("LDFLAGS=-all-static {ldflags}");
    run(cmd!(sh, "make -C mkreiserfs {all_static}"))?;
    Ok(())
}

/// configure's `--host` where the build is a cross build: arm64 programs
/// made on this x86 machine (its helpers still built for the build machine).
pub(crate) fn configure_host(arch: Arch) -> Vec<&'static str> {
    match arch {
        Arch::Aarch64 => vec!["--host=aarch64-linux-gnu"],
        Arch::X86_64 | Arch::I686 => Vec::new(),
    }
}

/// Link the kernel's UAPI headers (linux/, asm/, asm-generic/) for `arch`
/// into `shim`, an include directory: musl-gcc leaves /usr/include out of
/// its path, and mkreiserfs and fio include linux/*.h. arm64's are Debian's
/// linux-libc-dev for arm64.
pub(crate) fn link_uapi_headers(shim: &Path, arch: Arch) -> Result<()> {
    fs::create_dir_all(shim)?;
    let include = match arch {
        Arch::Aarch64 => crate::build::musl_arm64::uapi_headers()?,
        Arch::X86_64 | Arch::I686 => PathBuf::from("/usr/include"),
    };
    let asm = if arch == Arch::Aarch64 { "aarch64-linux-gnu/asm" } else { "x86_64-linux-gnu/asm" };
    for (name, target) in
        [("linux", include.join("linux")), ("asm-generic", include.join("asm-generic")), ("asm", include.join(asm))]
    {
        std::os::unix::fs::symlink(&target, shim.join(name))
            .with_context(|| format!("cannot link {}", shim.join(name).display()))?;
    }
    Ok(())
}

/// Strip a built program into the cache (with the cross binutils' strip for
/// arm64) and check it needs no loader.
pub(crate) fn install_program(built: &Path, to: &Path, arch: Arch) -> Result<()> {
    let strip = if arch == Arch::Aarch64 { "aarch64-linux-gnu-strip" } else { "strip" };
    let sh = shell()?;
    run(cmd!(sh, "{strip} -o {to} {built}"))?;
    check_static(to)
}

/// Download `source` into `dir` (once) and check its SHA-256.
pub(crate) fn fetch(source: &Source, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = dir.join(source.url.rsplit('/').next().unwrap_or("source.tar.gz"));
    if !file.exists() {
        eprintln!("image: downloading {}", source.url);
        let partial = file.with_extension("partial");
        let (sh, url) = (shell()?, source.url);
        run(cmd!(sh, "curl -fsSL --retry 3 -o {partial} {url}"))
            .map_err(|e| format!("cannot download {} {}: {e}", source.name, source.version))?;
        fs::rename(&partial, &file)?;
    }
    let sum = crate::host::fs::sha256_file(&file)?;
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

/// A program for the image must need no ELF interpreter and no shared
/// library: static, not PIE with a loader (`elf::read` reads it).
fn check_static(program: &Path) -> Result<()> {
    let bytes = fs::read(program)?;
    match super::elf::read(&bytes) {
        Ok(e) if e.interpreter.is_none() && e.needed.is_empty() => Ok(()),
        Ok(_) => Err(format!("{} is dynamically linked: the image needs a static program", program.display())),
        Err(why) => Err(format!("{} is {why}: the image needs a static program", program.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_program_is_not_static() {
        let err = check_static(Path::new("/bin/sh")).unwrap_err();
        assert!(err.contains("dynamically linked"), "/bin/sh is dynamically linked on Debian: {err}");
    }

    #[test]
    fn only_x86_64_and_i686_have_a_compiler() {
        assert_eq!(Arch::X86_64.musl_cc(false).unwrap(), "musl-gcc");
        assert!(Arch::I686.musl_cc(false).unwrap().contains("-m32"));
    }
}
