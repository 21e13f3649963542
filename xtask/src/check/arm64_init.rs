//! The aarch64 static /init where no arm64 machine is: under qemu-user
//! (`qemu-aarch64` runs the binary and hands each of its system calls to
//! the host's kernel), the quick plan in a directory of its own under
//! target/, every record checked.
//!
//! What this shows: the binary is a static aarch64 ELF, and our code and
//! std work on arm64's system call set (no `open`, `stat`, `pipe` or
//! `fork` there: musl uses `openat`, `fstatat`, `pipe2`, `clone`). What it
//! cannot show: an arm64 kernel's own answers (qemu-user answers with the
//! host's), which only a boot under qemu-system-aarch64 will.

use crate::build::arch::Arch;
use crate::build::image::elf;
use crate::build::static_binary;
use crate::check::old_kernel::quick_plan_records;
use crate::host::fs;
use crate::host::process::{self, cmd, shell};
use crate::host::project::{Result, project_root};
use bootmark::record::Status;
use std::path::Path;

/// `cargo xtask check arm64-init`.
pub fn check() -> Result<()> {
    let binary = static_binary::build(Arch::Aarch64)?;
    let size = static_aarch64(&binary)?;
    let dir = project_root().join(format!("target/arm64-init-{}", std::process::id()));
    let work = dir.join("work");
    fs::create_dir_all(&work)?;
    let out = dir.join("records.jsonl");
    let started = std::time::Instant::now();
    let sh = shell()?;
    let ran = process::run(cmd!(sh, "qemu-aarch64 {binary} run --plan quick --quiet --dir {work} --out {out}"));
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    ran.map_err(|e| format!("the aarch64 /init under qemu-aarch64: {e}; records so far:\n{text}"))?;
    let names = check_records(&text)?;
    println!(
        "arm64 /init: a static aarch64 ELF of {}; the quick plan under qemu-aarch64 in {:.1} s: {} records ok ({}), each saying kernel.arch aarch64",
        bootmark::size::human(size),
        started.elapsed().as_secs_f64(),
        names.len(),
        names.join(", ")
    );
    println!("arm64 /init: {}", your_own_program()?);
    Ok(())
}

/// The seed's C program (`cargo xtask program seedwrite --arch aarch64`:
/// the cross gcc with arm64's musl) is a static aarch64 program the image
/// builder takes for arm64 kernels and refuses for x86's, and under
/// qemu-aarch64 it writes the files it names.
fn your_own_program() -> Result<String> {
    let program = crate::build::program::build("seedwrite", Arch::Aarch64, crate::host::deps::can_install())?;
    let bytes = fs::read(&program)?;
    crate::build::image::include::check_program("seedwrite", &bytes, &[Arch::Aarch64])?;
    if crate::build::image::include::check_program("seedwrite", &bytes, &[Arch::X86_64]).is_ok() {
        return Err("the image builder would put the aarch64 seedwrite in an x86_64 image".into());
    }
    let dir = project_root().join(format!("target/arm64-seedwrite-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    let sh = crate::host::process::shell_in(&dir)?;
    let said = process::run(cmd!(sh, "qemu-aarch64 {program} 3 40 16"));
    let sizes: Vec<u64> =
        (0..3).map(|i| std::fs::metadata(dir.join(format!("f{i:06}"))).map_or(0, |m| m.len())).collect();
    let _ = std::fs::remove_dir_all(&dir);
    let said = said.map_err(|e| format!("the aarch64 seedwrite under qemu-aarch64: {e}"))?;
    if sizes != [40 * 1024; 3] {
        return Err(format!("the aarch64 seedwrite said {said:?} but wrote files of {sizes:?} bytes"));
    }
    Ok(format!(
        "seedwrite, cross-built static with arm64's musl ({}), taken for aarch64 images only; under qemu-aarch64: {}",
        bootmark::size::human(bytes.len() as u64),
        said.trim()
    ))
}

/// The binary's size, once its ELF header says AArch64, 64-bit, no loader.
fn static_aarch64(binary: &Path) -> Result<u64> {
    let bytes = fs::read(binary)?;
    let facts = elf::read(&bytes).map_err(|e| format!("{}: {e}", binary.display()))?;
    if facts.machine != 183 || !facts.class64 || facts.interpreter.is_some() || !facts.needed.is_empty() {
        return Err(format!("{} is not a static aarch64 program: {facts:?}", binary.display()));
    }
    Ok(bytes.len() as u64)
}

/// The quick plan's records, each ok and saying the architecture it ran
/// on; returns the workloads' names in order.
fn check_records(text: &str) -> Result<Vec<String>> {
    let records = quick_plan_records(text)?;
    let names: Vec<String> = records.iter().map(|r| r.workload.name.clone()).collect();
    for r in &records {
        let name = &r.workload.name;
        if r.status != Status::Ok {
            return Err(format!("{name}: status {} ({})", r.status.name(), r.error.as_deref().unwrap_or("")));
        }
        if r.kernel.arch.as_deref() != Some("aarch64") {
            return Err(format!("{name}: kernel.arch {:?}, not aarch64", r.kernel.arch));
        }
        if r.responsiveness.as_ref().is_none_or(|p| p.baseline_samples == 0) {
            return Err(format!("{name}: the probe took no samples"));
        }
    }
    if records[0].bytes_written == 0 {
        return Err("manyfiles wrote nothing".into());
    }
    Ok(names)
}
