//! `bootmark bisect run` and `bootmark bisect status`: the lab file and the
//! flags turned into a bisect (`Asked`), checked before anything boots
//! (the candidates are the image's entries, the metric's workload is in
//! the image's plan, the servers are the lab's), driven on the lab's
//! servers (`on_lab`), and its state told as a table of every step.

use super::confirm;
use super::git;
use super::metric::Metric;
use super::on_lab::OnLab;
use super::search::{Answer, Outcome};
use super::session::{self, Action, Booted, Experiment, Settled, State};
use super::settings::{Differences, one_word};
use super::step::{ALPHA, Apart, BETA, Worse};
use crate::schema::record::{Record, Status};
use crate::schema::variant::Variant;
use crate::workstation::lab::ImageEntries;
use crate::workstation::lab::file::Lab;
use crate::workstation::output::say;
use crate::workstation::report::stats;
use crate::workstation::report::words::figure;
use std::path::{Path, PathBuf};

/// The most boots a step gets when `--cap` is not given.
pub const DEFAULT_CAP: usize = 12;

/// What the command line asks for.
pub struct Asked {
    pub metric: String,
    pub over: Over,
    /// The lab's servers to boot; empty: all of them.
    pub servers: Vec<String>,
    /// `--cap`; None: [`DEFAULT_CAP`] for a new bisect, the saved one on resume.
    pub cap: Option<usize>,
    /// The bisect's directory; None: `bisect` in the lab's state directory.
    pub dir: Option<PathBuf>,
    /// A step's boot that hangs counts as bad, not as a skip.
    pub hang_is_bad: bool,
}

/// What is bisected.
pub enum Over {
    /// The image's entries from `good` to `bad`, or the `ladder` given (both ends in).
    Ladder { good: String, bad: String, ladder: Option<Vec<String>> },
    /// The differences between two sets of settings (each a `bootmark capture`
    /// output, or records whose boot found them), booting `entry`.
    Settings { entry: String, good: PathBuf, bad: PathBuf },
    /// The commits of `tree` from `good` to `bad`, each built into an image
    /// by `build` and booted at its `entry`.
    Git { tree: PathBuf, good: String, bad: String, build: String, entry: String },
    /// A confirmation (`bootmark confirm`): `entry` as found against with `set`.
    Confirm(Experiment),
}

impl Asked {
    /// Its directory: `--dir`, else `bisect` (or `confirm`) in the lab's state directory.
    pub fn dir_in(&self, lab: &Lab) -> PathBuf {
        match (&self.dir, &self.over) {
            (Some(d), _) => d.clone(),
            (None, Over::Confirm(_)) => lab.state_dir.join("confirm"),
            (None, _) => lab.state_dir.join("bisect"),
        }
    }
}

/// How a bisect run ended, for the exit code.
pub enum Ended {
    /// The first bad candidate found.
    Found,
    /// Done, but unsure or skipped candidates sit before the first bad one; or refused;
    /// a confirmation that could not tell.
    NotFound,
    /// A confirmation's cause refuted.
    Refuted,
    /// Ctrl-C: the state is whole, run again to resume.
    Interrupted,
}

/// The bisect's directory.
pub fn state_dir(lab: &Lab, asked_dir: Option<&Path>) -> PathBuf {
    asked_dir.map_or_else(|| lab.state_dir.join("bisect"), Path::to_path_buf)
}

