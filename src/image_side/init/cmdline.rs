//! The kernel command line's `bootmark.*` parameters: strict, never a guess.
//!
//! Any unknown `bootmark.*` key, a repeated key or a malformed value is an
//! error that /init reports before touching any disk. Other parameters
//! (console=, root=, quiet, …) belong to the kernel and are ignored.

use std::fmt;

/// Where a disk is: by filesystem label or UUID, by partition UUID, by a
/// device path, or (targets only) by the layer it is inside: an LVM2
/// logical volume or an md RAID array, which /init activates itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskSpec {
    Label(String),
    Uuid(String),
    PartUuid(String),
    Path(String),
    /// `LV=vg/lv`.
    Lv {
        vg: String,
        lv: String,
    },
    /// `MD=uuid`, in mdadm's form (`xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx`).
    Md(String),
}

impl DiskSpec {
    pub fn parse(text: &str) -> Result<DiskSpec, String> {
        let nonempty = |v: &str, what: &str| {
            if v.is_empty() { Err(format!("{what}= needs a value")) } else { Ok(v.to_string()) }
        };
        if let Some(v) = text.strip_prefix("LABEL=") {
            return nonempty(v, "LABEL").map(DiskSpec::Label);
        }
        if let Some(v) = text.strip_prefix("UUID=") {
            return nonempty(v, "UUID").map(|v| DiskSpec::Uuid(v.to_ascii_lowercase()));
        }
        if let Some(v) = text.strip_prefix("PARTUUID=") {
            return nonempty(v, "PARTUUID").map(|v| DiskSpec::PartUuid(v.to_ascii_lowercase()));
        }
        if let Some(v) = text.strip_prefix("LV=") {
            let (vg, lv) = v.split_once('/').ok_or_else(|| format!("LV={v}: write LV=volume-group/logical-volume"))?;
            let valid = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || "+_.-".contains(c));
            if !valid(vg) || !valid(lv) {
                return Err(format!("LV={v}: volume group and logical volume names are letters, digits and +_.-"));
            }
            return Ok(DiskSpec::Lv { vg: vg.to_string(), lv: lv.to_string() });
        }
        if let Some(v) = text.strip_prefix("MD=") {
            return crate::image_side::layers::md::normalize_uuid(v)
                .map(DiskSpec::Md)
                .ok_or_else(|| format!("MD={v}: an md array's UUID is 32 hex digits, as mdadm --detail prints it"));
        }
        if let Some(name) = text.strip_prefix("/dev/") {
            if name.is_empty() || name.split('/').any(|p| p.is_empty() || p == "..") {
                return Err(format!("'{text}' is not a device path"));
            }
            return Ok(DiskSpec::Path(text.to_string()));
        }
        Err(format!("'{text}' is not a disk: write LABEL=…, UUID=…, PARTUUID=…, /dev/…, LV=vg/lv or MD=uuid"))
    }
}

impl fmt::Display for DiskSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiskSpec::Label(v) => write!(f, "LABEL={v}"),
            DiskSpec::Uuid(v) => write!(f, "UUID={v}"),
            DiskSpec::PartUuid(v) => write!(f, "PARTUUID={v}"),
            DiskSpec::Path(v) => f.write_str(v),
            DiskSpec::Lv { vg, lv } => write!(f, "LV={vg}/{lv}"),
            DiskSpec::Md(u) => write!(f, "MD={u}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    Poweroff,
    Reboot,
    Halt,
}

/// The parsed `bootmark.*` settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Built-in plan name or a path inside the initramfs.
    pub plan: String,
    /// Where workloads write; None means: report how to set it, run nothing.
    pub target: Option<DiskSpec>,
    pub results: DiskSpec,
    /// Filesystem to create on the target, only with a matching confirm.
    pub format: Option<String>,
    pub repeat: Option<u32>,
    /// Of a sweep plan, only these variants (comma-separated names).
    pub variants: Option<String>,
    /// Settings for this boot alone (`bootmark.set=`): the plan runs under
    /// them as its one variant, `set` (a settings bisect's step), or
    /// beside the settings as found (`bootmark.set=+NAME:…`).
    pub set: Option<SetForBoot>,
    pub after: After,
    /// Serial device for framed records and heartbeats.
    pub console: String,
    /// Whole-run watchdog.
    pub timeout_s: f64,
    /// Mount options for the target (comma-separated, as mount -o).
    pub mount_options: String,
    /// How long to wait for the target and results devices to appear.
    pub device_wait_s: f64,
    /// The boot menu entry this boot came from (set by the image builder; sequences need it).
    pub entry: Option<String>,
}

