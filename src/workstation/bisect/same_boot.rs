//! `bootmark confirm --same-boot`: a candidate cause tested inside one
//! boot. The entry boots once with
//! `bootmark.set=+changed:SET,repeat=N,workloads=W`: each of its N
//! repetitions runs the workload the metric reads (W, alone of the plan's)
//! as found (variant `asfound`), then under the setting (variant
//! `changed`), so both sides
//! share the boot's kernel, disk and state, interleaved as a sweep's
//! variants are. Each run is a value; one look of `confirm`'s test decides.
//!
//! What it buys: one boot instead of ten, so a cause can be tested where
//! boots are dear (the demo's budget, a server whose POST takes minutes).
//! What it cannot say: whether the effect holds across boots (a boot's
//! own luck: where the filesystem put its files, what the disk's cache
//! held). The verdict says so; `bootmark confirm` without `--same-boot`
//! makes the boot the unit.

use super::command::{Ended, checked_experiment, checked_metric, chosen_servers};
use super::confirm::{self, Expected, Said, Unit};
use super::metric::Metric;
use super::on_lab::{not_applied, read_records};
use super::session::Experiment;
use crate::schema::record::Record;
use crate::schema::variant::FOUND_BESIDE;
use crate::workstation::lab::ImageEntries;
use crate::workstation::lab::file::Lab;
use crate::workstation::output::say;
use std::path::{Path, PathBuf};

/// Runs a side by default, and the range `--runs` may take.
pub const DEFAULT_RUNS: usize = 6;
pub const RUNS_RANGE: std::ops::RangeInclusive<usize> = confirm::FIRST_LOOK..=16;

/// What `bootmark confirm --same-boot` was asked.
pub struct Asked {
    pub metric: String,
    pub experiment: Experiment,
    pub runs: usize,
    /// The one server to boot (`--server`); None: the lab's first.
    pub server: Option<String>,
    /// Its directory; None: `confirm-same-boot` in the lab's state directory.
    pub dir: Option<PathBuf>,
}

/// What the boot measured and the verdict on it.
pub struct Confirmed {
    pub said: Said,
    /// The verdict as a sentence (`confirm::verdict`).
    pub words: String,
    /// The boot's records file, from which every value was read.
    pub records: PathBuf,
    /// The boot's run id.
    pub run_id: Option<String>,
    /// The verdict as the report folds it in (`verdict.json`); None while undecided.
    pub tested: Option<crate::workstation::report::tested::Tested>,
}

/// The `bootmark.set=` word of a same-boot confirmation of `set`, `runs` a
/// side, of the plan's workloads only the one the metric reads.
pub fn set_word(set: &str, runs: usize, workload: &str) -> String {
    format!("+{}:{set},repeat={runs},workloads={workload}", confirm::CHANGED)
}

