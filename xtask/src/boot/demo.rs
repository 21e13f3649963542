//! `cargo xtask demo`: the whole product in one command, with QEMU standing
//! in for the test servers. Three generations of Debian's kernel — Debian 11,
//! 12 and 13 (5.10, 6.1, 6.12), each taken with one `--kernel-deb
//! linux-image-amd64@SUITE` — in one USB image, one clean boot per kernel on
//! the seed's server class (`xtask qemu --machine dl140`: one CPU, 1 GiB, a
//! freshly formatted SATA disk as slow as a 2006 one), two such servers side
//! by side, booted by `bootmark lab`'s loop with `[server.qemu]` servers, the
//! loop a user's lab runs through a BMC. Each boot runs the `generations`
//! plan (the seed's writes, scaled, three times each); results collected
//! from the serial logs and the sticks, checked to agree, compared in the
//! seed's table with the verdict and findings, and drawn in an HTML report.
//! Then the story's end: the candidate cause the newest kernel's records
//! name against the oldest's, tested in one more boot (`bootmark confirm
//! --same-boot`, from the report's `causes[].test`), its verdict printed last.

use crate::boot::qemu;
use crate::build::image::{self, usb};
use crate::host::apt::resolve_meta;
use crate::host::deps;
use crate::host::fs;
use crate::host::process::{cmd, shell};
use crate::host::project::{Result, project_root};
use crate::host::tools;
use std::path::{Path, PathBuf};

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
    /// each boot's median). The default, one, takes about 6 minutes for the
    /// three generations and the confirmation; four, about two and a half times as long.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub boots: u32,
    /// The emulated server (`cargo xtask qemu --machine`): dl140 is the seed's
    /// class (1 CPU, 1 GiB, a 30 MB/s SATA disk); modern a 2-CPU PC with a fast disk.
    #[arg(long, default_value = "dl140", value_parser = ["dl140", "modern"])]
    pub machine: String,
    /// Where everything goes.
    #[arg(long, default_value = "target/demo")]
    pub out: PathBuf,
    /// Emulated servers booting side by side (1 or 2): with two, the oldest and
    /// newest kernels boot at once, then the kernels between beside the confirmation.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub servers: u32,
    /// Do not test the newest kernel's candidate cause (the confirmation
    /// boot: `bootmark confirm --same-boot`, five runs a side).
    #[arg(long)]
    pub no_confirm: bool,
}

/// What a demo run compared: the report, and where its evidence is.
pub struct Compared {
    pub report: bootmark::report::Report,
    /// One console log per boot, in entry order.
    pub logs: Vec<PathBuf>,
    /// What went wrong collecting (a damaged record, serial and stick disagreeing).
    pub problems: Vec<String>,
    /// The newest kernel's candidate cause, tested (None: no cause to test).
    pub confirmation: Option<Confirmation>,
    /// Each server's stick (`usb.img`).
    pub sticks: Vec<PathBuf>,
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
    let sticks: Vec<String> = (compared.sticks.iter()).map(|s| s.display().to_string()).collect();
    println!("stick images: {}", sticks.join(" and "));
    if let Some(c) = &compared.confirmation {
        println!("\nThe candidate cause, tested ({}: {} set on the newest kernel, in one boot):", c.metric, c.set);
        println!("  candidate cause: {}", c.cause);
        println!("  {}", c.words);
        println!("  its runs: {}", c.records.display());
    }
    println!("demo took {:.0} s", started.elapsed().as_secs_f64());
    match compared.problems.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{}\nA result is missing or wrong (above). The serial logs and the stick images are kept: \
             `bootmark collect {} {}` lists the same; run `cargo xtask demo` again to see whether it was this run",
            compared.problems.join("\n"),
            compared.logs.iter().map(|l| l.display().to_string()).collect::<Vec<_>>().join(" "),
            sticks.join(" ")
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
    let servers = Servers::new(args, &image_dir, &out)?;
    let (logs, confirmation) = boot_and_confirm(&servers, packages.len(), !args.no_confirm)?;
    for stick in &servers.sticks {
        usb::set_default_entry(stick, "k0", None)?;
    }

