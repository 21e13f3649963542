//! `cargo xtask lava`: LAVA job definitions from a built image, so that a lab
//! already running LAVA boots bootmark on its fleet instead of sticks.
//!
//! One job per boot entry and kind of device: LAVA's stock `qemu` device type
//! (kernel, initramfs and a scratch disk as images; x86 entries on the PC,
//! arm64 entries on the `virt` machine with a Cortex-A72 and an NVMe target)
//! and physical servers booting over the network (`deploy: to: tftp`, no
//! stick: results come from the serial console): x86 ones by `ipxe` or
//! `grub`, arm64 ones by `grub` (UEFI's network boot starts GRUB; iPXE is
//! x86 firmware's), of the device type `--arm64-device-type` names, which
//! differs per board: without it arm64 entries get their qemu jobs only. Results reach LAVA through a
//! `monitors` test action matching the lines /init prints for it
//! (`bootmark::sink::lava`, docs/lava.md); the job log goes back to
//! `bootmark collect`. Everything a job downloads is put under `--out`'s
//! `files/`, and the jobs fetch `<--url-base>/files/…`: the whole `--out`
//! directory is what gets published at `--url-base`.

use crate::build::arch::Arch;
use crate::build::image::manifest::{self, Manifest};
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{cmd, shell};
use crate::host::project::{Result, project_root};
use bootmark::contract::cmdline::{DiskSpec, Settings};
use bootmark::plan::Plan;
use bootmark::sink::lava as signals;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The image directory `cargo xtask image` wrote.
    #[arg(long, default_value = "target/image")]
    pub image: PathBuf,
    /// Where the jobs (jobs/*.yaml) and the files they download (files/) go.
    #[arg(long, default_value = "target/lava")]
    pub out: PathBuf,
    /// The URL at which the --out directory is published (http://, https:// or file://).
    /// Default: file://<--out>, for `lava-run` on this machine.
    #[arg(long, value_name = "URL")]
    pub url_base: Option<String>,
    /// Which jobs: `qemu` (LAVA's stock qemu device type), `x86` (physical servers that boot
    /// over the network: x86 entries', and arm64 entries' with --arm64-device-type), or `both`.
    #[arg(long, default_value = "both", value_parser = ["qemu", "x86", "both"])]
    pub devices: String,
    /// The LAVA device type of the physical servers.
    #[arg(long, default_value = "x86", value_name = "TYPE")]
    pub device_type: String,
    /// The LAVA device type of physical arm64 servers: one that boots GRUB over the network
    /// (LAVA's base-grub types, e.g. synquacer). Their jobs boot `grub`. Without it, arm64
    /// entries get qemu jobs only.
    #[arg(long, value_name = "TYPE")]
    pub arm64_device_type: Option<String>,
    /// How the physical servers boot the kernel and initramfs fetched over TFTP.
    #[arg(long, default_value = "ipxe", value_parser = ["ipxe", "grub"])]
    pub boot: String,
    /// Minutes from power-on to a running kernel (firmware, PXE; 2006 servers are slow):
    /// part of every timeout.
    #[arg(long, default_value_t = 5)]
    pub boot_minutes: u64,
    /// QEMU jobs for dispatchers without KVM: a software CPU (`-cpu qemu64`, TCG).
    #[arg(long)]
    pub tcg: bool,
    /// Extra QEMU options for the qemu jobs (repeatable), e.g. a serial log file.
    #[arg(long = "qemu-option", value_name = "OPTION", allow_hyphen_values = true)]
    pub qemu_options: Vec<String>,
    /// Extra kernel parameters for every job (e.g. `bootmark.device-wait=10`); checked with /init's rules.
    #[arg(long, default_value = "")]
    pub append: String,
    /// A gzipped raw disk image for the qemu jobs' target, instead of a new ext3 one made to
    /// match the entries' `bootmark.target`.
    #[arg(long, value_name = "IMG.gz")]
    pub scratch: Option<PathBuf>,
    /// The qemu jobs' memory in MiB.
    #[arg(long, default_value_t = 1024)]
    pub memory: u64,
}

