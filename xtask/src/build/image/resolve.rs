//! Resolve once, then flow: `cargo xtask image`'s flags become a `Build` —
//! kernels found and checked, Debian's signed chain when asked for, the plan
//! loaded, every boot entry's title and command line made and checked as
//! /init will check it — before anything is assembled. The steps after this
//! one (initramfs, menus, stick, PXE tree, ISO, manifest) take the `Build`
//! and never read a flag, as ripgrep's hiargs follow its lowargs.

use super::args::Args;
use super::cmdline::{self, ImagePlan};
use super::secure_boot;
use super::sources::{self, Kernel};
use crate::build::arch::Arch;
use crate::host::project::Result;
use std::path::{Path, PathBuf};

/// Everything an image is made of, decided.
pub(crate) struct Build {
    pub kernels: Vec<Kernel>,
    /// With --secure-boot: Debian's signed chain for each architecture
    /// (x86_64's, arm64's) and each kernel's signers.
    pub signed: Option<(Vec<secure_boot::Chain>, secure_boot::Signers)>,
    pub plan: ImagePlan,
    /// Every boot entry, in menu order (kernel by kernel).
    pub entries: Vec<PlannedEntry>,
    /// Index into `entries` of the entry booted by default.
    pub default: usize,
    /// The serial console for the bootloaders: (ttyS unit, baud).
    pub serial: (u32, u32),
    /// Filesystems the initramfs carries a mkfs for (--mkfs and --sequence-fs).
    pub mkfs: Vec<String>,
    /// The user's files (--include), checked against the plan's programs.
    pub includes: Vec<super::include::Include>,
    /// An unattended sequence on the stick: (repetitions, filesystems).
    pub sequence: Option<(u32, Vec<String>)>,
    /// Required modules a kernel may lack (--allow-missing).
    pub allow_missing: Vec<String>,
    /// The static /init to use instead of building it.
    pub bootmark_binary: Option<PathBuf>,
    /// The stick image's size in MiB, when given.
    pub stick_mib: Option<u64>,
    pub journal_bytes: u64,
    /// SOURCE_DATE_EPOCH (or 0): the only time that reaches the image.
    pub mtime: u32,
    pub install_deps: bool,
}

/// One boot entry: which kernel, and what it is told.
pub(crate) struct PlannedEntry {
    /// Index into `Build::kernels`.
    pub kernel: usize,
    /// `k0`, `k0-rt`…: the entry's name in menus, records and `bootmark.entry=`.
    pub label: String,
    pub title: String,
    pub cmdline: String,
    /// The bytes its own line may take (the kernel's limit less what the
    /// bootloaders add): what a lab's `bootmark.set=` must fit in too.
    pub cmdline_room: usize,
    /// Why its line has no `trace_event=`, when it has none.
    pub without_events: Option<String>,
}

impl Build {
    /// The architectures of the kernels, each once, in entry order.
    pub fn arches(&self) -> Vec<Arch> {
        let mut arches: Vec<Arch> = Vec::new();
        for k in &self.kernels {
            if !arches.contains(&k.arch) {
                arches.push(k.arch);
            }
        }
        arches
    }

    /// The entries of kernel `i`.
    pub fn entries_of(&self, i: usize) -> impl Iterator<Item = &PlannedEntry> {
        self.entries.iter().filter(move |e| e.kernel == i)
    }
}

/// The boot directory of kernel `i` on the stick, the ISO and pxe/.
pub(crate) fn kernel_dir(i: usize) -> String {
    format!("k{i}")
}