/// Every boot's records file in the bisect's directory (`SERVER/ENTRY-bN.jsonl`), those with any record.
pub fn record_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for server in std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.path().is_dir()) {
        for f in std::fs::read_dir(server.path()).into_iter().flatten().flatten() {
            let p = f.path();
            if p.extension().is_some_and(|x| x == "jsonl") && f.metadata().is_ok_and(|m| m.len() > 0) {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The ladder: `--ladder`, or the image's entries from the good end to the
/// bad one (in either order of the image), variants' entries (`k0-NAME`) left out.
fn ladder(good: &str, bad: &str, given: Option<&[String]>, image: &ImageEntries) -> Result<Vec<String>, String> {
    let labels: Vec<&str> = image.entries.iter().map(|e| e.label.as_str()).collect();
    let known = |name: &str| -> Result<(), String> {
        if labels.contains(&name) {
            return Ok(());
        }
        Err(format!(
            "{name} is not an entry of the image{}; its entries: {}",
            crate::suggest::did_you_mean(name, &labels),
            labels.join(", ")
        ))
    };
    known(good)?;
    known(bad)?;
    if good == bad {
        return Err(format!("--good and --bad are both {good}: a bisect needs two ends"));
    }
    let ladder: Vec<String> = match given {
        Some(given) => {
            for name in given {
                known(name)?;
            }
            if given.first().map(String::as_str) != Some(good) || given.last().map(String::as_str) != Some(bad) {
                return Err(format!(
                    "--ladder must run from the good end ({good}) to the bad end ({bad}); it runs from {} to {}",
                    given.first().map_or("nothing", String::as_str),
                    given.last().map_or("nothing", String::as_str)
                ));
            }
            given.to_vec()
        }
        None => {
            let plain: Vec<&str> = labels.iter().copied().filter(|l| !l.contains('-')).collect();
            let at = |name: &str| plain.iter().position(|l| *l == name);
            let (Some(g), Some(b)) = (at(good), at(bad)) else {
                return Err("--good and --bad name a variant's entry: give the ladder with --ladder".into());
            };
            let mut between: Vec<String> = plain[g.min(b)..=g.max(b)].iter().map(|s| s.to_string()).collect();
            if g > b {
                between.reverse();
            }
            between
        }
    };
    let mut seen = ladder.clone();
    seen.sort();
    seen.dedup();
    if seen.len() != ladder.len() {
        return Err(format!("--ladder names an entry twice: {}", ladder.join(",")));
    }
    Ok(ladder)
}

/// A settings bisect's differences: `entry` must be the image's, and the two
/// files two sets of settings that differ in something a variant may set.
fn differences(entry: &str, good: &Path, bad: &Path, image: &ImageEntries) -> Result<Differences, String> {
    let labels: Vec<&str> = image.entries.iter().map(|e| e.label.as_str()).collect();
    if !labels.contains(&entry) {
        return Err(format!(
            "--entry {entry}: not an entry of the image{}; its entries: {}",
            crate::suggest::did_you_mean(entry, &labels),
            labels.join(", ")
        ));
    }
    if good == bad {
        return Err(format!("--good and --bad are both {}: a bisect needs two sets of settings", good.display()));
    }
    let (g, b) = (settings_in(good)?, settings_in(bad)?);
    let (differences, one_sided) = Differences::between(entry, &g, &b);
    differences.check()?;
    if !one_sided.is_empty() {
        say(&format!(
            "bisect: left as the kernel has them (only one of the two sets has them): {}",
            one_sided.join(", ")
        ));
    }
    for d in &differences.settings {
        say(&format!("bisect: differs: {} {} (good) → {} (bad)", d.key, d.good, d.bad));
    }
    Ok(differences)
}

/// A set of settings: a `bootmark capture` output (a variant as JSON), or
/// records (a records file, a console log, a stick: what `bootmark report`
/// reads) whose first ok record was made under the settings as found.
fn settings_in(path: &Path) -> Result<Variant, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if let Ok(v) = serde_json::from_slice::<Variant>(&text) {
        return Ok(v);
    }
    let collected = crate::workstation::collect::collect(&[path.to_path_buf()]);
    let found = collected.documents.iter().find_map(|d| match d {
        crate::workstation::collect::Document::Result(r) if r.status == Status::Ok && r.variant.is_none() => Some(r),
        _ => None,
    });
    let r = found.ok_or_else(|| {
        format!(
            "{}: neither a `bootmark capture` output nor records with an ok run under the settings as found \
             (give a capture, or the records of a boot of the kernel whose settings you want)",
            path.display()
        )
    })?;
    Ok(settings_of(r))
}

/// The settings a record's boot found, as a variant (what `bootmark capture` would have written).
fn settings_of(r: &Record) -> Variant {
    let vm = r.vm.iter().filter_map(|(k, v)| Some((k.clone(), u64::try_from((*v)?).ok()?))).collect();
    let mut queue: std::collections::BTreeMap<String, String> = r
        .storage
        .queue
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("queue/")?.to_string(), v.clone())))
        .filter(|(k, _)| !k.contains('/'))
        .collect();
    if let Some(s) = &r.storage.scheduler {
        queue.insert("scheduler".into(), s.clone());
    }
    if let Some(n) = r.storage.nr_requests {
        queue.insert("nr_requests".into(), n.to_string());
    }
    Variant {
        name: r.kernel.release.clone().unwrap_or_else(|| "found".into()),
        vm,
        queue,
        note: format!("as found by run {}", r.run_id),
        ..Variant::default()
    }
}

