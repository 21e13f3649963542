//! Every QEMU scenario in one table: its `check` name (its file's), the
//! tally's title, its `check --help` line, the groups it runs in and its
//! function. `cargo xtask check NAME`, `check e2e`, `check todays-servers`
//! and `check --help` are all read from it: a new scenario is its file and
//! one row. Every scenario takes the same [`Testbed`]: the directory it works
//! in, Debian's kernel package and the images, each made once when first
//! asked for.

use super::testbed::Testbed;
use super::{
    arm64, arm64_image, arm64_programs, arm64_secure_boot, bisect_ladder, boot_ways, built_image, command,
    failing_disk, generations, hostile_disks, i686, iso, kernel_rpm, lab_ipmi, lab_qemu, lab_redfish, lava, lvm_on_md,
    md_layouts, mechanisms, nvme, old_machine, resets, secure_boot, sequence, sweep, watch, write_log,
};
use crate::host::project::Result;

/// Scenarios run together by one `check` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Every boot; part of `cargo xtask test`.
    E2e,
    TodaysServers,
    Generations,
    Lab,
}

impl Group {
    pub const ALL: [Group; 4] = [Group::E2e, Group::TodaysServers, Group::Generations, Group::Lab];

    /// Its `check` name.
    pub fn name(self) -> &'static str {
        match self {
            Group::E2e => "e2e",
            Group::TodaysServers => "todays-servers",
            Group::Generations => "generations",
            Group::Lab => "lab",
        }
    }

    /// What `check --help` says of it.
    pub fn about(self) -> &'static str {
        match self {
            Group::E2e => "Every QEMU boot: an image with Debian's current kernel, booted every way; records checked",
            Group::TodaysServers => {
                "The boots of today's servers alone, on images of their own: NVMe, Secure Boot on and off, the ISO"
            }
            Group::Generations => {
                "Kernels from other Debian releases: trixie's on NVMe, and the demo's two generations"
            }
            Group::Lab => {
                "`bootmark lab` through ipmi_sim and ipmitool, through sushy-tools' Redfish, and with a `[server.qemu]`"
            }
        }
    }

    /// The tally's name for the run.
    pub fn title(self) -> &'static str {
        match self {
            Group::E2e => "e2e boot test",
            Group::TodaysServers => "today's servers",
            Group::Generations => "generations",
            Group::Lab => "lab",
        }
    }

    /// A group that starts from an empty directory of its own (under
    /// target/), building every image afresh; the others reuse target/e2e.
    pub fn fresh_dir(self) -> Option<&'static str> {
        match self {
            Group::E2e => Some("target/e2e"),
            Group::TodaysServers => Some("target/todays-servers"),
            Group::Generations | Group::Lab => None,
        }
    }
}

/// One QEMU scenario.
pub struct Scenario {
    /// `cargo xtask check NAME`.
    pub name: &'static str,
    /// How the tally and its failures name it.
    pub title: &'static str,
    /// `check --help`'s line.
    pub about: &'static str,
    pub groups: &'static [Group],
    /// Whether it may boot beside another scenario (`run_group`'s second lane).
    pub lane: Lane,
    /// About how long it takes (seconds in the CI run of 2026-12-07): of
    /// the `Main` and `Beside` ones left, a lane takes the longest first, so
    /// that the last to end is a short one and the lanes end together.
    pub typical_s: u32,
    pub run: fn(&Testbed) -> Result<()>,
}

/// Where a scenario may run when a group runs on two lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The first lane, beside whatever the second runs: it boots the shared
    /// images (one stick image cannot be booted twice at once) or a port.
    Main,
    /// Either lane: it boots only images and disks of its own, in a
    /// directory of its own, and times nothing that a busy host could push
    /// past a limit.
    Beside,
    /// Nothing beside it: it times the host (a disk's speed against the
    /// writer's), boots two guests itself, or holds a boot to a deadline or
    /// a timeout that a busy host could push it past (labs, LAVA, a
    /// sequence).
    Alone,
}

use Group::{E2e, Generations, Lab, TodaysServers};
use Lane::{Alone, Beside, Main};