    // Results: from the serial logs and from the sticks, each checked, then merged.
    let from_serial = bootmark::collect::collect(&logs);
    let from_stick = bootmark::collect::collect(&servers.sticks);
    let mut all_inputs = logs.clone();
    all_inputs.extend(servers.sticks.iter().cloned());
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
    // The kernels' comparison is of their own boots: the confirmation's runs
    // (6.12 as found and changed, in one boot) are its verdict's, said after it.
    // Its verdict is folded into the comparison it tested: the candidate said
    // a cause, or not the cause, with the figures and the run.
    let confirming = confirmation.as_ref().and_then(|c| c.run_id.clone());
    let kernels_boots = merged.results().filter(|r| Some(&r.run_id) != confirming.as_ref());
    let tested: Vec<_> = confirmation.iter().filter_map(|c| c.tested.clone()).collect();
    let r = report::report(kernels_boots, report::Options { pictures: true, tested, ..Default::default() })?;
    if let Some(c) = &confirmation {
        folded_in(&r, c)?;
    }
    fs::write(out.join("report.html"), report::html::page(&r)?)?;
    let agreement = match (problems.is_empty(), notes.is_empty()) {
        (true, true) => "serial and stick agree, every record verified".to_string(),
        (true, false) => {
            format!("every record verified ({} notes above: copies damaged on the way, nothing lost)", notes.len())
        }
        (false, _) => format!("{} problems (below)", problems.len()),
    };
    eprintln!("demo: {} records from {} boots; {agreement}.", merged.results().count(), logs.len());
    Ok(Compared { report: r, logs, problems, confirmation, sticks: servers.sticks })
}

/// Every entry booted, and the newest kernel's candidate cause tested
/// (unless `confirm` is false). On two servers, round one boots the oldest
/// kernel on server a beside the newest on b; then, while a boots the
/// kernels between, b tests in one boot the cause the newest against the
/// oldest names (`bootmark confirm --same-boot`: the setting the report's
/// cause gives, toward the oldest's figure). On one, each in turn.
/// Returns every boot's console log (the confirmation's last) and the verdict.
fn boot_and_confirm(servers: &Servers, kernels: usize, confirm: bool) -> Result<(Vec<PathBuf>, Option<Confirmation>)> {
    let labels: Vec<String> = (0..kernels).map(|i| format!("k{i}")).collect();
    let (oldest, newest) = (labels[..1].to_vec(), labels[kernels - 1..].to_vec());
    let with_confirmation = |mut logs: Vec<PathBuf>, confirmation: Option<Confirmation>| {
        logs.extend(confirmation.as_ref().map(|c| c.records.with_extension("log")));
        (logs, confirmation)
    };
    if servers.sticks.len() == 1 || kernels == 1 {
        let logs = servers.boot(0, &labels, "a")?;
        let confirmation = match confirm && kernels > 1 {
            true => confirm_newest(servers, 0, &newest[0], &logs[..1], &logs[kernels - 1..])?,
            false => None,
        };
        return Ok(with_confirmation(logs, confirmation));
    }
    let between = labels[1..kernels - 1].to_vec();
    let (first, first_done) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        let a = scope.spawn(move || -> Result<Vec<PathBuf>> {
            let mut logs = servers.boot(0, &oldest, "a")?;
            let _ = first.send(logs.clone());
            if !between.is_empty() {
                logs.extend(servers.boot(0, &between, "a2")?);
            }
            Ok(logs)
        });
        let newest_logs = servers.boot(1, &newest, "b");
        // The confirmation needs both ends; a failure on either ends the demo after a's boots.
        let confirmation = match (first_done.recv(), &newest_logs) {
            (Ok(oldest_logs), Ok(newest_logs)) if confirm => {
                confirm_newest(servers, 1, &newest[0], &oldest_logs, newest_logs)
            }
            _ => Ok(None),
        };
        let mut logs = a.join().map_err(|_| "demo: server a's boots panicked".to_string())??;
        logs.extend(newest_logs?);
        Ok(with_confirmation(logs, confirmation?))
    })
}

/// A cause tested by the demo: its verdict, and the boot's records.
pub struct Confirmation {
    pub words: String,
    pub records: PathBuf,
    /// The confirmation boot's run (its records are its verdict's, not the kernels' comparison's).
    pub run_id: Option<String>,
    /// What was tested: the report's cause and its test.
    pub cause: String,
    pub set: String,
    pub metric: String,
    /// The verdict as the report folds it in; None while undecided.
    pub tested: Option<bootmark::report::tested::Tested>,
}

