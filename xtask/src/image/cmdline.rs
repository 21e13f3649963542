//! What every boot entry is told: the kernel command line (checked with the
//! rules /init applies, so an image never carries a line /init would refuse)
//! and the serial console for the bootloaders.

use super::Args;
use crate::Result;

/// The command line every entry boots with (before its `bootmark.entry=`).
pub(crate) fn cmdline(args: &Args) -> Result<String> {
    if !args.sequence_fs.is_empty() && (args.target.is_none() || args.format_confirm != args.target) {
        return Err(
            "--sequence-fs formats the target: add --target SPEC and --format-confirm with the same SPEC".into()
        );
    }
    let (dev, baud) = args.serial.split_once(',').unwrap_or((&args.serial, "115200"));
    let mut c = format!("console={dev},{baud} panic=30 bootmark.console={dev} bootmark.plan={}", args.plan);
    if let Some(t) = &args.target {
        bootmark::contract::cmdline::DiskSpec::parse(t).map_err(|e| format!("--target: {e}"))?;
        c += &format!(" bootmark.target={t}");
    }
    if let (Some(fs), Some(confirm)) = (args.sequence_fs.first(), &args.format_confirm) {
        c += &format!(" bootmark.format={fs} bootmark.format-confirm={confirm}");
    }
    if !args.append.is_empty() {
        c += " ";
        c += &args.append;
    }
    bootmark::contract::cmdline::parse(&c)
        .map_err(|e| format!("the kernel command line would be refused at boot: {e}"))?;
    Ok(c)
}

/// `ttyS1,57600` → (1, 57600), for syslinux's SERIAL and GRUB's serial unit.
pub(crate) fn serial_unit(serial: &str) -> Result<(u32, u32)> {
    let (dev, baud) = serial.split_once(',').unwrap_or((serial, "115200"));
    let unit = dev
        .strip_prefix("ttyS")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("--serial {serial}: the device must be ttyS<N>"))?;
    let speed = baud.parse().map_err(|_| format!("--serial {serial}: the baud rate must be a number"))?;
    Ok((unit, speed))
}
