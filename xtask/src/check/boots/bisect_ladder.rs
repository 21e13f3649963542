//! `bootmark bisect` over a ladder of Debian kernels, as a user runs it:
//! an image of three generations from their own suites (bullseye's 5.10,
//! bookworm's 6.1, trixie's 6.12), two `[server.qemu]` servers alike (the
//! seed's dl140, each its own stick, scratch disk and console), the
//! metric the probe's read wait during the `generations` plan's big write
//! (alone). 6.12 sends this disk larger write requests (its queue's
//! max_sectors_kb is 1280 against 5.10's 128, as the demo's verdict
//! shows), and the read waits behind them: the bisect must name trixie's
//! kernel as the first bad, with both servers booting side by side.
//!
//! Then the settings bisect on the same servers: trixie's kernel under
//! 5.10's queue and vm settings (as its records found them) against
//! under its own, every difference on the command line (`{set}` →
//! `bootmark.set=`): it must name max_sectors_kb, the demo's cause.

use super::lab_ipmi::tail;
use super::support::test_image;
use crate::build::image;
use crate::host::fs;
use crate::host::process::{cmd, output, shell};
use crate::host::project::Result;
use std::path::Path;
use std::time::Instant;

/// Oldest first: the ladder's order, good end to bad end.
const KERNELS: [&str; 3] = ["linux-image-amd64@bullseye", "linux-image-amd64@bookworm", "linux-image-amd64@trixie"];

/// The `generations` plan's big write alone, once a boot: the one
/// workload the metric reads, at 192 MiB of its 320, so a boot takes
/// a third of the time.
pub const PLAN: &str = r#"{
  "name": "bisect-read",
  "description": "The generations plan's dd-style write alone (192 MiB of its 320, for shorter boots), once, the probe on: the read's wait behind the writer",
  "repeat": 1,
  "probe": { "enabled": true, "interval_ms": 100, "baseline_s": 1.0, "recovery_deadline_s": 20.0 },
  "sample_interval_ms": 250,
  "workload_deadline_s": 300,
  "workloads": [ { "name": "seqwrite", "params": { "size": "192MiB", "block": "16KiB", "sync": "end" } } ]
}"#;

pub fn test(base: &Path) -> Result<()> {
    let started = Instant::now();
    let dir = base.join("bisect-ladder");
    let image_dir = dir.join("image");
    super::testbed::built_once(&image_dir, &format!("{KERNELS:?}\n{PLAN}"), || {
        fs::create_dir_all(&dir)?;
        let plan = dir.join("bisect-read.json");
        fs::write(&plan, PLAN)?;
        let mut args = test_image(KERNELS.iter().map(|k| k.to_string()).collect(), image_dir.clone(), None);
        args.plan = plan.display().to_string();
        image::build(&args)
    })?;
    let built = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(dir.join("lab.state"));
    let xtask = std::env::current_exe().map_err(|e| format!("bisect-ladder: cannot find xtask's own binary: {e}"))?;
    let mut lab = format!("image = \"{}\"\nstate = \"lab.state\"\n", image_dir.display());
    for server in ["a", "b"] {
        let stick = dir.join(format!("stick-{server}"));
        crate::build::image::usb::own_copy(&image_dir, &stick)?;
        fs::write(dir.join(format!("serial-{server}.log")), "")?;
        lab += &format!(
            "[[server]]\nname = \"{server}\"\nconsole = \"file:serial-{server}.log\"\nboot_s = 60\nmax_step_s = 400\n\
             [server.qemu]\ncommand = \"{xtask} qemu --image {stick} --entry-label {{entry}} --disk scratch-{server}.img \
             --set={{set}} --fresh-disk ext3 --log serial-{server}.log --machine dl140 --timeout 400\"\n",
            xtask = xtask.display(),
            stick = stick.display()
        );
    }
    let lab_file = dir.join("lab.toml");
    fs::write(&lab_file, lab)?;
    let bootmark = crate::host::project::project_root().join("target/debug/bootmark");
    let sh = shell()?;
    let ran = output(cmd!(sh, "{bootmark} bisect run {lab_file} --metric seqwrite.read_p50_ms --good k0 --bad k2"))?;
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    let said: Vec<&str> = out.lines().filter(|l| !l.starts_with('[')).collect();
    if ran.status.code() != Some(0) || !out.contains("first bad: k2 (") || !out.contains("last good: k1 (") {
        return Err(format!(
            "bisect-ladder: `bootmark bisect run` exited {:?} without naming trixie's k2 as the first bad:\n{}\n{}{}",
            ran.status.code(),
            tail(&said.join("\n")),
            tail(&String::from_utf8_lossy(&ran.stderr)),
            super::support::guest_stalled(&dir.join("lab.state/bisect")).map_or(String::new(), |l| format!("\n{l}"))
        ));
    }
    let state =
        bootmark::bisect::session::State::load(&dir.join("lab.state/bisect"))?.ok_or("bisect-ladder: no state")?;
    for end in [0, 2] {
        let servers: std::collections::BTreeSet<usize> =
            state.boots.iter().filter(|b| b.candidate == end).map(|b| b.server).collect();
        if servers.len() != 2 {
            return Err(format!("bisect-ladder: end k{end} booted on servers {servers:?}, not on both"));
        }
    }
    let table: Vec<&str> = said.iter().copied().filter(|l| l.starts_with('|') || l.starts_with("the ends")).collect();
    let ladder_s = started.elapsed().as_secs_f64();
    println!(
        "e2e: bisect ladder: 5.10, 6.1, 6.12 on two dl140 servers side by side: first bad k2 (6.12), {} boots; \
         image {built:.0} s, in all {ladder_s:.0} s\n{}",
        state.boots.len(),
        table.join("\n")
    );
    settings(&dir, &state, &bootmark)?;
    let settings_s = started.elapsed().as_secs_f64();
    println!("e2e: bisect settings: {:.0} s", settings_s - ladder_s);
    confirm(&dir, &state, &bootmark)?;
    println!("e2e: confirm: {:.0} s", started.elapsed().as_secs_f64() - settings_s);
    Ok(())
}