/// A confirmation's cap: `--cap`, else its own default (not a bisect step's).
fn cap_of_confirm(cap: Option<usize>) -> usize {
    cap.unwrap_or(confirm::DEFAULT_CAP)
}

/// A confirmation's entry is the image's, and its settings are what /init
/// takes on `bootmark.set=` (parsed as /init parses them), each one word.
pub(super) fn checked_experiment(e: &Experiment, image: &ImageEntries) -> Result<(), String> {
    let labels: Vec<&str> = image.entries.iter().map(|x| x.label.as_str()).collect();
    if !labels.contains(&e.entry.as_str()) {
        return Err(format!(
            "--entry {}: not an entry of the image{}; its entries: {}",
            e.entry,
            crate::suggest::did_you_mean(&e.entry, &labels),
            labels.join(", ")
        ));
    }
    for item in e.set.split(',') {
        if !item.split_once('=').is_some_and(|(k, v)| one_word(k) && one_word(v)) {
            return Err(format!(
                "--set {}: '{item}' is not KEY=VALUE of one word each (queue.max_sectors_kb=128, vm.dirty_bytes=4194304)",
                e.set
            ));
        }
        // bootmark.set='s repeat= and workloads= are the confirmation's own (--runs, the metric's workload).
        if !item.starts_with("vm.") && !item.starts_with("queue.") {
            return Err(format!(
                "--set {}: '{item}' is not a setting (vm.NAME=N or queue.NAME=V); a confirmation chooses its own \
                 runs (--runs) and workload (the --metric's)",
                e.set
            ));
        }
    }
    crate::contract::cmdline::parse(&format!("bootmark.set={}:{}", confirm::CHANGED, e.set))
        .map_err(|err| format!("--set {}: {err}", e.set))?;
    if let Some(t) = e.toward
        && !(t.is_finite() && t > 0.0)
    {
        return Err(format!("--toward {t}: a value of the metric, above 0"));
    }
    Ok(())
}

/// The lab's servers the bisect boots, by index.
pub(super) fn chosen_servers(lab: &Lab, names: &[String]) -> Result<Vec<usize>, String> {
    let all: Vec<&str> = lab.servers.iter().map(|s| s.name.as_str()).collect();
    if names.is_empty() {
        return Ok((0..all.len()).collect());
    }
    names
        .iter()
        .map(|n| {
            all.iter().position(|s| s == n).ok_or_else(|| {
                format!(
                    "--server {n}: not a server of the lab{}; its servers: {}",
                    crate::suggest::did_you_mean(n, &all),
                    all.join(", ")
                )
            })
        })
        .collect()
}

/// The metric, checked against the image's plan when the manifest has it:
/// a workload the plan does not run is refused before anything boots.
pub(super) fn checked_metric(text: &str, image: &ImageEntries) -> Result<Metric, String> {
    let metric = Metric::parse(text)?;
    if let Some(plan) = &image.plan_definition {
        let workloads: Vec<&str> = plan.workloads.iter().map(|w| w.name()).collect();
        if !workloads.contains(&metric.workload.as_str()) {
            return Err(format!(
                "--metric {text}: the image's plan {} runs no {}{}; its workloads: {}",
                plan.name,
                metric.workload,
                crate::suggest::did_you_mean(&metric.workload, &workloads),
                workloads.join(", ")
            ));
        }
    }
    Ok(metric)
}

