//! Disks for QEMU boots: a scratch disk with a filesystem labelled SCRATCH,
//! the target every test image and the demo name.

use crate::Result;
use std::path::Path;
use std::process::Command;

/// A scratch SATA disk with a filesystem labelled SCRATCH.
pub fn scratch_disk(path: &Path, fs: &str, mib: u64) -> Result<()> {
    let f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    f.set_len(mib << 20).map_err(|e| e.to_string())?;
    drop(f);
    let mkfs = format!("mkfs.{fs}");
    let args: Vec<&str> = match fs {
        "xfs" => vec!["-q", "-f", "-L", "SCRATCH"],
        "reiserfs" => vec!["-q", "-f", "-f", "-l", "SCRATCH"],
        _ => vec!["-q", "-F", "-L", "SCRATCH"],
    };
    crate::host::process::run(Command::new(&mkfs).args(args).arg(path)).map(|_| ())
}