/// `bootmark confirm` on the same servers, a planted cause and a planted
/// non-cause, toward 5.10's read wait (the ladder's k0 boots). Across boots
/// (the boot the unit): 6.12 with max_sectors_kb 128 must be confirmed
/// (exit 0), its verdict quoting the medians of its boots, each boot's
/// records carrying the settings it ran under; five boots a side (--cap 5:
/// one look, at 0.05). Then in one boot each (`--same-boot`, five runs a
/// side), the two servers side by side: the same cause confirmed, and 6.12
/// with vm.swappiness 10 (this image has no swap: a setting that changes
/// nothing here) refuted (exit 3), never confirmed.
fn confirm(dir: &Path, ladder: &bootmark::bisect::session::State, bootmark: &Path) -> Result<()> {
    let k0: Vec<f64> = ladder.boots.iter().filter(|b| b.candidate == 0).filter_map(|b| b.value).collect();
    let toward =
        format!("{:.3}", bootmark::report::stats::median(&k0).ok_or("confirm: the ladder has no value of k0")?);
    let lab_file = dir.join("lab.toml");
    let out_dir = dir.join("lab.state/confirm-cause");
    let _ = std::fs::remove_dir_all(&out_dir);
    let sh = shell()?;
    let ran = output(cmd!(
        sh,
        "{bootmark} confirm {lab_file} --entry k2 --metric seqwrite.read_p50_ms --set queue.max_sectors_kb=128 --toward {toward} --cap 5 --dir {out_dir}"
    ))?;
    let line = said_as_planted(&ran, "confirmed: ", "cause across boots", &out_dir)?;
    let state = bootmark::bisect::session::State::load(&out_dir)?.ok_or("confirm: no state")?;
    verdict_quotes_its_boots(&line, &state)?;
    boots_ran_as_set(&out_dir, Some("128"))?;
    let mut said = vec![format!("cause across boots ({} boots): {line}", state.boots.len())];
    said.extend(same_boot(dir, &toward, bootmark)?);
    said.push(folded_into_the_report(dir, bootmark)?);
    println!("e2e: confirm: 6.12 on two dl140 servers toward 5.10's {toward} ms:\n{}", said.join("\n"));
    Ok(())
}

