//! `cargo xtask image`: chosen kernels in, a bootable USB stick image and a
//! PXE tree out (plus manifest.json). See README "Building the boot image".
//!
//! Steps: check host tools → resolve kernels (bzImage header / .deb) →
//! with --secure-boot, check every kernel is signed and take Debian's
//! signed chain → static /init per arch → initramfs (common archive +
//! per-kernel modules archive, concatenated) → stage files → usb.img →
//! pxe/ → bootmark.iso → manifest. Everything is built in OUT.tmp and
//! renamed to OUT at the end.

pub mod bootloaders;
pub mod cmdline;
pub mod cpio;
pub mod deb;
pub mod initramfs;
pub mod iso;
pub mod manifest;
pub mod menu;
pub mod mkfs;
pub mod modules;
pub mod rpm;
pub mod secure_boot;
pub mod sequence;
pub mod sources;
pub mod static_mkfs;

pub mod usb;

use crate::build::arch::Arch;
use crate::build::static_binary;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::tools;
use crate::{Result, project_root};
use std::path::{Path, PathBuf};

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
    /// A Debian kernel package: a .deb path or a package name fetched with apt-get download (repeatable).
    #[arg(long = "kernel-deb", value_name = "NAME|PATH")]
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
    /// Architecture of --kernel images whose header cannot tell (boot protocol < 2.12).
    #[arg(long, value_enum)]
    pub arch: Option<Arch>,
    /// Output directory.
    #[arg(long, default_value = "target/image")]
    pub out: PathBuf,
    /// Plan every entry runs: a built-in name, a file in image/plans by name, or a plan
    /// file by path (carried in the image under the plan's own "name").
    #[arg(long, default_value = "quick")]
    pub plan: String,
    /// bootmark.target for every entry (LABEL=…, UUID=…, PARTUUID=…, /dev/…). Without it, boots report how to set one.
    #[arg(long)]
    pub target: Option<String>,
    /// Extra kernel command line for every entry.
    #[arg(long, default_value = "")]
    pub append: String,
    /// Entry booted by default (0-based).
    #[arg(long, default_value_t = 0)]
    pub default: usize,
    /// Serial console as DEVICE,BAUD.
    #[arg(long, default_value = "ttyS0,115200")]
    pub serial: String,
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
        crate::flags_given(&[])
    }
}

pub fn human_size(path: &Path) -> String {
    bootmark::size::human(std::fs::metadata(path).map(|m| m.len()).unwrap_or(0))
}