impl Settings {
    /// The plan as this boot runs it: `bootmark.repeat` and `bootmark.variants`
    /// applied (xtask's LAVA jobs plan their cases from the same).
    pub fn apply_to(&self, plan: &mut crate::image_side::plan::Plan) -> Result<(), String> {
        if let Some(r) = self.repeat {
            plan.repeat = r;
        }
        if let Some(names) = &self.variants {
            plan.variants = crate::image_side::variant::select(&plan.variants, names)
                .map_err(|e| format!("bootmark.variants: {e}"))?;
        }
        if let Some(set) = &self.set {
            plan.variants = match set.beside_found {
                // A same-boot comparison: each repetition runs the workloads
                // as found, then under the settings (as a sweep interleaves).
                true => vec![
                    crate::image_side::variant::Variant {
                        name: crate::schema::variant::FOUND_BESIDE.into(),
                        note: "the settings as found, beside bootmark.set=".into(),
                        ..Default::default()
                    },
                    set.variant.clone(),
                ],
                false => vec![set.variant.clone()],
            };
            plan.alternate = set.beside_found;
            if let Some(r) = set.repeat {
                plan.repeat = r;
            }
            if let Some(names) = &set.workloads {
                let have: Vec<&str> = plan.workloads.iter().map(|w| w.name()).collect();
                if let Some(missing) = names.iter().find(|n| !have.contains(&n.as_str())) {
                    return Err(format!(
                        "bootmark.set=…workloads={}: the plan '{}' runs no {missing}; its workloads: {}",
                        names.join("+"),
                        plan.name,
                        have.join(", ")
                    ));
                }
                plan.workloads.retain(|w| names.iter().any(|n| n == w.name()));
            }
        }
        Ok(())
    }
}

/// `bootmark.set=`: the settings a boot runs its plan under.
#[derive(Clone, Debug, PartialEq)]
pub struct SetForBoot {
    pub variant: crate::image_side::variant::Variant,
    /// `+NAME:`: the plan's workloads also run as found, each repetition
    /// both ways (the variant `asfound` first): a same-boot comparison.
    pub beside_found: bool,
    /// `repeat=N` among the settings: the plan's repetitions for this boot.
    pub repeat: Option<u32>,
    /// `workloads=A+B`: of the plan's workloads, only these (a confirmation
    /// needs the one its metric reads: a boot of half the time or less).
    pub workloads: Option<Vec<String>>,
}

pub const KEYS: [(&str, &str); 14] = [
    ("plan", "built-in plan name, or the name of a plan file in the image's /etc/bootmark/plans (default quick)"),
    (
        "target",
        "LABEL=…, UUID=…, PARTUUID=… or /dev/…: where the workloads write (required); LV=vg/lv or MD=uuid: a logical volume or md array, activated by /init",
    ),
    ("results", "the results stick (default LABEL=BOOTMARK)"),
    ("format", "FSTYPE: create this filesystem on the target first (needs format-confirm)"),
    ("format-confirm", "must repeat the exact target spec for format to happen"),
    ("repeat", "run the plan's workloads N times"),
    ("variants", "of a sweep plan, run only these variants (comma-separated names)"),
    (
        "set",
        "[+][NAME:]vm.NAME=N,queue.NAME=V,…[,repeat=N][,workloads=A+B]: run the plan (or only those workloads) under these settings, as its one variant NAME (default set; what `bootmark bisect settings` boots); with +, each repetition also as found (variant asfound; first in one repetition, second in the next): what `bootmark confirm --same-boot` boots",
    ),
    ("after", "poweroff | reboot | halt when done (default poweroff)"),
    ("console", "serial device for records, a terminal such as ttyS0 (default ttyS0)"),
    ("timeout", "whole-run watchdog in seconds, 0.1 to 604800 (default 21600)"),
    ("mount-options", "options for mounting the target (default noatime)"),
    ("device-wait", "seconds to wait for disks to appear, 0.1 to 3600 (default 30)"),
    ("entry", "the boot menu entry this is (k0, k1, …; set by cargo xtask image)"),
];

/// Filesystems bootmark creates on a target (command line and sequence steps alike).
pub const FS_TYPES: [&str; 6] = ["ext2", "ext3", "ext4", "xfs", "reiserfs", "vfat"];

