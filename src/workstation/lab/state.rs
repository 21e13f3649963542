//! The lab's state file (`STATE_DIR/state.json`): every step, and for each
//! one done its outcome, console log and records. Written after every step
//! to a temporary file beside it, synced and renamed, so a workstation
//! killed at any moment leaves the last whole state: `bootmark lab run`
//! again resumes at the first step without an outcome, and never repeats
//! one that has one. It holds no credential (the lab file says where they
//! are; this file only what happened).

use super::steps::Step;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "bootmark.lab-state/1";
pub const FILE: &str = "state.json";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: String,
    /// SHA-256 of the image's manifest.json: a lab resumed with another
    /// image would mix two images' results under one name.
    pub manifest_sha256: String,
    /// The order's seed (random order), kept so a resumed lab keeps its order.
    pub seed: u64,
    pub steps: Vec<StepState>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepState {
    pub id: String,
    pub server: String,
    pub entry: String,
    pub repetition: u32,
    pub deadline_s: u64,
    /// None until the step has ended.
    pub outcome: Option<Outcome>,
}

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its run record came and every record in it is ok.
    Ok,
    /// Its run record came, and it or a record reports a failure.
    Failures,
    /// No run record by the deadline (or the console ended first): the
    /// server was powered off and the lab went on.
    Failed,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    pub status: Status,
    /// Why, for a failed step (what the console showed last).
    pub why: Option<String>,
    /// Seconds since the epoch when the step powered the server on.
    pub started_unix: u64,
    pub seconds: f64,
    /// The raw console of the step, relative to the state directory.
    pub log: String,
    /// The step's verified records (JSONL), relative to the state directory.
    pub records: String,
    /// The run ids its run records carry.
    pub run_ids: Vec<String>,
}

impl State {
    pub fn new(manifest_sha256: String, seed: u64, steps: &[(Step, u64)]) -> State {
        State {
            schema: SCHEMA.into(),
            manifest_sha256,
            seed,
            steps: steps
                .iter()
                .map(|(s, deadline_s)| StepState {
                    id: s.id(),
                    server: s.server.clone(),
                    entry: s.entry.clone(),
                    repetition: s.repetition,
                    deadline_s: *deadline_s,
                    outcome: None,
                })
                .collect(),
        }
    }

