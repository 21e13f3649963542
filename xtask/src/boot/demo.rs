//! `cargo xtask demo`: the whole product in one command, with QEMU standing
//! in for the test server. Three generations of Debian's kernel — Debian 11,
//! 12 and 13 (5.10, 6.1, 6.12), each taken with one `--kernel-deb
//! linux-image-amd64@SUITE` — in one USB image, one clean boot per kernel on
//! the seed's server class (`xtask qemu --machine dl140`: one CPU, 1 GiB, a
//! freshly formatted SATA disk as slow as a 2006 one), booted by `bootmark
//! lab`'s loop with a `[server.qemu]` server, the loop a user's lab runs
//! through a BMC. Each boot runs the `generations` plan (the seed's writes,
//! scaled, three times each); results collected from the serial logs and
//! the stick, checked to agree, compared in the seed's table with the
//! verdict and findings, and drawn in an HTML report.

use crate::boot::qemu;
use crate::build::image::{self, usb};
use crate::host::apt::resolve_meta;
use crate::host::deps;
use crate::host::fs;
use crate::host::process::{cmd, shell};
use crate::host::project::{Result, project_root};
use crate::host::tools;
use std::path::PathBuf;

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Debian kernel packages to compare: NAME@SUITE from any Debian suite, a
    /// package from the system's apt sources (meta names resolved) or a .deb.
    #[arg(long = "kernel-deb", default_values = ["linux-image-amd64@bullseye", "linux-image-amd64@bookworm", "linux-image-amd64@trixie"])]
    pub kernels: Vec<String>,
    /// Filesystem of the scratch disk (made fresh before every boot).
    #[arg(long, default_value = "ext3", value_parser = ["ext2", "ext3", "ext4", "xfs", "reiserfs"])]
    pub fs: String,
    /// Plan to run (`generations`: the seed's writes, scaled; `demo`: a dirty-limit sweep;
    /// `quick`: every workload once, small).
    #[arg(long, default_value = "generations")]
    pub plan: String,
    /// Repetitions of every workload in each boot (default: the plan's own, 3 for generations).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: Option<u32>,
    /// Boots of every kernel, interleaved (k0 k1 k2 k0 k1 k2 …): with four or
    /// more a kernel the report compares boot against boot (a rank test over
    /// each boot's median). The default, one, takes about 6½ minutes for the
    /// three generations; four take about four times as long.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub boots: u32,
    /// The emulated server (`cargo xtask qemu --machine`): dl140 is the seed's
    /// class (1 CPU, 1 GiB, a 30 MB/s SATA disk); modern a 2-CPU PC with a fast disk.
    #[arg(long, default_value = "dl140", value_parser = ["dl140", "modern"])]
    pub machine: String,
    /// Where everything goes.
    #[arg(long, default_value = "target/demo")]
    pub out: PathBuf,
}

/// What a demo run compared: the report, and where its evidence is.
pub struct Compared {
    pub report: bootmark::report::Report,
    /// One console log per boot, in entry order.
    pub logs: Vec<PathBuf>,
    pub image: PathBuf,
    /// What went wrong collecting (a damaged record, serial and stick disagreeing).
    pub problems: Vec<String>,
}

pub fn run(args: &Args) -> Result<()> {
    let started = std::time::Instant::now();
    let compared = compare(args)?;
    let out = project_root().join(&args.out);
    use bootmark::report::{self, findings};
    let r = &compared.report;
    println!("\n{}{}{}", report::heading(r), report::markdown(&r.rows, &r.by), findings::markdown(&r.findings));
    if r.findings.is_empty() {
        println!("\nNo findings: no stall, no throttled writer, no slow flush and no difference worth naming.");
    }
    println!("serial logs: {}", compared.logs.iter().map(|l| l.display().to_string()).collect::<Vec<_>>().join(", "));
    println!("records:     {}", out.join("records.jsonl").display());
    println!("report:      {}", out.join("report.html").display());
    println!("stick image: {}", compared.image.join("usb.img").display());
    println!("demo took {:.0} s", started.elapsed().as_secs_f64());
    match compared.problems.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{}\nA result is missing or wrong (above). The serial logs and the stick image are kept: \
             `bootmark collect {} {}` lists the same; run `cargo xtask demo` again to see whether it was this run",
            compared.problems.join("\n"),
            compared.logs.iter().map(|l| l.display().to_string()).collect::<Vec<_>>().join(" "),
            compared.image.join("usb.img").display()
        )),
    }
}

