//! Formatting the target, only after the safety checks say it may be
//! formatted, with the image's mkfs program; the run record gets how.

use super::devices::BlockDev;
use super::{TARGET_MOUNT, mount, safety, say, signatures};
use crate::image_side::exec;
use crate::image_side::sink::serial::Serial;
use serde_json::json;
use std::path::Path;

/// Format only a filesystem the probe recognises and finds empty or marked
/// as ours, or a partition that is blank; anything else is refused by name.
/// Returns how it was made: program, version, arguments.
pub fn format_target(target: &BlockDev, fs: &str, serial: &mut Option<Serial>) -> Result<serde_json::Value, String> {
    match &target.fs {
        Some(existing) => {
            let probe_point = Path::new("/mnt/check");
            mount::mount_dev(&target.node, probe_point, &existing.fs, "ro")?;
            let entries: Vec<String> = std::fs::read_dir(probe_point)
                .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
                .unwrap_or_default();
            let _ = mount::unmount(probe_point);
            safety::may_format(&entries)?;
        }
        None => signatures::check_blank(&target.node, target.size_bytes)
            .map_err(|found| format!("refusing to format {}: {found}", target.name))?,
    }
    let tool = safety::mkfs_tool(fs, Path::new("/"))?;
    let label = target.fs.as_ref().and_then(|f| f.label.as_deref());
    let uuid = target.fs.as_ref().and_then(|f| f.uuid.as_deref());
    let args = safety::mkfs_args(fs, label, uuid);
    let version = mkfs_version(&tool);
    say(serial, &format!("bootmark: formatting {} as {fs} ({version} {})", target.name, args.join(" ")));
    let mut argv = args.clone();
    argv.push(target.node.display().to_string());
    let (ended, ran) = exec::run_to_end(&tool, &argv, 4096).map_err(|e| e.to_string())?;
    if !ended.exit.success() {
        return Err(format!(
            "{} {} failed: {}; it said: {}",
            tool.display(),
            target.node.display(),
            ended.exit.describe(),
            ran.stderr.tail.last_lines(3)
        ));
    }
    // Mark it as bootmark's, so a later boot may format it again.
    mount::mount_dev(&target.node, Path::new(TARGET_MOUNT), fs, "")?;
    let marked = std::fs::write(Path::new(TARGET_MOUNT).join(safety::SCRATCH_MARKER), b"formatted by bootmark\n");
    mount::unmount(Path::new(TARGET_MOUNT))?;
    marked.map_err(|e| format!("cannot write the scratch marker: {e}"))?;
    Ok(json!({"program": tool.display().to_string(), "version": version, "args": args}))
}

/// What an mkfs program says its version is (`mke2fs -V`, `mkfs.xfs -V`),
/// first line; for the record of how the target was made.
fn mkfs_version(tool: &Path) -> String {
    let text = match exec::run_to_end(tool, &["-V".to_string()], 4096) {
        Ok((_, ran)) => ran.stdout.tail.text() + &ran.stderr.tail.text(),
        Err(_) => String::new(),
    };
    text.lines().next().unwrap_or("version unknown").trim().to_string()
}
