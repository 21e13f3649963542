//! `cargo xtask static`: the static musl build of bootmark that becomes /init.
//!
//! x86_64 is linked as a plain ET_EXEC (relocation-model=static), not
//! static-pie, which was never tried on 2.6.9. i686 musl needs SSE2
//! (Pentium 4 or later). aarch64 is linked by rustup's rust-lld, so no
//! cross gcc is needed. Missing rustup targets are added.

use crate::build::arch::Arch;
use crate::host::process::{self, cmd, shell, shell_in};
use crate::host::project::{Result, project_root};
use std::path::PathBuf;

/// Where the static binary for `arch` ends up.
pub fn binary_path(arch: Arch) -> PathBuf {
    project_root().join("target").join(arch.rust_target()).join("image/bootmark")
}

pub fn ensure_target(triple: &str) -> Result<()> {
    let sh = shell()?;
    let installed = process::run(cmd!(sh, "rustup target list --installed")).map_err(|e| {
        format!("cannot ask rustup for installed targets ({e}); install rustup, or add the {triple} target to your toolchain")
    })?;
    if !installed.lines().any(|l| l.trim() == triple) {
        eprintln!("xtask: adding rustup target {triple}");
        process::run_shown(cmd!(sh, "rustup target add {triple}"))?;
    }
    Ok(())
}

pub fn build(arch: Arch) -> Result<PathBuf> {
    let triple = arch.rust_target();
    ensure_target(triple)?;
    let mut flags = String::from("-C target-feature=+crt-static");
    if arch == Arch::X86_64 {
        flags += " -C relocation-model=static";
    }
    eprintln!("xtask: building static bootmark for {triple}");
    // Without the workstation features (collect, report): /init does not need them.
    let sh = shell_in(&project_root())?;
    let mut build = cmd!(sh, "cargo build --profile image --package bootmark --bin bootmark")
        .args(["--no-default-features", "--target", triple])
        .env("RUSTFLAGS", &flags);
    if let Some(linker) = arch.rust_linker() {
        let var = format!("CARGO_TARGET_{}_LINKER", triple.to_uppercase().replace('-', "_"));
        build = build.env(var, linker);
    }
    process::run_shown(build).map_err(|e| format!("static build for {triple}: {e}"))?;
    let path = binary_path(arch);
    if !path.exists() {
        return Err(format!("the build finished but {} is missing", path.display()));
    }
    Ok(path)
}
