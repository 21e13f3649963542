//! A bisect over a ladder of candidates (an image's entries, commits), or
//! over the differences between two sets of settings (`settings`), as it
//! is kept on disk and driven: the state (`STATE_DIR/bisect.json`) holds
//! what is bisected and every boot so far, and is written after every boot
//! (atomically, as the lab's state is), so that a bisect stopped at any
//! moment — Ctrl-C, a crashed workstation — resumes where it was: the ends
//! and the search are replayed from the boots (`search::ends_next`,
//! `search::next`), nothing is booted twice.
//!
//! The lab that boots a candidate is a trait (`Lab`): `bootmark lab`'s
//! servers through their BMCs, QEMU, or a simulation in the tests.

use super::confirm;
use super::metric::Metric;
use super::search::{self, Answer, End, EndsNext, Next, Outcome, Step};
use super::settings::{self, Differences, Subset};
use super::step::{Apart, Model, Worse};
use crate::workstation::report::tested::{self, Tested};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA: &str = "bootmark.bisect-state/1";
pub const FILE: &str = "bisect.json";

/// One boot: what it booted, where, the boot's run id (its records) and
/// the metric's value, or why none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Booted {
    pub candidate: usize,
    /// The boot's name (`SERVER/CANDIDATE#bN`): its log and records are
    /// `SERVER/CANDIDATE-bN.log` and `.jsonl` in the bisect's directory.
    pub id: String,
    /// Which of the bisect's servers booted it.
    pub server: usize,
    pub run_id: Option<String>,
    pub value: Option<f64>,
    /// Why there is no value (a boot that failed, hung or wrote no such record).
    pub why: Option<String>,
    /// The machine as its records describe it (`Measured::hardware`).
    pub hardware: Option<String>,
    /// No run record by its deadline: the console went silent or the time ran out.
    #[serde(default)]
    pub hung: bool,
}

/// More boots than any bisect makes (a cap of 64 per step, a few dozen steps).
const MAX_BOOTS: usize = 100_000;
/// Servers side by side, at most (choosing a round's candidates costs
/// servers² × candidates).
const MAX_SERVERS: usize = 64;
/// Candidates, at most: a ladder of an image's entries or a git range's
/// commits (a range of more is bisected in parts).
const MAX_CANDIDATES: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: String,
    pub metric: String,
    /// The ladder, the good end first and the bad end last; of a settings
    /// bisect, the good and bad ends and then each subset as ddmin asked for it.
    pub candidates: Vec<String>,
    /// The most boots a step gets.
    pub cap: usize,
    /// Candidates tried at once (one per server).
    pub servers: usize,
    /// Every boot, in the order they ended.
    pub boots: Vec<Booted>,
    /// A step's boot that hung counts as one like the bad end's worst,
    /// not as a skip (the regression looked for is a hang).
    #[serde(default)]
    pub hang_is_bad: bool,
    /// A settings bisect: the entry it boots and the differences (None: a ladder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Differences>,
    /// A git range's: each candidate's `abc1234 subject`, for the tables
    /// (empty: the candidates are an image's entries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub titles: Vec<String>,
    /// A confirmation (`bootmark confirm`): its two candidates are the
    /// entry as found and with the setting changed (None: a bisect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Experiment>,
}

/// A confirmation's experiment: one entry, booted as found and with `set`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub entry: String,
    /// What the changed boots set, `KEY=VALUE[,KEY=VALUE]` as `bootmark.set=` takes it.
    pub set: String,
    /// The change removes the cause (the metric should get better), or gives it.
    pub removes: bool,
    /// Where the metric would be without the cause (`confirm::Expected::toward`).
    pub toward: Option<f64>,
}

impl Experiment {
    /// Its verdict as the report reads it (`verdict.json`, `bootmark report
    /// --confirmation`): the outcome and figures of `said`, its `words`, the
    /// kernel its records name and the run ids of the boots whose records
    /// decided it; None while undecided.
    pub fn tested(
        &self,
        said: &confirm::Said,
        (metric, unit): (&str, confirm::Unit),
        kernel: Option<String>,
        runs: Vec<String>,
        words: String,
    ) -> Option<Tested> {
        use confirm::Said;
        let (outcome, evidence) = match said {
            Said::Confirmed(ev) => (tested::Outcome::Confirmed, Some(ev)),
            Said::Refuted(ev) => (tested::Outcome::Refuted, Some(ev)),
            Said::CantTell(ev) => (tested::Outcome::CantTell, Some(ev)),
            Said::Unfit(_) => (tested::Outcome::NoTest, None),
            Said::More => return None,
        };
        Some(Tested {
            schema: tested::SCHEMA.to_string(),
            entry: self.entry.clone(),
            kernel,
            metric: metric.to_string(),
            set: self.set.clone(),
            removes: self.removes,
            toward: self.toward,
            outcome,
            unit: unit.name().to_string(),
            sides: evidence.map(|ev| ev.boots),
            medians: evidence.map(|ev| ev.medians),
            p: evidence.map(|ev| ev.p),
            words,
            runs,
        })
    }
}

