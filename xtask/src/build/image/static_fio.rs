//! `--fio`: a static fio in the image, built here from Debian's source with
//! musl as the static mkfs programs are, so a `fio` workload runs it from a
//! clean boot under every kernel the image holds (Debian's fio is a glibc
//! program: it would need its loader and libraries, and glibc's kernel
//! floor).
//!
//! fio 3.33, as Debian 12 ships it: the release the archive here serves for
//! the current stable, so a user's job file behaves as with the fio their
//! workstation has. Built without the optional libraries (zlib, libaio,
//! numa, rdma, …): the engines are the ones libc gives — psync, sync,
//! pvsync, posixaio, mmap, io_uring where the kernel has it. About 1.7 MB
//! stripped, 420 KB gzip, in the --include archive (outside the common
//! archive's budget); x86_64 only for now. Cached in
//! target/cache/static-fio/ (about two minutes the first time).

use super::static_mkfs::{self, Source};
use crate::build::arch::Arch;
use crate::host::process::{cmd, run, shell_in};
use crate::host::project::{Result, project_root};
use std::path::{Path, PathBuf};

/// fio 3.33, Debian 12's; the SHA-256 is the one its .dsc lists.
pub const FIO: Source = Source {
    name: "fio",
    version: "3.33",
    url: "http://deb.debian.org/debian/pool/main/f/fio/fio_3.33.orig.tar.gz",
    sha256: "d2410e13e0f379d061d077cc5ae325835bb7c6186aa7bafc1df954cbc9b014fc",
};

/// Where `--fio` puts it: the first directory of a workload's PATH.
pub const IN_IMAGE: &str = "/usr/local/bin/fio";

/// Optional libraries fio would link if found: none of them is in the image.
const WITHOUT: [&str; 13] = [
    "--disable-native",
    "--disable-numa",
    "--disable-rdma",
    "--disable-rados",
    "--disable-rbd",
    "--disable-http",
    "--disable-gfapi",
    "--disable-libnfs",
    "--disable-lex",
    "--disable-pmem",
    "--disable-xnvme",
    "--disable-libzbc",
    "--disable-tcmalloc",
];

/// The static fio for `arch`, built if not cached.
pub fn fio(arch: Arch, install_deps: bool) -> Result<PathBuf> {
    if arch != Arch::X86_64 {
        return Err(format!(
            "--fio: the static fio is built for x86_64 only so far; for {arch} build fio static yourself and --include it"
        ));
    }
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cache = project_root().join("target/cache/static-fio");
    let dir = cache.join(format!("{arch}-fio-{}", FIO.version));
    let program = dir.join("fio");
    if program.exists() {
        return Ok(program);
    }
    static_mkfs::ensure_build_tools(arch, install_deps)?;
    let work = dir.join("build");
    let _ = std::fs::remove_dir_all(&work);
    let src = static_mkfs::unpack(&static_mkfs::fetch(&FIO, &cache)?, &work.join("fio"))?;
    eprintln!("image: building a static {arch} fio {} with musl", FIO.version);
    build(&src, &work.join("shim"), arch)?;
    static_mkfs::install_program(&src.join("fio"), &program)?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(program)
}

/// configure and make, with the kernel's UAPI headers that musl-gcc leaves
/// out of its include path (fio includes linux/*.h).
fn build(src: &Path, shim: &Path, arch: Arch) -> Result<()> {
    static_mkfs::link_uapi_headers(shim)?;
    let cc = format!("--cc={}", arch.musl_cc());
    let include = format!("--extra-cflags=-I{}", shim.display());
    let sh = shell_in(src)?;
    run(cmd!(sh, "./configure {cc} {include} --build-static {WITHOUT...}"))
        .map_err(|e| format!("fio's configure: {e}"))?;
    let jobs = static_mkfs::jobs();
    run(cmd!(sh, "make {jobs} fio")).map_err(|e| format!("building fio: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::process::shell;

    /// From the pinned source (its SHA-256 checked by `fetch`) to a static
    /// x86_64 program the image builder accepts, which says it is 3.33.
    #[test]
    fn fio_builds_static_from_the_pinned_source() {
        let program = fio(Arch::X86_64, crate::host::deps::can_install()).unwrap();
        super::super::include::check_program("fio", &std::fs::read(&program).unwrap(), &[Arch::X86_64]).unwrap();
        let sh = shell().unwrap();
        assert_eq!(run(cmd!(sh, "{program} --version")).unwrap().trim(), "fio-3.33");
        assert!(fio(Arch::I686, false).unwrap_err().contains("x86_64 only"));
    }
}
