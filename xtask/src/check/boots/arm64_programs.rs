//! The static C programs an arm64 image carries, cross-built here with
//! Debian's cross gcc and arm64's musl, run by Debian's arm64 kernel: an
//! arm64 image with the seed's program (`--include`), the static fio
//! (`--fio`) and the static mke2fs and mkreiserfs (`--sequence-fs`), booted
//! as a two-step sequence under AAVMF. Each step formats the NVMe target
//! (ext4, then reiserfs) with the arm64 mkfs and runs the plan of
//! `check command`: seedwrite as a command workload, its built-in twin, a
//! bad argument's error record, and a fio job, each record checked as the
//! x86 boot's are.
//!
//! Then an image of both architectures' kernels with seedwrite for each at
//! one DEST and `--fio`: each entry's initramfs must carry its own
//! architecture's programs (an included archive per architecture).

use super::command::{PLAN, check_careless_record, check_fio_record, check_program_record};
use super::support::{results, serial_documents, test_image};
use crate::boot::qemu;
use crate::build::arch::Arch;
use crate::build::image;
use crate::host::fs;
use crate::host::project::Result;
use bootmark::record::Status;
use std::path::Path;

/// The filesystems of the sequence's steps, each made by the image's arm64 mkfs.
const FILESYSTEMS: [&str; 2] = ["ext4", "reiserfs"];

pub fn test(package: &str, base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let program = crate::build::program::build("seedwrite", Arch::Aarch64, crate::host::deps::can_install())?;
    let plan = base.join("arm64-programs.json");
    fs::write(&plan, PLAN)?;
    let out = image::build(&image::Args {
        arch: Some(Arch::Aarch64),
        plan: plan.display().to_string(),
        includes: vec![program.display().to_string()],
        fio: true,
        sequence_fs: FILESYSTEMS.map(String::from).to_vec(),
        format_confirm: Some("LABEL=SCRATCH".into()),
        ..test_image(vec![super::arm64_image::ARM64_KERNEL.into()], base.join("image-arm64-programs"), Some(1))
    })?;
    let built_s = started.elapsed().as_secs_f64();
    let log = base.join("serial-arm64-programs.log");
    let args =
        qemu::Args { sequence: true, ..super::arm64_image::boot(&out, base.join("scratch-arm64-programs.img"), &log)? };
    let booted = qemu::boot(&args)?;
    let docs = serial_documents(&booted.serial);
    let records = results(&docs);
    let tail = || qemu::tail(&booted.serial, 25);
    if records.len() != 5 * FILESYSTEMS.len() {
        return Err(format!(
            "expected {} records from the sequence, got {}\n{}",
            5 * FILESYSTEMS.len(),
            records.len(),
            tail()
        ));
    }
    let sha256 = fs::sha256_file(&program)?;
    let mut said = Vec::new();
    for (step, fs_type) in records.chunks(5).zip(FILESYSTEMS) {
        let [ours, twin, bad, careless, fio] = step else { unreachable!("chunks of 5") };
        check_careless_record(careless, None)?;
        if let Some(r) = step
            .iter()
            .find(|r| r.storage.fs.as_deref() != Some(fs_type) || r.kernel.arch.as_deref() != Some("aarch64"))
        {
            return Err(format!(
                "{}: on {:?} under {:?}, not {fs_type} under aarch64",
                r.workload.name, r.storage.fs, r.kernel.arch
            ));
        }
        let program_said = check_program_record(ours, &sha256)?;
        if twin.status != Status::Ok || bad.status != Status::Error {
            return Err(format!("{fs_type}: manyfiles {:?}, the bad argument's record {:?}", twin.status, bad.status));
        }
        let (reader_p99, _) = check_fio_record(fio)?;
        said.push(format!(
            "{fs_type}: \"{program_said}\", fio's reader p99 {reader_p99:.1} ms, fio naming /dev/sd* refused by its own /dev"
        ));
    }
    println!(
        "e2e: arm64 programs: seedwrite, fio, mke2fs and mkreiserfs cross-built static for aarch64 (image in {built_s:.1} s), \
         run by {} on a two-step sequence, the target formatted by each step ({}; {:.1} s of boots)",
        super::arm64_image::ARM64_KERNEL,
        said.join("; "),
        booted.elapsed.as_secs_f64()
    );
    two_arch_programs(package, &program, base)
}

/// Where the two-architecture image puts seedwrite, for both architectures.
const SEEDWRITE: &str = "/usr/local/bin/seedwrite";

/// An image of `package` and Debian's arm64 kernel with seedwrite of each
/// architecture at one DEST and `--fio`: every entry's initramfs holds its
/// own architecture's seedwrite and fio.
fn two_arch_programs(package: &str, arm64_program: &Path, base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let x86_program = crate::build::program::build("seedwrite", Arch::X86_64, crate::host::deps::can_install())?;
    let out = image::build(&image::Args {
        includes: vec![
            format!("{}:{SEEDWRITE}", x86_program.display()),
            format!("{}:{SEEDWRITE}", arm64_program.display()),
        ],
        fio: true,
        ..test_image(
            vec![package.into(), super::arm64_image::ARM64_KERNEL.into()],
            base.join("image-two-arch-programs"),
            None,
        )
    })?;
    let manifest = image::manifest::Manifest::read(&out)?;
    let mut said = Vec::new();
    for entry in &manifest.entries {
        let arch = Arch::parse(&entry.arch)?;
        let initrd = out.join("pxe/boot").join(&entry.label).join("initrd.gz");
        let files = initrd_files(&initrd)?;
        for program in [SEEDWRITE, crate::build::image::static_fio::IN_IMAGE] {
            let bytes = files
                .get(program.trim_start_matches('/'))
                .ok_or_else(|| format!("{}: no {program}", initrd.display()))?;
            image::include::check_program(&format!("{}'s {program}", entry.label), bytes, &[arch])?;
        }
        said.push(format!("{} ({arch})", entry.label));
    }
    println!(
        "e2e: arm64 programs: an image of both architectures with seedwrite of each at {SEEDWRITE} and --fio: {} each carry their own architecture's seedwrite and fio ({:.1} s)",
        said.join(" and "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The files of an initramfs as the kernel unpacks it: its gzip'd cpio
/// archives in order, a later one's file replacing an earlier one's.
fn initrd_files(initrd: &Path) -> Result<std::collections::BTreeMap<String, Vec<u8>>> {
    use std::io::Read;
    let data = fs::read(initrd)?;
    let mut rest: &[u8] = &data;
    let mut files = std::collections::BTreeMap::new();
    while !rest.is_empty() {
        let mut member = flate2::bufread::GzDecoder::new(rest);
        let mut cpio = Vec::new();
        member.read_to_end(&mut cpio).map_err(|e| format!("{}: {e}", initrd.display()))?;
        for entry in image::rpm::read_cpio(&cpio)? {
            files.insert(entry.name.trim_start_matches("./").to_string(), entry.data.to_vec());
        }
        rest = member.into_inner();
    }
    Ok(files)
}