/// Each verdict written beside its boots (`verdict.json`) with the outcome
/// `bootmark confirm` said; and the ladder's own report, given the
/// same-boot confirmation, says the request size it names on 6.12 is a
/// cause, confirmed by experiment, and given the non-cause's, names it on
/// stderr and changes nothing (it tested a setting no cause names).
fn folded_into_the_report(dir: &Path, bootmark: &Path) -> Result<String> {
    let state = dir.join("lab.state");
    for (name, outcome) in
        [("confirm-cause", "confirmed"), ("same-boot-cause", "confirmed"), ("same-boot-non-cause", "refuted")]
    {
        let t = bootmark::report::tested::Tested::read(&state.join(name))?;
        if format!("{:?}", t.outcome).to_lowercase() != outcome
            || t.kernel.as_deref().is_none_or(|k| !k.contains("deb13"))
        {
            return Err(format!(
                "confirm: {name}/verdict.json says {:?} on {:?}, not {outcome} on 6.12",
                t.outcome, t.kernel
            ));
        }
    }
    // Every boot's records of the ladder: lab.state/bisect/SERVER/*.jsonl.
    let servers = std::fs::read_dir(state.join("bisect")).map_err(|e| format!("{}: {e}", state.display()))?;
    let mut records: Vec<std::path::PathBuf> = servers
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|server| std::fs::read_dir(server.path()).into_iter().flatten().flatten().map(|f| f.path()))
        .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    records.sort();
    let sh = shell()?;
    let (cause, non_cause) = (state.join("same-boot-cause"), state.join("same-boot-non-cause"));
    let ran = output(cmd!(
        sh,
        "{bootmark} report --format json --confirmation {cause} --confirmation {non_cause} {records...}"
    ))?;
    let json: serde_json::Value = serde_json::from_slice(&ran.stdout).map_err(|e| {
        format!(
            "confirm: the ladder's report with --confirmation is no JSON ({e}): {}",
            tail(&String::from_utf8_lossy(&ran.stderr))
        )
    })?;
    let stderr = String::from_utf8_lossy(&ran.stderr);
    if !stderr.contains("--confirmation: it tested vm.swappiness=10") {
        return Err(format!(
            "confirm: the non-cause's confirmation, which no cause names, was not said on stderr: {}",
            tail(&stderr)
        ));
    }
    let causes: Vec<&serde_json::Value> = json["comparisons"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["causes"].as_array().into_iter().flatten())
        .filter(|c| c["code"] == "request-size" && c["confirmations"].as_array().is_some_and(|a| !a.is_empty()))
        .collect();
    match causes.as_slice() {
        // The ladder's boots may not show the request size as a candidate (its probe's p99 under 2×): then nothing is folded.
        [] => Ok("the ladder's report names no request-size candidate to fold the verdicts into".into()),
        [c] if c["status"] == "cause" && json["verdict"].to_string().contains("confirmed by experiment (bootmark confirm: with queue.max_sectors_kb=128") => {
            Ok("the ladder's report, given the same-boot verdicts: the request size on 6.12 is a cause, confirmed by experiment; the non-cause's named on stderr".into())
        }
        _ => Err(format!("confirm: the ladder's report does not fold the confirmed verdict into its cause: {causes:?}\n{}", json["verdict"])),
    }
}

/// The planted cause on server a and the non-cause on server b, each in
/// one boot (`--same-boot --runs 5`), side by side: each server a lab file
/// of its own (a lab's state is one runner's).
fn same_boot(dir: &Path, toward: &str, bootmark: &Path) -> Result<Vec<String>> {
    let lab = crate::host::fs::read_to_string(dir.join("lab.toml"))?;
    let planted = [
        ("a", "queue.max_sectors_kb=128", "confirmed: ", "cause"),
        ("b", "vm.swappiness=10", "refuted: ", "non-cause"),
    ];
    let one = |(server, set, verdict, name): (&str, &str, &str, &str)| -> Result<String> {
        // The one server's [[server]] block, under a state of its own.
        let block = lab
            .split("[[server]]")
            .find(|b| b.contains(&format!("name = \"{server}\"")))
            .ok_or("confirm: no server block in lab.toml")?;
        let head = lab.split("[[server]]").next().unwrap_or("").replace("lab.state", &format!("lab.state-{server}"));
        let file = dir.join(format!("lab-{server}.toml"));
        fs::write(&file, format!("{head}[[server]]{block}"))?;
        let out_dir = dir.join(format!("lab.state/same-boot-{name}"));
        let _ = std::fs::remove_dir_all(&out_dir);
        let sh = shell()?;
        let ran = output(cmd!(
            sh,
            "{bootmark} confirm {file} --entry k2 --metric seqwrite.read_p50_ms --set {set} --toward {toward} --same-boot --runs 5 --dir {out_dir}"
        ))?;
        let line = said_as_planted(&ran, verdict, &format!("{name} in one boot"), &out_dir)?;
        runs_quoted_and_as_set(&line, &out_dir, set)?;
        Ok(format!("{name} in one boot: {line}"))
    };
    // Side by side, a server each: two boots' time for both.
    std::thread::scope(|scope| {
        let running: Vec<_> = planted.into_iter().map(|p| scope.spawn(move || one(p))).collect();
        running
            .into_iter()
            .map(|r| r.join().map_err(|_| "confirm: a same-boot confirmation panicked".to_string())?)
            .collect()
    })
}

