//! `cargo xtask test`: the README's test command. Installs the host tools the
//! tests use (as root on Debian/Ubuntu: `deps.rs`), builds what the tests
//! need (static binaries, adding rustup targets), runs the workspace's tests,
//! then the old-kernel harness, the aarch64 /init under qemu-user, the fake boots of /init (root, loop devices)
//! and the QEMU boots of real images with Debian's kernels, kernels built
//! from Debian's source with kernel-configs/6.1 (x86_64, and aarch64 cross-built; from the
//! static builds on, beside every other part) and booted, the report's
//! pictures screenshot in headless Chromium, and 30 s of fuzzing (cargo-fuzz
//! and its targets built beside the QEMU boots, as the kernel is). Prints how long each part took; after the setup, a failing part
//! does not stop the others, and every failure is listed at the end.

use super::boots::scenarios::Group;
use super::boots::{self, kernel_from_source, resets};
use super::{arm64_init, fake_boots, fuzz, kcidb, old_kernel, pictures};
use crate::bench::report as bench_report;
use crate::build::arch::Arch;
use crate::build::static_binary;
use crate::host::deps;
use crate::host::process::{cmd, run_shown, shell_in};
use crate::host::project::{Result, project_root};
use std::time::Instant;

pub fn run() -> Result<()> {
    let started = Instant::now();
    let mut parts = Parts::default();
    deps::add_sbin_to_path();
    // What every later part needs: a failure here stops the suite.
    parts.time("host tools", &mut deps::ensure_test_tools)?;
    parts.time("static builds", &mut || static_binary::build_all(&Arch::ALL).map(|_| ()))?;
    // The kernels from source build beside everything after this, at nice
    // 19: the parts before the QEMU boots run on one core most of the time
    // (63 min with the build started at the boots, 2026-12-07: 25 % of the
    // cores idle), and the boots keep one core busy on average; the build
    // takes what is left. x86_64 first; arm64's cross build goes on after it.
    let kernels = std::thread::spawn(|| {
        kernel_from_source::lowest_priority();
        let base = project_root().join("target/kernel-boot");
        let x86 = kernel_from_source::build(&base, Arch::X86_64);
        (x86, kernel_from_source::build(&base, Arch::Aarch64))
    });
    // cargo-fuzz and the fuzz targets build beside them too, at nice 19
    // (minutes of compiling that the fuzzing part then no longer waits for).
    let fuzz_ready = std::thread::spawn(|| {
        kernel_from_source::lowest_priority();
        fuzz::prepare()
    });
    // From here every part runs whatever failed before it; the failures are listed at the end.
    parts.run("cargo test", &mut || {
        let sh = shell_in(&project_root())?;
        run_shown(cmd!(sh, "cargo test --workspace"))
    });
    parts.run("report at fleet scale", &mut bench_report::check);
    parts.run("KCIDB schema", &mut kcidb::check);
    parts.run("the report's pictures in Chromium", &mut pictures::check);
    parts.run("old-kernel harness", &mut old_kernel::harness);
    parts.run("arm64 /init under qemu-user", &mut arm64_init::check);
    parts.run("fake boots", &mut fake_boots::harness);
    // A second lane of boots once both kernels are built: their core is free
    // then. Until then the first lane takes the scenarios that must boot
    // alone, beside the builds; opened at the x86 build's end (as before the
    // builds started early), those were left for last with a core idle.
    let built = || kernels.is_finished() && fuzz_ready.is_finished();
    parts.run("QEMU boots", &mut || boots::run_group(Group::E2e, resets::CI_KILLS, &built));
    let (x86, arm64) = kernels.join().map_err(|_| "the kernel build panicked".to_string())?;
    for (arch, built) in [(Arch::X86_64, x86), (Arch::Aarch64, arm64)] {
        let mut built = Some(built);
        parts.run(&format!("kernel from source, {arch} (its boot; built beside the QEMU boots)"), &mut || {
            kernel_from_source::boot(built.take().ok_or("booted twice")??)
        });
    }
    let mut fuzz_ready = Some(fuzz_ready);
    parts.run("fuzzing (cargo-fuzz and its targets built beside the QEMU boots)", &mut || {
        let ready = fuzz_ready.take().ok_or("fuzzed twice")?.join();
        if let Ok(Err(e)) | Err(e) = ready.map_err(|_| "it panicked".to_string()) {
            // Whatever it did not build, fuzz::run builds now, in sight.
            eprintln!("xtask test: building for the fuzzing beside the boots failed ({e}); building it now");
        }
        fuzz::run(30)
    });
    parts.finish(started)
}

/// Lines of a part's failure repeated in the summary at the end.
const FAILURE_LINES: usize = 12;

/// The suite's parts: how long each took, and which failed.
#[derive(Default)]
struct Parts {
    laps: Vec<String>,
    failed: Vec<String>,
}

impl Parts {
    /// Run a part and print how long it took.
    fn time(&mut self, name: &str, part: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        let (t, ticks) = (Instant::now(), crate::host::cpu::Ticks::now());
        let result = part();
        self.laps.push(format!("{name}: {:.0} s, {}", t.elapsed().as_secs_f64(), ticks.said_since()));
        eprintln!("xtask test: {}", self.laps.last().unwrap());
        result
    }

    /// Run a part; a failure is printed now and listed at the end.
    fn run(&mut self, name: &str, part: &mut dyn FnMut() -> Result<()>) {
        if let Err(e) = self.time(name, part) {
            eprintln!("xtask test: FAILED {name}: {e}");
            // Its first lines again at the end: a CI log is read from its tail.
            let lines: Vec<&str> = e.lines().take(FAILURE_LINES).collect();
            self.failed.push(format!("{name}: {}", lines.join("\n    ")));
        }
    }

    fn finish(self, started: Instant) -> Result<()> {
        let total = started.elapsed().as_secs_f64();
        if self.failed.is_empty() {
            eprintln!("xtask test: all parts passed in {total:.0} s ({})", self.laps.join(", "));
            return Ok(());
        }
        eprintln!("xtask test: {} part(s) failed in {total:.0} s ({})", self.failed.len(), self.laps.join(", "));
        Err(format!("these parts failed:\n  {}", self.failed.join("\n  ")))
    }
}