/// Check the flags against each other, find and check every kernel
/// (`work`: where packages are unpacked), and make every entry.
pub(crate) fn resolve(args: &Args, work: &Path) -> Result<Build> {
    check_flags(args)?;
    let kernels = sources::resolve(args, work)?;
    let signed = signed_chain(args.secure_boot, &kernels)?;
    let plan = cmdline::resolve_plan(&args.plan)?;
    let per_kernel = cmdline::entries_for_plan(&plan.plan)?;
    let mut entries = Vec::new();
    let append = if args.append.is_empty() { String::new() } else { format!(" {}", args.append) };
    for (i, k) in kernels.iter().enumerate() {
        let line = cmdline::cmdline(args, &plan.name, k.arch)?;
        let limits = cmdline::Limits { release: &k.release, arch: k.arch, cmdline_max: k.cmdline_max };
        for (suffix, variant, extra) in &per_kernel {
            let label = format!("{}{suffix}", kernel_dir(i));
            let own = format!("{line}{extra} bootmark.entry={label}{append} panic=30");
            cmdline::check_menu_safe(&own, &label)?;
            bootmark::contract::cmdline::parse(&own)
                .map_err(|e| format!("entry {label}'s command line would be refused at boot: {e}"))?;
            let fitted = cmdline::fit(&own, &label, &kernel_dir(i), &limits)?;
            if let Some(why) = &fitted.without_events {
                eprintln!(
                    "image: {label} (Linux {}): no tracepoints on its command line ({why}): its records say the kernel's events were not there",
                    k.release
                );
            }
            let title = format!("bootmark {} on Linux {} ({}){variant}", plan.name, k.release, k.arch);
            entries.push(PlannedEntry {
                kernel: i,
                label,
                title,
                cmdline: fitted.line,
                cmdline_room: fitted.room,
                without_events: fitted.without_events,
            });
        }
    }
    if args.default >= entries.len() {
        return Err(format!("--default {} but there are only {} entries", args.default, entries.len()));
    }
    let mut includes = super::include::parse_all(&args.includes)?;
    let mut arches: Vec<Arch> = kernels.iter().map(|k| k.arch).collect();
    arches.sort();
    arches.dedup();
    if args.fio {
        let dest = super::static_fio::IN_IMAGE.to_string();
        if let Some(i) = includes.iter().find(|i| i.dest == dest) {
            return Err(format!("--fio and --include {} both go to {dest}: give one of them", i.src.display()));
        }
        for arch in &arches {
            // One per architecture at one DEST: each entry gets its own.
            includes.push(super::include::Include {
                src: super::static_fio::fio(*arch, args.install_deps)?,
                dest: dest.clone(),
                arch: Some(*arch),
            });
        }
    }
    super::include::check_plan(&plan.plan, &includes, &arches)?;
    let mut mkfs = args.mkfs.clone();
    mkfs.extend(args.sequence_fs.iter().filter(|f| !args.mkfs.contains(f)).cloned());
    Ok(Build {
        kernels,
        signed,
        plan,
        entries,
        default: args.default,
        serial: cmdline::serial_unit(&args.serial)?,
        mkfs,
        includes,
        sequence: args.sequence.map(|repeat| (repeat, args.sequence_fs.clone())),
        allow_missing: args.allow_missing.clone(),
        bootmark_binary: args.bootmark_binary.clone(),
        stick_mib: args.size,
        journal_bytes: args.journal_mib.map_or(bootmark::journal::DEFAULT_SIZE, |m| m << 20),
        mtime: source_date_epoch(),
        install_deps: args.install_deps,
    })
}

/// SOURCE_DATE_EPOCH, or 0: timestamps inside the image never depend on when it was built.
fn source_date_epoch() -> u32 {
    std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// What the flags say about each other, before any kernel is looked at.
fn check_flags(args: &Args) -> Result<()> {
    if args.kernels.is_empty()
        && args.kernel_debs.is_empty()
        && args.kernel_rpms.is_empty()
        && args.kernel_src.is_empty()
    {
        return Err(
            "no kernel given: add --kernel PATH (a bzImage, e.g. /boot/vmlinuz-R), --kernel-deb NAME|PATH (e.g. linux-image-amd64), --kernel-rpm PATH or --kernel-src TARBALL|DIR".into(),
        );
    }
    if args.modules.len() > args.kernels.len() {
        return Err("more --modules than --kernel: each --modules belongs to the --kernel in the same position".into());
    }
    if args.kernel_configs.len() > args.kernels.len() {
        return Err(
            "more --kernel-config than --kernel: each --kernel-config belongs to the --kernel in the same position"
                .into(),
        );
    }
    Ok(())
}

/// With --secure-boot: every kernel signed (checked before anything is
/// built) and Debian's signed chain; each kernel's signers by its boot
/// directory. Without it, a hint when every kernel would have passed.
fn signed_chain(
    secure_boot: bool,
    kernels: &[Kernel],
) -> Result<Option<(Vec<secure_boot::Chain>, secure_boot::Signers)>> {
    let by_dir: Vec<(String, PathBuf)> =
        kernels.iter().enumerate().map(|(i, k)| (kernel_dir(i), k.vmlinuz.clone())).collect();
    if !secure_boot {
        let all_signed = by_dir.iter().all(|(_, v)| {
            std::fs::read(v).is_ok_and(|d| matches!(secure_boot::signature(&d), secure_boot::Signature::Signed(_)))
        });
        if all_signed {
            eprintln!("image: every kernel is signed: add --secure-boot for servers with Secure Boot on");
        }
        return Ok(None);
    }
    if kernels.iter().any(|k| k.arch == Arch::I686) {
        return Err(
            "--secure-boot: Debian's signed shim and GRUB are for 64-bit UEFI; this image has an i686 kernel".into()
        );
    }
    let signers = secure_boot::check_kernels(&by_dir)?;
    let mut platforms: Vec<Arch> = kernels.iter().map(|k| k.arch).collect();
    platforms.sort();
    platforms.dedup();
    let chains = platforms.into_iter().map(secure_boot::chain).collect::<Result<Vec<_>>>()?;
    Ok(Some((chains, signers)))
}
