//! A bisect over a ladder of candidates (an image's entries, commits), as
//! it is kept on disk and driven: the state (`STATE_DIR/bisect.json`) holds
//! what is bisected and every boot so far, and is written after every boot
//! (atomically, as the lab's state is), so that a bisect stopped at any
//! moment — Ctrl-C, a crashed workstation — resumes where it was: the ends
//! and the search are replayed from the boots (`search::ends_next`,
//! `search::next`), nothing is booted twice.
//!
//! The lab that boots a candidate is a trait (`Lab`): `bootmark lab`'s
//! servers through their BMCs, QEMU, or a simulation in the tests.

use super::metric::Metric;
use super::search::{self, Answer, End, EndsNext, Next};
use super::step::{Apart, Model};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA: &str = "bootmark.bisect-state/1";
pub const FILE: &str = "bisect.json";

/// One boot: what it booted, the boot's run id (its records) and the metric's value, or why none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Booted {
    pub candidate: usize,
    pub run_id: Option<String>,
    pub value: Option<f64>,
    /// Why there is no value (a boot that failed, hung or wrote no such record).
    pub why: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: String,
    pub metric: String,
    /// The ladder, the good end first and the bad end last.
    pub candidates: Vec<String>,
    /// The most boots a step gets.
    pub cap: usize,
    /// Candidates tried at once (one per server).
    pub servers: usize,
    /// Every boot, in the order they ended.
    pub boots: Vec<Booted>,
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
}

impl State {
    pub fn new(metric: &str, candidates: Vec<String>, cap: usize, servers: usize) -> Result<State, String> {
        if candidates.len() < 3 {
            return Err(format!(
                "{} candidate(s) from the good end to the bad end: nothing between them to bisect",
                candidates.len()
            ));
        }
        Ok(State {
            schema: SCHEMA.into(),
            metric: metric.into(),
            candidates,
            cap,
            servers: servers.max(1),
            boots: Vec::new(),
        })
    }

    fn values_of(&self, candidate: usize) -> Vec<Option<f64>> {
        self.boots.iter().filter(|b| b.candidate == candidate).map(|b| b.value).collect()
    }

    /// Replayed from the boots so far.
    pub fn action(&self, metric: &Metric) -> Action {
        let last = self.candidates.len() - 1;
        let (good, bad) = (self.values_of(0), self.values_of(last));
        let (ends, apart) = match search::ends_next(metric.worse(), &good, &bad) {
            EndsNext::Boot(End::Good) => return Action::Boot(vec![0]),
            EndsNext::Boot(End::Bad) => return Action::Boot(vec![last]),
            EndsNext::Refused(why) => return Action::Refused(why),
            EndsNext::Ready(ends, apart) => (ends, apart),
        };
        let model = Model::new(&ends);
        let mut boots = search::Boots::new();
        for b in self.boots.iter().filter(|b| b.candidate != 0 && b.candidate != last) {
            boots.entry(b.candidate).or_default().push(b.value);
        }
        match search::next(self.candidates.len(), &model, self.cap, self.servers, &boots) {
            Next::Boot(candidates) => Action::Boot(candidates),
            Next::Done(answer) => Action::Done(apart, answer),
        }
    }

    /// The state in `dir`, if a bisect has run there.
    pub fn load(dir: &Path) -> Result<Option<State>, String> {
        let path = dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let state: State = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a bisect state ({e}); move it away to start again", path.display()))?;
        if state.schema != SCHEMA {
            return Err(format!("{}: schema {:?}, this bootmark reads {SCHEMA}", path.display(), state.schema));
        }
        Ok(Some(state))
    }

    /// Is `asked` (the bisect as the command line gives it now) the one this state belongs to?
    pub fn check_same(&self, asked: &State, dir: &Path) -> Result<(), String> {
        if (&self.metric, &self.candidates) != (&asked.metric, &asked.candidates) {
            return Err(format!(
                "{} holds another bisect (metric {}, {} candidates from {} to {}): move it away to start this one",
                dir.display(),
                self.metric,
                self.candidates.len(),
                self.candidates.first().map_or("?", String::as_str),
                self.candidates.last().map_or("?", String::as_str)
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
}

/// Boots a candidate once: a lab's server, QEMU, or a simulation.
pub trait Lab {
    /// One cold boot of `candidate` (its name in the ladder) measured by
    /// the metric; `server` is which of the bisect's servers boots it.
    fn boot(&mut self, server: usize, candidate: &str) -> Measured;
}

/// Drive the bisect in `dir` until it is done, refused, or `stop()` says
/// to stop between two boots; the state saved after every boot.
pub fn drive(
    state: &mut State,
    metric: &Metric,
    dir: &Path,
    lab: &mut dyn Lab,
    stop: &dyn Fn() -> bool,
) -> Result<Action, String> {
    loop {
        let action = state.action(metric);
        let Action::Boot(candidates) = &action else { return Ok(action) };
        for (server, &c) in candidates.iter().enumerate() {
            if stop() {
                return Ok(action);
            }
            let Measured { run_id, value, why } = lab.boot(server, &state.candidates[c]);
            state.boots.push(Booted { candidate: c, run_id, value, why });
            state.save(dir)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A ladder of 12 kernels whose 8th (index 7) made seqwrite 20 % slower.
    struct Simulated {
        seed: u64,
        boots: usize,
    }

    impl Lab for Simulated {
        fn boot(&mut self, _server: usize, candidate: &str) -> Measured {
            self.boots += 1;
            self.seed ^= self.seed << 13;
            self.seed ^= self.seed >> 7;
            self.seed ^= self.seed << 17;
            let jitter = (self.seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let k: usize = candidate.trim_start_matches('k').parse().unwrap();
            let value = if k >= 7 { 16.0 } else { 13.3 } * (1.0 + 0.06 * jitter);
            Measured { run_id: Some(format!("run-{}", self.boots)), value: Some(value), why: None }
        }
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
        let dir = std::env::temp_dir().join(format!("bootmark-bisect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let straight = {
            let mut state = State::new("seqwrite.real_s", ladder(), 12, 1).unwrap();
            let mut lab = Simulated { seed: 7, boots: 0 };
            let action = drive(&mut state, &metric, &dir, &mut lab, &|| false).unwrap();
            (action, lab.boots)
        };
        let Action::Done(_, answer) = &straight.0 else { panic!("{:?}", straight.0) };
        assert_eq!(answer.found(), Some(7));
        std::fs::remove_file(dir.join(FILE)).unwrap();
        let mut lab = Simulated { seed: 7, boots: 0 };
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
            match drive(&mut state, &metric, &dir, &mut lab, &stop).unwrap() {
                Action::Boot(_) => interruptions += 1,
                done => break done,
            }
        };
        assert_eq!(resumed, straight.0, "the same answer");
        assert_eq!(lab.boots, straight.1, "nothing booted twice");
        assert!(interruptions >= 5, "{interruptions}");
        let other = State::new("seqwrite.real_s", (0..9).map(|k| format!("k{k}")).collect(), 12, 1).unwrap();
        assert!(
            State::load(&dir).unwrap().unwrap().check_same(&other, &dir).unwrap_err().contains("holds another bisect")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_ladder_needs_a_candidate_between_its_ends() {
        let err = State::new("seqwrite.real_s", vec!["a".into(), "b".into()], 12, 1).unwrap_err();
        assert!(err.contains("nothing between them"), "{err}");
    }
}
