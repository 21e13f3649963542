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
//! pvsync, posixaio, mmap, io_uring where the kernel has it. Without
//! timerfd (`without_timerfd`), so that it runs on 2.6.9 as /init does.
//! x86_64 1.7 MB stripped (420 KB gzip), i686 1.5 MB (480 KB), aarch64
//! 1.7 MB (cross-built, `musl_arm64.rs`), in the --include archive (outside
//! the common archive's budget). Cached in target/cache/static-fio/ (a
//! build takes a minute or two).

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
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cache = project_root().join("target/cache/static-fio");
    // "-2.6": built for 2.6 kernels (`without_timerfd`), unlike the first builds.
    let dir = cache.join(format!("{arch}-fio-{}-2.6", FIO.version));
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
    static_mkfs::install_program(&src.join("fio"), &program, arch)?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(program)
}

/// configure and make, with the kernel's UAPI headers that musl-gcc leaves
/// out of its include path (fio includes linux/*.h).
fn build(src: &Path, shim: &Path, arch: Arch) -> Result<()> {
    static_mkfs::link_uapi_headers(shim, arch)?;
    let cc = format!("--cc={}", arch.musl_cc(false)?);
    let include = format!("--extra-cflags=-I{}", shim.display());
    let sh = shell_in(src)?;
    run(cmd!(sh, "./configure {cc} {include} --build-static {WITHOUT...}"))
        .map_err(|e| format!("fio's configure: {e}"))?;
    without_timerfd(&src.join("config-host.h"))?;
    let jobs = static_mkfs::jobs();
    run(cmd!(sh, "make {jobs} fio")).map_err(|e| format!("building fio: {e}"))?;
    Ok(())
}

/// fio's helper thread (its status every second, the ramp and run-time
/// limits) without timerfd: timerfd_create came in Linux 2.6.25 and
/// TFD_NONBLOCK in 2.6.27, and fio 3.33 asserts it works where configure
/// found it. Without it the helper waits in select() with a timeout, as
/// fio's helper did before timerfd — what makes the static fio run on 2.6.9
/// (the old-kernel harness runs it there).
fn without_timerfd(config: &Path) -> Result<()> {
    let text = std::fs::read_to_string(config).map_err(|e| format!("{}: {e}", config.display()))?;
    if !text.contains("#define CONFIG_HAVE_TIMERFD_CREATE") {
        return Err(format!(
            "{}: no CONFIG_HAVE_TIMERFD_CREATE to take out: fio's configure changed",
            config.display()
        ));
    }
    let kept: String =
        text.lines().filter(|l| !l.contains("CONFIG_HAVE_TIMERFD_CREATE")).map(|l| format!("{l}\n")).collect();
    std::fs::write(config, kept).map_err(|e| format!("{}: {e}", config.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::process::shell;

    /// From the pinned source (its SHA-256 checked by `fetch`) to a static
    /// program of each architecture the image builder accepts for it (and
    /// refuses for the other), which says it is 3.33.
    #[test]
    fn fio_builds_static_from_the_pinned_source() {
        for (arch, other) in [(Arch::X86_64, Arch::I686), (Arch::I686, Arch::X86_64)] {
            let program = fio(arch, crate::host::deps::can_install()).unwrap();
            let bytes = std::fs::read(&program).unwrap();
            super::super::include::check_program("fio", &bytes, &[arch]).unwrap();
            assert!(super::super::include::check_program("fio", &bytes, &[other]).is_err(), "{arch} fio for {other}");
            let sh = shell().unwrap();
            assert_eq!(run(cmd!(sh, "{program} --version")).unwrap().trim(), "fio-3.33", "{arch}");
        }
    }
}
