//! What every boot entry is told: the kernel command line (checked with the
//! rules /init applies, so an image never carries a line /init would refuse)
//! and the serial console for the bootloaders.

use super::args::Args;
use crate::build::arch::Arch;
use crate::host::project::Result;
use bootmark::plan::Plan;

/// The words every entry of an `arch` kernel boots with, before its
/// entry's own: the console, then bootmark's. A kernel that cuts its
/// command line keeps the first bytes, so these come first (the image
/// never gives a kernel more than it keeps: [`fit`]). The console is
/// `--serial` on x86, `--serial-arm64` on arm64 (a PL011, ttyAMA0, on most
/// arm64 servers and QEMU's virt).
pub(crate) fn cmdline(args: &Args, plan: &str, arch: Arch) -> Result<String> {
    if !args.sequence_fs.is_empty() && (args.target.is_none() || args.format_confirm != args.target) {
        return Err(
            "--sequence-fs formats the target: add --target SPEC and --format-confirm with the same SPEC".into()
        );
    }
    let serial = if arch == Arch::Aarch64 { &args.serial_arm64 } else { &args.serial };
    let (dev, baud) = serial.split_once(',').unwrap_or((serial, "115200"));
    let mut c = format!("console={dev},{baud} bootmark.console={dev} bootmark.plan={plan}");
    if let Some(t) = &args.target {
        bootmark::contract::cmdline::DiskSpec::parse(t).map_err(|e| format!("--target: {e}"))?;
        c += &format!(" bootmark.target={t}");
    }
    if let (Some(fs), Some(confirm)) = (args.sequence_fs.first(), &args.format_confirm) {
        c += &format!(" bootmark.format={fs} bootmark.format-confirm={confirm}");
    }
    bootmark::contract::cmdline::parse(&c)
        .map_err(|e| format!("the kernel command line would be refused at boot: {e}"))?;
    Ok(c)
}

/// Refuse a line the boot menus would not hand over as it is: syslinux and
/// GRUB read their menus line by line (a line end would start another
/// directive), and GRUB's `linux` line is shell-like (`$` expands a
/// variable, `;` ends the command, quotes and `\\` are eaten, `#` at a
/// word's start comments the rest out). The manifest would then say one
/// line while the kernel got another.
pub(crate) fn check_menu_safe(line: &str, label: &str) -> Result<()> {
    let comment = line.split(' ').any(|w| w.starts_with('#'));
    let bad = line.chars().find(|c| c.is_control() || "\"'\\$;&|<>{}`".contains(*c));
    match (bad, comment) {
        (None, false) => Ok(()),
        (Some(c), _) => Err(format!(
            "entry {label}'s command line holds {c:?} (from --append, --target or --format-confirm): the boot \
             menus cannot carry it as it is (a line end starts another menu line; GRUB expands $, ends a command \
             at ; and eats quotes and backslashes), so the kernel would get another line than the manifest says"
        )),
        (None, true) => Err(format!(
            "entry {label}'s command line has a word that starts with # (from --append): GRUB takes it and the rest \
             of the line for a comment"
        )),
    }
}

/// The first kernel bootmark gives the tracepoints' words (`trace_event=`):
/// the boot option appeared around 2.6.31–2.6.32 (not pinned to a release
/// here), so 2.6.32, the later. Older kernels could only print the words as
/// unknown, and they cost a 2.6 kernel's 255 bytes; /init says in each
/// record that the events were not there.
pub(crate) const TRACE_EVENT_SINCE: (u32, u32, u32) = (2, 6, 32);

/// One entry's command line, fitted to its kernel.
#[derive(Debug, PartialEq)]
pub(crate) struct Fitted {
    pub line: String,
    /// The bytes the entry's own line may take: the kernel's limit less
    /// what the longest of its bootloaders adds (`menu::as_booted`).
    pub room: usize,
    /// Why the tracepoints' words were left out, when they were.
    pub without_events: Option<String>,
}

/// What [`fit`] needs to know of a kernel.
pub(crate) struct Limits<'a> {
    pub release: &'a str,
    pub arch: Arch,
    /// The longest command line it keeps (its boot header's).
    pub cmdline_max: usize,
}

