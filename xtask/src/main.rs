//! Project automation in plain Rust: `cargo xtask <command>`. The code is in
//! rooms by role: `build/` (what users build: /init, kernels, images, LAVA
//! jobs), `boot/` (QEMU, the demo), `bench/` (figures beside dd, fio, grep),
//! `check/` (the test suite and each of its parts) and `host/` (the process
//! runner, apt, the host tool tables). Lower rooms never import higher ones:
//! host ← build ← boot ← check.

mod bench;
mod boot;
mod build;
mod check;
mod host;

use check::boots;
use clap::{Parser, Subcommand};
use host::project::{Result, project_root};
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
    /// Build the static /init binary (musl, runs on Linux 2.6.9+); prints its path last.
    Static {
        /// Target architecture.
        #[arg(long, value_enum, default_value_t = build::arch::Arch::X86_64)]
        arch: build::arch::Arch,
    },
    /// LAVA job definitions from a built image: one per boot entry, for LAVA's qemu device
    /// type and for physical x86 servers booting over the network (docs/lava.md).
    Lava(build::lava::Args),
    /// Boot a built image in QEMU (USB stick, SATA scratch disks, serial log); waits for power-off.
    Qemu(boot::qemu::Args),
    /// The whole loop in QEMU: two Debian kernels, one image, a boot each, the comparison table.
    Demo(boot::demo::Args),
    /// Compare bootmark with dd and fio on one filesystem; prints medians and ratios.
    Bench(bench::disk::Args),
    /// The collector on generated console logs, next to grep -c: MB/s and peak memory.
    BenchCollect(bench::collect::Args),
    /// `bootmark report` on generated fleet records (1,000,000 by default), next to grep -c: time and peak memory.
    BenchReport(bench::report::Args),
    /// Every test, each part timed: host tools, static builds, cargo test, the report at fleet
    /// scale, the KCIDB schema, the old-kernel harness, fake boots, the QEMU boots, a kernel
    /// from source, fuzzing. Installs what it needs (as root on Debian/Ubuntu).
    Test,
    /// One part of the tests alone (`cargo xtask check --help` lists them).
    Check {
        #[command(subcommand)]
        check: Check,
    },
    /// (used by the fake boots) Inside new namespaces: chroot to ROOT and exec /init as PID 1.
    #[command(hide = true)]
    Pid1 {
        #[arg(long)]
        old_kernel: Option<String>,
        root: std::path::PathBuf,
    },
}