/// The verdict line `bootmark confirm` printed, which must begin with
/// `verdict` (its exit status 0 for confirmed, 3 for refuted).
fn said_as_planted(ran: &std::process::Output, verdict: &str, what: &str, out_dir: &Path) -> Result<String> {
    let exit = if verdict.starts_with("confirmed") { 0 } else { 3 };
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('[')).collect();
    match (lines.iter().find(|l| l.starts_with(verdict)), ran.status.code()) {
        (Some(line), Some(code)) if code == exit => Ok(line.to_string()),
        _ => Err(format!(
            "confirm: the planted {what}: `bootmark confirm` exited {:?}, not {exit} with \"{verdict}…\":\n{}\n{}{}",
            ran.status.code(),
            tail(&lines.join("\n")),
            tail(&String::from_utf8_lossy(&ran.stderr)),
            super::support::guest_stalled(out_dir).map_or(String::new(), |l| format!("\n{l}"))
        )),
    }
}

/// A same-boot verdict quotes the medians of its boot's runs, five a side,
/// as found and changed in turn, which comes first alternating (A B, B A…); the found ones ran at 6.12's
/// max_sectors_kb 1280, the changed ones under `set` as read back.
fn runs_quoted_and_as_set(line: &str, out_dir: &Path, set: &str) -> Result<()> {
    let files = bootmark::bisect::command::record_files(out_dir);
    let [file] = files.as_slice() else {
        return Err(format!("confirm: {} holds {} records files, not one boot's", out_dir.display(), files.len()));
    };
    let text = crate::host::fs::read_to_string(file)?;
    let records: Vec<bootmark::record::Record> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let metric = bootmark::bisect::metric::Metric::parse("seqwrite.read_p50_ms")?;
    let (key, value) = set.split_once('=').ok_or("a set is KEY=VALUE")?;
    let mut sides: [Vec<f64>; 2] = Default::default();
    for (i, r) in records.iter().enumerate() {
        // As found first in even repetitions, changed first in odd ones (A B, B A, …).
        let found_first = (i / 2) % 2 == 0;
        let (side, name) = if (i % 2 == 0) == found_first { (0, "asfound") } else { (1, "changed") };
        let variant = r.variant.as_ref().map(|v| v.name.as_str());
        let max_sectors = r.storage.queue.get("queue/max_sectors_kb").map(String::as_str);
        let in_force = match key.split_once('.') {
            Some(("queue", k)) => r.storage.queue.get(&format!("queue/{k}")).cloned(),
            _ => r.vm.get(key.trim_start_matches("vm.")).copied().flatten().map(|v| v.to_string()),
        };
        let want_max = if side == 1 && key == "queue.max_sectors_kb" { value } else { "1280" };
        if variant != Some(name) || max_sectors != Some(want_max) || (side == 1 && in_force.as_deref() != Some(value)) {
            return Err(format!(
                "confirm: {} run {i} ran as {variant:?} with max_sectors_kb {max_sectors:?} and {key} {in_force:?}, not as {name}",
                file.display()
            ));
        }
        sides[side].extend(metric.of_run(r));
    }
    let median = |v: &[f64]| bootmark::report::stats::median(v).unwrap_or(f64::NAN);
    let quoted = bootmark::bisect::confirm::quotes(line, (median(&sides[0]), median(&sides[1])));
    if !quoted || sides.iter().any(|s| s.len() != 5) || !line.contains("interleaved in one boot") {
        return Err(format!(
            "confirm: the verdict does not quote its boot's runs ({:?} against {:?}): {line}",
            sides[0], sides[1]
        ));
    }
    Ok(())
}