/// The kernels' report says the confirmation's outcome where it names the
/// cause, with its figures and run: "Cause: … confirmed by experiment (…)",
/// "Not the cause: … refuted by experiment (…)", or the candidate with what
/// was tried.
fn folded_in(r: &bootmark::report::Report, c: &Confirmation) -> Result<()> {
    let Some(t) = &c.tested else { return Ok(()) };
    let summary = t.summary();
    let heading = match t.outcome {
        bootmark::report::tested::Outcome::Confirmed => ". Cause: ",
        bootmark::report::tested::Outcome::Refuted => ". Not the cause: ",
        _ => ". Candidate cause (",
    };
    match r.verdict.iter().find(|line| line.contains(&summary)) {
        Some(line) if line.contains(heading) => Ok(()),
        _ => Err(format!(
            "demo: the report does not fold in the confirmation (\"{summary}\" under \"{}\"): {:?}",
            heading.trim_start_matches(". "),
            r.verdict
        )),
    }
}

/// The cause the newest kernel's records name against the oldest's, tested
/// on server b in one boot; None (said) when no cause names one setting to test.
fn confirm_newest(
    servers: &Servers,
    server: usize,
    entry: &str,
    oldest: &[PathBuf],
    newest: &[PathBuf],
) -> Result<Option<Confirmation>> {
    let logs: Vec<PathBuf> = oldest.iter().chain(newest).cloned().collect();
    let collected = bootmark::collect::collect(&logs);
    let r = bootmark::report::report(collected.results(), bootmark::report::Options::default())?;
    let comparisons = r.comparisons();
    let found =
        comparisons.iter().find_map(|c| c.causes.iter().find_map(|cause| Some((c, cause, cause.test.clone()?))));
    let Some((compared, cause, test)) = found else {
        eprintln!(
            "demo: the newest kernel against the oldest names no cause that one setting would test: nothing to confirm"
        );
        return Ok(None);
    };
    eprintln!(
        "demo: testing the candidate cause \"{}\" on server {}: {entry} with {} against as found, in one boot",
        cause.text, servers.blocks[server].0, test.set
    );
    let said = match cause.code {
        "request-size" => format!("{}'s {} write requests were {}", compared.candidate, compared.workload, cause.text),
        _ => cause.text.clone(),
    };
    let dir = servers.out.join("confirm");
    let _ = std::fs::remove_dir_all(&dir);
    let lab = servers.lab(server, &[entry.to_string()], "confirm")?;
    let asked = bootmark::bisect::same_boot::Asked {
        metric: test.metric.clone(),
        experiment: bootmark::bisect::session::Experiment {
            entry: entry.to_string(),
            set: test.set.clone(),
            removes: true,
            toward: Some(test.toward),
        },
        runs: CONFIRM_RUNS,
        server: None,
        dir: Some(dir),
    };
    let (_, confirmed) = bootmark::bisect::same_boot::run(&lab, &asked)?;
    let Some(c) = confirmed else { return Err("demo: the confirmation was interrupted".into()) };
    verdict_quotes_its_runs(&c.words, &c.records, &test.metric)?;
    Ok(Some(Confirmation {
        words: c.words,
        records: c.records,
        run_id: c.run_id,
        cause: said,
        set: test.set,
        metric: test.metric,
        tested: c.tested,
    }))
}

/// Runs a side of the demo's confirmation: the fewest that can decide (the
/// rank test's smallest p with five a side is 0.008).
const CONFIRM_RUNS: usize = 5;

