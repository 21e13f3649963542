//! The flags of `cargo xtask image`, as clap parses them: the raw request,
//! read once by `resolve.rs` and by nothing after it.

use crate::build::arch::Arch;
use std::path::PathBuf;

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// A prebuilt bzImage (repeatable); each becomes a boot entry.
    #[arg(long = "kernel", value_name = "PATH")]
    pub kernels: Vec<PathBuf>,
    /// The lib/modules/<release> tree of the N-th --kernel (repeatable, in order;
    /// default: ../lib/modules/<release> beside a kernel taken from a /boot tree).
    #[arg(long = "modules", value_name = "DIR")]
    pub modules: Vec<PathBuf>,
    /// The build config of the N-th --kernel (repeatable, in order; default:
    /// config-<release> beside it): decides built-in drivers and --arch, and
    /// refuses a kernel that cannot run the image.
    #[arg(long = "kernel-config", value_name = "FILE")]
    pub kernel_configs: Vec<PathBuf>,
    /// A Debian kernel package: a .deb path, a package name fetched with the
    /// system's apt-get download, or NAME@SUITE from any Debian suite through an
    /// apt state of its own in target/cache/apt/SUITE (linux-image-amd64@trixie,
    /// linux-image-686@bullseye, linux-image-amd64@bookworm-backports; /etc/apt is
    /// not touched) (repeatable).
    #[arg(long = "kernel-deb", value_name = "NAME|NAME@SUITE|PATH")]
    pub kernel_debs: Vec<String>,
    /// A kernel RPM (SLES, RHEL/CentOS, Fedora; any age): its vmlinuz, config and
    /// modules are taken, compressed modules decompressed (repeatable).
    #[arg(long = "kernel-rpm", value_name = "PATH")]
    pub kernel_rpms: Vec<PathBuf>,
    /// A kernel source, tarball or tree, built first with its kernel-configs/ line
    /// (as `cargo xtask kernel` does; --arch picks the config, default x86_64) (repeatable).
    #[arg(long = "kernel-src", value_name = "TARBALL|DIR")]
    pub kernel_src: Vec<PathBuf>,
    /// The kernel-configs/ line for --kernel-src (default: the line that records the
    /// tarball's hash, or the tree's version).
    #[arg(long = "kernel-src-config", value_name = "kernel-configs/LINE")]
    pub kernel_src_config: Option<PathBuf>,
    /// Build --kernel-src tarballs whose SHA-256 the line does not record.
    #[arg(long = "kernel-src-allow-unknown")]
    pub kernel_src_allow_unknown: bool,
    /// Build the image although a kernel lacks these required modules (the
    /// builder names them and what the image loses without them, e.g. the
    /// results stick: results then come over the serial console only).
    #[arg(long, value_delimiter = ',', value_name = "MODULE,…")]
    pub allow_missing: Vec<String>,
    /// Architecture of --kernel images whose header cannot tell (boot protocol < 2.12); a kernel
    /// whose file or package says another architecture is refused.
    #[arg(long, value_enum)]
    pub arch: Option<Arch>,
    /// Output directory.
    #[arg(long, default_value = "target/image")]
    pub out: PathBuf,
    /// Plan every entry runs: a built-in name, a file in image/plans by name, or a plan
    /// file by path (carried in the image under the plan's own "name").
    #[arg(long, default_value = "quick")]
    pub plan: String,
    /// bootmark.target for every entry (LABEL=…, UUID=…, PARTUUID=…, /dev/…; LV=vg/lv or MD=uuid for a
    /// logical volume or md array, which /init activates). Without it, boots report how to set one.
    #[arg(long)]
    pub target: Option<String>,
    /// Extra kernel command line for every entry.
    #[arg(long, default_value = "")]
    pub append: String,
    /// Entry booted by default (0-based).
    #[arg(long, default_value_t = 0)]
    pub default: usize,
    /// Serial console of x86 kernels as DEVICE,BAUD (ttyS<N>: GRUB and
    /// syslinux drive it too).
    #[arg(long, default_value = "ttyS0,115200")]
    pub serial: String,
    /// Serial console of arm64 kernels as DEVICE,BAUD: ttyAMA0 is the PL011
    /// of most arm64 servers (an SBSA UART) and of QEMU's virt machine; some
    /// (Graviton bare metal) have a 16550, ttyS0. GRUB uses the firmware's
    /// console there.
    #[arg(long, default_value = "ttyAMA0,115200")]
    pub serial_arm64: String,
    /// Put an unattended sequence on the stick: every entry, this many times
    /// (× every --sequence-fs); each boot runs one step and reboots into the next.
    #[arg(long, value_name = "REPEAT")]
    pub sequence: Option<u32>,
    /// Filesystems a sequence formats the target with, one step each (needs --format-confirm).
    #[arg(long, value_delimiter = ',', value_name = "FS,…")]
    pub sequence_fs: Vec<String>,
    /// Allow formatting the target: must repeat --target exactly.
    #[arg(long, value_name = "TARGET")]
    pub format_confirm: Option<String>,
    /// Put mkfs programs for these filesystems into the initramfs, for
    /// confirmed formatting: ext2/ext3/ext4 a static mke2fs built from pinned
    /// e2fsprogs sources (x86_64 and i686; runs on 2.6 kernels too); others
    /// the host's programs (x86_64 images, kernels 3.2+)
    #[arg(long, value_delimiter = ',', value_name = "FS,…")]
    pub mkfs: Vec<String>,
    /// A file of yours into the image at DEST (default /usr/local/bin/NAME): the static
    /// program a plan's `command` workload runs, or a file it reads (repeatable). A
    /// program the plan runs is refused unless it is a static ELF for the image's kernels.
    #[arg(long = "include", value_name = "SRC[:DEST]")]
    pub includes: Vec<String>,
    /// Put a static fio (built from Debian 12's fio 3.33 source with musl, cached) in the
    /// image at /usr/local/bin/fio, for the plan's `fio` workloads (x86_64 and i686, running on
    /// 2.6.9+; aarch64, cross-built).
    #[arg(long)]
    pub fio: bool,
    /// Stick image size in MiB (default: contents plus 128 MiB).
    #[arg(long)]
    pub size: Option<u64>,
    /// Size of the results journal on the stick in MiB (default 32: thousands of records).
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub journal_mib: Option<u64>,
    /// For servers with UEFI Secure Boot on: boot through Debian's signed chain (shim,
    /// signed by Microsoft; GRUB, signed by Debian) on the stick, the ISO and pxe/. Every
    /// kernel must be signed (Debian's are; the build stops at one that is not, naming how
    /// to sign it). Chosen, not automatic: it changes the bootloader of every output.
    #[arg(long)]
    pub secure_boot: bool,
    /// Install missing host tools with apt-get (root, Debian/Ubuntu).
    #[arg(long)]
    pub install_deps: bool,
    /// The static bootmark to use as /init (default: build it with `cargo xtask static`).
    #[arg(long, value_name = "PATH")]
    pub bootmark_binary: Option<PathBuf>,
    /// Check an existing image directory against its manifest.json and exit.
    #[arg(long, value_name = "DIR")]
    pub verify: Option<PathBuf>,
}

/// The defaults `cargo xtask image` has (plan quick, serial ttyS0,115200, out
/// target/image), for the images other tasks build: the flags' own.
impl Default for Args {
    fn default() -> Args {
        crate::host::project::flags_given(&[])
    }
}