/// The verdict's "went A → B" are the medians of the state's two sides.
fn verdict_quotes_its_boots(line: &str, state: &bootmark::bisect::session::State) -> Result<()> {
    let side =
        |c: usize| -> Vec<f64> { state.boots.iter().filter(|b| b.candidate == c).filter_map(|b| b.value).collect() };
    let median = |c: usize| bootmark::report::stats::median(&side(c)).unwrap_or(f64::NAN);
    if !bootmark::bisect::confirm::quotes(line, (median(0), median(1))) || side(0).len() != 5 || side(1).len() != 5 {
        return Err(format!(
            "confirm: the verdict does not quote its boots' medians {} → {} ({:?} against {:?}): {line}",
            median(0),
            median(1),
            side(0),
            side(1)
        ));
    }
    Ok(())
}

/// Every boot's records ran under its side's settings, as read back: the
/// changed ones as the variant `changed` (with `queue`, max_sectors_kb in
/// force, where given), the found ones under no variant at 6.12's 1280.
fn boots_ran_as_set(out_dir: &Path, queue: Option<&str>) -> Result<()> {
    for path in bootmark::bisect::command::record_files(out_dir) {
        let text = crate::host::fs::read_to_string(&path)?;
        let changed = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("changed"));
        for r in text.lines().filter_map(|l| serde_json::from_str::<bootmark::record::Record>(l).ok()) {
            let variant = r.variant.as_ref().map(|v| v.name.as_str());
            let in_force = r.storage.queue.get("queue/max_sectors_kb").map(String::as_str);
            let want = match (changed, queue) {
                (true, Some(q)) => Some(q),
                _ => Some("1280"),
            };
            if variant != changed.then_some("changed") || in_force != want {
                return Err(format!(
                    "confirm: {} ran as variant {variant:?} with max_sectors_kb {in_force:?}, not as its side ({}, {want:?})",
                    path.display(),
                    if changed { "changed" } else { "as found" }
                ));
            }
        }
    }
    Ok(())
}

/// The settings bisect: k2 booted with 5.10's settings (a k0 boot's
/// records) against with its own (a k2 boot's), on both servers.
fn settings(dir: &Path, ladder: &bootmark::bisect::session::State, bootmark: &Path) -> Result<()> {
    let records_of = |candidate: usize| {
        let b = ladder.boots.iter().find(|b| b.candidate == candidate && b.value.is_some())?;
        let server = ["a", "b"][b.server];
        Some(dir.join(format!("lab.state/bisect/{server}/{}.jsonl", b.id.replace('#', "-"))))
    };
    let (Some(good), Some(bad)) = (records_of(0), records_of(2)) else {
        return Err("bisect-settings: the ladder bisect kept no records of k0 and k2".into());
    };
    let lab_file = dir.join("lab.toml");
    let out_dir = dir.join("lab.state/bisect-settings");
    let sh = shell()?;
    let ran = output(cmd!(
        sh,
        "{bootmark} bisect settings {lab_file} --metric seqwrite.read_p50_ms --entry k2 --good {good} --bad {bad} --dir {out_dir}"
    ))?;
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    let said: Vec<&str> = out.lines().filter(|l| !l.starts_with('[')).collect();
    let cause = "still bad: d1 (queue.max_sectors_kb 128 → 1280)";
    if ran.status.code() != Some(0) || !out.contains(cause) {
        return Err(format!(
            "bisect-settings: `bootmark bisect settings` exited {:?} without naming max_sectors_kb:\n{}\n{}{}",
            ran.status.code(),
            tail(&said.join("\n")),
            tail(&String::from_utf8_lossy(&ran.stderr)),
            super::support::guest_stalled(&out_dir).map_or(String::new(), |l| format!("\n{l}"))
        ));
    }
    let state = bootmark::bisect::session::State::load(&out_dir)?.ok_or("bisect-settings: no state")?;
    // Each boot's records carry its candidate as their variant: the report tells the ends apart.
    let report = crate::host::fs::read_to_string(out_dir.join("report.html"))?;
    if !report.contains("good-settings") || !report.contains("bad-settings") {
        return Err(
            "bisect-settings: the report of the boots does not name the candidates good-settings and bad-settings"
                .into(),
        );
    }
    let request_size = request_size_named(&out_dir)?;
    let table: Vec<&str> = said
        .iter()
        .copied()
        .filter(|l| l.starts_with('|') || l.starts_with("the ends") || l.starts_with("  d") || l.contains("still bad"))
        .collect();
    println!(
        "e2e: bisect settings: 6.12 under 5.10's settings against its own on two dl140 servers: the cause is \
         max_sectors_kb, {} boots; the report: {request_size}\n{}",
        state.boots.len(),
        table.join("\n")
    );
    Ok(())
}

