//! `cargo xtask test`: the README's test command. Installs the host tools the
//! tests use (as root on Debian/Ubuntu: `deps.rs`), builds what the tests
//! need (static binaries, adding rustup targets), runs the workspace's tests,
//! then the old-kernel harness, the fake boots of /init (root, loop devices)
//! and the QEMU boots of real images with Debian's kernels, a kernel built
//! from Debian's source with kernel-configs/6.1 and booted, and 30 s of
//! fuzzing. Prints how long each part took.

use super::boots::{self, kernel_from_source};
use super::{fake_boots, fuzz, kcidb, old_kernel};
use crate::bench::report as bench_report;
use crate::build::arch::Arch;
use crate::build::static_binary;
use crate::host::deps;
use crate::host::process::{command, run_shown};
use crate::host::project::{Result, project_root};
use std::time::Instant;

pub fn run() -> Result<()> {
    let started = Instant::now();
    let mut laps = Vec::new();
    let mut lap = |name: &str, part: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        let t = Instant::now();
        let result = part();
        laps.push(format!("{name}: {:.0} s", t.elapsed().as_secs_f64()));
        eprintln!("xtask test: {}", laps.last().unwrap());
        result
    };
    deps::add_sbin_to_path();
    lap("host tools", &mut deps::ensure_test_tools)?;
    lap("static builds", &mut || Arch::ALL.into_iter().try_for_each(|a| static_binary::build(a).map(|_| ())))?;
    lap("cargo test", &mut || run_shown(command("cargo").args(["test", "--workspace"]).current_dir(project_root())))?;
    lap("report at fleet scale", &mut bench_report::check)?;
    lap("KCIDB schema", &mut kcidb::check)?;
    lap("old-kernel harness", &mut old_kernel::harness)?;
    lap("fake boots", &mut fake_boots::harness)?;
    // The kernel from source builds beside the QEMU boots, at nice 19: the
    // boots keep one core busy on average, the build takes what is left.
    let kernel = std::thread::spawn(|| {
        kernel_from_source::lowest_priority();
        kernel_from_source::build(&project_root().join("target/kernel-boot"))
    });
    let boots = lap("QEMU boots", &mut boots::harness);
    let mut built = Some(kernel.join().map_err(|_| "the kernel build panicked".to_string())?);
    boots?;
    lap("kernel from source (its boot; built beside the QEMU boots)", &mut || {
        kernel_from_source::boot(built.take().ok_or("booted twice")??)
    })?;
    lap("fuzzing", &mut || fuzz::run(30))?;
    eprintln!("xtask test: all parts passed in {:.0} s ({})", started.elapsed().as_secs_f64(), laps.join(", "));
    Ok(())
}