/// Parse `/proc/cmdline`. Errors name the parameter and what is allowed.
pub fn parse(cmdline: &str) -> Result<Settings, String> {
    let mut s = Settings {
        plan: "quick".into(),
        target: None,
        results: DiskSpec::Label("BOOTMARK".into()),
        format: None,
        repeat: None,
        variants: None,
        set: None,
        after: After::Poweroff,
        console: "ttyS0".into(),
        timeout_s: 21_600.0,
        mount_options: "noatime".into(),
        device_wait_s: 30.0,
        entry: None,
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut confirm: Option<String> = None;
    for word in cmdline.split_whitespace() {
        let Some(rest) = word.strip_prefix("bootmark.") else { continue };
        let (key, value) =
            rest.split_once('=').ok_or_else(|| format!("bootmark.{rest} needs a value (bootmark.{rest}=…)"))?;
        if !KEYS.iter().any(|(k, _)| *k == key) {
            let known: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
            return Err(format!("unknown parameter bootmark.{key}; known: bootmark.{}", known.join(", bootmark.")));
        }
        if seen.contains(&key) {
            return Err(format!("bootmark.{key} is given twice; give it once"));
        }
        seen.push(key);
        let bad = |why: &str| format!("bootmark.{key}={value}: {why}");
        match key {
            "plan" => s.plan = check_name(value).map_err(|e| bad(&e))?.to_string(),
            "target" => s.target = Some(DiskSpec::parse(value).map_err(|e| bad(&e))?),
            "results" => {
                s.results = DiskSpec::parse(value).map_err(|e| bad(&e))?;
                if matches!(s.results, DiskSpec::Lv { .. } | DiskSpec::Md(_)) {
                    return Err(bad(
                        "the results stick is a plain disk or partition (LABEL=, UUID=…), never an LV or array",
                    ));
                }
            }
            "format" => {
                if !FS_TYPES.contains(&value) {
                    return Err(bad(&format!("not a filesystem bootmark formats; use one of {}", FS_TYPES.join(", "))));
                }
                s.format = Some(value.to_string());
            }
            "format-confirm" => confirm = Some(value.to_string()),
            "repeat" => {
                if s.set.as_ref().is_some_and(|set| set.repeat.is_some()) {
                    return Err(bad("bootmark.set= gives repeat= already: give it once"));
                }
                s.repeat = Some(
                    value
                        .parse()
                        .ok()
                        .filter(|n| (1..=1000).contains(n))
                        .ok_or_else(|| bad("a whole number from 1 to 1000"))?,
                )
            }
            "variants" => {
                for name in value.split(',') {
                    check_name(name).map_err(|e| bad(&e))?;
                }
                s.variants = Some(value.to_string());
            }
            "set" => {
                let set = settings_variant(value).map_err(|e| bad(&e))?;
                if set.repeat.is_some() && s.repeat.is_some() {
                    return Err(bad("bootmark.repeat= is given already: give the repetitions once"));
                }
                s.set = Some(set);
            }
            "after" => {
                s.after = match value {
                    "poweroff" => After::Poweroff,
                    "reboot" => After::Reboot,
                    "halt" => After::Halt,
                    _ => return Err(bad("use poweroff, reboot or halt")),
                }
            }
            "console" => {
                let dev = value.strip_prefix("/dev/").unwrap_or(value);
                s.console = check_tty_name(dev).map_err(|e| bad(&e))?.to_string();
            }
            "timeout" => s.timeout_s = seconds(value, TIMEOUT_RANGE).map_err(|e| bad(&e))?,
            "mount-options" => {
                if value.is_empty() || !value.chars().all(|c| c.is_ascii_alphanumeric() || ",=_-.".contains(c)) {
                    return Err(bad("comma-separated mount options"));
                }
                s.mount_options = value.to_string();
            }
            "device-wait" => s.device_wait_s = seconds(value, DEVICE_WAIT_RANGE).map_err(|e| bad(&e))?,
            "entry" => s.entry = Some(check_name(value).map_err(|e| bad(&e))?.to_string()),
            _ => unreachable!("every key in KEYS is handled"),
        }
    }
    check_format(&s, confirm.as_deref())?;
    if s.set.is_some() && s.variants.is_some() {
        return Err("bootmark.set and bootmark.variants both choose the settings: give one".into());
    }
    Ok(s)
}

/// `[+][NAME:]vm.dirty_ratio=20,queue.max_sectors_kb=128[,repeat=N]` as
/// the variant NAME (default `set`; a settings bisect names its candidate,
/// so its report tells the candidates apart): only the settings a plan's
/// variant may change, each given once. A leading `+` runs the plan as
/// found too, beside it; `repeat=N` sets the boot's repetitions (a
/// same-boot comparison needs several runs a side, whatever the plan's).
fn settings_variant(value: &str) -> Result<SetForBoot, String> {
    let (beside_found, value) = match value.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let (name, value) = match value.split_once(':') {
        Some((name, rest)) if !name.contains('=') => (name, rest),
        _ => ("set", value),
    };
    if beside_found && name == crate::schema::variant::FOUND_BESIDE {
        return Err(format!("'{name}' names the runs as found beside it: give the settings another name"));
    }
    let mut v = crate::image_side::variant::Variant {
        name: name.into(),
        note: "bootmark.set= on the kernel command line".into(),
        ..Default::default()
    };
    let (mut repeat, mut workloads) = (None, None);
    for item in value.split(',') {
        let (key, val) = item.split_once('=').ok_or_else(|| format!("'{item}' is not NAME=VALUE"))?;
        let twice = || format!("{key} is given twice");
        match key.split_once('.') {
            Some(("vm", name)) => {
                let n = val.parse().map_err(|_| format!("{key}={val}: a vm setting is a whole number"))?;
                if v.vm.insert(name.to_string(), n).is_some() {
                    return Err(twice());
                }
            }
            Some(("queue", name)) => {
                if v.queue.insert(name.to_string(), val.to_string()).is_some() {
                    return Err(twice());
                }
            }
            None if key == "repeat" => {
                let n = val.parse().ok().filter(|n| (1..=1000).contains(n));
                if repeat.replace(n.ok_or_else(|| format!("repeat={val}: a whole number from 1 to 1000"))?).is_some() {
                    return Err(twice());
                }
            }
            None if key == "workloads" => {
                let names: Vec<String> = val.split('+').map(str::to_string).collect();
                if let Some(bad) = names.iter().find(|n| check_name(n).is_err()) {
                    return Err(format!("workloads={val}: '{bad}' is not a workload's name"));
                }
                if workloads.replace(names).is_some() {
                    return Err(twice());
                }
            }
            _ => return Err(format!("'{key}' is not vm.NAME, queue.NAME, repeat or workloads")),
        }
    }
    v.validate()?;
    Ok(SetForBoot { variant: v, beside_found, repeat, workloads })
}

/// Formatting happens only when format and format-confirm are both present
/// and the confirm repeats the target spec exactly.
fn check_format(s: &Settings, confirm: Option<&str>) -> Result<(), String> {
    match (&s.format, confirm, &s.target) {
        (None, None, _) => Ok(()),
        (None, Some(_), _) => Err("bootmark.format-confirm without bootmark.format: nothing to confirm".into()),
        (Some(_), _, None) => Err("bootmark.format needs bootmark.target: which disk to format?".into()),
        (Some(fs), None, Some(t)) => Err(format!(
            "bootmark.format={fs} would erase {t}: add bootmark.format-confirm={t} to confirm, or remove bootmark.format"
        )),
        (Some(_), Some(c), Some(t)) if DiskSpec::parse(c).ok().as_ref() == Some(t) && c == t.to_string() => Ok(()),
        (Some(_), Some(c), Some(t)) => Err(format!(
            "bootmark.format-confirm={c} does not repeat bootmark.target={t} exactly: nothing will be formatted"
        )),
    }
}

/// The whole-run watchdog: up to a week.
pub const TIMEOUT_RANGE: (f64, f64) = (0.1, 604_800.0);
/// Waiting for disks: up to an hour.
pub const DEVICE_WAIT_RANGE: (f64, f64) = (0.1, 3_600.0);

/// A plan (or a boot entry) is a name (a built-in plan or a file in the image's
/// /etc/bootmark/plans), never a path: `/dev/zero` or `/dev/sda` would be
/// read whole into PID 1's memory.
fn check_name(v: &str) -> Result<&str, String> {
    let ok = !v.is_empty()
        && v.len() <= 64
        && !v.starts_with('.')
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok { Ok(v) } else { Err("not a name (letters, digits, - _ . only; no paths)".into()) }
}

/// A serial device name such as ttyS0, ttyUSB0 or hvc0 (whether it is a
/// terminal is checked when it is opened).
fn check_tty_name(v: &str) -> Result<&str, String> {
    let ok = !v.is_empty()
        && v.len() <= 32
        && v.starts_with(|c: char| c.is_ascii_alphabetic())
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.');
    if ok { Ok(v) } else { Err("not a serial device name such as ttyS0".into()) }
}

/// Seconds within `range`, so that deadline arithmetic cannot overflow.
fn seconds(v: &str, (min, max): (f64, f64)) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && (min..=max).contains(&s) => Ok(s),
        _ => Err(format!("seconds, from {min} to {max}")),
    }
}