/// The defaults `cargo xtask lava` has, for the jobs the tests write: the flags' own.
impl Default for Args {
    fn default() -> Self {
        crate::host::project::flags_given(&[])
    }
}

/// One written job.
#[derive(Clone, Debug)]
pub struct Job {
    pub path: PathBuf,
    /// `qemu` or the physical device type.
    pub device_type: String,
    pub entry: String,
    /// The main case of every planned workload run, in order.
    pub case_ids: Vec<String>,
}

pub fn run(args: &Args) -> Result<()> {
    let jobs = write_jobs(args)?;
    let out = absolute(&args.out);
    println!("lava: {} jobs in {}:", jobs.len(), out.join("jobs").display());
    for j in &jobs {
        println!("  {} ({}, entry {}, {} workload runs)", j.path.display(), j.device_type, j.entry, j.case_ids.len());
    }
    println!(
        "Publish {} (the jobs fetch <--url-base>/files/…) at the --url-base URL, then submit: \
         lavacli jobs submit {}\n\
         Read the results back: lavacli jobs logs --raw ID > ID.yaml; bootmark report ID.yaml",
        out.display(),
        jobs.first().map(|j| j.path.display().to_string()).unwrap_or_default()
    );
    Ok(())
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() { p.to_path_buf() } else { project_root().join(p) }
}

/// Write every job (and copy the files they download); returns them.
pub fn write_jobs(args: &Args) -> Result<Vec<Job>> {
    let image = absolute(&args.image);
    let m = Manifest::read(&image)?;
    let manifest_sha = crate::host::fs::sha256_file(&image.join("manifest.json"))?;
    let plan = match &m.plan_definition {
        Some(p) => p.clone(),
        None => crate::build::image::cmdline::load_plan(&m.plan)?,
    };
    let out = absolute(&args.out);
    let files = out.join("files");
    let _ = std::fs::remove_dir_all(out.join("jobs"));
    std::fs::create_dir_all(out.join("jobs")).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    std::fs::create_dir_all(&files).map_err(|e| format!("cannot create {}: {e}", files.display()))?;
    let base = match &args.url_base {
        Some(u) if ["http://", "https://", "file://"].iter().any(|s| u.starts_with(s)) => {
            u.trim_end_matches('/').to_string()
        }
        Some(u) => return Err(format!("--url-base {u}: give an http://, https:// or file:// URL")),
        None => format!("file://{}", out.display()),
    };
    let mut jobs = Vec::new();
    let mut scratch: Option<(String, String)> = None;
    // Physical arm64 servers need their device type named: said, and refused when that leaves nothing.
    let arm64 = m.entries.iter().filter(|e| e.arch == Arch::Aarch64.name()).count();
    if arm64 > 0 && args.devices != "qemu" && args.arm64_device_type.is_none() {
        let first = m.entries.iter().find(|e| e.arch == Arch::Aarch64.name()).unwrap();
        let why = format!(
            "no physical-server jobs for the arm64 entries ({arm64} of {}, e.g. {}, {}): give --arm64-device-type TYPE, the LAVA device type of your arm64 servers (one that boots GRUB over the network, e.g. synquacer)",
            m.entries.len(),
            first.label,
            first.kernel_release
        );
        match (args.devices.as_str(), arm64 == m.entries.len()) {
            ("x86", true) => return Err(why),
            _ => eprintln!("lava: {why}; their qemu jobs are written"),
        }
    }
    for entry in &m.entries {
        let line = entry_cmdline(&entry.cmdline, &args.append)?;
        let settings = bootmark::contract::cmdline::parse(&line).map_err(|e| format!("entry {}: {e}", entry.label))?;
        let mut planned = plan.clone();
        settings.apply_to(&mut planned).map_err(|e| format!("entry {}: {e}", entry.label))?;
        let case_ids: Vec<String> = signals::Cases::planned(&planned).ids().map(str::to_string).collect();
        let kdir = entry.label.split_once('-').map_or(entry.label.as_str(), |(k, _)| k);
        let artifacts = Artifacts {
            kernel: publish(&image.join("pxe/boot").join(kdir).join("vmlinuz"), &files, kdir, &base)?,
            ramdisk: publish(&image.join("pxe/boot").join(kdir).join("initrd.gz"), &files, kdir, &base)?,
        };
        let timing = Timing::of(&planned, &settings, args.boot_minutes);
        let meta = Meta { manifest: &m, manifest_sha: &manifest_sha, entry, plan: &planned };
        if args.devices != "x86" {
            if scratch.is_none() {
                scratch = Some(scratch_disk(args, &settings, &planned, &files, &base)?);
            }
            let (url, sha) = scratch.clone().unwrap();
            let job = qemu_job(args, &meta, &artifacts, (&url, &sha), &line, &timing);
            jobs.push(write_job(&out, &format!("qemu-{}", entry.label), &job, "qemu", entry, &case_ids)?);
        }
        // A physical server of the entry's architecture: arm64's boot GRUB from UEFI's network boot.
        let physical = match entry.arch == Arch::Aarch64.name() {
            true => args.arm64_device_type.as_deref().map(|t| (t, "grub")),
            false => Some((args.device_type.as_str(), args.boot.as_str())),
        };
        if let Some((device_type, boot)) = physical.filter(|_| args.devices != "qemu") {
            let job = physical_job(device_type, boot, &meta, &artifacts, &line, &timing);
            let name = format!("{device_type}-{}", entry.label);
            jobs.push(write_job(&out, &name, &job, device_type, entry, &case_ids)?);
        }
    }
    Ok(jobs)
}