/// Build the image, boot every entry through the lab loop, collect from
/// serial and stick (which must agree) and report; `records.jsonl` and
/// `report.html` are written in the output directory.
pub fn compare(args: &Args) -> Result<Compared> {
    let install = deps::can_install();
    let needed: Vec<(&str, &'static str)> = tools::IMAGE_TOOLS
        .iter()
        .chain(qemu::QEMU_TOOLS.iter())
        .copied()
        .chain([("mkfs.ext3", "e2fsprogs"), ("mkfs.xfs", "xfsprogs"), ("mkfs.reiserfs", "reiserfsprogs")])
        .filter(|(t, _)| {
            !t.starts_with("mkfs.")
                || *t == format!("mkfs.{}", args.fs)
                || (args.fs.starts_with("ext") && *t == "mkfs.ext3")
        })
        .collect();
    tools::ensure(&needed, install, "sudo (as root the demo installs them itself)")?;
    let out = project_root().join(&args.out);
    fs::create_dir_all(&out)?;

    let mut packages = Vec::new();
    for k in &args.kernels {
        let exact = k.ends_with(".deb") || k.contains('@') || k.matches('-').count() > 3;
        let p = if exact { k.clone() } else { resolve_or_update(k)? };
        eprintln!("demo: kernel {k} → {p}");
        packages.push(p);
    }
    let image_dir = image::build(&image::Args {
        kernel_debs: packages.clone(),
        out: out.join("image"),
        plan: args.plan.clone(),
        target: Some("LABEL=SCRATCH".into()),
        append: args.repeat.map(|n| format!("bootmark.repeat={n}")).unwrap_or_default(),
        install_deps: install,
        ..image::Args::default()
    })?;
    let stick = image_dir.join("usb.img");
    let logs = boot_every_entry(args, &image_dir, &out)?;
    usb::set_default_entry(&stick, "k0", None)?;

    // Results: from the serial logs and from the stick, each checked, then merged.
    let from_serial = bootmark::collect::collect(&logs);
    let from_stick = bootmark::collect::collect(std::slice::from_ref(&stick));
    let mut all_inputs = logs.clone();
    all_inputs.push(stick.clone());
    let merged = bootmark::collect::collect(&all_inputs);
    let problems: Vec<String> = merged.problems.iter().map(|p| format!("{}: {}", p.file, p.why)).collect();
    let mut notes: Vec<String> = merged.notes.iter().map(|n| format!("{}: {}", n.file, n.why)).collect();
    notes.extend(only_on_one_side(&from_serial, &from_stick));
    for n in &notes {
        eprintln!("demo: note: {n}");
    }
    let records = out.join("records.jsonl");
    let text: String = merged.documents.iter().map(|d| format!("{d}\n")).collect();
    fs::write(&records, text)?;
    use bootmark::report;
    let r = report::report(merged.results(), report::Options { pictures: true, ..Default::default() })?;
    fs::write(out.join("report.html"), report::html::page(&r)?)?;
    let agreement = match (problems.is_empty(), notes.is_empty()) {
        (true, true) => "serial and stick agree, every record verified".to_string(),
        (true, false) => {
            format!("every record verified ({} notes above: copies damaged on the way, nothing lost)", notes.len())
        }
        (false, _) => format!("{} problems (below)", problems.len()),
    };
    eprintln!("demo: {} records from {} boots; {agreement}.", merged.results().count(), logs.len());
    Ok(Compared { report: r, logs, image: image_dir, problems })
}

/// The records one of serial and stick holds and the other does not: a
/// note each (the merged collection has them; a damaged copy or a full
/// stick is said there), never a disagreement. Two copies that differ are
/// the collector's problem, named with both inputs.
fn only_on_one_side(serial: &bootmark::collect::Collected, stick: &bootmark::collect::Collected) -> Vec<String> {
    use bootmark::collect::Document;
    let key = |d: &Document| (d.run_id().to_string(), d.seq());
    let keys = |c: &bootmark::collect::Collected| -> std::collections::BTreeSet<(String, u32)> {
        c.documents.iter().map(key).collect()
    };
    let (on_serial, on_stick) = (keys(serial), keys(stick));
    let only = |here: &std::collections::BTreeSet<(String, u32)>, there: &std::collections::BTreeSet<_>, what: &str| {
        here.difference(there).map(move |(run, seq)| format!("run {run} record {seq} is {what}")).collect::<Vec<_>>()
    };
    let mut out = only(&on_serial, &on_stick, "on the serial console only, not on the stick");
    out.extend(only(&on_stick, &on_serial, "on the stick only: its serial copy was lost on the way"));
    out
}

/// One clean boot per entry through `bootmark lab`'s own loop, with QEMU as
/// the server (`[server.qemu]`: power on runs `xtask qemu --entry-label
/// {entry}` on a freshly formatted disk, power off ends it, the console is
/// its serial log): the steps, deadlines, console following and record
/// checks a user's lab runs on iron. Returns each step's console log.
fn boot_every_entry(args: &Args, image_dir: &std::path::Path, out: &std::path::Path) -> Result<Vec<PathBuf>> {
    let xtask = std::env::current_exe().map_err(|e| format!("cannot find xtask's own binary: {e}"))?;
    let (disk, serial) = (out.join("scratch.img"), out.join("serial.log"));
    let state = out.join("lab.state");
    let _ = std::fs::remove_dir_all(&state);
    // The console file exists before the first power-on, as a console server's log does.
    fs::write(&serial, "")?;
    let command = format!(
        "{} qemu --image {} --entry-label {{entry}} --disk {} --fresh-disk {} --log {} --machine {}{}",
        xtask.display(),
        image_dir.display(),
        disk.display(),
        args.fs,
        serial.display(),
        args.machine,
        if deps::can_install() { " --install-deps" } else { "" }
    );
    let lab_file = out.join("demo-lab.toml");
    fs::write(
        &lab_file,
        [
            "# Written by `cargo xtask demo`: QEMU as the server, through bootmark lab's loop.".to_string(),
            format!("image = {}", toml_string(&image_dir.display().to_string())),
            "state = \"lab.state\"".into(),
            format!("repeat = {}", args.boots),
            "[[server]]".into(),
            "name = \"qemu\"".into(),
            format!("console = {}", toml_string(&format!("file:{}", serial.display()))),
            "boot_s = 120".into(),
            "[server.qemu]".into(),
            format!("command = {}", toml_string(&command)),
        ]
        .join("\n")
            + "\n",
    )?;
    eprintln!("demo: booting every entry in QEMU through `bootmark lab run {}`", lab_file.display());
    let lab = bootmark::lab::file::Lab::read(&lab_file, &|v| std::env::var(v).ok())?;
    let ended = bootmark::lab::session::run(&lab)?;
    if ended.interrupted {
        return Err("demo: interrupted".into());
    }
    let mut logs = Vec::new();
    for step in &ended.state.steps {
        match &step.outcome {
            Some(o) if o.status != bootmark::lab::state::Status::Failed => logs.push(state.join(&o.log)),
            Some(o) => return Err(format!("demo: {} failed: {}", step.id, o.why.as_deref().unwrap_or("?"))),
            None => return Err(format!("demo: {} did not run", step.id)),
        }
    }
    Ok(logs)
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// apt-cache knows nothing until `apt-get update` ran once on a fresh machine.
fn resolve_or_update(meta: &str) -> Result<String> {
    resolve_meta(meta).or_else(|first| {
        if !deps::can_install() {
            return Err(first);
        }
        eprintln!("demo: apt-get update (package lists are needed to find {meta})");
        let sh = shell()?;
        crate::host::process::run(cmd!(sh, "apt-get update -qq"))?;
        resolve_meta(meta)
    })
}