    /// The state in `dir`, if a lab has run there.
    pub fn load(dir: &Path) -> Result<Option<State>, String> {
        let path = dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        // The schema first: a newer bootmark's state is not "not a lab state" (its fields may differ).
        let schema = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("schema").and_then(|s| s.as_str()).map(str::to_string));
        if let Some(schema) = &schema
            && schema != SCHEMA
        {
            let version = |s: &str| s.strip_prefix("bootmark.lab-state/").and_then(|v| v.parse::<u32>().ok());
            return Err(match (version(schema), version(SCHEMA)) {
                (Some(theirs), Some(ours)) if theirs > ours => format!(
                    "{}: written by a newer bootmark (lab state version {theirs}; this one reads {ours}): run the lab with that bootmark, or move the state directory away",
                    path.display()
                ),
                _ => format!("{}: schema {schema:?}, this bootmark reads {SCHEMA}", path.display()),
            });
        }
        let state: State = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a lab state ({e}); move it away to start the lab again", path.display()))?;
        Ok(Some(state))
    }

    /// Is `planned` (the lab as it reads now) the lab this state belongs to?
    pub fn check_same_lab(&self, planned: &State, dir: &Path) -> Result<(), String> {
        let again = format!("move {} away to start a new lab, or put the lab file back as it was", dir.display());
        if self.manifest_sha256 != planned.manifest_sha256 {
            return Err(format!("the image's manifest.json is not the one this lab started with: {again}"));
        }
        let ids = |s: &State| s.steps.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        if ids(self) != ids(planned) {
            return Err(format!("the lab's steps have changed since it started (servers, entries or repeat): {again}"));
        }
        Ok(())
    }

    /// Write atomically into `dir`.
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).expect("a state serialises");
        crate::workstation::output::replace_synced(dir, FILE, text.as_bytes())
    }

    /// The steps not done, in order.
    pub fn to_do(&self) -> impl Iterator<Item = (usize, &StepState)> {
        self.steps.iter().enumerate().filter(|(_, s)| s.outcome.is_none())
    }

    /// Every step's records file that holds records, for the report (a
    /// step that never reached /init has an empty one: nothing to report,
    /// and its failure is in the state, not a problem of the records).
    pub fn record_files(&self, dir: &Path) -> Vec<PathBuf> {
        self.steps
            .iter()
            .filter_map(|s| s.outcome.as_ref())
            .map(|o| dir.join(&o.records))
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0))
            .collect()
    }

    /// `bootmark lab status`: a line per step.
    pub fn describe(&self) -> String {
        let done = self.steps.iter().filter(|s| s.outcome.is_some()).count();
        let mut s = format!("{done} of {} steps done\n", self.steps.len());
        for step in &self.steps {
            let what = match &step.outcome {
                None => "to do".to_string(),
                Some(o) => {
                    let status = match o.status {
                        Status::Ok => "ok",
                        Status::Failures => "failures",
                        Status::Failed => "FAILED",
                    };
                    let why = o.why.as_deref().map(|w| format!(": {w}")).unwrap_or_default();
                    format!("{status} in {:.0} s, log {}{why}", o.seconds, o.log)
                }
            };
            s += &format!("  {:<24} {what}\n", step.id);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps() -> Vec<(Step, u64)> {
        ["k0", "k1"].iter().map(|e| (Step { server: "s".into(), entry: e.to_string(), repetition: 0 }, 100)).collect()
    }

    #[test]
    fn a_saved_state_loads_back_and_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(State::load(&dir).unwrap(), None);
        let mut state = State::new("abc".into(), 7, &steps());
        state.steps[0].outcome = Some(Outcome {
            status: Status::Failed,
            why: Some("no run record within the deadline".into()),
            started_unix: 1,
            seconds: 2.5,
            log: "s/k0#1.log".into(),
            records: "s/k0#1.jsonl".into(),
            run_ids: vec![],
        });
        state.save(&dir).unwrap();
        assert_eq!(State::load(&dir).unwrap().as_ref(), Some(&state));
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names, [FILE]);
        let todo: Vec<&str> = state.to_do().map(|(_, s)| s.id.as_str()).collect();
        assert_eq!(todo, ["s/k1#1"]);
        assert!(state.describe().contains("FAILED in 2 s, log s/k0#1.log: no run record"), "{}", state.describe());
    }

    #[test]
    fn another_image_or_other_steps_are_refused_with_the_way_out() {
        let dir = Path::new("/tmp/lab.state");
        let state = State::new("abc".into(), 7, &steps());
        assert!(state.check_same_lab(&State::new("abc".into(), 7, &steps()), dir).is_ok());
        let e = state.check_same_lab(&State::new("def".into(), 7, &steps()), dir).unwrap_err();
        assert!(e.contains("not the one this lab started with: move /tmp/lab.state away"), "{e}");
        let e = state.check_same_lab(&State::new("abc".into(), 7, &steps()[..1]), dir).unwrap_err();
        assert!(e.contains("steps have changed"), "{e}");
    }

    #[test]
    fn a_state_from_a_newer_bootmark_is_named_as_such() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-state-newer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Version 2 with fields this one does not know and one it knows changed in type.
        std::fs::write(dir.join(FILE), r#"{"schema": "bootmark.lab-state/2", "seed": "x", "steps": {}}"#).unwrap();
        let e = State::load(&dir).unwrap_err();
        assert!(e.contains("written by a newer bootmark (lab state version 2; this one reads 1)"), "{e}");
        std::fs::write(dir.join(FILE), "{\"steps\": 3}").unwrap();
        assert!(State::load(&dir).unwrap_err().contains("not a lab state"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