fn write_job(
    out: &Path,
    name: &str,
    job: &Yaml,
    device_type: &str,
    entry: &manifest::Entry,
    case_ids: &[String],
) -> Result<Job> {
    let path = out.join("jobs").join(format!("{name}.yaml"));
    let text = format!("# Written by `cargo xtask lava`; see docs/lava.md.\n{}", job.render());
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Job { path, device_type: device_type.into(), entry: entry.label.clone(), case_ids: case_ids.to_vec() })
}

/// The entry's command line plus `--append`, checked as /init will.
fn entry_cmdline(line: &str, append: &str) -> Result<String> {
    let line = if append.trim().is_empty() { line.to_string() } else { format!("{line} {}", append.trim()) };
    if line.contains('"') {
        return Err(format!("the kernel command line holds a '\"', which a LAVA job cannot quote: {line}"));
    }
    bootmark::contract::cmdline::parse(&line).map_err(|e| format!("--append: /init would refuse the line: {e}"))?;
    Ok(line)
}

/// A file the jobs download: copied under files/DIR/, with its URL and SHA-256.
struct Published {
    url: String,
    sha256: String,
}

struct Artifacts {
    kernel: Published,
    ramdisk: Published,
}

fn publish(src: &Path, files: &Path, dir: &str, base: &str) -> Result<Published> {
    let name = src.file_name().unwrap().to_string_lossy().into_owned();
    let to = files.join(dir).join(&name);
    fs::create_dir_all(to.parent().unwrap())?;
    std::fs::copy(src, &to).map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), to.display()))?;
    Ok(Published { url: format!("{base}/files/{dir}/{name}"), sha256: crate::host::fs::sha256_file(&to)? })
}