/// The planted request size, as the report of the settings bisect's boots
/// says it: the two ends differ in max_sectors_kb alone (128 against 1280),
/// so their comparison must name the request sizes with both limits, and
/// how much of the probe's read the disk itself held (block tracepoints),
/// with the conclusion its own figures give: on one CI run the disk carried
/// 3.4 of 7.1 ms, so "most of the difference passed before the read reached
/// the device" was the true sentence there, "the difference is the disk's"
/// on others. The verdict may also give the size as a cause where the
/// probe's p99 changed twice over with it: then only as a candidate (the
/// next issue's confirming runs test it).
fn request_size_named(out_dir: &Path) -> Result<String> {
    // In the bisect's own order (sorted): the report's baseline is its first group.
    let files = bootmark::bisect::command::record_files(out_dir);
    let mut records = Vec::new();
    for path in &files {
        let text = crate::host::fs::read_to_string(path)?;
        records.extend(text.lines().filter_map(|l| serde_json::from_str::<bootmark::record::Record>(l).ok()));
    }
    let report = bootmark::report::report(records.iter(), Default::default())?;
    let limits = ["(the queue's max_sectors_kb: 128 against 1280)", "(the queue's max_sectors_kb: 1280 against 128)"];
    let compared = report.findings.iter().find(|f| f.rule == "comparison");
    let named = compared
        .filter(|f| f.sentence.contains("write requests instead of") && limits.iter().any(|l| f.sentence.contains(l)));
    let Some(finding) = named else {
        return Err(format!(
            "bisect-settings: {} records: the ends' comparison does not name the request sizes with both limits: {:?}",
            records.len(),
            compared.map(|f| &f.sentence)
        ));
    };
    disk_share_follows_its_figures(&finding.sentence)?;
    // Where the probe's own read waited, from its samples inside its slowest
    // read (taken while that tick was late): 6.12 reads wchan and stack.
    let read_findings = ["slow-read", "read-starvation"];
    let probe_waited = report.findings.iter().find(|f| {
        read_findings.contains(&f.rule)
            && f.subject.contains("bad-settings")
            && f.sentence.contains("inside it the probe itself was asleep in ")
            && f.sentence.contains("samples (its kernel stack)")
    });
    let Some(probe_waited) = probe_waited else {
        let said: Vec<_> =
            report.findings.iter().filter(|f| read_findings.contains(&f.rule)).map(|f| &f.sentence).collect();
        return Err(format!(
            "bisect-settings: no finding says where the probe itself waited inside its slowest read under max_sectors_kb 1280: {said:?}"
        ));
    };
    let comparisons = report.comparisons();
    let causes: Vec<_> = comparisons.iter().flat_map(|c| &c.causes).filter(|c| c.code == "request-size").collect();
    if let Some(c) = causes.iter().find(|c| c.status != "candidate" || !limits.iter().any(|l| c.text.contains(l))) {
        return Err(format!("bisect-settings: the request size given as a {} cause: {}", c.status, c.text));
    }
    let verdict = match causes.first() {
        Some(c) => format!("the verdict: a candidate cause: {}", c.text),
        None => "the verdict names no cause (the probe's p99 did not change twice over)".to_string(),
    };
    Ok(format!("{}; {verdict}; {}", finding.sentence, probe_waited.sentence))
}

