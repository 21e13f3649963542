//! `cargo xtask test`: the README's test command. Builds what the tests need
//! (static binaries, adding rustup targets), runs the workspace's tests, then
//! the old-kernel harness, the fake boots of /init (root, loop devices) and
//! the QEMU boots of real images with Debian's kernels, and 30 s of fuzzing.

use crate::{Result, e2e, fakeboot, fuzz, oldkernel, project_root, static_build};
use xshell::{Shell, cmd};

pub fn run() -> Result<()> {
    let sh = Shell::new().map_err(|e| e.to_string())?;
    sh.change_dir(project_root());
    for arch in ["x86_64", "i686"] {
        static_build::build(arch)?;
    }
    cmd!(sh, "cargo test --workspace").run().map_err(|e| format!("cargo test failed: {e}"))?;
    oldkernel::harness()?;
    fakeboot::harness()?;
    e2e::harness()?;
    fuzz::run(30)
}