/// SOURCE_DATE_EPOCH, or 0: timestamps inside the image never depend on when it was built.
pub(crate) fn source_date_epoch() -> u32 {
    std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

pub fn run(args: &Args) -> Result<()> {
    if let Some(dir) = &args.verify {
        println!("{}", manifest::verify(dir)?);
        return Ok(());
    }
    let out = build(args)?;
    println!("{}", out.display());
    Ok(())
}

/// Build the image; returns the output directory.
pub fn build(args: &Args) -> Result<PathBuf> {
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
    tools::ensure(&tools::IMAGE_TOOLS, args.install_deps, "--install-deps")?;
    tools::ensure(&iso::ISO_TOOLS, args.install_deps, "--install-deps")?;
    let started = std::time::Instant::now();
    let root = project_root();
    let out = if args.out.is_absolute() { args.out.clone() } else { root.join(&args.out) };
    let tmp = out.with_extension("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let result = build_into(args, &tmp);
    match result {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&out);
            std::fs::rename(&tmp, &out)
                .map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), out.display()))?;
            eprintln!("image: done in {:.1} s: {}", started.elapsed().as_secs_f64(), out.display());
            Ok(out)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn build_into(args: &Args, out: &Path) -> Result<()> {
    let mtime = source_date_epoch();
    let work = out.join(".work");
    let stage = work.join("stage");
    let kernels = sources::resolve(args, &work)?;
    let signed = signed_chain(args, &kernels)?;
    let plan = cmdline::resolve_plan(&args.plan)?;
    let line = cmdline::cmdline(args, &plan.name)?;
    let per_kernel = cmdline::entries_for_plan(&plan.plan)?;
    let total = kernels.len() * per_kernel.len();
    if args.default >= total {
        return Err(format!("--default {} but there are only {total} entries", args.default));
    }
    let mut arches: Vec<&str> = kernels.iter().map(|k| k.arch.as_str()).collect();
    arches.dedup();
    let mut commons = std::collections::BTreeMap::new();
    for name in arches {
        let arch = Arch::parse(name)?;
        let bin = match &args.bootmark_binary {
            Some(b) => b.clone(),
            None => static_binary::build(arch)?,
        };
        let mut needed: Vec<String> = args.mkfs.clone();
        needed.extend(args.sequence_fs.iter().filter(|f| !needed.contains(f)).cloned().collect::<Vec<_>>());
        let mut extra = mkfs::files(&needed, arch, args.install_deps)?;
        extra.extend(plan.file.iter().map(|(path, bytes)| (path.clone(), bytes.clone(), 0o644)));
        let common = initramfs::common_archive(&bin, mtime, &extra)?;
        eprintln!("image: common initramfs for {arch}: {} gzip", bootmark::size::human(common.len() as u64));
        commons.insert(name.to_string(), (common, crate::host::fs::sha256_file(&bin)?));
    }
    let mut entries = Vec::new();
    let mut entry_facts = Vec::new();
    for (i, k) in kernels.iter().enumerate() {
        let kdir = format!("k{i}");
        let dir = stage.join("boot").join(&kdir);
        fs::create_dir_all(&dir)?;
        fs::copy(&k.vmlinuz, dir.join("vmlinuz"))?;
        let (mods, count, whereabouts) = initramfs::modules_archive(k, mtime, &args.allow_missing)?;
        let (common, bin_sha) = &commons[&k.arch];
        eprintln!("image: {kdir}: {} modules, {} gzip", count, bootmark::size::human(mods.len() as u64));
        let mut initrd = common.clone();
        initrd.extend_from_slice(&mods);
        fs::write(dir.join("initrd.gz"), &initrd)?;
        for (suffix, variant, extra) in &per_kernel {
            let label = format!("{kdir}{suffix}");
            let title = format!("bootmark {} on Linux {} ({}){variant}", plan.name, k.release, k.arch);
            let line = format!("{line}{extra} bootmark.entry={label}");
            bootmark::contract::cmdline::parse(&line)
                .map_err(|e| format!("entry {label}'s command line would be refused at boot: {e}"))?;
            entries.push(menu::Entry {
                label: label.clone(),
                dir: kdir.clone(),
                title: title.clone(),
                cmdline: line.clone(),
            });
            entry_facts.push(manifest::Entry {
                label,
                title,
                cmdline: line,
                kernel_release: k.release.clone(),
                kernel_version: k.version.clone(),
                arch: k.arch.clone(),
                origin: k.origin.clone(),
                modules: count,
                listed_modules: whereabouts.clone(),
                kernel_config: k
                    .config
                    .as_ref()
                    .and_then(|c| c.path.file_name())
                    .map(|n| n.to_string_lossy().into_owned()),
                kernel_config_sha256: k.config.as_ref().map(|c| crate::host::fs::sha256_file(&c.path)).transpose()?,
                initramfs: manifest::InitramfsSizes { common_gzip_bytes: common.len(), modules_gzip_bytes: mods.len() },
                bootmark_binary_sha256: bin_sha.clone(),
            });
        }
    }
    let (unit, speed) = cmdline::serial_unit(&args.serial)?;
    let m =
        menu::Menu { entries: &entries, default: args.default, serial_unit: unit, serial_speed: speed, timeout_s: 3 };
    write(&stage.join("syslinux.cfg"), &m.syslinux("/"))?;
    write(&stage.join("boot/grub/grub.cfg"), &m.grub(""))?;
    let id = menu::image_id(&m.syslinux("/"), &m.grub(""));
    write(&stage.join(menu::id_file(&id)), "GRUB finds the bootmark image it belongs to by this file's name.\n")?;
    let journal_bytes = args.journal_mib.map_or(bootmark::journal::DEFAULT_SIZE, |m| m << 20);
    write_journal(&stage.join(bootmark::journal::PATH), journal_bytes)?;
    write(
        &stage.join("bootmark/README.txt"),
        "journal.bin holds every boot's results, written in place so that a reset cannot damage\r\n\
         earlier ones. Read it with: bootmark collect /path/to/stick (or the stick image).\r\n",
    )?;
    if let Some(repeat) = args.sequence {
        let seq = sequence::build(&entries, repeat, &args.sequence_fs, args.default);
        eprintln!("image: sequence of {} steps on the stick", seq.steps.len());
        write(&stage.join(bootmark::contract::sequence::FILE), &serde_json::to_string_pretty(&seq).unwrap())?;
    }
    // The unsigned GRUB, for the stick and the ISO, or the signed chain.
    let grub_efi = work.join("BOOTX64.EFI");
    match &signed {
        Some((chain, _)) => bootloaders::signed_esp(&stage, chain, &id)?,
        None => {
            bootloaders::grub_efi(&grub_efi, &work, &id)?;
            std::fs::create_dir_all(stage.join("EFI/BOOT")).map_err(|e| format!("{}: {e}", stage.display()))?;
            std::fs::copy(&grub_efi, stage.join("EFI/BOOT/BOOTX64.EFI"))
                .map_err(|e| format!("{}: {e}", grub_efi.display()))?;
        }
    }
    set_mtimes(&stage, mtime)?;

    let size = args.size.unwrap_or_else(|| (dir_size(&stage) >> 20) * 5 / 4 + 128).max(64);
    if dir_size(&stage) >> 20 >= size {
        return Err(format!(
            "--size {size} MiB is too small: the boot files alone take {} MiB",
            dir_size(&stage) >> 20
        ));
    }
    eprintln!("image: assembling usb.img ({size} MiB)");
    usb::build(&out.join("usb.img"), &stage, size, 0x0b00_7a00 ^ mtime)?;
    eprintln!("image: writing pxe/");
    let chain = signed.as_ref().map(|(c, _)| c);
    bootloaders::pxe_tree(&out.join("pxe"), &stage, &m, chain)?;
    eprintln!("image: writing {}", iso::FILE);
    let contents = iso::Contents { stage: &stage, menu: &m, id: &id, chain, grub_efi: &grub_efi };
    iso::build(&out.join(iso::FILE), &work, &contents)?;
    fs::remove_dir_all(&work)?;
    let manifest = manifest::Manifest {
        schema: manifest::SCHEMA.into(),
        bootmark_version: env!("CARGO_PKG_VERSION").into(),
        source_date_epoch: mtime,
        plan: plan.name,
        plan_definition: Some(plan.plan),
        default_entry: args.default,
        entries: entry_facts,
        secure_boot: signed.map(|(chain, signers)| secure_boot::Facts { kernel_signers: signers, ..chain.facts }),
        outputs: manifest::outputs(out)?,
    };
    write(&out.join("manifest.json"), &serde_json::to_string_pretty(&manifest).unwrap())
}