/// `bootmark bisect run`: checked, then driven until done, refused or
/// interrupted; prints its progress and, at the end, the table.
pub fn run(lab: &Lab, asked: &Asked) -> Result<Ended, String> {
    crate::interrupt::install();
    let chosen = chosen_servers(lab, &asked.servers)?;
    let cap_range = match asked.over {
        Over::Confirm(_) => confirm::CAP_RANGE,
        _ => 2..=64,
    };
    if let Some(cap) = asked.cap
        && !cap_range.contains(&cap)
    {
        return Err(match asked.over {
            Over::Confirm(_) => {
                format!("--cap {cap}: a confirmation looks from {} to 16 boots a side", confirm::FIRST_LOOK)
            }
            _ => format!("--cap {cap}: a step needs 2 to 64 boots at most"),
        });
    }
    let cap = asked.cap.unwrap_or(DEFAULT_CAP);
    let dir = asked.dir_in(lab);
    // The lab's servers are this bisect's alone (their power pid files are in the lab's state).
    let _only_runner = crate::workstation::lab::lock::lock(&lab.state_dir)?;
    if let Over::Git { tree, good, bad, build, entry } = &asked.over {
        return run_git(lab, asked, chosen, &dir, (tree, good, bad), (build, entry));
    }
    let image = ImageEntries::read(&lab.manifest)?;
    let metric = checked_metric(&asked.metric, &image)?;
    let mut wanted = match &asked.over {
        Over::Ladder { good, bad, ladder: given } => {
            let candidates = ladder(good, bad, given.as_deref(), &image)?;
            State::new(&asked.metric, candidates, cap, chosen.len())?
        }
        Over::Settings { entry, good, bad } => {
            let differences = differences(entry, good, bad, &image)?;
            State::for_settings(&asked.metric, differences, cap, chosen.len())?
        }
        Over::Confirm(experiment) => {
            checked_experiment(experiment, &image)?;
            State::for_confirm(&asked.metric, experiment.clone(), cap_of_confirm(asked.cap), chosen.len())?
        }
        Over::Git { .. } => unreachable!("a git range is bisected above"),
    };
    wanted.hang_is_bad = asked.hang_is_bad;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut state = resumed_or(wanted, asked.cap, &dir)?;
    let servers = crate::workstation::lab::session::Servers::prepare_these(lab, &image, &dir, &chosen)?;
    let on_lab = OnLab { servers, image: &image, metric: metric.clone(), dir: dir.clone(), kind: state.kind() };
    let over = match (&state.confirm, &state.settings) {
        (Some(e), _) => format!("{} as found and with {}", e.entry, e.set),
        (None, Some(d)) => format!("the {} differing setting(s) booting {}", d.settings.len(), d.entry),
        (None, None) => format!(
            "{} candidates ({} good … {} bad)",
            state.candidates.len(),
            state.candidates[0],
            state.candidates[state.candidates.len() - 1]
        ),
    };
    let driven = drive_told(&mut state, &metric, &dir, &on_lab, &over);
    let action = match driven {
        Ok(a) => a,
        Err(e) => {
            on_lab.servers.finish()?;
            return Err(e);
        }
    };
    on_lab.servers.finish()?;
    say(describe(&state, &metric, &action, &image).trim_end());
    if let (Some(e), Action::Decided(said)) = (&state.confirm, &action) {
        write_verdict(&state, e, said, &dir)?;
    }
    Ok(ended(&state, action))
}

/// A confirmation's verdict across boots, beside its boots' files, for
/// `bootmark report --confirmation`: the kernel as its records say, every
/// boot's run id.
fn write_verdict(state: &State, e: &Experiment, said: &confirm::Said, dir: &Path) -> Result<(), String> {
    let kernel = record_files(dir)
        .iter()
        .find_map(|f| super::on_lab::read_records(f).ok()?.into_iter().find_map(|r| r.kernel.release));
    let runs = state.boots.iter().filter_map(|b| b.run_id.clone()).collect();
    let words = confirm::verdict(said, &state.metric, &e.set, e.toward, confirm::Unit::Boots);
    match e.tested(said, (&state.metric, confirm::Unit::Boots), kernel, runs, words) {
        Some(t) => confirm::keep(&t, dir),
        None => Ok(()),
    }
}