/// In the order `check e2e` runs them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "built-image",
        title: "built image",
        about: "The e2e image itself, before any boot: Debian's kernel config found and named, the module set's order and load conditions",
        groups: &[E2e],
        lane: Main,
        typical_s: 0,
        run: |b| {
            let image = b.image()?;
            built_image::module_closure(image)?;
            built_image::config_found(image)?;
            println!(
                "e2e: built image: the kernel's config found and named, the module set's order and load conditions"
            );
            Ok(())
        },
    },
    Scenario {
        name: "bios-usb",
        title: "BIOS USB",
        about: "The e2e image from the USB stick under BIOS (syslinux, xHCI, a SATA scratch disk)",
        groups: &[E2e],
        lane: Main,
        typical_s: 35,
        run: |b| boot_ways::test(b, false, false),
    },
    Scenario {
        name: "uefi-usb",
        title: "UEFI USB",
        about: "The e2e image from the USB stick under UEFI (OVMF, GRUB)",
        groups: &[E2e],
        lane: Main,
        typical_s: 38,
        run: |b| boot_ways::test(b, true, false),
    },
    Scenario {
        name: "bios-pxe",
        title: "BIOS PXE",
        about: "The e2e image over PXE (QEMU's TFTP, pxelinux)",
        groups: &[E2e],
        lane: Main,
        typical_s: 45,
        run: |b| boot_ways::test(b, false, true),
    },
    Scenario {
        name: "nvme",
        title: "NVMe",
        about: "The target on an NVMe disk, on the e2e image",
        groups: &[E2e, TodaysServers],
        lane: Main,
        typical_s: 38,
        run: |b| nvme::test(b.image()?, &b.base, b.package()?),
    },
    Scenario {
        name: "lvm-on-md",
        title: "LVM on md RAID 1",
        about: "A target inside storage as installed: an LV on md RAID 1 across two SCSI disks, made by mdadm \
                and lvm in a helper boot; the degraded array refused",
        groups: &[E2e],
        lane: Beside,
        typical_s: 316,
        run: |b| lvm_on_md::test(b.package()?, &b.base),
    },
    Scenario {
        name: "hostile-disks",
        title: "hostile disks",
        about: "Crafted md/LVM2 metadata on disks beside a plain target (a 1 PiB metadata area, a text nested \
                100,000 deep, an md superblock claiming u32::MAX disks, a partitioned whole-disk member, two VGs \
                of one name): the plan runs, each is named, none written",
        groups: &[E2e],
        lane: Main,
        typical_s: 47,
        run: |b| hostile_disks::test(b.image()?, &b.base, b.package()?),
    },
    Scenario {
        name: "md-layouts",
        title: "md layouts",
        about: "md's striped levels as mdadm makes them (raid0, raid4, raid5 in six layouts, raid6, raid10 \
                n2/f2/o2) read back through their members as /init reads them before assembly; a LABEL= inside \
                an LV on RAID 5 with a bitmap found, run, the disks compared",
        groups: &[E2e],
        lane: Beside,
        typical_s: 88,
        run: |b| md_layouts::test(b.package()?, &b.base),
    },
    Scenario {
        name: "secure-boot",
        title: "Secure Boot",
        about: "Secure Boot on (OVMF with Microsoft's keys) through shim and Debian's signed GRUB, and off; \
                the unsigned image refused by the firmware",
        groups: &[E2e, TodaysServers],
        lane: Main,
        typical_s: 213,
        run: |b| secure_boot::test(b.secure_boot_image()?, b.image()?, &b.base, b.package()?),
    },
    Scenario {
        name: "iso",
        title: "ISO",
        about: "bootmark.iso as a BMC's virtual CD: SeaBIOS (ISOLINUX) and OVMF with Secure Boot on, no stick; the unsigned ISO beside a stick",
        groups: &[E2e, TodaysServers],
        lane: Main,
        typical_s: 113,
        run: |b| iso::test(b.secure_boot_image()?, b.image()?, &b.base, b.package()?),
    },
    Scenario {
        name: "unsigned-kernel-refused",
        title: "unsigned kernel refused",
        about: "`cargo xtask image --secure-boot` refuses a kernel whose signature was removed, writing nothing",
        groups: &[E2e, TodaysServers],
        lane: Beside,
        typical_s: 3,
        run: |b| secure_boot::unsigned_kernel_refused(b.package()?, &b.base),
    },
    Scenario {
        name: "old-machine",
        title: "old machine",
        about: "`--machine old`, the hardware a 2006 server has, on the e2e image",
        groups: &[E2e],
        lane: Main,
        typical_s: 39,
        run: |b| old_machine::test(b.image()?, &b.base, b.package()?),
    },
    Scenario {
        name: "kernel-rpm",
        title: "kernel RPM",
        about: "A kernel as SUSE, Red Hat and Fedora ship it: an RPM made from Debian's kernel, imaged with --kernel-rpm and booted",
        groups: &[E2e],
        lane: Main,
        typical_s: 54,
        run: |b| kernel_rpm::test(b.image()?, b.package()?, &b.base),
    },
    Scenario {
        name: "sequence",
        title: "sequence",
        about: "An unattended sequence: one QEMU run, four boots, a hung step given up",
        groups: &[E2e],
        lane: Alone,
        typical_s: 128,
        run: |b| sequence::test(b.package()?, &b.base),
    },
    Scenario {
        name: "sweep",
        title: "sweep",
        about: "The sweep boot (the `sweep` plan's variants in one QEMU boot), and a boot of variants of every kind of setting twice round, each run on the settings as found plus its own",
        groups: &[E2e],
        lane: Beside,
        typical_s: 64,
        run: |b| sweep::test(b.package()?, &b.base),
    },
    Scenario {
        name: "command",
        title: "your own program",
        about: "The seed's C program, built static and put in the image with --include, run by a `command` workload beside manyfiles; a bad argument's error record",
        groups: &[E2e],
        lane: Beside,
        typical_s: 55,
        run: |b| command::test(b.package()?, &b.base),
    },
    Scenario {
        name: "mechanisms",
        title: "mechanisms",
        about: "The demo's dirty40 run on --machine dl140: 6.1 paused in balance_dirty_pages while writing and held \
                by wbt in its fdatasync, each named from the kernel's tracepoints, neither as the other; then wbt's \
                target at 2 ms (wbt scales down, named), and a 4 MiB dirty_bytes with wbt off (dirty throttling named \
                from its pauses, wbt nowhere)",
        groups: &[E2e],
        lane: Alone,
        typical_s: 166,
        run: |b| mechanisms::test(b.package()?, &b.base),
    },
    Scenario {
        name: "i686",
        title: "i686",
        about: "The 32-bit boot (Debian's 686 kernel, the i686 /init and mkreiserfs)",
        groups: &[E2e],
        lane: Beside,
        typical_s: 62,
        run: |b| i686::test(&b.base),
    },
    Scenario {
        name: "trixie-on-nvme",
        title: "trixie on NVMe",
        about: "Debian 13's kernel, downloaded from its suite, booted with the target on NVMe",
        groups: &[E2e, Generations],
        lane: Beside,
        typical_s: 79,
        run: |b| generations::trixie_on_nvme(&b.base),
    },
    Scenario {
        name: "two-generations",
        title: "two generations",
        about: "The demo's sibling: 6.1 and 6.12 in one image, one run each, compared",
        groups: &[E2e, Generations],
        lane: Main,
        typical_s: 165,
        run: |b| generations::two_generations(&b.base),
    },
    Scenario {
        name: "arm64",
        title: "arm64",
        about: "The aarch64 /init as PID 1 on Debian's arm64 kernel (linux-image-arm64@bookworm) under \
                qemu-system-aarch64: NVMe target, USB stick, records on serial and stick",
        groups: &[E2e],
        lane: Beside,
        typical_s: 31,
        run: |b| arm64::test(&b.base),
    },
    Scenario {
        name: "arm64-image",
        title: "arm64 image",
        about: "One image for x86 and arm64 (Debian's kernels of both): its stick under AAVMF and under OVMF, each GRUB listing its own kernels; its ISO as arm64's USB CD; its arm64 entry as a [server.qemu] lab step",
        groups: &[E2e],
        lane: Beside,
        typical_s: 222,
        run: |b| arm64_image::test(b.package()?, &b.base),
    },
    Scenario {
        name: "arm64-secure-boot",
        title: "arm64 Secure Boot",
        about: "One image for x86 and arm64 with Debian's signed chain of each: its stick under AAVMF and OVMF with \
                Microsoft's keys and Secure Boot on, and arm64 over PXE through shimaa64.efi",
        groups: &[E2e, TodaysServers],
        lane: Beside,
        typical_s: 186,
        run: |b| arm64_secure_boot::test(b.package()?, &b.base),
    },
    Scenario {
        name: "arm64-programs",
        title: "arm64 programs",
        about: "seedwrite (--include), fio (--fio), mke2fs and mkreiserfs (--sequence-fs) cross-built for aarch64 \
                and run by Debian's arm64 kernel: a two-step sequence formatting the NVMe target ext4, then reiserfs",
        groups: &[E2e],
        lane: Beside,
        typical_s: 190,
        run: |b| arm64_programs::test(b.package()?, &b.base),
    },
    Scenario {
        name: "failing-disk",
        title: "failing disk",
        about: "A disk that dies mid-run (QEMU's blkdebug fails every write after the first): power-off with a run record, no `ok` record, on the e2e image",
        groups: &[E2e],
        lane: Alone,
        typical_s: 67,
        run: |b| failing_disk::test(b.image()?, &b.base),
    },
    Scenario {
        name: "watch",
        title: "watch",
        about: "`bootmark watch` over QEMU's TCP serial, on the e2e image",
        groups: &[E2e],
        lane: Alone,
        typical_s: 28,
        run: |b| watch::test(b.image()?, &b.base),
    },
    Scenario {
        name: "lava",
        title: "LAVA",
        about: "The LAVA jobs (lava-run), on the e2e image",
        groups: &[E2e],
        lane: Alone,
        typical_s: 120,
        run: |b| lava::test(b.image()?, b.package()?, &b.base),
    },
    Scenario {
        name: "lava-arm64",
        title: "LAVA arm64",
        about: "The LAVA qemu job (lava-run) of an arm64 entry, Debian's arm64 kernel, on the virt machine",
        groups: &[E2e],
        lane: Beside,
        typical_s: 45,
        run: |b| lava::test_arm64(&b.base),
    },
    Scenario {
        name: "lab-ipmi",
        title: "lab",
        about: "`bootmark lab` through ipmi_sim and ipmitool: PXE, SOL, a hung step, a resumed run",
        groups: &[E2e, Lab],
        lane: Alone,
        typical_s: 263,
        run: |b| lab_ipmi::test(b.lab_image()?, &b.base),
    },
    Scenario {
        name: "lab-redfish",
        title: "lab Redfish",
        about: "`bootmark lab` through sushy-tools' Redfish emulator: virtual media, BIOS and UEFI",
        groups: &[E2e, Lab],
        lane: Alone,
        typical_s: 159,
        run: |b| lab_redfish::test(b.lab_image()?, &b.base),
    },
    Scenario {
        name: "lab-qemu",
        title: "lab qemu",
        about: "`bootmark lab` with a `[server.qemu]` server (the demo's loop)",
        groups: &[E2e, Lab],
        lane: Alone,
        typical_s: 55,
        run: |b| lab_qemu::test(b.lab_image()?, &b.base),
    },
    Scenario {
        name: "bisect-ladder",
        title: "bisect ladder",
        about: "`bootmark bisect` over Debian's 5.10, 6.1 and 6.12 on two `[server.qemu]` dl140 servers side by side: 6.12 found as the first bad by the probe's read wait; then `bisect settings` on 6.12 between 5.10's settings and its own: max_sectors_kb",
        groups: &[E2e, Generations, Lab],
        lane: Alone,
        typical_s: 596,
        run: |b| bisect_ladder::test(&b.base),
    },
    Scenario {
        name: "write-log",
        title: "stick write log",
        about: "The stick write-log replay (QEMU's blklogwrites): one boot's writes replayed one by one, fsck and the journal checked after each, on the e2e image",
        groups: &[E2e],
        lane: Beside,
        typical_s: 42,
        run: |b| write_log::test(&b.pristine_stick()?, &b.base),
    },
    // 14 kills: every record line once and 7 spread times. The write-log
    // replay above checks every write prefix, so more kills here add CI time
    // (19 s each), not coverage; `cargo xtask check resets --kills 22` runs more.
    // Beside another boot: it boots its own copy of the stick, and a busy
    // host only moves a timed kill earlier in the boot's progress (the
    // record-line kills are placed by what serial shows, not by the clock).
    Scenario {
        name: "resets",
        title: "reset campaign",
        about: "The reset campaign: QEMU killed at record lines and at random times, the stick checked, on the e2e image",
        groups: &[E2e],
        lane: Beside,
        typical_s: 281,
        run: |b| resets::campaign(&b.pristine_stick()?, &b.base, b.kills),
    },
];

/// The scenario `check NAME` runs.
pub fn named(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}