/// What the bisect does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Boot each of these candidates once (the ends are candidates 0 and n − 1).
    Boot(Vec<usize>),
    /// The answer, with how the ends were told apart.
    Done(Apart, Answer),
    /// The ends could not be bisected: why, with their numbers.
    Refused(String),
    /// A settings bisect's next subset, not yet a candidate: add it, then ask again.
    Add(String),
    /// A settings bisect's answer: the smallest subset found bad.
    Settled(Apart, Settled),
    /// A confirmation's verdict (never `More`).
    Decided(confirm::Said),
}

/// The answer of a settings bisect (`settings::next`'s, with the evidence).
#[derive(Clone, Debug, PartialEq)]
pub struct Settled {
    /// The smallest subset of the differences that is still bad.
    pub minimal: Subset,
    /// Subsets no step could decide on the way (counted as not bad).
    pub unsure: Vec<Subset>,
    pub steps: Vec<Step>,
    /// Boots of the steps (the ends' aside).
    pub boots: usize,
}

impl State {
    pub fn new(metric: &str, candidates: Vec<String>, cap: usize, servers: usize) -> Result<State, String> {
        if candidates.len() < 3 {
            return Err(format!(
                "{} candidate(s) from the good end to the bad end: nothing between them to bisect",
                candidates.len()
            ));
        }
        let state = State::unbooted(metric, candidates, cap, servers, None);
        state.check()?;
        Ok(state)
    }

    /// A confirmation of `experiment`: its candidates the entry as found
    /// ([`confirm::AS_FOUND`]) and changed ([`confirm::CHANGED`]).
    pub fn for_confirm(metric: &str, experiment: Experiment, cap: usize, servers: usize) -> Result<State, String> {
        let sides = vec![confirm::AS_FOUND.into(), confirm::CHANGED.into()];
        let mut state = State::unbooted(metric, sides, cap, servers, None);
        state.confirm = Some(experiment);
        state.check()?;
        Ok(state)
    }

    /// A settings bisect of `differences` (at least one).
    pub fn for_settings(metric: &str, differences: Differences, cap: usize, servers: usize) -> Result<State, String> {
        if differences.settings.is_empty() {
            return Err(
                "the two sets of settings do not differ in any setting a variant may set: nothing to bisect".into()
            );
        }
        let ends = vec![settings::GOOD.into(), settings::BAD.into()];
        let state = State::unbooted(metric, ends, cap, servers, Some(differences));
        state.check()?;
        Ok(state)
    }

    fn unbooted(
        metric: &str,
        candidates: Vec<String>,
        cap: usize,
        servers: usize,
        settings: Option<Differences>,
    ) -> State {
        State {
            schema: SCHEMA.into(),
            metric: metric.into(),
            candidates,
            cap,
            servers: servers.max(1),
            boots: Vec::new(),
            hang_is_bad: false,
            settings,
            titles: Vec::new(),
            confirm: None,
        }
    }