/// `bootmark bisect git`: the range checked and its ends built before
/// anything boots; each step's commit built into an image of its own when
/// first booted; at the end, the steps as a `git bisect` log.
fn run_git(
    lab: &Lab,
    asked: &Asked,
    chosen: Vec<usize>,
    dir: &Path,
    (tree, good, bad): (&Path, &str, &str),
    (build, entry): (&str, &str),
) -> Result<Ended, String> {
    let dir = dir.to_path_buf();
    // Each commit has an image of its own, built when a step first boots it.
    let metric = Metric::parse(&asked.metric)?;
    git::check_lab(lab, &chosen)?;
    let range = git::range(tree, good, bad)?;
    let mut wanted = State::new(&asked.metric, range.commits.clone(), asked.cap.unwrap_or(DEFAULT_CAP), chosen.len())?;
    wanted.hang_is_bad = asked.hang_is_bad;
    wanted.titles = range.titles.clone();
    // The build command is checked before the bisect's directory is made.
    let builds = git::Builds::new(tree, build, &dir)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut state = resumed_or(wanted, asked.cap, &dir)?;
    let on_git = git::OnGit {
        lab,
        chosen,
        builds,
        entry: entry.to_string(),
        metric: metric.clone(),
        dir: dir.clone(),
        titles: range.commits.iter().cloned().zip(range.titles.iter().cloned()).collect(),
        release_said: Default::default(),
    };
    for (end, c) in [("good", 0), ("bad", range.commits.len() - 1)] {
        let built = on_git.builds.image_of(&range.commits[c], &range.titles[c])?;
        if let git::Built::Interrupted = built {
            say("bisect: interrupted; the same command again resumes");
            return Ok(Ended::Interrupted);
        }
        if let git::Built::Failed(why) = built {
            return Err(format!(
                "the {end} end, {}, does not build: {why}; a bisect needs both ends built (see its log in {})",
                range.titles[c],
                dir.join("images").display()
            ));
        }
    }
    let image = git_titles(&state);
    let over = format!(
        "{} commits ({} good … {} bad)",
        state.candidates.len(),
        range.titles[0],
        range.titles[range.titles.len() - 1]
    );
    let action = drive_told(&mut state, &metric, &dir, &on_git, &over)?;
    say(describe(&state, &metric, &action, &image).trim_end());
    if let Action::Done(_, answer) = &action {
        let log = dir.join(GIT_LOG);
        let text = super::git_log::write(&state.candidates, answer);
        crate::workstation::output::replace_synced(&dir, GIT_LOG, text.as_bytes())?;
        say(&format!(
            "bisect: the steps as `git bisect` marks them: {} (`git bisect start && git bisect replay {}` in your tree)",
            log.display(),
            log.display()
        ));
    }
    Ok(ended(&state, action))
}

/// Drive the bisect on `lab` until done, refused or interrupted, saying
/// what it bisects (`over`) and each boot as it ends.
fn drive_told(
    state: &mut State,
    metric: &Metric,
    dir: &Path,
    lab: &dyn session::Lab,
    over: &str,
) -> Result<Action, String> {
    say(&format!(
        "{}: {} over {over} on {} server(s); state in {}",
        state.kind(),
        state.metric,
        state.servers,
        dir.display()
    ));
    let progress = |state: &State, b: &Booted| say(&progress_line(state, b));
    session::drive(state, metric, dir, lab, &crate::interrupt::interrupted, &progress)
}

/// A git range's `git bisect` log, in the bisect's directory.
pub const GIT_LOG: &str = "git-bisect.log";