/// Entry `label`'s command line (`own`: bootmark's words, the variant's,
/// `bootmark.entry=`, the user's `--append`, `panic=30`) as the kernel of
/// `limits` in boot/`dir` will keep it whole: refused, naming every figure,
/// when it does not fit; the tracepoints' words (`trace_event=`) added last,
/// only where the kernel has that option and they fit too, else left out
/// and said why.
pub(crate) fn fit(own: &str, label: &str, dir: &str, limits: &Limits) -> Result<Fitted> {
    let added = super::menu::loader_words_len(dir, limits.arch);
    let room = limits.cmdline_max.saturating_sub(added);
    if own.len() > room {
        let old = if limits.cmdline_max == 255 {
            "; 255 is what a boot protocol before 2.06 (Linux 2.6.22) means"
        } else {
            ""
        };
        return Err(format!(
            "entry {label} (Linux {}): its command line is {} bytes and its bootloaders add up to {added} \
             (BOOT_IMAGE=, initrd=), but the kernel keeps only {} bytes (its boot header's limit{old}) and \
             would cut the rest silently: shorten --target (a shorter LABEL=), --append or the plan's name \
             by {} bytes.\n  the line: {own}",
            limits.release,
            own.len(),
            limits.cmdline_max,
            own.len() - room
        ));
    }
    let version = crate::build::kernel_src::line::version_triple(limits.release);
    let events = bootmark::measure::tracing::boot_parameters();
    let given = own.split(' ').any(|w| w.starts_with("trace_event=") || w.starts_with("trace_buf_size="));
    let without_events = if given {
        Some("--append gives trace_event= or trace_buf_size= itself: bootmark's are left out, yours kept".to_string())
    } else if version != (0, 0, 0) && version < TRACE_EVENT_SINCE {
        let (a, b, c) = TRACE_EVENT_SINCE;
        Some(format!("Linux {} is older than {a}.{b}.{c}, the first given trace_event=", limits.release))
    } else if own.len() + 1 + events.len() > room {
        Some(format!(
            "the tracepoints' {} bytes would not fit the {} the kernel keeps",
            events.len() + 1,
            limits.cmdline_max
        ))
    } else {
        None
    };
    let line = match &without_events {
        None => format!("{own} {events}"),
        Some(_) => own.to_string(),
    };
    Ok(Fitted { line, room, without_events })
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

    /// What the demo's entries carry, on a 2.6.10 kernel (255 bytes, as its
    /// protocol 2.03 header says) and on Debian 12's (2047): every word of
    /// bootmark's on both, the tracepoints on the new one only.
    #[test]
    fn each_kernel_gets_a_line_it_keeps_whole() {
        let own = "console=ttyS0,115200 bootmark.console=ttyS0 bootmark.plan=generations \
                   bootmark.target=LABEL=SCRATCH bootmark.entry=k0 bootmark.repeat=3 panic=30";
        let old = Limits { release: "2.6.10-5-amd64-generic", arch: Arch::X86_64, cmdline_max: 255 };
        let fitted = fit(own, "k0", "k0", &old).unwrap();
        assert_eq!(fitted.line, own, "no tracepoints for 2.6.10");
        assert!(fitted.without_events.as_deref().unwrap().contains("older than 2.6.32, the first given trace_event="));
        for (loader, line) in crate::build::image::menu::as_booted("k0", Arch::X86_64, &fitted.line) {
            assert!(line.len() <= 255, "{loader} hands 2.6.10 {} bytes: {line}", line.len());
        }
        assert_eq!(fitted.room, 255 - "BOOT_IMAGE=/boot/k0/vmlinuz  initrd=/boot/k0/initrd.gz".len());
        let new = Limits { release: "6.1.0-50-amd64", arch: Arch::X86_64, cmdline_max: 2046 };
        let fitted = fit(own, "k0", "k0", &new).unwrap();
        assert_eq!(fitted.line, format!("{own} {}", bootmark::measure::tracing::boot_parameters()));
        assert_eq!(fitted.without_events, None);
        // A kernel of unknown release gets the events only where they fit.
        let unknown = Limits { release: "custom", arch: Arch::X86_64, cmdline_max: 254 };
        let fitted = fit(own, "k0", "k0", &unknown).unwrap();
        assert!(fitted.without_events.unwrap().contains("would not fit the 254"), "unknown release, no room");
    }

    /// A line the kernel would cut is refused with its figures and what to shorten.
    #[test]
    fn a_line_a_kernel_would_cut_is_refused() {
        let old = Limits { release: "2.6.9-42.ELsmp", arch: Arch::I686, cmdline_max: 255 };
        let own = format!("console=ttyS1,115200 bootmark.console=ttyS1 bootmark.plan=seed {}", "x=1 ".repeat(50));
        let e = fit(own.trim(), "k3", "k3", &old).unwrap_err();
        assert!(e.starts_with("entry k3 (Linux 2.6.9-42.ELsmp): its command line is 262 bytes"), "{e}");
        assert!(e.contains("the kernel keeps only 255 bytes") && e.contains("by 61 bytes"), "{e}");
        let arm64 = Limits { release: "6.1.0-50-arm64", arch: Arch::Aarch64, cmdline_max: 2047 };
        assert!(fit(own.trim(), "k3", "k3", &arm64).is_ok(), "arm64 keeps 2047 bytes");
    }

    /// What a menu would not carry as it is, refused; what it would, taken;
    /// a user's own tracepoints win over bootmark's.
    #[test]
    fn lines_the_menus_would_change_are_refused() {
        for bad in ["quiet\nDEFAULT evil", "foo=$bar", "a=1;b=2", "x=\"y z\"", "a=\\n", "LABEL=a\rb", "x=`id`"] {
            let e = check_menu_safe(&format!("console=ttyS0 {bad}"), "k0").unwrap_err();
            assert!(e.starts_with("entry k0's command line holds"), "{bad:?}: {e}");
        }
        assert!(check_menu_safe("console=ttyS0 #rest", "k1").unwrap_err().contains("comment"));
        assert!(check_menu_safe("console=ttyS0,115200n8 root=/dev/sda1 a=b#c mem=4G@16M", "k0").is_ok());
        let limits = Limits { release: "6.1.0-50-amd64", arch: Arch::X86_64, cmdline_max: 2046 };
        let own = "console=ttyS0 bootmark.plan=quick trace_event=sched:sched_switch panic=30";
        let fitted = fit(own, "k0", "k0", &limits).unwrap();
        assert_eq!(fitted.line, own);
        assert!(fitted.without_events.unwrap().contains("yours kept"));
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
