//! What every boot entry is told: the kernel command line (checked with the
//! rules /init applies, so an image never carries a line /init would refuse)
//! and the serial console for the bootloaders.

use super::args::Args;
use crate::build::arch::Arch;
use crate::host::project::Result;
use bootmark::plan::Plan;

/// The command line every entry of an `arch` kernel boots with (before its
/// `bootmark.entry=`): the console is `--serial` on x86, `--serial-arm64`
/// on arm64 (a PL011, ttyAMA0, on most arm64 servers and QEMU's virt).
pub(crate) fn cmdline(args: &Args, plan: &str, arch: Arch) -> Result<String> {
    if !args.sequence_fs.is_empty() && (args.target.is_none() || args.format_confirm != args.target) {
        return Err(
            "--sequence-fs formats the target: add --target SPEC and --format-confirm with the same SPEC".into()
        );
    }
    let serial = if arch == Arch::Aarch64 { &args.serial_arm64 } else { &args.serial };
    let (dev, baud) = serial.split_once(',').unwrap_or((serial, "115200"));
    // The tracepoints /init reads, switched on before the other CPUs start
    // (switching them at run time patches kernel text on every CPU).
    let events = bootmark::measure::tracing::boot_parameters();
    let mut c = format!("console={dev},{baud} panic=30 {events} bootmark.console={dev} bootmark.plan={plan}");
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
pub(crate) fn entries_for_plan(plan: &Plan) -> Result<Vec<(String, String, String)>> {
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

/// The plan an image runs, resolved once by `cargo xtask image --plan`.
pub(crate) struct ImagePlan {
    /// What `bootmark.plan=` says.
    pub name: String,
    pub plan: Plan,
    /// A plan file from elsewhere, carried in the initramfs: (path there, content).
    pub file: Option<(String, Vec<u8>)>,
}

/// `--plan`: a built-in plan, a file in image/plans by name, or any plan
/// file by path (it contains a `/` or ends in `.json`), which the image
/// then carries as /etc/bootmark/plans/NAME.json under the plan's own name.
pub(crate) fn resolve_plan(arg: &str) -> Result<ImagePlan> {
    if !arg.contains('/') && !arg.ends_with(".json") {
        return Ok(ImagePlan { name: arg.to_string(), plan: load_plan(arg)?, file: None });
    }
    let plan = Plan::load(arg).map_err(|e| format!("--plan {arg}: {e}"))?;
    let name = plan.name.clone();
    match bootmark::contract::cmdline::parse(&format!("bootmark.plan={name}")) {
        Ok(s) if s.plan == name => {}
        Ok(_) => return Err(format!("--plan {arg}: the plan's \"name\" cannot go on the command line: it has spaces")),
        Err(e) => return Err(format!("--plan {arg}: the plan's \"name\" cannot go on the command line: {e}")),
    }
    if load_plan(&name).is_ok() {
        return Err(format!(
            "--plan {arg}: a plan named '{name}' is already built in or in image/plans, and /init would run that one; give the file's plan another \"name\""
        ));
    }
    let bytes = std::fs::read(arg).map_err(|e| format!("--plan {arg}: {e}"))?;
    Ok(ImagePlan { file: Some((format!("etc/bootmark/plans/{name}.json"), bytes)), name, plan })
}

/// The plan an image runs: a built-in, or a file in image/plans.
pub(crate) fn load_plan(name: &str) -> Result<Plan> {
    if bootmark::plan::builtin_names().contains(&name) {
        return Plan::load(name);
    }
    let file = crate::host::project::project_root().join("image/plans").join(format!("{name}.json"));
    Plan::load(&file.to_string_lossy())
        .map_err(|e| format!("--plan {name}: not a built-in plan nor image/plans/{name}.json ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variant with kernel parameters gets its own entry, running only it;
    /// the others share the plain entry; a plan without such variants gets one entry.
    #[test]
    fn boot_variants_get_entries_of_their_own() {
        let entries = entries_for_plan(&load_plan("sweep").unwrap()).unwrap();
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
        assert_eq!(
            entries_for_plan(&load_plan("quick").unwrap()).unwrap(),
            [(String::new(), String::new(), String::new())]
        );
        assert!(resolve_plan("no-such-plan").err().unwrap().contains("image/plans/no-such-plan.json"));
    }

    /// A plan file from anywhere travels in the image under its own name,
    /// which must not shadow one of ours (/init would run ours).
    #[test]
    fn plan_files_are_carried_under_their_name_unless_it_is_taken() {
        let dir = std::env::temp_dir().join(format!("bootmark-planfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut plan = load_plan("quick").unwrap();
        plan.name = "short-watchdog".into();
        plan.workload_deadline_s = 2.0;
        let file = dir.join("mine.json");
        std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
        let got = resolve_plan(&file.to_string_lossy()).unwrap();
        assert_eq!(got.name, "short-watchdog");
        assert_eq!(got.plan, plan);
        let (path, bytes) = got.file.unwrap();
        assert_eq!(path, "etc/bootmark/plans/short-watchdog.json");
        assert_eq!(bytes, std::fs::read(&file).unwrap());
        plan.name = "quick".into();
        std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
        assert!(resolve_plan(&file.to_string_lossy()).err().unwrap().contains("already built in"));
        plan.name = "a b".into();
        std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
        assert!(resolve_plan(&file.to_string_lossy()).err().unwrap().contains("cannot go on the command line"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