/// The bisect in `dir` if one is there (it must be `wanted`), else `wanted`, saved.
/// A `--cap` given again applies from now on (the steps are replayed from
/// their boots, so a step already unsure may go on, or one end sooner).
fn resumed_or(wanted: State, cap: Option<usize>, dir: &Path) -> Result<State, String> {
    match State::load(dir)? {
        Some(mut s) => {
            s.check_same(&wanted, dir)?;
            say(&format!("{}: resuming in {}: {} boots so far", s.kind(), dir.display(), s.boots.len()));
            // A confirmation's looks and their levels are fixed by its cap once
            // it has boots: a cap changed then would replay its looks at other
            // levels (a "can't tell" at 8 turned "confirmed" at 5) and void the
            // error rate it states.
            if let Some(cap) = cap.filter(|c| *c != s.cap && s.confirm.is_some() && !s.boots.is_empty()) {
                return Err(format!(
                    "--cap {cap}: this confirmation was started with --cap {} and has {} boots; its looks are \
                     fixed by then (another cap would test its boots at other levels). Resume it without --cap, \
                     or move {} away to start a new one",
                    s.cap,
                    s.boots.len(),
                    dir.display()
                ));
            }
            if let Some(cap) = cap.filter(|c| *c != s.cap) {
                say(&format!("{}: --cap {cap} from now on (it was {})", s.kind(), s.cap));
                s.cap = cap;
                s.save(dir)?;
            }
            Ok(s)
        }
        None => {
            wanted.save(dir)?;
            Ok(wanted)
        }
    }
}

/// How the drive's last action ends the command.
fn ended(state: &State, action: Action) -> Ended {
    match action {
        Action::Boot(_) | Action::Add(_) => {
            say(&format!(
                "{}: interrupted; the same command again resumes ({} boots kept)",
                state.kind(),
                state.boots.len()
            ));
            Ended::Interrupted
        }
        Action::Done(_, answer) if answer.found().is_some() => Ended::Found,
        Action::Settled(_, settled) if settled.unsure.is_empty() => Ended::Found,
        Action::Decided(confirm::Said::Confirmed(_)) => Ended::Found,
        Action::Decided(confirm::Said::Refuted(_)) => Ended::Refuted,
        Action::Done(..) | Action::Refused(_) | Action::Settled(..) | Action::Decided(_) => Ended::NotFound,
    }
}

/// A git range's commits as the entries the tables name (`abc1234 subject`).
fn git_titles(state: &State) -> ImageEntries {
    let entries = state
        .candidates
        .iter()
        .zip(&state.titles)
        .map(|(c, t)| crate::workstation::lab::ImageEntry {
            label: c.clone(),
            title: t.clone(),
            cmdline: String::new(),
            cmdline_room: None,
            kernel_release: None,
        })
        .collect();
    ImageEntries { entries, plan_definition: None, iso_menus: None }
}

/// `bootmark bisect status`: where a bisect is, from its state alone.
pub fn status(lab: &Lab, dir: Option<&Path>) -> Result<String, String> {
    let dir = state_dir(lab, dir);
    let state =
        State::load(&dir)?.ok_or_else(|| format!("no bisect has run in {} (no {})", dir.display(), session::FILE))?;
    let image = if state.titles.is_empty() { ImageEntries::read(&lab.manifest)? } else { git_titles(&state) };
    status_of(&state, &image)
}

/// What `bisect status` prints of `state`, its candidates named by
/// `image`'s entries (the fuzz target's way in: a state that loaded
/// gives this text or an error, never a panic).
pub fn status_of(state: &State, image: &ImageEntries) -> Result<String, String> {
    let state = state.clone();
    let metric = Metric::parse(&state.metric)?;
    let action = state.action(&metric);
    let mut out = describe(&state, &metric, &action, image);
    let next = match &action {
        Action::Boot(next) => Some(next.iter().map(|c| state.candidates[*c].clone()).collect::<Vec<_>>().join(", ")),
        Action::Add(name) => Some(name.clone()),
        _ => None,
    };
    if let Some(names) = next {
        out += &format!("next: boot {names} (the same `bootmark {}` command resumes)\n", state.kind());
    }
    Ok(out)
}

/// A boot as it ends: its value, and how many boots its candidate has.
fn progress_line(state: &State, b: &Booted) -> String {
    let of_candidate = state.boots.iter().filter(|o| o.candidate == b.candidate).count();
    let what = match (b.value, &b.why) {
        (Some(v), _) => format!("{} = {}", state.metric, figure(v)),
        (None, why) => format!("no value ({})", why.as_deref().unwrap_or("unknown")),
    };
    let candidate = &state.candidates[b.candidate];
    let short = state.titles.get(b.candidate).and_then(|t| t.split(' ').next()).unwrap_or(candidate);
    format!(
        "{}: {} ({short}): {what}; boot {} of this candidate, {} in all",
        state.kind(),
        b.id,
        of_candidate,
        state.boots.len()
    )
}