/// The kernel command line as text. Bytes that are not UTF-8 are an error
/// only inside a `bootmark.*` parameter (elsewhere they are the kernel's
/// business): such a parameter must not be silently ignored.
pub fn from_bytes(raw: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(raw).trim().to_string();
    match text.split_whitespace().find(|w| w.starts_with("bootmark.") && w.contains('\u{fffd}')) {
        Some(w) => Err(format!("the kernel command line has bytes that are not UTF-8 in '{}'", w.escape_debug())),
        None => Ok(text),
    }
}

/// The most a kernel whose boot protocol predates 2.06 (every 2.6 before
/// 2.6.22) keeps of its command line, and what syslinux hands one whose
/// header says 255: a line of this length may have been cut, silently.
const CUT_AT: [usize; 2] = [254, 255];

/// Why `cmdline` looks cut by the kernel: exactly an old kernel's limit
/// long, and ending in a bootmark word whose value may be missing its end
/// (`bootmark.target=LABEL=SCRATCH` kept as `bootmark.target=LAB`, which
/// could even name another disk). Images from `cargo xtask image` fit
/// each kernel's limit; a line made by hand, or an older image, may not.
pub fn cut_by_the_kernel(cmdline: &str) -> Option<String> {
    let line = cmdline.trim_end();
    let last = line.split_whitespace().last()?;
    (CUT_AT.contains(&line.len()) && last.starts_with("bootmark.")).then(|| {
        format!(
            "the kernel command line is {} bytes, the most an old kernel keeps (255: a boot protocol before 2.06, \
             every 2.6 kernel before 2.6.22), and ends in '{last}': it was probably cut there. Nothing was run. \
             Build the image with this bootmark (it fits each entry to its kernel), or shorten the line",
            line.len()
        )
    })
}

