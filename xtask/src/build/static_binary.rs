//! `cargo xtask static`: the static musl build of bootmark that becomes /init.
//!
//! x86_64 is linked as a plain ET_EXEC (relocation-model=static), not
//! static-pie, which was never tried on 2.6.9. i686 musl needs SSE2
//! (Pentium 4 or later). Missing rustup targets are added.

use crate::{Result, project_root};
use std::path::PathBuf;
use xshell::{Shell, cmd};

pub fn triple(arch: &str) -> Result<&'static str> {
    match arch {
        "x86_64" => Ok("x86_64-unknown-linux-musl"),
        "i686" => Ok("i686-unknown-linux-musl"),
        other => Err(format!("unknown arch '{other}': use x86_64 or i686")),
    }
}

/// Where the static binary for `arch` ends up.
pub fn binary_path(arch: &str) -> Result<PathBuf> {
    Ok(project_root().join("target").join(triple(arch)?).join("image/bootmark"))
}

pub fn ensure_target(sh: &Shell, triple: &str) -> Result<()> {
    let installed = cmd!(sh, "rustup target list --installed").read().map_err(|e| {
        format!("cannot ask rustup for installed targets ({e}); install rustup, or add the {triple} target to your toolchain")
    })?;
    if !installed.lines().any(|l| l.trim() == triple) {
        eprintln!("xtask: adding rustup target {triple}");
        cmd!(sh, "rustup target add {triple}").run().map_err(|e| format!("rustup target add {triple} failed: {e}"))?;
    }
    Ok(())
}

pub fn build(arch: &str) -> Result<PathBuf> {
    let triple = triple(arch)?;
    let sh = Shell::new().map_err(|e| e.to_string())?;
    sh.change_dir(project_root());
    ensure_target(&sh, triple)?;
    let mut flags = String::from("-C target-feature=+crt-static");
    if arch == "x86_64" {
        flags += " -C relocation-model=static";
    }
    eprintln!("xtask: building static bootmark for {triple}");
    // Without the workstation features (collect, report): /init does not need them.
    cmd!(sh, "cargo build --profile image --package bootmark --bin bootmark --no-default-features --target {triple}")
        .env("RUSTFLAGS", &flags)
        .run()
        .map_err(|e| format!("static build for {triple} failed: {e}"))?;
    let path = binary_path(arch)?;
    if !path.exists() {
        return Err(format!("the build finished but {} is missing", path.display()));
    }
    Ok(path)
}