/// The bisect as a table: the ends and how they were told apart, every
/// candidate's boots and what its step said, and the answer or why none.
pub fn describe(state: &State, metric: &Metric, action: &Action, image: &ImageEntries) -> String {
    let title = |c: usize| {
        let label = &state.candidates[c];
        if let Some(t) = state.titles.get(c) {
            return t.clone();
        }
        if let Some(d) = &state.settings {
            return match super::settings::subset_of(label) {
                Some(subset) => format!("{label} ({})", d.describe(&subset)),
                None => label.clone(),
            };
        }
        let t = image.entries.iter().find(|e| &e.label == label).map_or("", |e| e.title.as_str());
        if t.is_empty() { label.clone() } else { format!("{label} ({t})") }
    };
    let worse = match metric.worse() {
        Worse::Larger => "larger is worse",
        Worse::Smaller => "smaller is worse",
    };
    let (first, last) = state.ends();
    let mut s = String::new();
    if let Some(e) = &state.confirm {
        let entry = image.entries.iter().find(|x| x.label == e.entry).map_or("", |x| x.title.as_str());
        s += &format!(
            "confirmation: {} ({entry}) as found, against it with {} set, which should make {} {} ({worse}); \
             at most {} boots a side, {} boots so far\n",
            e.entry,
            e.set,
            state.metric,
            match (e.removes, e.toward) {
                (true, Some(t)) => format!("move toward {}", figure(t)),
                (false, Some(t)) => format!("move toward {} (the cause given)", figure(t)),
                (true, None) => "better".to_string(),
                (false, None) => "worse (the cause given)".to_string(),
            },
            state.cap,
            state.boots.len()
        );
    } else if let Some(d) = &state.settings {
        let entry = image.entries.iter().find(|e| e.label == d.entry).map_or("", |e| e.title.as_str());
        s += &format!("settings bisect booting {} ({entry}); the differences:\n", d.entry);
        for (i, x) in d.settings.iter().enumerate() {
            s += &format!("  d{}: {} {} (good) → {} (bad)\n", i + 1, x.key, x.good, x.bad);
        }
    }
    if state.confirm.is_none() {
        s += &bisect_line(state, worse);
    }
    s += "\n| candidate | boots | failed | median | values | step said |\n|---|---:|---:|---:|---|---|\n";
    s += &rows(state, action, &title, (first, last));
    s += "\n";
    s += &outcome_lines(state, action, &title);
    s
}

/// What a bisect is over, in one line.
fn bisect_line(state: &State, worse: &str) -> String {
    format!(
        "bisect of {} ({worse}) over {} candidates, {} server(s), at most {} boots a step; {} boots so far\n",
        state.metric,
        state.candidates.len(),
        state.servers,
        state.cap,
        state.boots.len()
    )
}

/// A row per candidate booted: its boots, values, and what its step said.
fn rows(state: &State, action: &Action, title: &dyn Fn(usize) -> String, (first, last): (usize, usize)) -> String {
    let steps: &[super::search::Step] = match action {
        Action::Done(_, answer) => &answer.steps,
        Action::Settled(_, settled) => &settled.steps,
        _ => &[],
    };
    let mut s = String::new();
    for c in 0..state.candidates.len() {
        let boots: Vec<&Booted> = state.boots.iter().filter(|b| b.candidate == c).collect();
        if boots.is_empty() {
            continue;
        }
        let values: Vec<f64> = boots.iter().filter_map(|b| b.value).collect();
        let failed = boots.len() - values.len();
        let said = match (c, steps.iter().find(|st| st.candidate == c)) {
            (c, _) if state.confirm.is_some() && c == first => "the entry as found".to_string(),
            (_, _) if state.confirm.is_some() => "the setting changed".to_string(),
            (c, _) if c == first => "the good end".to_string(),
            (c, _) if c == last => "the bad end".to_string(),
            (_, Some(st)) => format!("{} (log-likelihood ratio {:+.2})", outcome_word(st.outcome), st.llr),
            (_, None) => "not decided yet".to_string(),
        };
        s += &format!(
            "| {} | {} | {failed} | {} | {} | {said} |\n",
            title(c),
            boots.len(),
            stats::median(&values).map_or("–".into(), figure),
            values.iter().map(|v| figure(*v)).collect::<Vec<_>>().join(" "),
        );
    }
    s
}

