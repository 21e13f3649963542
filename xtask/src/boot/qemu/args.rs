//! `cargo xtask qemu`'s flags, read in one place: `machine.rs` resolves
//! them into the machine, `mod.rs` runs the boot they describe.

use std::path::PathBuf;

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Image directory made by `cargo xtask image`.
    #[arg(long, default_value = "target/image")]
    pub image: PathBuf,
    /// The machine's architecture: x86_64 and i686 boot a PC (q35, or the
    /// 2006 i440FX), aarch64 (arm64) QEMU's virt machine under AAVMF's UEFI
    /// with NVMe disks. Default: the booted entry's, else the default entry's.
    #[arg(long, value_enum)]
    pub arch: Option<crate::build::arch::Arch>,
    /// Boot this menu entry (0-based, in the image's manifest order); it becomes the stick's default.
    #[arg(long)]
    pub entry: Option<usize>,
    /// Boot the entry with this label (k0, k1, k0-rt…: what a `[server.qemu]` lab
    /// command gets as {entry}); it becomes the stick's default.
    #[arg(long, value_name = "LABEL", conflicts_with = "entry")]
    pub entry_label: Option<String>,
    /// With --entry or --entry-label: boot it with these settings on its kernel command line
    /// (bootmark.set=vm.NAME=N,queue.NAME=V,…, what a `[server.qemu]` lab command gets as
    /// {set}); empty: as the image built it. Written into the stick's menus, replacing
    /// an earlier boot's.
    #[arg(long, value_name = "SETTINGS")]
    pub set: Option<String>,
    /// Before booting, make the first --disk a fresh filesystem of this type (ext2, ext3,
    /// ext4, xfs, reiserfs) labelled SCRATCH, keeping its size (1 GiB if it does not
    /// exist): every boot on a clean disk, as the demo and a `[server.qemu]` lab want.
    #[arg(long, value_name = "FS", value_parser = ["ext2", "ext3", "ext4", "xfs", "reiserfs"])]
    pub fresh_disk: Option<String>,
    /// Scratch disk images attached to the machine (repeatable; SATA unless --disk-bus says).
    #[arg(long = "disk", value_name = "FILE")]
    pub disks: Vec<PathBuf>,
    /// The bus of the N-th --disk (repeatable, in order): sata (AHCI), nvme, scsi (LSI
    /// 53C895A, sym53c8xx), ide (PIIX, --machine old) or virtio. Default: sata, or scsi with
    /// --machine old.
    #[arg(long = "disk-bus", value_name = "BUS", value_parser = ["sata", "nvme", "scsi", "ide", "virtio"])]
    pub disk_buses: Vec<String>,
    /// modern: a current PC (q35 chipset), the stick on xHCI, disks on AHCI or NVMe. old: a
    /// 2006-era PC that a 2.6 kernel knows (i440FX): the stick on EHCI (USB 2.0), disks on an
    /// LSI SCSI HBA or PIIX IDE. dl140: the seed's server (an HP DL140: one CPU, 1 GiB, one
    /// SATA disk) as today's kernels drive it: the modern machine with 1 CPU, 1 GiB and the
    /// disks throttled like a 2006 SATA disk (30 MB/s, 240 requests/s, a request counted
    /// once per 128 KiB), each unless --cpus, --memory or --disk-* say otherwise: every
    /// kernel compared on it gets the same AHCI controller. All have an Intel CPU model
    /// (Linux before about 2.6.2x panics on QEMU's AMD-vendor default).
    #[arg(long, default_value = "modern", value_parser = ["modern", "old", "dl140"])]
    pub machine: String,
    /// Boot firmware UEFI (OVMF) instead of BIOS.
    #[arg(long)]
    pub uefi: bool,
    /// UEFI with Secure Boot on: OVMF's secboot firmware with Microsoft's keys enrolled,
    /// as servers ship (implies --uefi; the image must carry the signed chain:
    /// `cargo xtask image --secure-boot`).
    #[arg(long)]
    pub secure_boot: bool,
    /// Boot the image's bootmark.iso as a CD-ROM (a BMC's virtual media), with the stick
    /// attached but not bootable (--no-stick: without it; results then on serial only).
    #[arg(long)]
    pub cdrom: bool,
    /// With --cdrom: this ISO instead of the image's bootmark.iso (a copy that
    /// `bootmark lab` published with another default entry).
    #[arg(long, value_name = "FILE", requires = "cdrom")]
    pub iso: Option<PathBuf>,
    /// Attach no USB stick.
    #[arg(long)]
    pub no_stick: bool,
    /// Boot over the network from the image's pxe/ tree (the stick stays attached, not bootable).
    #[arg(long)]
    pub pxe: bool,
    /// With --pxe: serve this directory over TFTP instead of the image's pxe/ (a lab's
    /// TFTP root, where `bootmark lab` writes per-MAC configs).
    #[arg(long, value_name = "DIR")]
    pub tftp_root: Option<PathBuf>,
    /// The network card's MAC address (default: QEMU's 52:54:00:12:34:56).
    #[arg(long, value_name = "MAC")]
    pub mac: Option<String>,
    /// Print the QEMU command line instead of booting (for a BMC simulator's power script).
    #[arg(long)]
    pub print_command: bool,
    /// Serial log file (default: IMAGE/serial.log).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Guest memory in MiB [default: 1024].
    #[arg(long)]
    pub memory: Option<u32>,
    /// Virtual CPUs [default: 2; 1 with --machine dl140].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: Option<u32>,
    /// Run an unattended sequence: after each reboot start the machine again
    /// (a cold boot each time), and reset a boot that hangs, like a hardware
    /// watchdog would, until the guest powers off.
    #[arg(long)]
    pub sequence: bool,
    /// Try KVM (falls back to TCG only if QEMU refuses to start).
    #[arg(long)]
    pub kvm: bool,
    /// Install missing host tools with apt-get (root, Debian/Ubuntu).
    #[arg(long)]
    pub install_deps: bool,
    /// Record every write the guest makes to the stick in this file (QEMU's
    /// blklogwrites, the dm-log-writes format), to replay them later.
    #[arg(long, value_name = "FILE")]
    pub stick_write_log: Option<PathBuf>,
    /// Make the first --disk fail: QEMU blkdebug rules from this file (a
    /// disk that dies mid-run, to see what the records say).
    #[arg(long, value_name = "BLKDEBUG_CONFIG")]
    pub disk_fault: Option<PathBuf>,
    /// Make the --disks as slow as an old disk: at most this many MB/s, reads
    /// and writes together (QEMU's I/O throttling; 30 is a 2006 SATA disk).
    /// 0: unthrottled [default: 0; 30 with --machine dl140].
    #[arg(long, value_name = "MB_S")]
    pub disk_mbps: Option<u32>,
    /// With --disk-mbps: at most this many requests per second (a 2006 disk's
    /// seeks and command overhead) [default: 240: 240 × 128 KiB is just over
    /// 30 MB/s, so a sequential stream is limited by its bytes, not by the size
    /// of its requests].
    #[arg(long, value_name = "N", default_value_t = 240)]
    pub disk_iops: u32,
    /// With --disk-mbps: a request counts as one per this many KiB, so a
    /// kernel that merges writes into large requests is not favoured over one
    /// that sends 128 KiB ones (QEMU's iops-size) [default: 128].
    #[arg(long, value_name = "KIB", default_value_t = 128)]
    pub disk_iops_kib: u32,
    /// Also serve the serial console on 127.0.0.1:PORT, like a console
    /// server (`bootmark watch tcp:127.0.0.1:PORT`); the guest starts only
    /// once a client is connected, so it sees the whole boot.
    #[arg(long, value_name = "PORT")]
    pub serial_tcp: Option<u16>,
}