    /// What this state drives, as its progress lines begin: "bisect" or "confirm".
    pub fn kind(&self) -> &'static str {
        if self.confirm.is_some() { "confirm" } else { "bisect" }
    }

    /// The good and the bad end's candidates.
    pub fn ends(&self) -> (usize, usize) {
        if self.settings.is_some() || self.confirm.is_some() { (0, 1) } else { (0, self.candidates.len() - 1) }
    }

    /// What candidate `c` boots: its entry, and its settings for a settings bisect.
    pub fn booting(&self, c: usize) -> (String, Option<String>) {
        if let Some(e) = &self.confirm {
            let set = (self.candidates[c] == confirm::CHANGED).then(|| format!("{}:{}", confirm::CHANGED, e.set));
            return (e.entry.clone(), set);
        }
        match &self.settings {
            Some(d) => (d.entry.clone(), d.set_of(&self.candidates[c])),
            None => (self.candidates[c].clone(), None),
        }
    }

    fn values_of(&self, candidate: usize) -> Vec<Option<f64>> {
        self.boots.iter().filter(|b| b.candidate == candidate).map(|b| b.value).collect()
    }

    /// Replayed from the boots so far.
    pub fn action(&self, metric: &Metric) -> Action {
        if let Some(e) = &self.confirm {
            return self.confirm_action(metric, e);
        }
        let (first, last) = self.ends();
        let (good, bad) = (self.values_of(first), self.values_of(last));
        let (ends, apart) = match search::ends_next(metric.worse(), &good, &bad) {
            // With two servers or more, the ends are booted side by side
            // while they have as many boots each: what booting them one
            // after the other would ask for next anyway.
            EndsNext::Boot(_) if self.servers >= 2 && good.len() == bad.len() => return Action::Boot(vec![0, last]),
            EndsNext::Boot(End::Good) => return Action::Boot(vec![0]),
            EndsNext::Boot(End::Bad) => return Action::Boot(vec![last]),
            EndsNext::Refused(why) => return Action::Refused(why),
            EndsNext::Ready(ends, apart) => (ends, apart),
        };
        let model = Model::new(&ends);
        let worst_bad = match metric.worse() {
            Worse::Larger => ends.bad.iter().copied().fold(f64::MIN, f64::max),
            Worse::Smaller => ends.bad.iter().copied().fold(f64::MAX, f64::min),
        };
        let mut boots = search::Boots::new();
        for b in self.boots.iter().filter(|b| b.candidate != first && b.candidate != last) {
            let value = if self.hang_is_bad && b.hung { Some(worst_bad) } else { b.value };
            boots.entry(b.candidate).or_default().push(value);
        }
        if self.settings.is_some() {
            return self.settings_action(&model, apart, &boots);
        }
        match search::next(self.candidates.len(), &model, self.cap, self.servers, &boots) {
            // Fewer candidates left than servers: the idle ones boot them too (a step
            // decided by the first of its boots gets at most servers − 1 more).
            Next::Boot(candidates) => Action::Boot(candidates.iter().copied().cycle().take(self.servers).collect()),
            Next::Done(answer) => Action::Done(apart, answer),
        }
    }

    /// A confirmation replayed from its boots: both sides booted alike
    /// (side by side with two servers or more, else the side with fewer
    /// boots) until `confirm::decide` says.
    fn confirm_action(&self, metric: &Metric, e: &Experiment) -> Action {
        let (found, changed) = (self.values_of(0), self.values_of(1));
        let failed = found.iter().chain(&changed).filter(|v| v.is_none()).count();
        if failed > confirm::FAILURES_AT_MOST {
            let last = self.boots.iter().rev().find(|b| b.value.is_none());
            let why = last.and_then(|b| b.why.as_deref()).unwrap_or("no value");
            let id = last.map_or("?", |b| b.id.as_str());
            return Action::Refused(format!(
                "{failed} boots gave no value (the last, {id}: {why}); their logs and records are in this \
                 confirmation's directory. Fix what they say, then move the directory away to start again"
            ));
        }
        let ok = |v: &[Option<f64>]| -> Vec<f64> { v.iter().flatten().copied().collect() };
        let expected = confirm::Expected { worse: metric.worse(), removes: e.removes, toward: e.toward };
        match confirm::decide(&expected, &ok(&found), &ok(&changed), self.cap) {
            confirm::Said::More if self.servers >= 2 && found.len() == changed.len() => Action::Boot(vec![0, 1]),
            confirm::Said::More => Action::Boot(vec![usize::from(changed.len() < found.len())]),
            said => Action::Decided(said),
        }
    }

    /// ddmin replayed from the subsets' boots: the next subset to add or
    /// boot (on every server at once: one step at a time), or the answer.
    fn settings_action(&self, model: &Model, apart: Apart, boots: &search::Boots) -> Action {
        let n = self.settings.as_ref().map_or(0, |d| d.settings.len());
        let mut outcomes: BTreeMap<Subset, Outcome> = BTreeMap::new();
        let mut steps = Vec::new();
        loop {
            match settings::next(n, &outcomes) {
                settings::Next::Measure(subset) => {
                    let name = settings::candidate_name(&subset);
                    let Some(c) = self.candidates.iter().position(|x| *x == name) else { return Action::Add(name) };
                    let so_far = boots.get(&c).map(Vec::as_slice).unwrap_or_default();
                    let Some((outcome, values, llr)) = search::judged(model, self.cap, so_far) else {
                        return Action::Boot(vec![c; self.servers]);
                    };
                    outcomes.insert(subset, outcome);
                    steps.push(Step { candidate: c, values, llr, outcome });
                }
                settings::Next::Done { minimal, unsure } => {
                    let spent = boots.values().map(Vec::len).sum();
                    return Action::Settled(apart, Settled { minimal, unsure, steps, boots: spent });
                }
            }
        }
    }

    /// Servers whose machines differ (by their records): a step's boots
    /// spread over them would measure the machines as much as the
    /// candidates. Compared by the boots of one candidate (one kernel: a
    /// kernel's own view, its MemTotal, differs between kernels on one
    /// machine); the two descriptions, when they differ.
    pub fn hardware_differs(&self) -> Option<[(usize, String); 2]> {
        let mut seen: BTreeMap<(usize, usize), &str> = BTreeMap::new();
        for b in &self.boots {
            let Some(h) = &b.hardware else { continue };
            seen.entry((b.candidate, b.server)).or_insert(h);
        }
        seen.iter().find_map(|(&(candidate, server), &h)| {
            let (&(_, other), &o) = seen.range((candidate, server + 1)..(candidate + 1, 0)).find(|(_, o)| **o != h)?;
            Some([(server, h.to_string()), (other, o.to_string())])
        })
    }

    /// The next boot's number: one past every boot so far, whatever order
    /// the boots of a round ended in.
    fn next_boot_number(&self) -> usize {
        let number = |b: &Booted| b.id.rsplit_once("#b").and_then(|(_, n)| n.parse::<usize>().ok());
        self.boots.iter().filter_map(number).max().map_or(1, |n| n + 1)
    }

    /// The state in `dir`, if a bisect has run there.
    pub fn load(dir: &Path) -> Result<Option<State>, String> {
        let path = dir.join(FILE);
        // At most MAX_BOOTS boots of a few hundred bytes each: a larger file is no state of ours.
        if let Ok(m) = std::fs::metadata(&path)
            && m.len() > 64 << 20
        {
            return Err(format!(
                "{}: {} bytes: not a bisect state (at most 64 MiB); move it away to start again",
                path.display(),
                m.len()
            ));
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        State::from_json(&text).map(Some).map_err(|e| format!("{}: {e}; move it away to start again", path.display()))
    }

    /// A state file's text, checked (the fuzz target's way in: any text
    /// gives a state or an error, never a panic).
    pub fn from_json(text: &str) -> Result<State, String> {
        let state: State = serde_json::from_str(text).map_err(|e| format!("not a bisect state ({e})"))?;
        if state.schema != SCHEMA {
            return Err(format!("schema {:?}, this bootmark reads {SCHEMA}", state.schema));
        }
        state.check()?;
        Ok(state)
    }

    /// What a state written by a bisect always holds (a hand-edited or
    /// damaged one may not): two ends at least, a cap and servers in range,
    /// every boot of a candidate and server there are, its number in range.
    fn check(&self) -> Result<(), String> {
        if self.candidates.len() < 2 {
            return Err(format!("{} candidates: a bisect has two ends at least", self.candidates.len()));
        }
        if self.candidates.len() > MAX_CANDIDATES {
            return Err(format!("{} candidates: at most {MAX_CANDIDATES}", self.candidates.len()));
        }
        if self.settings.as_ref().is_some_and(|d| d.settings.is_empty()) {
            return Err("a settings bisect with no differences".into());
        }
        if !(2..=64).contains(&self.cap) || !(1..=MAX_SERVERS).contains(&self.servers) {
            return Err(format!(
                "cap {} (2 to 64) or servers {} (1 to {MAX_SERVERS}) out of range",
                self.cap, self.servers
            ));
        }
        if !self.titles.is_empty() && self.titles.len() != self.candidates.len() {
            return Err(format!("{} titles for {} candidates", self.titles.len(), self.candidates.len()));
        }
        for b in &self.boots {
            let number = b.id.rsplit_once("#b").and_then(|(_, n)| n.parse::<usize>().ok());
            if b.candidate >= self.candidates.len() || b.server >= self.servers || number.is_none_or(|n| n > MAX_BOOTS)
            {
                return Err(format!(
                    "boot {:?} names candidate {}, server {} or a number past {MAX_BOOTS}",
                    b.id, b.candidate, b.server
                ));
            }
            // A metric's value is a time, a size or a rate of one boot.
            if let Some(v) = b.value
                && !(v.is_finite() && v.abs() < 1e12)
            {
                return Err(format!("boot {:?} has the value {v:e}, no figure of a boot", b.id));
            }
        }
        Ok(())
    }

    /// Is `asked` (the bisect as the command line gives it now) the one this state belongs to?
    pub fn check_same(&self, asked: &State, dir: &Path) -> Result<(), String> {
        let what = |s: &State| (s.metric.clone(), s.settings.clone(), s.confirm.clone(), s.hang_is_bad);
        let ladder_differs = self.settings.is_none() && self.candidates != asked.candidates;
        if let (Some(mine), Some(theirs)) = (&self.confirm, &asked.confirm)
            && (mine != theirs || self.metric != asked.metric)
        {
            return Err(format!(
                "{} holds another confirmation ({} by {} with {}{}{}): move it away, or give --dir, to start this one",
                dir.display(),
                mine.entry,
                self.metric,
                mine.set,
                mine.toward.map_or(String::new(), |t| format!(", toward {t}")),
                if mine.removes { "" } else { ", --gives" }
            ));
        }
        if what(self) != what(asked) || ladder_differs {
            return Err(format!(
                "{} holds another bisect (metric {}{}, {} candidates from {} to {}): move it away to start this one",
                dir.display(),
                self.metric,
                if self.hang_is_bad { ", hangs bad" } else { "" },
                self.candidates.len(),
                self.candidates.first().map_or("?", String::as_str),
                self.candidates.last().map_or("?", String::as_str)
            ));
        }
        if self.servers != asked.servers {
            // Its boots name their servers by number: another set would mix them up.
            return Err(format!(
                "{} holds a bisect run on {} server(s), asked now with {}: give the same servers to resume it, \
                 or move it away to start again",
                dir.display(),
                self.servers,
                asked.servers
            ));
        }
        Ok(())
    }

    /// Write atomically into `dir`.
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).expect("a state serialises");
        crate::workstation::output::replace_synced(dir, FILE, text.as_bytes())
    }

    /// Boots per candidate, for `bisect status`.
    pub fn tally(&self) -> BTreeMap<usize, (usize, usize)> {
        let mut out: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for b in &self.boots {
            let e = out.entry(b.candidate).or_default();
            if b.value.is_some() { e.0 += 1 } else { e.1 += 1 }
        }
        out
    }
}