/// How it ended (or that it has not).
fn outcome_lines(state: &State, action: &Action, title: &dyn Fn(usize) -> String) -> String {
    match action {
        Action::Boot(_) | Action::Add(_) => "not done yet\n".to_string(),
        Action::Refused(why) if state.confirm.is_some() => format!("no verdict: {why}\n"),
        Action::Refused(why) => format!("no bisect: {why}\n"),
        Action::Done(apart, answer) => ends_line(apart) + &answer_lines(answer, state.boots.len(), title),
        Action::Settled(apart, settled) => ends_line(apart) + &settled_lines(state, settled),
        Action::Decided(said) => {
            let e = state.confirm.as_ref().expect("a confirmation decides");
            confirm::verdict(said, &state.metric, &e.set, e.toward, confirm::Unit::Boots) + "\n"
        }
    }
}

/// A settings bisect's answer: the smallest subset still bad, and any left unsure.
fn settled_lines(state: &State, settled: &Settled) -> String {
    let d = state.settings.as_ref().expect("a settings bisect");
    let mut s = format!(
        "smallest set of differences that is still bad: {} ({})\n",
        super::settings::candidate_name(&settled.minimal),
        d.describe(&settled.minimal)
    );
    if d.settings.len() == 1 {
        s += "(it is the only difference: the ends' test is the evidence)\n";
    }
    if !settled.unsure.is_empty() {
        let names: Vec<String> = settled.unsure.iter().map(|u| super::settings::candidate_name(u)).collect();
        s += &format!(
            "not sure: these subsets could not be decided and counted as not bad, so a smaller answer may hide \
             among them: {}\n",
            names.join(", ")
        );
    }
    s += &format!(
        "found by delta debugging (ddmin), each subset decided by {}\n",
        decided_by("subset", settled.boots, state.boots.len())
    );
    s
}

/// The test that decided each step, and the boots spent.
fn decided_by(step: &str, step_boots: usize, all_boots: usize) -> String {
    debug_assert_eq!(ALPHA, BETA);
    format!(
        "Wald's sequential probability ratio test against the ends' measured spread (α = β = {:.0} %, at least 4 \
         boots a {step}); {step_boots} boots in the steps, {all_boots} with the ends'",
        ALPHA * 100.0
    )
}

/// How the ends were told apart.
fn ends_line(a: &Apart) -> String {
    format!(
        "the ends: good median {}, bad median {} (×{:.2}), Mann–Whitney p = {:.3}, {:.1} pooled standard deviations apart{}\n",
        figure(a.good_median),
        figure(a.bad_median),
        a.ratio,
        a.p,
        a.separation,
        a.floor.map_or(String::new(), |f| format!(", A/A noise floor {:.1} %", f * 100.0))
    )
}

/// The answer, with the test that decided each step.
fn answer_lines(answer: &Answer, all_boots: usize, title: &dyn Fn(usize) -> String) -> String {
    let test = format!("each step decided by {}", decided_by("step", answer.boots, all_boots));
    match answer.found() {
        Some(bad) => format!("first bad: {}\nlast good: {}\n{test}\n", title(bad), title(answer.last_good)),
        None => format!(
            "not found: between the last good, {}, and the first bad, {}, lie candidates the steps could not place: {}\n{test}\n",
            title(answer.last_good),
            title(answer.first_bad),
            answer.between.iter().map(|c| title(*c)).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Good => "good",
        Outcome::Bad => "bad",
        Outcome::Unsure => "unsure (its cap reached undecided)",
        Outcome::Skip => "skip (its boots failed)",
    }
}