/// Boot the entry once, both ways interleaved, and decide.
pub fn run(lab: &Lab, asked: &Asked) -> Result<(Ended, Option<Confirmed>), String> {
    crate::interrupt::install();
    if !RUNS_RANGE.contains(&asked.runs) {
        return Err(format!(
            "--runs {}: a same-boot confirmation runs {} to {} a side",
            asked.runs,
            RUNS_RANGE.start(),
            RUNS_RANGE.end()
        ));
    }
    let names: Vec<String> = asked.server.iter().cloned().collect();
    let server = *chosen_servers(lab, &names)?.first().ok_or("the lab has no server")?;
    let dir = asked.dir.clone().unwrap_or_else(|| lab.state_dir.join("confirm-same-boot"));
    let _only_runner = crate::workstation::lab::lock::lock(&lab.state_dir)?;
    let image = ImageEntries::read(&lab.manifest)?;
    let metric = checked_metric(&asked.metric, &image)?;
    let e = &asked.experiment;
    checked_experiment(e, &image)?;
    let word = set_word(&e.set, asked.runs, &metric.workload);
    let entry = image.entries.iter().find(|x| x.label == e.entry).ok_or("checked above")?;
    let machine = &lab.servers[server];
    // Refused here, before anything is made or said to boot: the set word is
    // mostly this confirmation's own (its repetitions and workload).
    entry.check_set_fits(&word)?;
    let deadline_s = crate::workstation::lab::step_deadline_s(machine, &image, entry, Some(&word))?;
    let budget_s = crate::workstation::lab::step_deadline_s(
        &crate::workstation::lab::file::Server { max_step_s: None, ..machine.clone() },
        &image,
        entry,
        Some(&word),
    )?;
    if budget_s > deadline_s {
        say(&format!(
            "confirm: WARNING: server {}'s max_step_s cuts this boot's deadline to {deadline_s} s, under the \
             {budget_s} s its {} runs may take: a boot cut there gives no verdict (fewer --runs, or a larger max_step_s)",
            machine.name,
            2 * asked.runs
        ));
    }
    std::fs::create_dir_all(&dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    // Never over an earlier confirmation's files: each boot its own number.
    let id = format!("{}/{}", machine.name, next_id(&dir.join(&machine.name), &e.entry));
    let servers = crate::workstation::lab::session::Servers::prepare_these(lab, &image, &dir, &[server])?;
    say(&format!(
        "confirm: {id}: booting {} ({}) once, {} runs as found and {} with {} interleaved; deadline {deadline_s} s; \
         files in {}",
        e.entry,
        entry.title,
        asked.runs,
        asked.runs,
        e.set,
        dir.display()
    ));
    let booted = servers.boot(0, (&e.entry, Some(&word)), &id, deadline_s);
    servers.finish()?;
    let Some(outcome) = booted? else {
        say("confirm: interrupted; nothing of this boot counts (its files are kept)");
        return Ok((Ended::Interrupted, None));
    };
    let records_path = dir.join(&outcome.records);
    if outcome.status == crate::workstation::lab::state::Status::Failed {
        return Err(format!(
            "the boot failed: {} (its console: {}); no verdict",
            outcome.why.unwrap_or_else(|| "no reason given".into()),
            dir.join(&outcome.log).display()
        ));
    }
    let records = read_records(&records_path)?;
    let said = decide(&metric, e, &records, skipped_why(&records_path).as_deref())?;
    let words = confirm::verdict(&said, &asked.metric, &e.set, e.toward, Unit::RunsOfOneBoot);
    say(&format!("{words}\nthe runs: {}", records_path.display()));
    // For `bootmark report --confirmation`: the verdict beside the boot's files.
    let kernel = records.first().and_then(|r| r.kernel.release.clone());
    let unit = Unit::RunsOfOneBoot;
    let tested = e.tested(&said, (&asked.metric, unit), kernel, outcome.run_ids.clone(), words.clone());
    if let Some(t) = &tested {
        confirm::keep(t, &dir)?;
    }
    let ended = match said {
        Said::Confirmed(_) => Ended::Found,
        Said::Refuted(_) => Ended::Refuted,
        _ => Ended::NotFound,
    };
    let run_id = outcome.run_ids.first().cloned();
    Ok((ended, Some(Confirmed { said, words, records: records_path, run_id, tested })))
}

/// The verdict on one boot's records: the metric of each ok run, as
/// found and changed, in run order. No verdict where the changed side did
/// not run as asked: /init skipped it (`skipped`: the kernel refused every
/// setting), or a setting was not in force (the candidate is untestable on
/// this kernel); nor where a run of either side failed (the runs that
/// survived a setting that makes runs fail do not measure it).
pub fn decide(metric: &Metric, e: &Experiment, records: &[Record], skipped: Option<&str>) -> Result<Said, String> {
    let (found, changed) = (side(records, FOUND_BESIDE), side(records, confirm::CHANGED));
    let untestable = |why: &str| Said::Unfit(format!("{} is untestable on this kernel: {why}", e.set));
    if let (true, Some(why)) = (changed.is_empty(), skipped) {
        return Ok(untestable(&format!("/init ran no changed run ({why})")));
    }
    if found.is_empty() && changed.is_empty() {
        metric.check(records)?;
        return Err(format!(
            "the boot's records carry neither variant {FOUND_BESIDE} nor {}: it did not run as a same-boot \
             confirmation (an image older than --same-boot?)",
            confirm::CHANGED
        ));
    }
    if let Some(why) = not_applied(&changed.iter().copied().cloned().collect::<Vec<_>>()) {
        return Ok(untestable(&why));
    }
    let failed = |runs: &[&Record]| {
        let of_workload: Vec<&&Record> = runs.iter().filter(|r| r.workload.name == metric.workload).collect();
        let bad = of_workload.iter().filter(|r| r.status != crate::schema::record::Status::Ok).count();
        (bad, of_workload.len())
    };
    let (found_failed, changed_failed) = (failed(&found), failed(&changed));
    if found_failed.0 + changed_failed.0 > 0 {
        return Ok(Said::Unfit(format!(
            "{} of {} runs as found and {} of {} changed failed (their records say why): the runs that survived \
             do not measure a setting that makes runs fail",
            found_failed.0, found_failed.1, changed_failed.0, changed_failed.1
        )));
    }
    let [found_values, changed_values] = values(metric, records);
    if found_values.is_empty() || changed_values.is_empty() {
        metric.check(records)?;
        return Err(format!(
            "the {} runs of one side have no value of the metric (as found {}, changed {}): nothing to compare",
            metric.workload,
            found_values.len(),
            changed_values.len()
        ));
    }
    let expected = Expected { worse: metric.worse(), removes: e.removes, toward: e.toward };
    Ok(confirm::decide_once(&expected, &found_values, &changed_values))
}

/// Why /init skipped the changed variant, as the boot's run record says
/// (`facts.variants_skipped`: a variant none of whose settings the kernel took).
fn skipped_why(records: &Path) -> Option<String> {
    let text = std::fs::read_to_string(records).ok()?;
    text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).find_map(|v| {
        let skipped = v.get("facts")?.get("variants_skipped")?.get(confirm::CHANGED)?;
        Some(skipped.as_str().map_or_else(|| skipped.to_string(), str::to_string))
    })
}