/// The parts of `cargo xtask test`, and the QEMU scenarios one by one. Those
/// marked "on the e2e image" use target/e2e/image, which `check e2e` builds.
#[derive(Subcommand)]
enum Check {
    /// The quick plan with both static binaries under simulated 2.6.9 and 2.6.16 syscall surfaces.
    OldKernel,
    /// /init as PID 1 in namespaces with loop devices: happy path, hostile command lines, refusals.
    FakeBoots,
    /// Every QEMU boot: an image with Debian's current kernel, booted every way; records checked.
    E2e,
    /// The boots of today's servers: the target on NVMe, Secure Boot on and off, the ISO.
    TodaysServers,
    /// The kernel-RPM boot, on the e2e image.
    KernelRpm,
    /// The 32-bit boot (Debian's 686 kernel, the i686 /init and mkreiserfs).
    I686,
    /// The sweep boot (the `sweep` plan's variants in one QEMU boot).
    Sweep,
    /// The failing-disk boot, on the e2e image.
    FailingDisk,
    /// `bootmark watch` over QEMU's TCP serial, on the e2e image.
    Watch,
    /// The LAVA jobs (lava-run), on the e2e image.
    Lava,
    /// `bootmark lab` through ipmi_sim and ipmitool: PXE, SOL, a hung step, a resumed run;
    /// then through sushy-tools' Redfish emulator: virtual media, BIOS and UEFI; then with
    /// a `[server.qemu]` server (the demo's loop).
    Lab,
    /// The Redfish part of `lab` alone (sushy-tools, virtual media), on the lab's image.
    LabRedfish,
    /// The `[server.qemu]` part of `lab` alone, on the lab's image.
    LabQemu,
    /// Kernels from other Debian releases: Debian 13's from its suite booted on NVMe, and
    /// the demo's two-generation sibling (6.1 and 6.12, one run each).
    Generations,
    /// A target inside storage as installed: an LV on md RAID 1 across two SCSI disks,
    /// made by mdadm and lvm in a helper boot; the degraded array refused.
    Layers,
    /// md's striped levels as mdadm makes them (raid0, raid4, raid5 in six layouts, raid6,
    /// raid10 n2/f2/o2) read back through their members as /init reads them before assembly;
    /// a LABEL= inside an LV on RAID 5 with a bitmap found, run, the disks compared.
    MdLayouts,
    /// Crafted md/LVM2 metadata on disks beside a plain target (a 1 PiB metadata area, a
    /// text nested 100,000 deep, an md superblock claiming u32::MAX disks, a partitioned
    /// whole-disk member, two VGs of one name): the plan runs, each is named, none written.
    /// Builds the e2e image if `check e2e` has not.
    HostileDisks,
    /// The KCIDB export against kcidb-io's validator.
    Kcidb,
    /// The stick write-log replay, on the e2e image.
    WriteLog,
    /// The reset campaign, on the e2e image.
    Resets {
        #[arg(long, default_value_t = boots::resets::CI_KILLS)]
        kills: usize,
    },
    /// A kernel built from Debian's linux-source-6.1 with kernel-configs/6.1, imaged and booted.
    KernelFromSource,
    /// Fuzz the serial log parser and the md/LVM2 metadata readers, each for a while (installs cargo-fuzz if missing).
    Fuzz {
        #[arg(long, default_value_t = 30)]
        seconds: u64,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().task {
        Task::Image(args) => build::image::run(&args),
        Task::Kernel(args) => build::kernel_src::run(&args),
        Task::Static { arch } => build::static_binary::build(arch).map(|path| println!("{}", path.display())),
        Task::Lava(args) => build::lava::run(&args),
        Task::Qemu(args) => boot::qemu::run(&args),
        Task::Demo(args) => boot::demo::run(&args),
        Task::Bench(args) => bench::disk::run(&args),
        Task::BenchCollect(args) => bench::collect::run(&args),
        Task::BenchReport(args) => bench::report::run(&args),
        Task::Test => check::suite::run(),
        Task::Check { check } => run_check(check),
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

fn run_check(check: Check) -> Result<()> {
    // The scenarios that reuse the e2e image and its directory.
    let e2e = project_root().join("target/e2e");
    let image = e2e.join("image");
    let package = || host::apt::resolve_meta("linux-image-amd64");
    match check {
        Check::OldKernel => check::old_kernel::harness(),
        Check::FakeBoots => check::fake_boots::harness(),
        Check::E2e => boots::harness(),
        Check::TodaysServers => boots::alone(),
        Check::KernelRpm => package().and_then(|p| boots::kernel_rpm::test(&image, &p, &e2e)),
        Check::I686 => boots::i686::test(&e2e),
        Check::Sweep => boots::sweep::alone(),
        Check::FailingDisk => boots::failing_disk::test(&image, &e2e),
        Check::Watch => boots::live_console::test(&image, &e2e),
        Check::Lava => package().and_then(|p| boots::lava::test(&image, &p, &e2e)),
        Check::Lab => package().and_then(|p| boots::lab::image(&p, &e2e)).and_then(|image| {
            let ipmi = boots::lab::test(&image, &e2e);
            let redfish = boots::lab_redfish::test(&image, &e2e);
            let qemu = boots::lab_qemu::test(&image, &e2e);
            ipmi.and(redfish).and(qemu)
        }),
        Check::LabQemu => {
            package().and_then(|p| boots::lab::image(&p, &e2e)).and_then(|image| boots::lab_qemu::test(&image, &e2e))
        }
        Check::LabRedfish => {
            package().and_then(|p| boots::lab::image(&p, &e2e)).and_then(|image| boots::lab_redfish::test(&image, &e2e))
        }
        Check::Generations => {
            let nvme = boots::generations::trixie_on_nvme(&e2e);
            let two = boots::generations::two_generations(&e2e);
            nvme.and(two)
        }
        Check::Layers => package().and_then(|p| boots::layers::test(&p, &e2e)),
        Check::MdLayouts => package().and_then(|p| boots::md_layouts::test(&p, &e2e)),
        Check::HostileDisks => package().and_then(|p| {
            if !image.join("manifest.json").exists() {
                build::image::build(&boots::support::test_image(vec![p.clone()], image.clone(), None))?;
            }
            boots::hostile_disks::test(&image, &e2e, &p)
        }),
        Check::Kcidb => check::kcidb::check(),
        Check::WriteLog => boots::write_log::test(&image, &e2e),
        Check::Resets { kills } => boots::resets::campaign(&image, &e2e, kills),
        Check::KernelFromSource => boots::kernel_from_source::test(&project_root().join("target/kernel-boot")),
        Check::Fuzz { seconds } => check::fuzz::run(seconds),
    }
}
