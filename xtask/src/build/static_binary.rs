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
    build_all(&[arch])?.pop().ok_or_else(|| "no static build".to_string())
}

/// The static builds of `archs` in one cargo run: their dependencies and
/// their single-unit LTO links share the host's cores (three builds one
/// after another left a core idle through each link: 168 s, 2026-12-07).
/// Each target's flags go in its own `CARGO_TARGET_<TRIPLE>_RUSTFLAGS`
/// (the same whether built alone or together, so neither rebuilds the
/// other's); a RUSTFLAGS from the environment would override them all.
pub fn build_all(archs: &[Arch]) -> Result<Vec<PathBuf>> {
    let triples: Vec<&str> = archs.iter().map(|a| a.rust_target()).collect();
    for triple in &triples {
        ensure_target(triple)?;
    }
    eprintln!("xtask: building static bootmark for {}", triples.join(", "));
    // Without the workstation features (collect, report): /init does not need them.
    let sh = shell_in(&project_root())?;
    let mut build = cmd!(sh, "cargo build --profile image --package bootmark --bin bootmark --no-default-features")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    for (arch, triple) in archs.iter().zip(&triples) {
        let mut flags = String::from("-C target-feature=+crt-static");
        if *arch == Arch::X86_64 {
            flags += " -C relocation-model=static";
        }
        let var = |what: &str| format!("CARGO_TARGET_{}_{what}", triple.to_uppercase().replace('-', "_"));
        build = build.args(["--target", triple]).env(var("RUSTFLAGS"), &flags);
        if let Some(linker) = arch.rust_linker() {
            build = build.env(var("LINKER"), linker);
        }
    }
    process::run_shown(build).map_err(|e| format!("static build for {}: {e}", triples.join(", ")))?;
    archs
        .iter()
        .map(|a| {
            let path = binary_path(*a);
            match path.exists() {
                true => Ok(path),
                false => Err(format!("the build finished but {} is missing", path.display())),
            }
        })
        .collect()
}