/// What one boot measured: its run id and the metric's value, or why none.
pub struct Measured {
    pub run_id: Option<String>,
    pub value: Option<f64>,
    pub why: Option<String>,
    /// The machine as the boot's records describe it (CPU, memory, board,
    /// the target disk): what must agree across a bisect's servers.
    pub hardware: Option<String>,
    /// No run record by the boot's deadline.
    pub hung: bool,
}

/// Boots a candidate once: a lab's server, QEMU, or a simulation. Shared
/// by the threads of a round, one per server.
pub trait Lab: Sync {
    /// One cold boot of a candidate — `entry`, with `set` its settings for
    /// this boot in a settings bisect — on server `server`, its files named
    /// `id`, measured by the metric; None when Ctrl-C stopped it (it counts
    /// for nothing), Err when the lab itself failed (a BMC that does not
    /// answer): the bisect stops, its state whole.
    fn boot(&self, server: usize, booting: (&str, Option<&str>), id: &str) -> Result<Option<Measured>, String>;
}

/// Drive the bisect in `dir` until it is done, refused, or `stop()` says
/// to stop between two rounds (or Ctrl-C ends a boot); the state saved
/// after every boot. A round boots its candidates side by side, one per
/// server; which server boots which turns from round to round, so no
/// candidate (no end) is measured on one server only.
pub fn drive(
    state: &mut State,
    metric: &Metric,
    dir: &Path,
    lab: &dyn Lab,
    stop: &dyn Fn() -> bool,
    progress: &(dyn Fn(&State, &Booted) + Sync),
) -> Result<Action, String> {
    loop {
        if let Some(differ) = state.hardware_differs() {
            let list: Vec<String> = differ.iter().map(|(s, h)| format!("server {}: {h}", s + 1)).collect();
            return Ok(Action::Refused(format!(
                "the servers are not alike ({}): a step's boots spread over them would compare the machines;                  bisect on one server (--server NAME), or on servers whose hardware agrees",
                list.join("; ")
            )));
        }
        let action = state.action(metric);
        if let Action::Add(name) = action {
            state.candidates.push(name);
            state.save(dir)?;
            continue;
        }
        let Action::Boot(candidates) = &action else { return Ok(action) };
        if stop() {
            return Ok(action);
        }
        let first = state.next_boot_number();
        let turn = state.boots.len() / state.servers;
        let jobs: Vec<(usize, usize, String)> = candidates
            .iter()
            .enumerate()
            .map(|(j, &c)| {
                let server = (j + turn) % state.servers;
                (server, c, format!("{}#b{}", state.candidates[c], first + j))
            })
            .collect();
        let names: Vec<(String, Option<String>)> = jobs.iter().map(|(_, c, _)| state.booting(*c)).collect();
        // Each boot saved as it ends, while the round's others still run.
        let shared = std::sync::Mutex::new((&mut *state, false, None::<String>));
        std::thread::scope(|scope| {
            for ((server, candidate, id), name) in jobs.into_iter().zip(&names) {
                let shared = &shared;
                scope.spawn(move || {
                    let result = lab.boot(server, (&name.0, name.1.as_deref()), &id);
                    let Ok(mut guard) = shared.lock() else { return };
                    let (state, interrupted, failed) = &mut *guard;
                    match result {
                        Ok(Some(Measured { run_id, value, why, hardware, hung })) => {
                            let booted = Booted { candidate, id, server, run_id, value, why, hardware, hung };
                            state.boots.push(booted.clone());
                            if let Err(e) = state.save(dir) {
                                failed.get_or_insert(e);
                            }
                            progress(state, &booted);
                        }
                        Ok(None) => *interrupted = true,
                        Err(e) => {
                            failed.get_or_insert(e);
                        }
                    }
                });
            }
        });
        let (_, interrupted, failed) =
            shared.into_inner().map_err(|_| "a boot's thread panicked while saving the bisect".to_string())?;
        if let Some(e) = failed {
            return Err(e);
        }
        if interrupted {
            return Ok(state.action(metric));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A ladder of 12 kernels whose 8th (index 7) made seqwrite 20 % slower.
    struct Simulated {
        seed: std::sync::Mutex<u64>,
        boots: std::sync::atomic::AtomicUsize,
        /// Each server's machine, as its records would describe it.
        hardware: Vec<&'static str>,
        /// Candidates from this one on, short of the bad end, hang instead.
        hang_from: Option<usize>,
    }

    impl Simulated {
        fn new(seed: u64, hardware: Vec<&'static str>) -> Simulated {
            Simulated { seed: std::sync::Mutex::new(seed), boots: 0.into(), hardware, hang_from: None }
        }

        fn boots(&self) -> usize {
            self.boots.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    impl Lab for Simulated {
        fn boot(
            &self,
            server: usize,
            (candidate, _): (&str, Option<&str>),
            _id: &str,
        ) -> Result<Option<Measured>, String> {
            let n = self.boots.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let mut seed = self.seed.lock().unwrap();
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            let jitter = (*seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let k: usize = candidate.trim_start_matches('k').parse().unwrap();
            let value = if k >= 7 { 16.0 } else { 13.3 } * (1.0 + 0.06 * jitter);
            let hung = self.hang_from.is_some_and(|from| k >= from && k < 11);
            Ok(Some(Measured {
                run_id: (!hung).then(|| format!("run-{n}")),
                value: (!hung).then_some(value),
                why: hung.then(|| "no run record by the deadline".to_string()),
                hardware: Some(self.hardware[server].to_string()),
                hung,
            }))
        }
    }

    /// An empty directory of this test's own.
    fn fresh_dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("bootmark-bisect-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The bisect driven without a stop, quietly.
    fn to_the_end(state: &mut State, metric: &Metric, dir: &Path, lab: &Simulated) -> Action {
        drive(state, metric, dir, lab, &|| false, &|_, _| {}).unwrap()
    }

    fn ladder() -> Vec<String> {
        (0..12).map(|k| format!("k{k}")).collect()
    }

    /// Stopped after every few boots and resumed from the file each time,
    /// the bisect boots nothing twice and reaches the same answer as one
    /// run straight through.
    #[test]
    fn a_bisect_stopped_and_resumed_finds_what_one_run_finds() {
        let metric = Metric::parse("seqwrite.real_s").unwrap();
        let dir = fresh_dir("resume");
        let straight = {
            let mut state = State::new("seqwrite.real_s", ladder(), 12, 1).unwrap();
            let lab = Simulated::new(7, vec!["dl140"]);
            let action = to_the_end(&mut state, &metric, &dir, &lab);
            (action, lab.boots())
        };
        let Action::Done(_, answer) = &straight.0 else { panic!("{:?}", straight.0) };
        assert_eq!(answer.found(), Some(7));
        std::fs::remove_file(dir.join(FILE)).unwrap();
        let lab = Simulated::new(7, vec!["dl140"]);
        let asked = State::new("seqwrite.real_s", ladder(), 12, 1).unwrap();
        let mut interruptions = 0;
        let resumed = loop {
            let mut state = match State::load(&dir).unwrap() {
                Some(s) => {
                    s.check_same(&asked, &dir).unwrap();
                    s
                }
                None => asked.clone(),
            };
            let left = Cell::new(3);
            let stop = || {
                left.set(left.get() - 1);
                left.get() < 0
            };
            match drive(&mut state, &metric, &dir, &lab, &stop, &|_, _| {}).unwrap() {
                Action::Boot(_) => interruptions += 1,
                done => break done,
            }
        };
        assert_eq!(resumed, straight.0, "the same answer");
        assert_eq!(lab.boots(), straight.1, "nothing booted twice");
        assert!(interruptions >= 5, "{interruptions}");
        let other = State::new("seqwrite.real_s", (0..9).map(|k| format!("k{k}")).collect(), 12, 1).unwrap();
        assert!(
            State::load(&dir).unwrap().unwrap().check_same(&other, &dir).unwrap_err().contains("holds another bisect")
        );
        let two = State::new("seqwrite.real_s", ladder(), 12, 2).unwrap();
        let err = State::load(&dir).unwrap().unwrap().check_same(&two, &dir).unwrap_err();
        assert!(err.contains("run on 1 server(s), asked now with 2"), "{err}");
        // Hand-edited or damaged: refused on load, saying what is wrong (never a panic, never a wrapped boot number).
        let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join(FILE)).unwrap()).unwrap();
        let damaged = |edit: &dyn Fn(&mut serde_json::Value), said: &str| {
            let mut v = saved.clone();
            edit(&mut v);
            std::fs::write(dir.join(FILE), v.to_string()).unwrap();
            let e = State::load(&dir).unwrap_err();
            assert!(e.contains(said) && e.contains("move it away"), "{said}: {e}");
        };
        damaged(&|v| v["candidates"] = serde_json::json!([]), "0 candidates");
        damaged(&|v| v["boots"][0]["id"] = "a/k3#b18446744073709551615".into(), "a number past 100000");
        damaged(&|v| v["boots"][0]["candidate"] = 99.into(), "names candidate 99");
        damaged(&|v| v["cap"] = 0.into(), "cap 0");
        damaged(&|v| v["boots"][0]["value"] = 1.7e308.into(), "has the value 1.7e308");
        damaged(&|v| v["servers"] = 1000.into(), "servers 1000 (1 to 64)");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The fuzz target's seeds are states that load, so it starts from real ones.
    #[test]
    fn the_fuzz_seeds_are_states_that_load() {
        for seed in [
            include_str!("../../../fuzz/seeds/bisect_state/ladder.json"),
            include_str!("../../../fuzz/seeds/bisect_state/git.json"),
        ] {
            let state = State::from_json(seed).unwrap();
            assert!(state.candidates.len() >= 3);
        }
    }

    /// Two alike servers: the ends booted side by side, each end on both
    /// servers, the same candidate found in fewer rounds; two servers
    /// whose records describe different machines: refused after the first
    /// round, naming both.
    #[test]
    fn two_servers_share_the_rounds_only_when_their_machines_agree() {
        let metric = Metric::parse("seqwrite.real_s").unwrap();
        let dir = fresh_dir("two");
        let mut state = State::new("seqwrite.real_s", ladder(), 12, 2).unwrap();
        let lab = Simulated::new(7, vec!["dl140", "dl140"]);
        let Action::Done(_, answer) = to_the_end(&mut state, &metric, &dir, &lab) else { panic!("not done") };
        assert_eq!(answer.found(), Some(7));
        for end in [0, 11] {
            let servers: std::collections::BTreeSet<usize> =
                state.boots.iter().filter(|b| b.candidate == end).map(|b| b.server).collect();
            assert_eq!(servers.len(), 2, "end {end} booted on both servers");
        }
        let first_two: Vec<usize> = state.boots[..2].iter().map(|b| b.candidate).collect();
        assert!(first_two.contains(&0) && first_two.contains(&11), "the ends side by side: {first_two:?}");
        let mut ids: Vec<&str> = state.boots.iter().map(|b| b.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), state.boots.len(), "every boot has files of its own");

        std::fs::remove_file(dir.join(FILE)).unwrap();
        let mut state = State::new("seqwrite.real_s", ladder(), 12, 2).unwrap();
        let lab = Simulated::new(7, vec!["dl140", "dl380 g9"]);
        let Action::Refused(why) = to_the_end(&mut state, &metric, &dir, &lab) else { panic!("two machines accepted") };
        assert_eq!(state.boots.len(), 4, "refused once both have booted one end");
        assert!(why.contains("server 1: dl140; server 2: dl380 g9"), "{why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The candidates from the 8th on, short of the bad end, hang: skipped,
    /// they leave the answer a range; called bad, the 8th is found.
    #[test]
    fn a_hang_is_a_skip_unless_the_user_calls_it_bad() {
        let metric = Metric::parse("seqwrite.real_s").unwrap();
        let dir = fresh_dir("hang");
        let mut answers = Vec::new();
        for hang_is_bad in [false, true] {
            let mut state = State::new("seqwrite.real_s", ladder(), 12, 1).unwrap();
            state.hang_is_bad = hang_is_bad;
            let lab = Simulated { hang_from: Some(7), ..Simulated::new(7, vec!["dl140"]) };
            let Action::Done(_, answer) = to_the_end(&mut state, &metric, &dir, &lab) else { panic!("not done") };
            answers.push(answer);
            std::fs::remove_file(dir.join(FILE)).unwrap();
        }
        assert_eq!(answers[0].found(), None);
        assert_eq!((answers[0].last_good, answers[0].first_bad), (6, 11), "{:?}", answers[0]);
        assert_eq!(answers[1].found(), Some(7), "{:?}", answers[1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_ladder_needs_a_candidate_between_its_ends() {
        let err = State::new("seqwrite.real_s", vec!["a".into(), "b".into()], 12, 1).unwrap_err();
        assert!(err.contains("nothing between them"), "{err}");
    }

    /// A server whose read wait is long when its boot's settings
    /// (`bootmark.set=`) hold the large request size, whatever else they set.
    struct SettingsLab {
        seed: std::sync::Mutex<u64>,
        sets: std::sync::Mutex<Vec<String>>,
    }

    impl Lab for SettingsLab {
        fn boot(&self, _: usize, (entry, set): (&str, Option<&str>), _: &str) -> Result<Option<Measured>, String> {
            assert_eq!(entry, "k2", "every step boots the one entry");
            let set = set.expect("a settings bisect's boot has its settings").to_string();
            let mut seed = self.seed.lock().unwrap();
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let jitter = (*seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let slow = set.split([',', ':']).any(|kv| kv == "queue.max_sectors_kb=1280");
            let value = if slow { 54.0 } else { 15.0 } * (1.0 + 0.3 * jitter);
            self.sets.lock().unwrap().push(set);
            let (run_id, hardware) = (Some("run".to_string()), Some("dl140".to_string()));
            Ok(Some(Measured { run_id, value: Some(value), why: None, hardware, hung: false }))
        }
    }

    /// Of six differing settings the one that makes the reads wait is found,
    /// every boot setting all six one way or the other; resumed from the
    /// file after every round, nothing is booted twice.
    #[test]
    fn a_settings_bisect_finds_the_one_setting_that_matters() {
        let metric = Metric::parse("seqwrite.read_p50_ms").unwrap();
        let dir = fresh_dir("settings");
        let keys = [
            ("queue.max_sectors_kb", "128", "1280"),
            ("queue.nr_requests", "128", "64"),
            ("queue.read_ahead_kb", "128", "512"),
            ("vm.dirty_ratio", "20", "40"),
            ("vm.dirty_background_ratio", "10", "5"),
            ("vm.swappiness", "60", "30"),
        ];
        let settings = keys
            .iter()
            .map(|(k, g, b)| settings::Difference { key: k.to_string(), good: g.to_string(), bad: b.to_string() })
            .collect();
        let differences = Differences { entry: "k2".into(), settings };
        let asked = State::for_settings("seqwrite.read_p50_ms", differences, 12, 2).unwrap();
        let lab = SettingsLab { seed: 5.into(), sets: Vec::new().into() };
        let settled = loop {
            let mut state = State::load(&dir).unwrap().unwrap_or_else(|| asked.clone());
            state.check_same(&asked, &dir).unwrap();
            let once = Cell::new(false);
            let stop = || once.replace(true);
            match drive(&mut state, &metric, &dir, &lab, &stop, &|_, _| {}).unwrap() {
                Action::Boot(_) | Action::Add(_) => continue,
                Action::Settled(_, settled) => break (settled, state),
                other => panic!("{other:?}"),
            }
        };
        let (settled, state) = settled;
        assert_eq!((settled.minimal.clone(), settled.unsure.clone()), (vec![0], vec![]), "{settled:?}");
        let sets = lab.sets.lock().unwrap();
        assert_eq!(sets.len(), state.boots.len(), "nothing booted twice");
        assert!(sets.iter().all(|s| s.split(',').count() == 6), "every boot sets all six");
        assert!(sets.len() <= 40, "{} boots", sets.len());
        // A set that differs in nothing is refused.
        let none = Differences { entry: "k2".into(), settings: vec![] };
        assert!(State::for_settings("x.y", none, 12, 1).unwrap_err().contains("do not differ"));
    }

    /// A confirmation's lab: the entry's metric about `found`, and `factor`
    /// times that when the boot sets what the experiment changes.
    struct Planted {
        factor: f64,
        seed: std::sync::Mutex<u64>,
        sets: std::sync::Mutex<Vec<Option<String>>>,
    }

    impl Lab for Planted {
        fn boot(
            &self,
            _server: usize,
            (entry, set): (&str, Option<&str>),
            id: &str,
        ) -> Result<Option<Measured>, String> {
            assert_eq!(entry, "k2");
            self.sets.lock().unwrap().push(set.map(str::to_string));
            let mut s = self.seed.lock().unwrap();
            *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let noise = 1.0 + 0.1 * (((*s >> 33) as f64 / (1u64 << 31) as f64) - 0.5);
            let value = 49.0 * noise * if set.is_some() { self.factor } else { 1.0 };
            let run_id = Some(format!("run-{id}"));
            Ok(Some(Measured { run_id, value: Some(value), why: None, hardware: Some("dl140".into()), hung: false }))
        }
    }

    /// `bootmark confirm`'s loop on two servers: a planted cause (the
    /// setting takes the metric from 49 to 15) is confirmed at the first
    /// look, both sides booted side by side, the changed side with the
    /// setting on its command line; a planted non-cause is refuted; the
    /// state resumes to the same verdict.
    #[test]
    fn a_confirmation_boots_both_sides_and_decides() {
        let metric = Metric::parse("seqwrite.probe_p99_ms").unwrap();
        let experiment = Experiment {
            entry: "k2".into(),
            set: "queue.max_sectors_kb=128".into(),
            removes: true,
            toward: Some(15.0),
        };
        for (factor, name) in [(0.3, "cause"), (1.0, "non-cause")] {
            let dir = fresh_dir(&format!("confirm-{name}"));
            let mut state = State::for_confirm("seqwrite.probe_p99_ms", experiment.clone(), 8, 2).unwrap();
            let lab = Planted { factor, seed: std::sync::Mutex::new(3), sets: Default::default() };
            let action = drive(&mut state, &metric, &dir, &lab, &|| false, &|_, _| {}).unwrap();
            let sets = lab.sets.lock().unwrap().clone();
            let changed = sets.iter().filter(|s| s.as_deref() == Some("changed:queue.max_sectors_kb=128")).count();
            assert_eq!((sets.len(), changed), (10, 5), "{name}: five boots a side, {sets:?}");
            match (name, &action) {
                ("cause", Action::Decided(confirm::Said::Confirmed(e))) => assert!(e.share > 0.9, "{e:?}"),
                ("non-cause", Action::Decided(confirm::Said::Refuted(_))) => {}
                _ => panic!("{name}: {action:?}"),
            }
            let resumed = State::load(&dir).unwrap().unwrap();
            assert_eq!(resumed.action(&metric), action, "{name}: replayed from the saved boots");
        }
    }

    /// A confirmation's directory holds that experiment: another setting,
    /// entry, metric or aim is refused by name, not mixed in.
    #[test]
    fn another_confirmation_is_refused_by_what_differs() {
        let e =
            Experiment { entry: "k2".into(), set: "queue.max_sectors_kb=128".into(), removes: true, toward: Some(4.0) };
        let mine = State::for_confirm("seqwrite.read_p50_ms", e.clone(), 8, 2).unwrap();
        let dir = Path::new("/tmp/confirm-x");
        assert_eq!(mine.check_same(&mine.clone(), dir), Ok(()));
        let other = Experiment { set: "vm.swappiness=10".into(), ..e };
        let asked = State::for_confirm("seqwrite.read_p50_ms", other, 8, 2).unwrap();
        let err = mine.check_same(&asked, dir).unwrap_err();
        assert!(
            err.contains(
                "holds another confirmation (k2 by seqwrite.read_p50_ms with queue.max_sectors_kb=128, toward 4)"
            ),
            "{err}"
        );
    }
}
