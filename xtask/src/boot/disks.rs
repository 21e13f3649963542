//! Disks for QEMU boots: a scratch disk with a filesystem labelled SCRATCH,
//! the target every test image and the demo name.

use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{cmd, run, shell};
use crate::host::project::Result;
use std::path::Path;

/// A scratch SATA disk with a filesystem labelled SCRATCH.
pub fn scratch_disk(path: &Path, fs: &str, mib: u64) -> Result<()> {
    let f = fs::create(path)?;
    f.set_len(mib << 20).with_context(|| format!("cannot size {} to {mib} MiB", path.display()))?;
    drop(f);
    let mkfs = format!("mkfs.{fs}");
    let args: Vec<&str> = match fs {
        "xfs" => vec!["-q", "-f", "-L", "SCRATCH"],
        "reiserfs" => vec!["-q", "-f", "-f", "-l", "SCRATCH"],
        _ => vec!["-q", "-F", "-L", "SCRATCH"],
    };
    let sh = shell()?;
    run(cmd!(sh, "{mkfs} {args...} {path}")).map(|_| ())
}