/// The verdict's "went A → B" are the medians of its boot's runs, as found
/// and changed, read again from the records file.
fn verdict_quotes_its_runs(words: &str, records: &Path, metric: &str) -> Result<()> {
    use bootmark::bisect::{confirm, same_boot};
    let text = fs::read_to_string(records)?;
    let runs: Vec<bootmark::record::Record> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let [found, changed] = same_boot::values(&bootmark::bisect::metric::Metric::parse(metric)?, &runs);
    let median = |v: &[f64]| bootmark::report::stats::median(v).unwrap_or(f64::NAN);
    if words.starts_with("no test") || confirm::quotes(words, (median(&found), median(&changed))) {
        return Ok(());
    }
    Err(format!(
        "demo: the verdict does not quote its runs' medians ({found:?} as found, {changed:?} changed in {}): {words}",
        records.display()
    ))
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

/// The demo's servers: two QEMU machines side by side (the host's two
/// cores), each with its own copy of the stick, scratch disk and serial
/// log, booted through `bootmark lab`'s own loop (`[server.qemu]`: power
/// on runs `xtask qemu --entry-label {entry}` on a freshly formatted disk,
/// power off ends it, the console is its serial log): the steps,
/// deadlines, console following and record checks a user's lab runs on iron.
struct Servers {
    out: PathBuf,
    image_dir: PathBuf,
    /// Each server's `[[server]]` block, by name.
    blocks: Vec<(&'static str, String)>,
    /// Each server's stick (`usb.img`).
    sticks: Vec<PathBuf>,
    boots: u32,
}

impl Servers {
    fn new(args: &Args, image_dir: &Path, out: &Path) -> Result<Servers> {
        let xtask = std::env::current_exe().map_err(|e| format!("cannot find xtask's own binary: {e}"))?;
        let (mut blocks, mut sticks) = (Vec::new(), Vec::new());
        for name in ["a", "b"].into_iter().take(args.servers as usize) {
            let stick = out.join(format!("stick-{name}"));
            sticks.push(usb::own_copy(image_dir, &stick)?);
            let serial = out.join(format!("serial-{name}.log"));
            // The console file exists before the first power-on, as a console server's log does.
            fs::write(&serial, "")?;
            let command = format!(
                "{} qemu --image {} --entry-label {{entry}} --set={{set}} --disk {} --fresh-disk {} --log {} --machine {}{}",
                xtask.display(),
                stick.display(),
                out.join(format!("scratch-{name}.img")).display(),
                args.fs,
                serial.display(),
                args.machine,
                if deps::can_install() { " --install-deps" } else { "" }
            );
            let block = [
                "[[server]]".to_string(),
                format!("name = \"{name}\""),
                format!("console = {}", toml_string(&format!("file:{}", serial.display()))),
                "boot_s = 120".into(),
                "ENTRIES".into(),
                "[server.qemu]".into(),
                format!("command = {}", toml_string(&command)),
            ]
            .join("\n");
            blocks.push((name, block));
        }
        Ok(Servers { out: out.to_path_buf(), image_dir: image_dir.to_path_buf(), blocks, sticks, boots: args.boots })
    }

    /// A lab file of server `server` alone booting `entries`: `demo-lab-PART.toml`, its state `lab-PART.state`.
    fn lab(&self, server: usize, entries: &[String], part: &str) -> Result<bootmark::lab::file::Lab> {
        let state = format!("lab-{part}.state");
        let block = &self.blocks[server].1;
        let list: Vec<String> = entries.iter().map(|e| toml_string(e)).collect();
        let text = [
            "# Written by `cargo xtask demo`: QEMU as the server, through bootmark lab's loop.".to_string(),
            format!("image = {}", toml_string(&self.image_dir.display().to_string())),
            format!("state = {}", toml_string(&state)),
            format!("repeat = {}", self.boots),
            block.replace("ENTRIES", &format!("entries = [{}]", list.join(", "))),
        ]
        .join("\n")
            + "\n";
        let file = self.out.join(format!("demo-lab-{part}.toml"));
        let _ = std::fs::remove_dir_all(self.out.join(&state));
        fs::write(&file, text)?;
        bootmark::lab::file::Lab::read(&file, &|v| std::env::var(v).ok())
    }

    /// Boot `entries` on `server` through the lab loop (its files `PART`); each step's console log.
    fn boot(&self, server: usize, entries: &[String], part: &str) -> Result<Vec<PathBuf>> {
        let lab = self.lab(server, entries, part)?;
        eprintln!(
            "demo: server {}: booting {} through `bootmark lab run {}`",
            self.blocks[server].0,
            entries.join(", "),
            lab.path.display()
        );
        let ended = bootmark::lab::session::run(&lab)?;
        if ended.interrupted {
            return Err("demo: interrupted".into());
        }
        let mut logs = Vec::new();
        for step in &ended.state.steps {
            match &step.outcome {
                Some(o) if o.status != bootmark::lab::state::Status::Failed => logs.push(lab.state_dir.join(&o.log)),
                Some(o) => return Err(format!("demo: {} failed: {}", step.id, o.why.as_deref().unwrap_or("?"))),
                None => return Err(format!("demo: {} did not run", step.id)),
            }
        }
        Ok(logs)
    }
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