/// The qemu jobs' target disk: `--scratch`, or a new ext3 filesystem that
/// `bootmark.target` finds (its label or UUID), gzipped. Returns (URL, SHA-256).
fn scratch_disk(args: &Args, s: &Settings, plan: &Plan, files: &Path, base: &str) -> Result<(String, String)> {
    let to = files.join("scratch.img.gz");
    if let Some(given) = &args.scratch {
        std::fs::copy(given, &to).map_err(|e| format!("--scratch {}: {e}", given.display()))?;
    } else {
        let mkfs_id: Vec<String> = match &s.target {
            Some(DiskSpec::Label(l)) => vec!["-L".into(), l.clone()],
            Some(DiskSpec::Uuid(u)) => vec!["-U".into(), u.clone()],
            Some(DiskSpec::Path(p)) if p == "/dev/sda" => Vec::new(),
            other => {
                return Err(format!(
                    "the qemu job's scratch disk cannot be made to match bootmark.target={}: build the image with --target LABEL=… (or UUID=…), or give --scratch IMG.gz",
                    other.as_ref().map_or("(none)".into(), |t| t.to_string())
                ));
            }
        };
        // Room for the plan's files, plus the filesystem's own.
        let mib = (plan.space_needed(args.memory << 20) >> 20) * 5 / 4 + 64;
        let raw = files.join("scratch.img");
        let f = fs::create(&raw)?;
        f.set_len(mib.max(256) << 20).with_context(|| format!("cannot size {}", raw.display()))?;
        drop(f);
        let sh = shell()?;
        crate::host::process::run(cmd!(sh, "mkfs.ext3 -q -F {mkfs_id...} {raw}"))?;
        gzip_file(&raw, &to)?;
        fs::remove_file(&raw)?;
    }
    Ok((format!("{base}/files/scratch.img.gz"), crate::host::fs::sha256_file(&to)?))
}

fn gzip_file(from: &Path, to: &Path) -> Result<()> {
    let mut input = fs::open(from)?;
    let out = fs::create(to)?;
    let mut enc = flate2::GzBuilder::new().mtime(0).write(out, flate2::Compression::fast());
    std::io::copy(&mut input, &mut enc)
        .with_context(|| format!("cannot gzip {} to {}", from.display(), to.display()))?;
    enc.finish().with_context(|| format!("cannot write {}", to.display()))?;
    Ok(())
}

/// The timeouts of a job, from the plan: LAVA's monitor allows the boot
/// action's timeout between two matches, so that is the longest a workload
/// may take (its watchdog) plus the probe's quiet time and recovery, the
/// wait for disks and the boot itself; the test action allows the whole plan,
/// but never more than /init's own whole-run watchdog.
struct Timing {
    silence_s: u64,
    test_s: u64,
    job_s: u64,
}

impl Timing {
    fn of(plan: &Plan, s: &Settings, boot_minutes: u64) -> Timing {
        const DEPLOY_S: u64 = 600;
        // Between runs: a variant's settings, remounting, records written.
        const SLACK_S: f64 = 60.0;
        let boot = (boot_minutes * 60) as f64 + s.device_wait_s;
        let (per_run, whole) = plan.time_budget_s(s.timeout_s);
        let silence_s = (boot + per_run).ceil() as u64;
        let test_s = (boot + whole + SLACK_S).ceil() as u64;
        Timing { silence_s, test_s, job_s: DEPLOY_S + test_s + silence_s }
    }
}

/// What every job says about where it came from.
struct Meta<'a> {
    manifest: &'a Manifest,
    manifest_sha: &'a str,
    entry: &'a manifest::Entry,
    plan: &'a Plan,
}

impl Meta<'_> {
    fn header(&self, device_type: &str, t: &Timing) -> Vec<(&'static str, Yaml)> {
        let e = self.entry;
        let name = format!("bootmark {} on Linux {} ({}, entry {})", self.plan.name, e.kernel_release, e.arch, e.label);
        vec![
            ("job_name", Yaml::str(&name)),
            ("device_type", Yaml::str(device_type)),
            ("visibility", Yaml::str("public")),
            ("priority", Yaml::str("medium")),
            (
                "timeouts",
                Yaml::map(vec![
                    ("job", seconds(t.job_s)),
                    ("action", seconds(t.test_s)),
                    ("connection", seconds(t.silence_s)),
                ]),
            ),
            (
                "metadata",
                Yaml::map(vec![
                    ("bootmark.version", Yaml::str(&self.manifest.bootmark_version)),
                    ("bootmark.plan", Yaml::str(&self.plan.name)),
                    ("bootmark.entry", Yaml::str(&e.label)),
                    ("bootmark.kernel_release", Yaml::str(&e.kernel_release)),
                    ("bootmark.arch", Yaml::str(&e.arch)),
                    ("bootmark.image_manifest_sha256", Yaml::str(self.manifest_sha)),
                    ("bootmark.binary_sha256", Yaml::str(&e.bootmark_binary_sha256)),
                ]),
            ),
        ]
    }
}

