//! `cargo xtask image`: chosen kernels in, a bootable USB stick image, a
//! PXE tree and an ISO out (plus manifest.json). See docs/servers-and-kernels.md.
//!
//! Two steps: `resolve.rs` turns the flags (`args.rs`) into a `Build` —
//! every kernel found and checked, with --secure-boot every kernel's
//! signature and Debian's signed chain, the plan, every entry's command
//! line — and `assemble` below makes the outputs from the `Build` alone:
//! static /init per arch → initramfs (common archive, the --include files'
//! archive, per-kernel modules archive, concatenated) → staged files → usb.img → pxe/ → bootmark.iso →
//! manifest. Everything is made in OUT.tmp and renamed to OUT at the end.

pub mod args;
pub mod arm64_vmlinuz;
pub mod bootloaders;
pub mod cmdline;
pub mod compressed;
pub mod cpio;
pub mod deb;
pub mod elf;
pub mod grub_platform;
pub mod include;
pub mod initramfs;
pub mod iso;
pub mod manifest;
pub mod menu;
pub mod mkfs;
pub mod modules;
pub mod resolve;
pub mod rpm;
pub mod secure_boot;
pub mod sequence;
pub mod sources;
pub mod static_fio;
pub mod static_mkfs;
pub mod usb;

pub use args::Args;

use crate::build::arch::Arch;
use crate::build::static_binary;
use crate::host::fs::Context as _;
use crate::host::fs::{self, write_creating_dirs as write};
use crate::host::project::{Result, project_root};
use crate::host::tools;
use resolve::Build;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn run(args: &Args) -> Result<()> {
    if let Some(dir) = &args.verify {
        println!("{}", manifest::verify(dir)?);
        return Ok(());
    }
    let out = build(args)?;
    println!("{}", out.display());
    Ok(())
}