/// With --secure-boot: every kernel signed (checked before anything is
/// built) and Debian's signed chain; each kernel's signers by its boot
/// directory. Without it, a hint when every kernel would have passed.
fn signed_chain(
    args: &Args,
    kernels: &[sources::Kernel],
) -> Result<Option<(secure_boot::Chain, secure_boot::Signers)>> {
    let by_dir: Vec<(String, PathBuf)> =
        kernels.iter().enumerate().map(|(i, k)| (format!("k{i}"), k.vmlinuz.clone())).collect();
    if !args.secure_boot {
        let all_signed = by_dir.iter().all(|(_, v)| {
            std::fs::read(v).is_ok_and(|d| matches!(secure_boot::signature(&d), secure_boot::Signature::Signed(_)))
        });
        if all_signed {
            eprintln!("image: every kernel is signed: add --secure-boot for servers with Secure Boot on");
        }
        return Ok(None);
    }
    if kernels.iter().any(|k| k.arch != Arch::X86_64.name()) {
        return Err(
            "--secure-boot: Debian's signed shim and GRUB are for x86_64 UEFI; this image has an i686 kernel".into()
        );
    }
    let signers = secure_boot::check_kernels(&by_dir)?;
    Ok(Some((secure_boot::chain()?, signers)))
}

pub(crate) fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p)?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn dir_size(dir: &Path) -> u64 {
    manifest::hash_tree(dir)
        .ok()
        .map(|files| files.iter().map(|(f, _)| std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0)).sum())
        .unwrap_or(0)
}

fn set_mtimes(dir: &Path, mtime: u32) -> Result<()> {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(mtime.max(315_532_800) as u64); // FAT cannot store dates before 1980
    for (f, _) in manifest::hash_tree(dir)? {
        let path = dir.join(&f);
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        file.set_modified(t).with_context(|| format!("cannot set the time of {}", path.display()))?;
    }
    Ok(())
}