/// The records of one side of a same-boot confirmation, by variant name.
fn side<'a>(records: &'a [Record], variant: &str) -> Vec<&'a Record> {
    records.iter().filter(|r| r.variant.as_ref().is_some_and(|v| v.name == variant)).collect()
}

/// The metric's value of each ok run, as found then changed, in run order:
/// what the verdict decided on (a reader checks its quoted medians with them).
pub fn values(metric: &Metric, records: &[Record]) -> [Vec<f64>; 2] {
    [FOUND_BESIDE, confirm::CHANGED].map(|v| side(records, v).iter().filter_map(|r| metric.of_run(r)).collect())
}

/// The next free step id for `entry` in a server's directory (`k2-same-boot-1`, -2, …).
fn next_id(server_dir: &Path, entry: &str) -> String {
    (1..)
        .map(|n| format!("{entry}-same-boot-{n}"))
        .find(|id| !server_dir.join(format!("{id}.log")).exists() && !server_dir.join(format!("{id}.jsonl")).exists())
        .expect("an unused number")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's record as /init writes it, with `variant` and a probe p99.
    fn run(variant: &str, p99: f64, not_applied: bool) -> Record {
        let line = include_str!("../../../tests/data/report/boots6-records.jsonl")
            .lines()
            .find(|l| l.contains("bootmark.result/1") && l.contains("\"seqwrite\""))
            .unwrap();
        let mut r: Record = serde_json::from_str(line).unwrap();
        let mut applied = crate::schema::variant::Applied { name: variant.into(), ..Default::default() };
        if not_applied {
            applied.not_applied.insert("queue.max_sectors_kb".into(), "writing 128 failed: Invalid argument".into());
        }
        r.variant = Some(applied);
        r.responsiveness.as_mut().unwrap().p99_ms = p99;
        r
    }

    fn experiment() -> Experiment {
        Experiment { entry: "k2".into(), set: "queue.max_sectors_kb=128".into(), removes: true, toward: Some(15.0) }
    }

    /// The runs are read by their variant, interleaved as /init ran them.
    #[test]
    fn a_boots_runs_are_read_by_variant() {
        let metric = Metric::parse("seqwrite.probe_p99_ms").unwrap();
        let mut records = Vec::new();
        for (f, c) in [(49.0, 15.0), (52.0, 14.0), (47.0, 16.5), (50.0, 15.5), (55.0, 13.0)] {
            records.push(run(FOUND_BESIDE, f, false));
            records.push(run("changed", c, false));
        }
        let said = decide(&metric, &experiment(), &records, None).unwrap();
        assert!(matches!(said, Said::Confirmed(ref e) if e.boots == 5 && e.medians == [50.0, 15.0]), "{said:?}");
        // As the report reads it: the outcome, its figures, the run.
        let runs = vec!["20261207-084656-6a27".to_string()];
        let t = experiment().tested(&said, ("seqwrite.probe_p99_ms", Unit::RunsOfOneBoot), None, runs, "w".into());
        let t = t.expect("a decided confirmation");
        assert_eq!((t.sides, t.medians, t.set.as_str()), (Some(5), Some([50.0, 15.0]), "queue.max_sectors_kb=128"));
        assert_eq!(t.outcome, crate::workstation::report::tested::Outcome::Confirmed);
        assert_eq!(t.unit, "runs a side, interleaved in one boot");
        assert!(experiment().tested(&Said::More, ("m.x", Unit::Boots), None, vec![], String::new()).is_none());
        // A setting the kernel refused: untestable here, said so.
        records[1] = run("changed", 15.0, true);
        let said = decide(&metric, &experiment(), &records, None).unwrap();
        assert!(matches!(said, Said::Unfit(ref why) if why.contains("untestable on this kernel")), "{said:?}");
        // Records of a boot that was no same-boot confirmation: refused, not read as one side.
        let plain: Vec<Record> = records.iter().cloned().map(|mut r| (r.variant = None, r).1).collect();
        assert!(decide(&metric, &experiment(), &plain, None).unwrap_err().contains("neither variant"));
    }

    /// No verdict where the changed side did not run as asked, or a run failed.
    #[test]
    fn a_skipped_setting_or_a_failed_run_gives_no_verdict() {
        let metric = Metric::parse("seqwrite.probe_p99_ms").unwrap();
        let mut records: Vec<Record> =
            (0..5).flat_map(|_| [run(FOUND_BESIDE, 50.0, false), run("changed", 15.0, false)]).collect();
        // /init skipped the changed variant (the kernel took none of its settings): only found runs.
        let found_only: Vec<Record> =
            records.iter().filter(|r| r.variant.as_ref().unwrap().name == FOUND_BESIDE).cloned().collect();
        let why = "queue.scheduler: this kernel has no scheduler kyber";
        let said = decide(&metric, &experiment(), &found_only, Some(why)).unwrap();
        assert!(
            matches!(said, Said::Unfit(ref w) if w.contains("untestable on this kernel") && w.contains(why)),
            "{said:?}"
        );
        // One changed run failed: the survivors do not measure the setting.
        records[3].status = crate::schema::record::Status::Error;
        let said = decide(&metric, &experiment(), &records, None).unwrap();
        assert!(
            matches!(said, Said::Unfit(ref w) if w.contains("0 of 5 runs as found and 1 of 5 changed failed")),
            "{said:?}"
        );
    }

    #[test]
    fn the_set_word_runs_both_ways_and_is_what_init_takes() {
        let word = set_word("queue.max_sectors_kb=128", 5, "seqwrite");
        assert_eq!(word, "+changed:queue.max_sectors_kb=128,repeat=5,workloads=seqwrite");
        let s = crate::contract::cmdline::parse(&format!("bootmark.set={word}")).unwrap().set.unwrap();
        assert!(s.beside_found && s.repeat == Some(5) && s.variant.name == "changed");
        assert_eq!(s.workloads, Some(vec!["seqwrite".to_string()]));
    }

    #[test]
    fn step_ids_never_reuse_an_earlier_boots_files() {
        let dir = std::env::temp_dir().join(format!("bootmark-same-boot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(next_id(&dir, "k2"), "k2-same-boot-1");
        std::fs::write(dir.join("k2-same-boot-1.log"), "").unwrap();
        assert_eq!(next_id(&dir, "k2"), "k2-same-boot-2");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