/// Build the image; returns the output directory. Everything is made in
/// OUT.tmp and renamed to OUT at the end, so OUT is whole or untouched.
pub fn build(args: &Args) -> Result<PathBuf> {
    tools::ensure(&tools::IMAGE_TOOLS, args.install_deps, "--install-deps")?;
    tools::ensure(&iso::ISO_TOOLS, args.install_deps, "--install-deps")?;
    let started = std::time::Instant::now();
    let out = if args.out.is_absolute() { args.out.clone() } else { project_root().join(&args.out) };
    let tmp = out.with_extension("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let work = tmp.join(".work");
    let result = resolve::resolve(args, &work).and_then(|b| assemble(&b, &tmp, &work));
    match result {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&out);
            fs::rename(&tmp, &out)?;
            eprintln!("image: done in {:.1} s: {}", started.elapsed().as_secs_f64(), out.display());
            Ok(out)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

/// The common /init archive of each architecture, with the SHA-256 of the
/// static binary inside it.
fn common_archives(b: &Build) -> Result<BTreeMap<Arch, (Vec<u8>, String)>> {
    let mut commons = BTreeMap::new();
    for arch in b.arches() {
        let bin = match &b.bootmark_binary {
            Some(bin) => bin.clone(),
            None => static_binary::build(arch)?,
        };
        let mut extra = mkfs::files(&b.mkfs, arch, b.install_deps)?;
        extra.extend(b.plan.file.iter().map(|(path, bytes)| (path.clone(), bytes.clone(), 0o644)));
        let common = initramfs::common_archive(&bin, b.mtime, &extra)?;
        eprintln!("image: common initramfs for {arch}: {} gzip", bootmark::size::human(common.len() as u64));
        commons.insert(arch, (common, fs::sha256_file(&bin)?));
    }
    Ok(commons)
}

/// Make the image from its resolved description: `out` gets usb.img, pxe/,
/// the ISO and manifest.json; `work` is scratch space, removed at the end.
/// The stage (every kernel's files, the menus, the stick's files, the EFI
/// loader), then the stick, the PXE tree and the ISO made from it, then
/// the manifest that describes them.
fn assemble(b: &Build, out: &Path, work: &Path) -> Result<()> {
    let stage = work.join("stage");
    let entry_facts = stage_kernels(b, &stage)?;
    let entries: Vec<menu::Entry> = b
        .entries
        .iter()
        .map(|e| menu::Entry {
            label: e.label.clone(),
            dir: resolve::kernel_dir(e.kernel),
            title: e.title.clone(),
            cmdline: e.cmdline.clone(),
            arch: b.kernels[e.kernel].arch,
        })
        .collect();
    let (serial_unit, serial_speed) = b.serial;
    let m = menu::Menu { entries: &entries, default: b.default, serial_unit, serial_speed, timeout_s: 3 };
    let id = stage_menus(&m, &stage)?;
    stage_results_files(b, &entries, &stage)?;
    // The unsigned GRUB of each platform, for the stick and the ISO, or the signed chain.
    let efi_loaders = match &b.signed {
        Some((chains, _)) => {
            bootloaders::signed_esp(&stage, chains, &id)?;
            Vec::new()
        }
        None => stage_grub_efi(&m, work, &id, &stage)?,
    };
    set_mtimes(&stage, b.mtime)?;

    let staged_mib = dir_size(&stage) >> 20;
    let size = b.stick_mib.unwrap_or(staged_mib * 5 / 4 + 128).max(64);
    if staged_mib >= size {
        return Err(format!("--size {size} MiB is too small: the boot files alone take {staged_mib} MiB"));
    }
    eprintln!("image: assembling usb.img ({size} MiB)");
    usb::build(&out.join("usb.img"), &stage, size, 0x0b00_7a00 ^ b.mtime)?;
    eprintln!("image: writing pxe/");
    let chains = b.signed.as_ref().map(|(c, _)| c.as_slice());
    bootloaders::pxe_tree(&out.join("pxe"), &stage, &m, chains)?;
    eprintln!("image: writing {}", iso::FILE);
    let contents =
        iso::Contents { stage: &stage, menu: &m, id: &id, chains, efi_loaders: &efi_loaders, mtime: b.mtime };
    let iso_menus = iso::build(&out.join(iso::FILE), work, &contents)?;
    fs::remove_dir_all(work)?;
    let manifest = manifest::Manifest {
        schema: manifest::SCHEMA.into(),
        bootmark_version: env!("CARGO_PKG_VERSION").into(),
        source_date_epoch: b.mtime,
        plan: b.plan.name.clone(),
        plan_definition: Some(b.plan.plan.clone()),
        default_entry: b.default,
        entries: entry_facts,
        secure_boot: b.signed.as_ref().map(|(chains, signers)| secure_boot::Facts {
            kernel_signers: signers.clone(),
            ..secure_boot::Facts::merged(chains)
        }),
        iso_menus: Some(iso_menus),
        outputs: manifest::outputs(out)?,
    };
    write(out.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap())
}

/// GRUB as a standalone EFI binary for each platform the menu needs, under
/// EFI/BOOT/ by the name UEFI firmware starts from removable media
/// (BOOTX64.EFI, BOOTAA64.EFI): one stick boots x86 and arm64 servers.
/// Returns each (file name, built file), for the ISO.
fn stage_grub_efi(m: &menu::Menu, work: &Path, id: &str, stage: &Path) -> Result<Vec<(&'static str, PathBuf)>> {
    let mut loaders = Vec::new();
    for arch in m.grub_platforms() {
        let platform = grub_platform::for_arch(arch)?;
        let built = work.join(platform.removable);
        bootloaders::grub_efi(&built, work, id, &platform)?;
        eprintln!("image: GRUB {} from {}", platform.name, platform.package);
        fs::create_dir_all(stage.join("EFI/BOOT"))?;
        fs::copy(&built, stage.join("EFI/BOOT").join(platform.removable))?;
        loaders.push((platform.removable, built));
    }
    Ok(loaders)
}

/// Each kernel's vmlinuz and initrd (the common archive, then its modules)
/// under boot/kN/; the manifest's facts of every entry that boots it.
fn stage_kernels(b: &Build, stage: &Path) -> Result<Vec<manifest::Entry>> {
    let commons = common_archives(b)?;
    // The included files per architecture: a program goes to its own architecture's entries.
    let mut includeds = BTreeMap::new();
    for arch in b.kernels.iter().map(|k| k.arch) {
        if let std::collections::btree_map::Entry::Vacant(slot) = includeds.entry(arch) {
            let archive = initramfs::included_archive(&include::for_arch(&b.includes, arch), b.mtime)?;
            if !archive.is_empty() {
                eprintln!("image: --include files for {arch}: {} gzip", bootmark::size::human(archive.len() as u64));
            }
            slot.insert(archive);
        }
    }
    let mut entry_facts = Vec::new();
    for (i, k) in b.kernels.iter().enumerate() {
        let kdir = resolve::kernel_dir(i);
        let dir = stage.join("boot").join(&kdir);
        fs::create_dir_all(&dir)?;
        fs::copy(&k.vmlinuz, dir.join("vmlinuz"))?;
        let (mods, count, whereabouts) = initramfs::modules_archive(k, b.mtime, &b.allow_missing)?;
        let (common, bin_sha) = &commons[&k.arch];
        let included = &includeds[&k.arch];
        eprintln!("image: {kdir}: {} modules, {} gzip", count, bootmark::size::human(mods.len() as u64));
        let mut initrd = common.clone();
        initrd.extend_from_slice(included);
        initrd.extend_from_slice(&mods);
        fs::write(dir.join("initrd.gz"), &initrd)?;
        let config_sha256 = k.config.as_ref().map(|c| fs::sha256_file(&c.path)).transpose()?;
        for e in b.entries_of(i) {
            entry_facts.push(manifest::Entry {
                label: e.label.clone(),
                title: e.title.clone(),
                cmdline: e.cmdline.clone(),
                cmdline_room: Some(e.cmdline_room),
                without_events: e.without_events.clone(),
                kernel_release: k.release.clone(),
                kernel_version: k.version.clone(),
                arch: k.arch.name().to_string(),
                origin: k.origin.clone(),
                modules: count,
                listed_modules: whereabouts.clone(),
                kernel_config: k
                    .config
                    .as_ref()
                    .and_then(|c| c.path.file_name())
                    .map(|n| n.to_string_lossy().into_owned()),
                kernel_config_sha256: config_sha256.clone(),
                initramfs: manifest::InitramfsSizes {
                    common_gzip_bytes: common.len(),
                    modules_gzip_bytes: mods.len(),
                    included_gzip_bytes: included.len(),
                },
                bootmark_binary_sha256: bin_sha.clone(),
            });
        }
    }
    Ok(entry_facts)
}

/// syslinux's and GRUB's menus, each drawn once, and the file whose name
/// (the image's id, from both menus) lets GRUB find its own image.
fn stage_menus(m: &menu::Menu, stage: &Path) -> Result<String> {
    let (syslinux, grub) = (m.syslinux("/"), m.grub(""));
    let id = menu::image_id(&syslinux, &grub);
    write(stage.join("syslinux.cfg"), syslinux)?;
    write(stage.join("boot/grub/grub.cfg"), grub)?;
    write(stage.join(menu::id_file(&id)), "GRUB finds the bootmark image it belongs to by this file's name.\n")?;
    Ok(id)
}

/// The stick's results journal, its README and, for a sequence, the steps.
fn stage_results_files(b: &Build, entries: &[menu::Entry], stage: &Path) -> Result<()> {
    write_journal(&stage.join(bootmark::journal::PATH), b.journal_bytes)?;
    write(
        stage.join("bootmark/README.txt"),
        "journal.bin holds every boot's results, written in place so that a reset cannot damage\r\n\
         earlier ones. Read it with: bootmark collect /path/to/stick (or the stick image).\r\n",
    )?;
    if let Some((repeat, filesystems)) = &b.sequence {
        let seq = sequence::build(entries, *repeat, filesystems, b.default);
        eprintln!("image: sequence of {} steps on the stick", seq.steps.len());
        write(stage.join(bootmark::contract::sequence::FILE), serde_json::to_string_pretty(&seq).unwrap())?;
    }
    Ok(())
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
    use crate::host::process::{cmd, shell};

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

    /// `--include`: the program the plan runs lands in the entry's
    /// initramfs whole, at /usr/local/bin; without it the build stops before
    /// anything is made, naming what to add.
    #[test]
    fn an_included_program_is_in_the_initramfs_and_a_plan_without_it_is_refused() {
        let base = project_root().join(format!("target/imagetest-include-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let program = crate::build::program::build("seedwrite", Arch::X86_64, false).unwrap();
        let args = Args {
            kernels: vec![fake_kernel(&base)],
            out: base.join("out"),
            plan: "seed-program".into(),
            target: Some("LABEL=SCRATCH".into()),
            bootmark_binary: Some(static_binary()),
            ..Args::default()
        };
        let refused = build(&args).unwrap_err();
        assert!(refused.contains("runs program 'seedwrite', which no --include provides"), "{refused}");
        assert!(!base.join("out").exists() && !base.join("out.tmp").exists());
        let out = build(&Args { includes: vec![program.display().to_string()], ..args }).unwrap();
        let initrd = std::fs::read(out.join("pxe/boot/k0/initrd.gz")).unwrap();
        let mut archive = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&initrd[..]), &mut archive).unwrap();
        let has = |needle: &[u8]| archive.windows(needle.len()).any(|w| w == needle);
        assert!(has(b"usr/local/bin/seedwrite\0") && has(&std::fs::read(&program).unwrap()));
        // In an archive of its own: the common one, with its budget, is the same with or without it.
        let sizes = &manifest::Manifest::read(&out).unwrap().entries[0].initramfs;
        let (common, included) = (sizes.common_gzip_bytes, sizes.included_gzip_bytes);
        let (without, base_without) = build_test_image("include-none");
        let plain = &manifest::Manifest::read(&without).unwrap().entries[0].initramfs;
        assert!(included > 10_000 && plain.included_gzip_bytes == 0, "{included}");
        assert_eq!(common, plain.common_gzip_bytes);
        std::fs::remove_dir_all(&base).unwrap();
        std::fs::remove_dir_all(&base_without).unwrap();
    }

    #[test]
    fn stick_layout_partition_and_filesystem_are_right() {
        let (out, base) = build_test_image("layout");
        let img = out.join("usb.img");
        let sh = shell().unwrap();
        let table = crate::host::process::run(cmd!(sh, "sfdisk -d {img}")).unwrap();
        assert!(
            table.contains("start=        2048") && table.contains("type=c") && table.contains("bootable"),
            "{table}"
        );
        // fsck.fat has no offset option: check the partition through a copy.
        let part = base.join("part.img");
        let data = std::fs::read(&img).unwrap();
        std::fs::write(&part, &data[2048 * 512..]).unwrap();
        let fsck = crate::host::process::output(cmd!(sh, "fsck.fat -n {part}")).unwrap();
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
        // What the image costs a server is its footprint — the root filesystem
        // resident when the plan starts, /init's peak — which every boot's
        // records carry and the mechanisms boot holds to its budget
        // (check/boots/mechanisms.rs). The archive's size is what a TFTP
        // download costs: a guard against a runaway here, not the budget.
        assert!(common(&a) <= 3 << 19, "common archive {} bytes: the guard is 1.5 MiB", common(&a));
        eprintln!("common archive: {} bytes", common(&a));
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

    /// An image for the seed's kernels: a 2.6.10 bzImage (boot protocol
    /// 2.03, so 255 bytes of command line) beside a 6.1 one, with a plan
    /// that gives one variant an entry of its own and the demo's target
    /// and `--append`. Every entry's line, as each bootloader hands it to
    /// its kernel, fits that kernel; only 6.1's carry the tracepoints; the
    /// menus carry the manifest's lines.
    #[test]
    fn every_entry_fits_its_kernels_command_line() {
        use crate::build::kernel::bzimage::tests::header_with_cmdline;
        let base = project_root().join(format!("target/imagetest-cmdline-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let old = base.join("vmlinuz-2.6.10-5-amd64-generic");
        std::fs::write(&old, header_with_cmdline((2, 3), 0, "2.6.10-5-amd64-generic (buildd@) #1 Tue Apr 5", 0))
            .unwrap();
        let new = base.join("vmlinuz-6.1.0-50-amd64");
        std::fs::write(&new, header_with_cmdline((2, 15), 1, "6.1.0-50-amd64 (debian-kernel@) #1 SMP", 2047)).unwrap();
        let args = Args {
            kernels: vec![old, new],
            arch: Some(crate::build::arch::Arch::X86_64),
            out: base.join("out"),
            plan: "sweep".into(),
            target: Some("LABEL=SCRATCH".into()),
            append: "bootmark.repeat=3".into(),
            serial: "ttyS1,115200".into(),
            bootmark_binary: Some(static_binary()),
            ..Args::default()
        };
        let out = build(&args).unwrap();
        let m = manifest::Manifest::read(&out).unwrap();
        assert_eq!(m.entries.len(), 4, "two entries per kernel: the plan's and its boot variant's");
        let syslinux = std::fs::read_to_string(out.join("pxe/pxelinux.cfg/default")).unwrap();
        for e in &m.entries {
            let limit = if e.kernel_release.starts_with("2.6.") { 255 } else { 2046 };
            let arch = crate::build::arch::Arch::parse(&e.arch).unwrap();
            for (loader, line) in
                menu::as_booted(&resolve::kernel_dir(e.label[1..2].parse().unwrap()), arch, &e.cmdline)
            {
                assert!(
                    line.len() <= limit,
                    "{}: {loader} hands Linux {} {} bytes",
                    e.label,
                    e.kernel_release,
                    line.len()
                );
            }
            assert!(e.cmdline_room.is_some_and(|room| e.cmdline.len() <= room && room < limit), "{}", e.label);
            let settings = bootmark::contract::cmdline::parse(&e.cmdline).unwrap();
            assert_eq!((settings.plan.as_str(), settings.console.as_str()), ("sweep", "ttyS1"));
            assert!(e.cmdline.contains("bootmark.target=LABEL=SCRATCH") && e.cmdline.contains("bootmark.repeat=3"));
            assert_eq!(e.cmdline.contains("trace_event="), limit == 2046, "{}: {}", e.label, e.cmdline);
            assert_eq!(e.without_events.is_some(), limit == 255);
            assert!(syslinux.contains(&format!("APPEND {}\n", e.cmdline)), "{} not in the menu as built", e.label);
        }
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