fn seconds(s: u64) -> Yaml {
    Yaml::map(vec![("seconds", Yaml::Int(s))])
}

/// The test action: LAVA matches /init's case lines on the console.
fn monitor(t: &Timing) -> Yaml {
    Yaml::map(vec![(
        "test",
        Yaml::map(vec![
            ("timeout", seconds(t.test_s)),
            (
                "monitors",
                Yaml::List(vec![Yaml::map(vec![
                    ("name", Yaml::str("bootmark")),
                    ("start", Yaml::str(signals::START)),
                    ("end", Yaml::str(signals::END)),
                    ("pattern", Yaml::str(signals::PATTERN)),
                ])]),
            ),
        ]),
    )])
}

fn qemu_job(args: &Args, meta: &Meta, a: &Artifacts, scratch: (&str, &str), line: &str, t: &Timing) -> Yaml {
    let arch = Arch::parse(&meta.entry.arch).unwrap_or(Arch::X86_64);
    let mut extra = vec!["-no-reboot".to_string()];
    // The target: SATA on the PC, NVMe on arm64's virt machine (as arm64 servers have it).
    let target = match arch {
        Arch::Aarch64 => {
            "-drive if=none,id=target,format=raw,file={scratch} -device nvme,drive=target,serial=bootmark-target"
        }
        _ => {
            extra.push("-device ahci,id=ahci".into());
            "-drive if=none,id=target,format=raw,file={scratch} -device ide-hd,drive=target,bus=ahci.0"
        }
    };
    if args.tcg {
        // A software CPU: the template's `-cpu host -enable-kvm` is off
        // (no_kvm; arm64's template never asks for KVM). RDRAND as in
        // `Arch::qemu`: the kernel seeds its random pool before SMP,
        // patching no text under TCG later.
        if arch == Arch::X86_64 {
            extra.extend(["-machine pc", "-cpu qemu64,vendor=GenuineIntel,+rdrand"].map(String::from));
        }
        extra.push("-accel tcg".into());
    }
    extra.extend(args.qemu_options.iter().cloned());
    let lava_arch = match arch {
        Arch::X86_64 => "amd64",
        Arch::I686 => "i386",
        Arch::Aarch64 => "arm64",
    };
    let mut context = vec![
        ("arch", Yaml::str(lava_arch)),
        ("memory", Yaml::Int(args.memory)),
        ("extra_options", Yaml::List(extra.iter().map(|o| Yaml::str(o)).collect())),
    ];
    if arch == Arch::Aarch64 {
        // The template's virt machine, with the CPU `Arch::qemu` boots (its default is a Cortex-A57).
        context.push(("cpu", Yaml::str(Arch::Aarch64.qemu().1)));
    }
    if args.tcg {
        context.push(("no_kvm", Yaml::Bool(true)));
    }
    let image = |arg: &str, p: &Published| {
        Yaml::map(vec![("image_arg", Yaml::str(arg)), ("url", Yaml::str(&p.url)), ("sha256sum", Yaml::str(&p.sha256))])
    };
    let scratch = Yaml::map(vec![
        ("image_arg", Yaml::str(target)),
        ("url", Yaml::str(scratch.0)),
        ("sha256sum", Yaml::str(scratch.1)),
        ("compression", Yaml::str("gz")),
    ]);
    let deploy = Yaml::map(vec![(
        "deploy",
        Yaml::map(vec![
            ("to", Yaml::str("tmpfs")),
            ("timeout", seconds(600)),
            (
                "images",
                Yaml::map(vec![
                    ("kernel", image(&format!("-kernel {{kernel}} -append \"{line}\""), &a.kernel)),
                    ("ramdisk", image("-initrd {ramdisk}", &a.ramdisk)),
                    ("scratch", scratch),
                ]),
            ),
        ]),
    )]);
    let boot = Yaml::map(vec![(
        "boot",
        Yaml::map(vec![
            ("method", Yaml::str("qemu")),
            ("media", Yaml::str("tmpfs")),
            ("timeout", seconds(t.silence_s)),
        ]),
    )]);
    let mut top = meta.header("qemu", t);
    top.push(("context", Yaml::map(context)));
    top.push(("actions", Yaml::List(vec![deploy, boot, monitor(t)])));
    Yaml::map(top)
}