/// The comparison quotes the probe's read ("took A ms instead of B ms") and
/// the disk's part of it ("the disk itself held reads X ms against Y ms"),
/// then says whose the difference is: the disk's where it carries at least
/// half of the read's change in the same direction, else the time before
/// the device. An error where the figures are missing or the words do not
/// follow from them.
fn disk_share_follows_its_figures(sentence: &str) -> Result<()> {
    let pair = |before: &str, between: &str| -> Option<(f64, f64)> {
        let rest = &sentence[sentence.find(before)? + before.len()..];
        let (a, rest) = rest.split_once(" ms")?;
        let rest = rest.strip_prefix(between)?;
        let (b, _) = rest.split_once(" ms")?;
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    let said_disk = "the difference is the disk's";
    let said_before = "most of the difference passed before the read reached the device";
    let figures = pair("4 KiB read took ", " instead of ").zip(pair("the disk itself held reads ", " against "));
    let Some(((read, read_base), (disk, disk_base))) = figures else {
        return Err(format!(
            "bisect-settings: the ends' comparison does not quote the probe's read and the disk's part of it (block tracepoints): {sentence}"
        ));
    };
    let (read_change, disk_change) = (read - read_base, disk - disk_base);
    // The report decides on unrounded medians and quotes them to 0.1 ms: each
    // change is known to ±0.1 ms, so a share that could be a half either way
    // allows either words.
    let share = |read: f64, disk: f64| if read == 0.0 { 0.0 } else { disk / read };
    let shares: Vec<f64> =
        [-0.1, 0.1].iter().flat_map(|r| [-0.1, 0.1].map(|d| share(read_change + r, disk_change + d))).collect();
    let either = shares.iter().any(|s| *s >= 0.5) && shares.iter().any(|s| *s < 0.5);
    // Before the device, the scheduler's queue is asked next (block_rq_insert, read on 6.12).
    let queue_timed = "(median insert to issue, block_rq_insert)";
    if sentence.contains(said_before) && !sentence.contains(queue_timed) {
        return Err(format!(
            "bisect-settings: the read waited before the device, and the comparison does not say whether in the I/O scheduler's queue {queue_timed}: {sentence}"
        ));
    }
    if either && (sentence.contains(said_disk) || sentence.contains(said_before)) {
        return Ok(());
    }
    let carries = share(read_change, disk_change) >= 0.5;
    let (expected, wrong) = if carries { (said_disk, said_before) } else { (said_before, said_disk) };
    if !sentence.contains(expected) || sentence.contains(wrong) {
        return Err(format!(
            "bisect-settings: the probe's read changed {read_change:+.1} ms and the disk's part {:+.1} ms, so the comparison should say \"{expected}\": {sentence}",
            disk_change
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::disk_share_follows_its_figures as follows;

    const CI_RUN: &str = "good-settings instead of bad-settings: max stall 0.1 s → 0.1 s, probe p99 74 → 70 ms; \
        the probe's uncached 4 KiB read took 4.7 ms instead of 11.8 ms at the median, of which the disk itself held \
        reads 1.3 ms against 4.7 ms (median issue to completion, block tracepoints): ";

    #[test]
    fn the_disks_share_must_be_the_one_its_figures_give() {
        // 1.4 of 7.1 ms: less than half, so the time before the device.
        let before = "most of the difference passed before the read reached the device, and not in the I/O scheduler's \
                      queue, which held reads 0.5 ms against 0.4 ms (median insert to issue, block_rq_insert): before it";
        let disks_said = "the difference is the disk's, not the queue's before it";
        let small = CI_RUN.replace("1.3 ms against 4.7", "1.3 ms against 2.7");
        assert!(follows(&format!("{small}{before}")).is_ok());
        let err = follows(&format!("{small}{disks_said}")).unwrap_err();
        assert!(err.contains("should say \"most of the difference"), "{err}");
        // The CI run's 3.4 of 7.1 ms, each known to ±0.1 ms, may be a half:
        // either words, but some.
        assert!(follows(&format!("{CI_RUN}{before}")).is_ok());
        assert!(follows(&format!("{CI_RUN}{disks_said}")).is_ok());
        assert!(follows(CI_RUN).is_err());
        // Before the device, but the scheduler's queue not asked: its event was not read.
        let unasked =
            "most of the difference passed before the read reached the device: where, these events do not say";
        let err = follows(&format!("{small}{unasked}")).unwrap_err();
        assert!(err.contains("whether in the I/O scheduler's queue"), "{err}");
        // 17.1 of 19.7 ms: the disk's.
        let disks = CI_RUN
            .replace("4.7 ms instead of 11.8", "21.2 ms instead of 1.5")
            .replace("1.3 ms against 4.7", "18.8 ms against 1.7");
        assert!(follows(&format!("{disks}{disks_said}")).is_ok());
        assert!(follows(&format!("{disks}{before}")).is_err());
        // Without the block tracepoints' figures there is nothing to check against.
        assert!(follows("good-settings instead of bad-settings: probe p99 74 → 70 ms").is_err());
    }
}
