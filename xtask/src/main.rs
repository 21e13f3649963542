//! Project automation in plain Rust: `cargo xtask <task>`. One module per task.

mod apt;
mod bench;
mod bench_collect;
mod bench_report;
mod check;
mod demo;
mod deps;
mod e2e;
mod failing_disk;
mod fakeboot;
mod fuzz;
mod image;
mod kcidb_check;
mod kernel_boot;
mod kernel_src;
mod lava;
mod lava_boot;
mod oldkernel;
mod qemu;
mod resets;
mod rpm_boot;
mod static_build;
mod sweep_boot;
mod test;
mod tidy;
mod watch_boot;
mod write_log;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "bootmark's project automation")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once; boxing would only obscure the flags
enum Task {
    /// Build the static /init binary (musl, runs on Linux 2.6.9+); prints its path last.
    Static {
        /// Target architecture.
        #[arg(long, default_value = "x86_64", value_parser = ["x86_64", "i686"])]
        arch: String,
    },
    /// Run every test: unit and integration tests, then the old-kernel harness.
    Test,
    /// Run the quick plan with both static binaries under simulated 2.6.9 and 2.6.16 syscall surfaces.
    OldKernel,
    /// Build a kernel from source with a config from kernel-configs/ (checked tarball,
    /// toolchain and options; incremental); prints the vmlinuz path last.
    Kernel(kernel_src::Args),
    /// Build the boot image: kernels in, usb.img + pxe/ + manifest.json out.
    Image(image::Args),
    /// LAVA job definitions from a built image: one per boot entry, for LAVA's qemu device
    /// type and for physical x86 servers booting over the network (docs/lava.md).
    Lava(lava::Args),
    /// Boot a built image in QEMU (USB stick, SATA scratch disks, serial log); waits for power-off.
    Qemu(qemu::Args),
    /// The whole loop in QEMU: two Debian kernels, one image, a boot each, the comparison table.
    Demo(demo::Args),
    /// Build an image with Debian's current kernel and boot it in QEMU; check the records.
    E2e,
    /// Fuzz the serial log parser for a while (installs cargo-fuzz if missing).
    Fuzz {
        #[arg(long, default_value_t = 30)]
        seconds: u64,
    },
    /// The collector on generated console logs, next to grep -c: MB/s and peak memory.
    BenchCollect(bench_collect::Args),
    /// `bootmark report` on generated fleet records (1,000,000 by default), next to grep -c: time and peak memory.
    BenchReport(bench_report::Args),
    /// Boot /init as PID 1 in namespaces with loop devices: happy path and refusals.
    FakeBoot,
    /// (used by fake-boot) Inside new namespaces: chroot to ROOT and exec /init as PID 1.
    #[command(hide = true)]
    Pid1 {
        #[arg(long)]
        old_kernel: Option<String>,
        root: std::path::PathBuf,
    },
    /// A kernel built from Debian's linux-source-6.1 with kernel-configs/6.1, imaged and booted.
    #[command(hide = true)]
    KernelBoot,
    /// The boots of today's servers alone: the target on NVMe, Secure Boot on and off, the ISO.
    TodaysServers,
    /// The kernel-RPM boot alone, on the image `cargo xtask e2e` built (target/e2e/image).
    RpmBoot,
    /// The 32-bit boot alone (Debian's 686 kernel, the i686 /init and mke2fs).
    I686Boot,
    /// The sweep boot alone (the `sweep` plan's two variants in one QEMU boot).
    #[command(hide = true)]
    SweepBoot,
    /// The failing-disk boot alone, on the image `cargo xtask e2e` built (target/e2e/image).
    FailingDisk,
    /// `bootmark watch` over QEMU's TCP serial alone, on the image `cargo xtask e2e` built.
    #[command(hide = true)]
    WatchBoot,
    /// The LAVA jobs alone (lava-run), on the image `cargo xtask e2e` built (target/e2e/image).
    #[command(hide = true)]
    LavaBoot,
    /// The KCIDB export against kcidb-io's validator alone.
    #[command(hide = true)]
    KcidbCheck,
    /// The stick write-log replay alone, on the image `cargo xtask e2e` built (target/e2e/image).
    WriteLog,
    /// The reset campaign alone, on the image `cargo xtask e2e` built (target/e2e/image).
    Resets {
        #[arg(long, default_value_t = resets::CI_KILLS)]
        kills: usize,
    },
    /// Compare bootmark with dd and fio on one filesystem; prints medians and ratios.
    Bench(bench::Args),
}

fn main() -> ExitCode {
    let result = match Cli::parse().task {
        Task::Static { arch } => static_build::build(&arch).map(|path| println!("{}", path.display())),
        Task::Test => test::run(),
        Task::OldKernel => oldkernel::harness(),
        Task::Bench(args) => bench::run(&args),
        Task::Kernel(args) => kernel_src::run(&args),
        Task::KernelBoot => kernel_boot::test(&project_root().join("target/kernel-boot")),
        Task::Image(args) => image::run(&args),
        Task::Qemu(args) => qemu::run(&args),
        Task::Lava(args) => lava::run(&args),
        Task::Demo(args) => demo::run(&args),
        Task::Fuzz { seconds } => fuzz::run(seconds),
        Task::BenchCollect(args) => bench_collect::run(&args),
        Task::BenchReport(args) => bench_report::run(&args),
        Task::E2e => e2e::harness(),
        Task::TodaysServers => check::boots::alone(),
        Task::RpmBoot => {
            let base = project_root().join("target/e2e");
            e2e::resolve_meta("linux-image-amd64").and_then(|p| rpm_boot::test(&base.join("image"), &p, &base))
        }
        Task::I686Boot => e2e::i686_test(&project_root().join("target/e2e")),
        Task::SweepBoot => sweep_boot::alone(),
        Task::WatchBoot => {
            let base = project_root().join("target/e2e");
            watch_boot::test(&base.join("image"), &base)
        }
        Task::KcidbCheck => kcidb_check::check(),
        Task::LavaBoot => {
            let base = project_root().join("target/e2e");
            e2e::resolve_meta("linux-image-amd64").and_then(|p| lava_boot::test(&base.join("image"), &p, &base))
        }
        Task::FailingDisk => {
            let base = project_root().join("target/e2e");
            failing_disk::test(&base.join("image"), &base)
        }
        Task::WriteLog => {
            let base = project_root().join("target/e2e");
            write_log::test(&base.join("image"), &base)
        }
        Task::Resets { kills } => {
            let base = project_root().join("target/e2e");
            resets::campaign(&base.join("image"), &base, kills)
        }
        Task::FakeBoot => fakeboot::harness(),
        Task::Pid1 { old_kernel, root } => fakeboot::pid1(&root, old_kernel.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (xtask lives one level below it).
pub fn project_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub type Result<T> = std::result::Result<T, String>;