/// The console named on a command line that may be invalid elsewhere, so an
/// error about the rest still reaches the serial port the user watches.
pub fn console_hint(cmdline: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("bootmark.console="))
        .map(|v| v.strip_prefix("/dev/").unwrap_or(v))
        .find(|v| check_tty_name(v).is_ok())
        .map(String::from)
}

/// The results stick named on a command line that is invalid elsewhere, so
/// the error can still be recorded there: the one `bootmark.results=` if it
/// names a label or UUID, else the default. (/init writes to it only if it
/// already holds a bootmark journal.)
pub fn results_hint(cmdline: &str) -> DiskSpec {
    let given: Vec<&str> = cmdline.split_whitespace().filter_map(|w| w.strip_prefix("bootmark.results=")).collect();
    match given.as_slice() {
        [one] => DiskSpec::parse(one)
            .ok()
            .filter(|d| matches!(d, DiskSpec::Label(_) | DiskSpec::Uuid(_) | DiskSpec::PartUuid(_))),
        _ => None,
    }
    .unwrap_or_else(|| DiskSpec::Label("BOOTMARK".into()))
}

/// The reference text for `bootmark boot-params` and the README.
pub fn reference() -> String {
    let mut s = String::from("Kernel command line parameters read by bootmark as /init:\n");
    for (k, v) in KEYS {
        s += &format!("  bootmark.{k:<15} {v}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_ignores_kernel_parameters() {
        let s = parse("BOOT_IMAGE=/vmlinuz console=ttyS0,115200 quiet root=/dev/sda1").unwrap();
        assert_eq!(s.plan, "quick");
        assert_eq!(s.target, None);
        assert_eq!(s.results, DiskSpec::Label("BOOTMARK".into()));
        assert_eq!(s.after, After::Poweroff);
    }

    #[test]
    fn full_line() {
        let s = parse(
            "console=ttyS0 bootmark.plan=seed bootmark.target=LABEL=SCRATCH bootmark.format=ext3 \
             bootmark.format-confirm=LABEL=SCRATCH bootmark.repeat=3 bootmark.after=reboot bootmark.timeout=600 \
             bootmark.console=/dev/ttyS1 bootmark.results=UUID=ABCD-1234",
        )
        .unwrap();
        assert_eq!(s.plan, "seed");
        assert_eq!(s.target, Some(DiskSpec::Label("SCRATCH".into())));
        assert_eq!(s.format.as_deref(), Some("ext3"));
        assert_eq!(s.repeat, Some(3));
        assert_eq!(s.after, After::Reboot);
        assert_eq!(s.timeout_s, 600.0);
        assert_eq!(s.console, "ttyS1");
        assert_eq!(s.results, DiskSpec::Uuid("abcd-1234".into()));
    }

    /// `bootmark.set=` replaces the plan's variants with one, `set`, holding those settings.
    #[test]
    fn settings_for_one_boot_become_the_plans_one_variant() {
        let s = parse("bootmark.plan=sweep bootmark.set=queue.max_sectors_kb=128,vm.dirty_ratio=20").unwrap();
        let named = parse("bootmark.set=d1+d3:queue.max_sectors_kb=128").unwrap();
        assert_eq!(named.set.map(|s| s.variant.name), Some("d1+d3".to_string()));
        assert!(parse("bootmark.set=a/b:vm.swappiness=1").unwrap_err().contains("short word"));
        let mut plan = crate::image_side::plan::Plan::load("sweep").unwrap();
        assert!(plan.variants.len() > 1);
        s.apply_to(&mut plan).unwrap();
        let [v] = plan.variants.as_slice() else { panic!("{:?}", plan.variants) };
        assert_eq!(v.name, "set");
        assert_eq!(v.queue.get("max_sectors_kb").map(String::as_str), Some("128"));
        assert_eq!(v.vm.get("dirty_ratio"), Some(&20));
        assert_eq!((v.vm.len(), v.queue.len()), (1, 1));
    }

    /// `bootmark.set=+NAME:…` runs each repetition as found, then under the
    /// settings: the same-boot comparison `bootmark confirm --same-boot` boots.
    #[test]
    fn settings_beside_the_found_ones_interleave_with_them() {
        let s = parse("bootmark.set=+changed:queue.max_sectors_kb=128,repeat=5").unwrap();
        let mut plan = crate::image_side::plan::Plan::load("sweep").unwrap();
        s.apply_to(&mut plan).unwrap();
        let names: Vec<&str> = plan.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["asfound", "changed"]);
        assert!(plan.variants[0].vm.is_empty() && plan.variants[0].queue.is_empty());
        assert_eq!(plan.variants[1].queue.get("max_sectors_kb").map(String::as_str), Some("128"));
        assert_eq!(plan.repeat, 5);
        assert!(plan.alternate, "as found first in one repetition, changed first in the next");
        // Without +, repeat= alone sets the repetitions of the one variant.
        let one = parse("bootmark.set=vm.swappiness=10,repeat=2").unwrap();
        one.apply_to(&mut plan).unwrap();
        assert_eq!((plan.variants.len(), plan.repeat, plan.alternate), (1, 2, false));
        let err = |l: &str| parse(l).unwrap_err();
        assert!(err("bootmark.set=+asfound:vm.swappiness=1").contains("another name"));
        assert!(err("bootmark.set=+c:vm.swappiness=1,repeat=0").contains("1 to 1000"));
        assert!(err("bootmark.set=+c:repeat=2,repeat=3").contains("twice"));
        assert!(err("bootmark.repeat=3 bootmark.set=+c:vm.swappiness=1,repeat=5").contains("once"));
        assert!(err("bootmark.set=+c:vm.swappiness=1,repeat=5 bootmark.repeat=3").contains("once"));
        assert!(err("bootmark.set=+c:reps=5").contains("not vm.NAME, queue.NAME, repeat or workloads"));
        // Of the plan's workloads, only those named; one the plan lacks is refused by name.
        let only = parse("bootmark.set=+c:vm.swappiness=1,workloads=seqwrite").unwrap();
        let mut plan = crate::image_side::plan::Plan::load("generations").unwrap();
        only.apply_to(&mut plan).unwrap();
        assert_eq!(plan.workloads.iter().map(|w| w.name()).collect::<Vec<_>>(), ["seqwrite"]);
        let missing = parse("bootmark.set=c:vm.swappiness=1,workloads=fio").unwrap();
        let mut plan = crate::image_side::plan::Plan::load("generations").unwrap();
        assert!(missing.apply_to(&mut plan).unwrap_err().contains("runs no fio; its workloads: manyfiles, seqwrite"));
        assert!(err("bootmark.set=c:workloads=a/b").contains("not a workload's name"));
    }

    #[test]
    fn hostile_and_malformed_input_is_refused() {
        let err = |l: &str| parse(l).unwrap_err();
        assert!(err("bootmark.tagret=/dev/sdb").contains("unknown parameter bootmark.tagret"));
        assert!(err("bootmark.plan").contains("needs a value"));
        assert!(err("bootmark.repeat=0").contains("1 to 1000"));
        assert!(err("bootmark.repeat=-1").contains("1 to 1000"));
        assert!(err("bootmark.repeat=1e9").contains("1 to 1000"));
        assert!(err("bootmark.after=explode").contains("poweroff"));
        assert!(err("bootmark.timeout=nan").contains("seconds"));
        assert!(err("bootmark.timeout=inf").contains("seconds"));
        assert!(err("bootmark.target=sdb").contains("not a disk"));
        assert!(err("bootmark.target=/dev/../etc/passwd").contains("not a device path"));
        assert!(err("bootmark.target=LABEL=").contains("needs a value"));
        assert!(err("bootmark.plan=../../etc/shadow").contains("no paths"));
        assert!(err("bootmark.plan=a bootmark.plan=b").contains("twice"));
        assert!(err("bootmark.mount-options=rw;rm").contains("mount options"));
        assert!(err("bootmark.format=ntfs bootmark.target=/dev/sdb").contains("not a filesystem"));
        assert!(err(&format!("bootmark.plan={}", "é".repeat(5000))).contains("not a name"));
        assert!(err("bootmark.plan=/dev/zero").contains("no paths"));
        assert!(err("bootmark.plan=/dev/sda").contains("no paths"));
        assert!(err("bootmark.console=sda/../x").contains("serial device"));
        assert!(err("bootmark.timeout=99999999999999999999").contains("0.1 to 604800"));
        assert!(err("bootmark.timeout=0").contains("0.1 to 604800"));
        assert!(err("bootmark.set=vm.dirty_ratio").contains("not NAME=VALUE"));
        assert!(err("bootmark.set=vm.dirty_ratio=x").contains("whole number"));
        assert!(err("bootmark.set=vm.overcommit_memory=1").contains("not a setting a variant may change"));
        assert!(err("bootmark.set=proc.x=1").contains("not vm.NAME, queue.NAME, repeat or workloads"));
        assert!(err("bootmark.set=queue.nr_requests=4,queue.nr_requests=8").contains("twice"));
        assert!(err("bootmark.set=queue.scheduler=a/b").contains("not a plain value"));
        assert!(err("bootmark.set=vm.swappiness=1 bootmark.variants=a").contains("give one"));
        assert!(err("bootmark.device-wait=1e12").contains("0.1 to 3600"));
        assert_eq!(parse("bootmark.timeout=604800").unwrap().timeout_s, 604_800.0);
        assert_eq!(parse("bootmark.plan=my-plan_2.v1").unwrap().plan, "my-plan_2.v1");
    }

    /// A line an old kernel cut in the target's label, as a 2.6.10 cut a
    /// 316-byte one (seen on a real boot: `LAB`, refused as not a disk).
    /// Cut a little further it still parses, naming another label. A whole
    /// line of any length, or one that ends in another word, is not suspected.
    #[test]
    fn a_line_cut_at_an_old_kernels_limit_is_caught() {
        let head =
            "BOOT_IMAGE=/boot/k0/vmlinuz console=ttyS0,115200 panic=30 trace_event=writeback:balance_dirty_pages";
        let tail = "bootmark.console=ttyS0 bootmark.plan=generations bootmark.target=LABEL=SCRATCH bootmark.entry=k0";
        let filler = "x".repeat(255 - head.len() - 2 - tail.find("LABEL=SCRATCH").unwrap() - "LABEL=SCRA".len());
        let whole = format!("{head} {filler} {tail} initrd=/boot/k0/initrd.gz");
        let kept = &whole[..255];
        assert!(kept.ends_with("bootmark.target=LABEL=SCRA"), "{kept}");
        assert!(parse(kept).is_ok(), "the cut line parses: only its length gives it away");
        let why = cut_by_the_kernel(kept).unwrap();
        assert!(why.contains("255 bytes") && why.contains("ends in 'bootmark.target=LABEL=SCRA'"), "{why}");
        assert!(cut_by_the_kernel(&whole[..254]).is_some(), "syslinux hands a 2.06 kernel of 255 only 254");
        assert_eq!(cut_by_the_kernel(&whole), None);
        let padded = format!("{} initrd=/boot/k0/initrd.gz", "x".repeat(229));
        assert_eq!(padded.len(), 255);
        assert_eq!(cut_by_the_kernel(&padded), None, "syslinux's initrd= last: whole");
    }

    #[test]
    fn non_utf8_bytes_in_a_bootmark_parameter_are_an_error() {
        let e = from_bytes(b"quiet bootmark.target=LABEL=SCR\xffATCH bootmark.plan=quick\n").unwrap_err();
        assert!(e.contains("not UTF-8") && e.contains("bootmark.target"), "{e}");
        // Elsewhere on the line they are the kernel's business.
        assert_eq!(from_bytes(b"x=\xfe bootmark.plan=seed\n").unwrap(), "x=\u{fffd} bootmark.plan=seed");
    }

    #[test]
    fn the_console_is_found_even_on_a_bad_line() {
        assert_eq!(console_hint("bootmark.bogus=1 bootmark.console=/dev/ttyS1"), Some("ttyS1".into()));
        assert_eq!(console_hint("bootmark.console=../x"), None);
        assert_eq!(console_hint("console=ttyS0"), None);
        assert_eq!(results_hint("bootmark.bogus=1 bootmark.results=LABEL=R2"), DiskSpec::Label("R2".into()));
        assert_eq!(results_hint("bootmark.results=/dev/sda"), DiskSpec::Label("BOOTMARK".into()));
        assert_eq!(
            results_hint("bootmark.results=LABEL=A bootmark.results=LABEL=B"),
            DiskSpec::Label("BOOTMARK".into())
        );
    }

    #[test]
    fn targets_inside_lvm_and_md_are_named_by_layer() {
        let t = |l: &str| parse(l).unwrap().target.unwrap();
        assert_eq!(t("bootmark.target=LV=vg00/data-1"), DiskSpec::Lv { vg: "vg00".into(), lv: "data-1".into() });
        assert_eq!(t("bootmark.target=LV=vg00/data-1").to_string(), "LV=vg00/data-1");
        let md = t("bootmark.target=MD=3B1F6E7A-0C2D4E5F-11223344-AABBCCDD");
        assert_eq!(md, DiskSpec::Md("3b1f6e7a:0c2d4e5f:11223344:aabbccdd".into()));
        let err = |l: &str| parse(l).unwrap_err();
        assert!(err("bootmark.target=LV=vg00").contains("LV=volume-group/logical-volume"));
        assert!(err("bootmark.target=LV=vg/../x").contains("letters, digits"));
        assert!(err("bootmark.target=MD=abc").contains("32 hex digits"));
        assert!(err("bootmark.results=LV=vg/lv").contains("never an LV or array"));
        // Formatting an LV asks for the same exact confirmation.
        let ok = parse("bootmark.target=LV=vg/lv bootmark.format=ext3 bootmark.format-confirm=LV=vg/lv").unwrap();
        assert_eq!(ok.format.as_deref(), Some("ext3"));
    }

    #[test]
    fn formatting_needs_an_exact_confirmation() {
        let err = |l: &str| parse(l).unwrap_err();
        assert!(err("bootmark.target=/dev/sdb1 bootmark.format=ext3").contains("format-confirm=/dev/sdb1"));
        assert!(err("bootmark.format=ext3").contains("needs bootmark.target"));
        assert!(err("bootmark.target=/dev/sdb1 bootmark.format-confirm=/dev/sdb1").contains("without bootmark.format"));
        assert!(
            err("bootmark.target=/dev/sdb1 bootmark.format=ext3 bootmark.format-confirm=/dev/sdb2")
                .contains("does not repeat")
        );
        assert!(
            err("bootmark.target=LABEL=A bootmark.format=ext3 bootmark.format-confirm=LABEL=a")
                .contains("does not repeat")
        );
        assert!(
            err("bootmark.target=UUID=abc bootmark.format=ext3 bootmark.format-confirm=UUID=ABC")
                .contains("does not repeat")
        );
        let ok = parse("bootmark.target=/dev/sdb1 bootmark.format=xfs bootmark.format-confirm=/dev/sdb1").unwrap();
        assert_eq!(ok.format.as_deref(), Some("xfs"));
    }
}