/// A physical server: kernel and initramfs over TFTP, booted by iPXE or
/// GRUB with the entry's command line.
fn physical_job(device_type: &str, boot: &str, meta: &Meta, a: &Artifacts, line: &str, t: &Timing) -> Yaml {
    // The device dictionary's boot commands add `console=DEVICE,BAUD`: the
    // device is ours, the speed the dictionary's (LAVA reads the port at it).
    let console = line.split_whitespace().filter_map(|w| w.strip_prefix("console=")).next_back();
    let device = console.map_or("ttyS0", |c| c.split_once(',').map_or(c, |(d, _)| d));
    let kernel_args: Vec<&str> = line.split_whitespace().filter(|w| !w.starts_with("console=")).collect();
    let deploy = Yaml::map(vec![(
        "deploy",
        Yaml::map(vec![
            ("to", Yaml::str("tftp")),
            ("timeout", seconds(600)),
            ("kernel", Yaml::map(vec![("url", Yaml::str(&a.kernel.url)), ("sha256sum", Yaml::str(&a.kernel.sha256))])),
            (
                "ramdisk",
                // Used as built: LAVA must not unpack it to add its overlay or modules.
                Yaml::map(vec![
                    ("url", Yaml::str(&a.ramdisk.url)),
                    ("sha256sum", Yaml::str(&a.ramdisk.sha256)),
                    ("install_modules", Yaml::Bool(false)),
                    ("install_overlay", Yaml::Bool(false)),
                ]),
            ),
        ]),
    )]);
    let boot = Yaml::map(vec![(
        "boot",
        Yaml::map(vec![
            ("method", Yaml::str(boot)),
            ("commands", Yaml::str("ramdisk")),
            ("timeout", seconds(t.silence_s)),
        ]),
    )]);
    let mut top = meta.header(device_type, t);
    top.push((
        "context",
        Yaml::map(vec![
            ("extra_kernel_args", Yaml::str(&kernel_args.join(" "))),
            ("console_device", Yaml::str(device)),
        ]),
    ));
    top.push(("actions", Yaml::List(vec![deploy, boot, monitor(t)])));
    Yaml::map(top)
}

/// Just enough YAML for a job, in the order written: block mappings and
/// sequences, strings double-quoted (JSON's escapes are YAML's).
pub enum Yaml {
    Map(Vec<(String, Yaml)>),
    List(Vec<Yaml>),
    Str(String),
    Int(u64),
    Bool(bool),
}

impl Yaml {
    fn str(s: &str) -> Yaml {
        Yaml::Str(s.to_string())
    }
    fn map(pairs: Vec<(&str, Yaml)>) -> Yaml {
        Yaml::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        self.block(0, &mut out);
        out
    }

    fn scalar(&self) -> Option<String> {
        match self {
            Yaml::Str(s) => Some(serde_json::to_string(s).unwrap()),
            Yaml::Int(n) => Some(n.to_string()),
            Yaml::Bool(b) => Some(b.to_string()),
            Yaml::Map(_) | Yaml::List(_) => None,
        }
    }

