//! Project automation in plain Rust: `cargo xtask <command>`. The code is in
//! rooms by role: `build/` (what users build: /init, kernels, images, LAVA
//! jobs), `boot/` (QEMU, the demo), `bench/` (figures beside dd, fio, grep),
//! `check/` (the test suite and each of its parts) and `host/` (the process
//! runner, apt, the host tool tables). Lower rooms never import higher ones:
//! host ← build ← boot, bench ← check (tidy checks).

mod bench;
mod boot;
mod build;
mod check;
mod host;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "bootmark's project automation: build and boot images, run the tests")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

/// The user's commands first, then the tests.
#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once; boxing would only obscure the flags
enum Task {
    /// Build the boot image: kernels in, usb.img + bootmark.iso + pxe/ + manifest.json out.
    Image(build::image::Args),
    /// Build a kernel from source with a config from kernel-configs/ (checked tarball,
    /// toolchain and options; incremental); prints the vmlinuz path last.
    Kernel(build::kernel_src::Args),
    /// Build the static /init binary (musl; x86 runs on Linux 2.6.9+, aarch64 on 3.7+); prints
    /// its path last.
    Static {
        /// Target architecture (aarch64, alias arm64: the /init only, no image yet).
        #[arg(long, value_enum, default_value_t = build::arch::Arch::X86_64)]
        arch: build::arch::Arch,
    },
    /// Build an example program for `command` workloads (image/programs/NAME.c) static
    /// with musl; prints its path, for `cargo xtask image --include`.
    Program(build::program::Args),
    /// LAVA job definitions from a built image: one per boot entry, for LAVA's qemu device
    /// type and for physical x86 servers booting over the network (docs/lava.md).
    Lava(build::lava::Args),
    /// Boot a built image in QEMU (USB stick, SATA scratch disks, serial log); waits for power-off.
    Qemu(boot::qemu::Args),
    /// The whole loop in QEMU: three Debian kernels (5.10, 6.1, 6.12), one image, a boot each, the verdict and the comparison table.
    Demo(boot::demo::Args),
    /// Compare bootmark with dd and fio on one filesystem; prints medians and ratios.
    Bench(bench::disk::Args),
    /// The collector on generated console logs, next to grep -c: MB/s and peak memory.
    BenchCollect(bench::collect::Args),
    /// `bootmark report` on generated fleet records (1,000,000 by default), next to grep -c: time and peak memory.
    BenchReport(bench::report::Args),
    /// Every test, each part timed: host tools, static builds, cargo test, the report at fleet
    /// scale, the KCIDB schema, the report's pictures in headless Chromium, the old-kernel harness, fake boots, the QEMU boots, a kernel
    /// from source, fuzzing. Installs what it needs (as root on Debian/Ubuntu).
    Test,
    /// One part of the tests alone (`cargo xtask check --help` lists them).
    Check {
        #[command(subcommand)]
        check: check::command::Check,
    },
    /// (used by the fake boots) Inside new namespaces: chroot to ROOT and exec /init as PID 1.
    #[command(hide = true)]
    Pid1 {
        #[arg(long)]
        old_kernel: Option<String>,
        root: std::path::PathBuf,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().task {
        Task::Image(args) => build::image::run(&args),
        Task::Kernel(args) => build::kernel_src::run(&args),
        Task::Static { arch } => build::static_binary::build(arch).map(|path| {
            eprintln!("xtask: static /init for {arch}, meant for Linux {} and later", arch.oldest_kernel());
            println!("{}", path.display())
        }),
        Task::Program(args) => build::program::run_args(&args),
        Task::Lava(args) => build::lava::run(&args),
        Task::Qemu(args) => boot::qemu::run(&args),
        Task::Demo(args) => boot::demo::run(&args),
        Task::Bench(args) => bench::disk::run(&args),
        Task::BenchCollect(args) => bench::collect::run(&args),
        Task::BenchReport(args) => bench::report::run(&args),
        Task::Test => check::suite::run(),
        Task::Check { check } => check::command::run(check),
        Task::Pid1 { old_kernel, root } => check::fake_boots::pid1(&root, old_kernel.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}