/// The results journal, zero-filled at its full size now, so that /init
/// never changes the stick's FAT while it runs (see bootmark::journal).
fn write_journal(path: &Path, bytes: u64) -> Result<()> {
    use std::io::Write;
    fs::create_dir_all(path.parent().unwrap())?;
    let mut f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(&bootmark::journal::header_block()).with_context(|| format!("cannot write {}", path.display()))?;
    f.set_len(bytes).with_context(|| format!("cannot size {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::process::command;

    /// A file with a valid bzImage header (not bootable): enough to build an image.
    fn fake_kernel(dir: &Path) -> PathBuf {
        let mut d = vec![0u8; 0x4000];
        d[0x1fe] = 0x55;
        d[0x1ff] = 0xaa;
        d[0x202..0x206].copy_from_slice(b"HdrS");
        d[0x206] = 15;
        d[0x207] = 2;
        d[0x211] = 1;
        d[0x236] = 1;
        d[0x20e..0x210].copy_from_slice(&0x200u16.to_le_bytes());
        d[0x400..0x410].copy_from_slice(b"6.1.0-test #1 x\0");
        let p = dir.join("bzImage");
        std::fs::write(&p, d).unwrap();
        p
    }

    fn static_binary() -> PathBuf {
        let p = crate::build::static_binary::binary_path(crate::build::arch::Arch::X86_64);
        assert!(p.exists(), "{} is missing: run `cargo xtask static` first (cargo xtask test does)", p.display());
        p
    }

    fn build_test_image(name: &str) -> (PathBuf, PathBuf) {
        let base = project_root().join(format!("target/imagetest-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let args = Args {
            kernels: vec![fake_kernel(&base)],
            out: base.join("out"),
            plan: "quick".into(),
            target: Some("LABEL=SCRATCH".into()),
            serial: "ttyS0,115200".into(),
            bootmark_binary: Some(static_binary()),
            ..Args::default()
        };
        (build(&args).unwrap(), base)
    }

    #[test]
    fn stick_layout_partition_and_filesystem_are_right() {
        let (out, base) = build_test_image("layout");
        let img = out.join("usb.img");
        let table = crate::host::process::run(command("sfdisk").arg("-d").arg(&img)).unwrap();
        assert!(
            table.contains("start=        2048") && table.contains("type=c") && table.contains("bootable"),
            "{table}"
        );
        // fsck.fat has no offset option: check the partition through a copy.
        let part = base.join("part.img");
        let data = std::fs::read(&img).unwrap();
        std::fs::write(&part, &data[2048 * 512..]).unwrap();
        let fsck = crate::host::process::output(command("fsck.fat").arg("-n").arg(&part)).unwrap();
        assert!(fsck.status.success(), "{}", String::from_utf8_lossy(&fsck.stdout));
        let info = bootmark::contract::fsprobe::probe(&part).unwrap().unwrap();
        assert_eq!((info.fs.as_str(), info.label.as_deref()), ("vfat", Some("BOOTMARK")));
        let root = usb::list(&img, "").unwrap();
        for want in ["ldlinux.sys", "ldlinux.c32", "syslinux.cfg", "boot", "EFI", "bootmark"] {
            assert!(root.iter().any(|n| n == want), "{want} missing from {root:?}");
        }
        assert!(usb::list(&img, "EFI/BOOT").unwrap().contains(&"BOOTX64.EFI".to_string()));
        let journal = usb::list(&img, "bootmark").unwrap();
        assert!(journal.contains(&"journal.bin".to_string()) && journal.contains(&"README.txt".to_string()));
        // The empty journal reads back as a journal with nothing in it.
        let collected = bootmark::collect::collect(std::slice::from_ref(&img));
        assert!(collected.documents.is_empty() && collected.problems.is_empty(), "{:?}", collected.problems);
        assert_eq!(&data[510..512], &[0x55, 0xaa]);
        assert_eq!(&data[..440], &std::fs::read(usb::MBR_BIN).unwrap()[..440], "syslinux MBR code installed");
        let cfg = std::fs::read_to_string(out.join("pxe/pxelinux.cfg/default")).unwrap();
        assert!(cfg.contains("bootmark.target=LABEL=SCRATCH") && cfg.contains("KERNEL boot/k0/vmlinuz"));
        assert!(out.join("pxe/pxelinux.0").exists() && out.join("pxe/boot/k0/initrd.gz").exists());
        // The manifest verifies, and notices a changed file.
        assert!(manifest::verify(&out).is_ok());
        std::fs::write(out.join("pxe/boot/k0/vmlinuz"), b"tampered").unwrap();
        assert!(manifest::verify(&out).unwrap_err().contains("pxe/boot/k0/vmlinuz: content changed"));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_same_inputs_give_byte_identical_initramfs() {
        let (a, base_a) = build_test_image("repro-a");
        let (b, base_b) = build_test_image("repro-b");
        let initrd = |d: &Path| std::fs::read(d.join("pxe/boot/k0/initrd.gz")).unwrap();
        assert_eq!(initrd(&a), initrd(&b));
        let common = |d: &Path| manifest::Manifest::read(d).unwrap().entries[0].initramfs.common_gzip_bytes;
        assert!(common(&a) <= 1 << 20, "common archive {} bytes: target is ≤ 1 MiB", common(&a));
        std::fs::remove_dir_all(&base_a).unwrap();
        std::fs::remove_dir_all(&base_b).unwrap();
    }

    /// A /boot tree copied off a server whose /lib/modules holds only what
    /// its initrd had: the config says vfat and usb-storage are modules,
    /// the tree lacks them. Refused with what the image loses, nothing
    /// written; built when --allow-missing accepts exactly those.
    #[test]
    fn a_kernel_lacking_required_modules_is_refused_until_allowed() {
        let base = project_root().join(format!("target/imagetest-missing-{}", std::process::id()));
        let boot = base.join("boot");
        std::fs::create_dir_all(&boot).unwrap();
        let kernel = boot.join("vmlinuz-6.1.0-test");
        std::fs::rename(fake_kernel(&base), &kernel).unwrap();
        std::fs::write(
            boot.join("config-6.1.0-test"),
            "CONFIG_X86_64=y\nCONFIG_X86=y\nCONFIG_BLK_DEV_INITRD=y\nCONFIG_PROC_FS=y\nCONFIG_SYSFS=y\n\
             CONFIG_SERIAL_8250_CONSOLE=y\nCONFIG_BLK_DEV_SD=y\nCONFIG_SATA_AHCI=y\nCONFIG_USB_STORAGE=m\n\
             CONFIG_FAT_FS=m\nCONFIG_VFAT_FS=m\nCONFIG_NLS_CODEPAGE_437=m\n",
        )
        .unwrap();
        // A module file with no .modinfo is named after its file.
        let fat = base.join("lib/modules/6.1.0-test/kernel/fs/fat");
        std::fs::create_dir_all(&fat).unwrap();
        std::fs::write(fat.join("fat.ko"), b"").unwrap();
        let out = base.join("out");
        let args = Args {
            kernels: vec![kernel],
            out: out.clone(),
            plan: "quick".into(),
            serial: "ttyS0,115200".into(),
            bootmark_binary: Some(static_binary()),
            ..Args::default()
        };
        let err = build(&args).unwrap_err();
        for want in ["has no vfat, nls_cp437, usb_storage", "results go to the serial console only", "--modules DIR"] {
            assert!(err.contains(want), "{want:?} not in: {err}");
        }
        assert!(err.ends_with("--allow-missing vfat,nls_cp437,usb_storage"), "{err}");
        assert!(!out.exists() && !out.with_extension("tmp").exists(), "nothing written");
        let partly = Args { allow_missing: vec!["vfat".into(), "nls_cp437".into()], ..args.clone() };
        assert!(build(&partly).unwrap_err().contains("has no usb_storage and"), "only what was not allowed");
        let allowed = Args { allow_missing: vec!["vfat".into(), "nls-cp437".into(), "usb_storage".into()], ..args };
        let built = build(&allowed).unwrap();
        let m = manifest::Manifest::read(&built).unwrap();
        assert_eq!(m.entries[0].listed_modules.allowed_missing, ["vfat", "nls_cp437", "usb_storage"]);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn bad_inputs_fail_clearly_and_leave_nothing() {
        let base = project_root().join(format!("target/imagetest-bad-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let notes = base.join("notes.txt");
        std::fs::write(&notes, "not a kernel").unwrap();
        let out = base.join("out");
        let args = Args {
            kernels: vec![notes],
            out: out.clone(),
            plan: "quick".into(),
            serial: "ttyS0,115200".into(),
            ..Args::default()
        };
        let err = build(&args).unwrap_err();
        assert!(err.contains("not a Linux x86 kernel"), "{err}");
        assert!(!out.exists() && !out.with_extension("tmp").exists(), "no half-written output");
        let none = Args { out: out.clone(), ..Args::default() };
        assert!(build(&none).unwrap_err().contains("no kernel given"));
        let bad_target = Args {
            kernels: vec![fake_kernel(&base)],
            out: out.clone(),
            plan: "quick".into(),
            serial: "ttyS0,115200".into(),
            target: Some("sdb1".into()),
            bootmark_binary: Some(static_binary()),
            ..Args::default()
        };
        assert!(build(&bad_target).unwrap_err().contains("--target"));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
