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

/// The boot entries one kernel gets: (label suffix, title suffix, extra
/// command line). A plan whose variants carry kernel parameters gets one
/// entry per such variant (its parameters, and only it runs there), plus one
/// for the variants a running kernel can switch to (when there are any).
pub(crate) fn entries_for_plan(plan: &str) -> Result<Vec<(String, String, String)>> {
    let plan = load_plan(plan)?;
    let (boot, runtime): (Vec<_>, Vec<_>) = plan.variants.iter().partition(|v| v.needs_boot());
    if boot.is_empty() {
        return Ok(vec![(String::new(), String::new(), String::new())]);
    }
    let mut out = Vec::new();
    if !runtime.is_empty() {
        let names: Vec<&str> = runtime.iter().map(|v| v.name.as_str()).collect();
        out.push((String::new(), String::new(), format!(" bootmark.variants={}", names.join(","))));
    }
    for v in boot {
        out.push((
            format!("-{}", v.name),
            format!(", variant {}", v.name),
            format!(" {} bootmark.variants={}", v.cmdline.trim(), v.name),
        ));
    }
    Ok(out)
}

/// The plan an image runs: a built-in, or a file in image/plans.
fn load_plan(name: &str) -> Result<bootmark::plan::Plan> {
    if bootmark::plan::builtin_names().contains(&name) {
        return bootmark::plan::Plan::load(name);
    }
    let file = crate::project_root().join("image/plans").join(format!("{name}.json"));
    bootmark::plan::Plan::load(&file.to_string_lossy())
        .map_err(|e| format!("--plan {name}: not a built-in plan nor image/plans/{name}.json ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variant with kernel parameters gets its own entry, running only it;
    /// the others share the plain entry; a plan without such variants gets one entry.
    #[test]
    fn boot_variants_get_entries_of_their_own() {
        let entries = entries_for_plan("sweep").unwrap();
        assert_eq!(
            entries,
            [
                (String::new(), String::new(), " bootmark.variants=dirty40,dirty10,writeback".to_string()),
                (
                    "-boot15".into(),
                    ", variant boot15".into(),
                    " sysctl.vm.dirty_ratio=15 bootmark.variants=boot15".into()
                ),
            ]
        );
        assert_eq!(entries_for_plan("quick").unwrap(), [(String::new(), String::new(), String::new())]);
        assert!(entries_for_plan("no-such-plan").unwrap_err().contains("image/plans/no-such-plan.json"));
    }
}