    fn block(&self, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match self {
            Yaml::Map(pairs) => {
                for (k, v) in pairs {
                    match v.scalar() {
                        Some(s) => out.push_str(&format!("{pad}{k}: {s}\n")),
                        None => {
                            out.push_str(&format!("{pad}{k}:\n"));
                            v.block(indent + 2, out);
                        }
                    }
                }
            }
            Yaml::List(items) => {
                for item in items {
                    match item.scalar() {
                        Some(s) => out.push_str(&format!("{pad}- {s}\n")),
                        None => {
                            // "- " then the item's first line; the rest indented under it.
                            let mut inner = String::new();
                            item.block(indent + 2, &mut inner);
                            out.push_str(&format!("{pad}- {}", &inner[indent + 2..]));
                        }
                    }
                }
            }
            scalar => out.push_str(&format!("{pad}{}\n", scalar.scalar().unwrap())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_is_block_style_in_the_order_written() {
        let y = Yaml::map(vec![
            ("job_name", Yaml::str("a \"b\"")),
            ("actions", Yaml::List(vec![Yaml::map(vec![("boot", Yaml::map(vec![("method", Yaml::str("qemu"))]))])])),
            ("n", Yaml::Int(3)),
            ("opts", Yaml::List(vec![Yaml::str("-m 1"), Yaml::Bool(true)])),
        ]);
        assert_eq!(
            y.render(),
            "job_name: \"a \\\"b\\\"\"\nactions:\n  - boot:\n      method: \"qemu\"\nn: 3\nopts:\n  - \"-m 1\"\n  - true\n"
        );
    }

    #[test]
    fn timeouts_follow_the_plan_and_never_outlast_the_whole_run_watchdog() {
        let plan = bootmark::plan::Plan::load("quick").unwrap();
        let s = bootmark::contract::cmdline::parse("bootmark.plan=quick").unwrap();
        let t = Timing::of(&plan, &s, 5);
        // 5 min boot + 30 s disks + 300 s watchdog + 0.3 s + 3 s + 60 s.
        assert_eq!(t.silence_s, 694);
        assert!(t.test_s > 6 * 300 && t.job_s > t.test_s + t.silence_s, "{}", t.test_s);
        let short = bootmark::contract::cmdline::parse("bootmark.plan=quick bootmark.timeout=100").unwrap();
        assert_eq!(Timing::of(&plan, &short, 5).test_s, 300 + 30 + 160 + 60);
    }

    #[test]
    fn bad_command_lines_are_refused_before_any_job_is_written() {
        assert!(entry_cmdline("bootmark.plan=quick", "bootmark.plan=seed").unwrap_err().contains("twice"));
        assert!(entry_cmdline("bootmark.plan=quick", "x=\"y\"").unwrap_err().contains("cannot quote"));
        assert_eq!(entry_cmdline("a", " bootmark.timeout=9 ").unwrap(), "a bootmark.timeout=9");
    }

    /// What the user is told to publish (`--out`) is what the URLs point into.
    #[test]
    fn every_download_url_is_a_path_under_the_published_out_directory() {
        let out = std::env::temp_dir().join(format!("bootmark-lava-publish-{}", std::process::id()));
        let src = out.join("in/vmlinuz");
        std::fs::create_dir_all(src.parent().unwrap()).unwrap();
        std::fs::write(&src, b"kernel").unwrap();
        let base = "https://files.lab.example/bootmark/run1";
        let p = publish(&src, &out.join("files"), "k0", base).unwrap();
        let rel = p.url.strip_prefix(base).expect("the URL starts with --url-base");
        assert_eq!(std::fs::read(out.join(rel.trim_start_matches('/'))).unwrap(), b"kernel", "{}", p.url);
        std::fs::remove_dir_all(&out).unwrap();
    }
}
