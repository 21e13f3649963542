//! Unattended sequences: the stick holds the queue. `bootmark/sequence.json`
//! lists steps (a boot entry, optionally a filesystem to format); each boot
//! runs the next step, records it, points the boot menu at the step after and
//! reboots; after the last step it restores the menu and powers off.
//!
//! A step is marked "attempted" on the stick before it starts. Booting into
//! an attempted step means the previous boot crashed or hung (the watchdog
//! or the user reset it): the step is recorded as failed and the sequence
//! moves on — it never loops on a kernel that cannot finish.

use crate::schema::sequence::{FILE, SCHEMA, Sequence, State, Step};
use std::path::Path;

/// What this boot should do.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// No sequence, or it is finished: a normal boot.
    Normal,
    /// Run step `index` now.
    Run { index: usize, fs: Option<String> },
    /// Do not run anything: point the menu at `entry` and reboot. `failed`
    /// names a step just given up on.
    Reboot { entry: String, failed: Option<usize> },
    /// The last step was given up on: restore the menu and power off.
    Finish { failed: Option<usize> },
}

impl Sequence {
    pub fn new(steps: Vec<Step>, restore_default: &str) -> Sequence {
        let n = steps.len();
        Sequence {
            schema: SCHEMA.into(),
            steps,
            states: vec![State::Pending; n],
            next: 0,
            restore_default: restore_default.into(),
        }
    }

    pub fn finished(&self) -> bool {
        self.next >= self.steps.len()
    }

    /// Decide, and record the decision in `self` (the caller saves it).
    pub fn decide(&mut self, my_entry: Option<&str>) -> Decision {
        if self.finished() {
            return Decision::Normal;
        }
        let mut failed = None;
        if self.states[self.next] == State::Attempted {
            self.states[self.next] = State::Failed;
            failed = Some(self.next);
            self.next += 1;
            if self.finished() {
                return Decision::Finish { failed };
            }
        }
        let step = &self.steps[self.next];
        if failed.is_some() || my_entry != Some(step.entry.as_str()) {
            return Decision::Reboot { entry: step.entry.clone(), failed };
        }
        self.states[self.next] = State::Attempted;
        Decision::Run { index: self.next, fs: step.fs.clone() }
    }

    /// After running step `index`: record how it went and move on. Returns
    /// the entry to boot next, or None when the sequence is over.
    pub fn complete(&mut self, index: usize, ok: bool) -> Option<String> {
        self.states[index] = if ok { State::Done } else { State::Failed };
        self.next = index + 1;
        self.steps.get(self.next).map(|s| s.entry.clone())
    }
}

pub fn load(stick_root: &Path) -> Result<Option<Sequence>, String> {
    let path = stick_root.join(FILE);
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let s: Sequence =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a valid sequence: {e}", path.display()))?;
    if s.schema != SCHEMA || s.states.len() != s.steps.len() {
        return Err(format!("{}: not a {SCHEMA} file", path.display()));
    }
    check_steps(&s).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(s))
}

/// The stick is editable by anyone: a step's filesystem goes to mkfs and
/// mount only if it is one bootmark creates, and its entry must be a name.
fn check_steps(s: &Sequence) -> Result<(), String> {
    for (i, step) in s.steps.iter().enumerate() {
        if let Some(fs) = &step.fs
            && !super::cmdline::FS_TYPES.contains(&fs.as_str())
        {
            return Err(format!("step {} wants filesystem '{fs}', which bootmark does not create", i + 1));
        }
        let plain =
            !step.entry.is_empty() && step.entry.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !plain {
            return Err(format!("step {} names boot entry '{}', which is not a menu label", i + 1, step.entry));
        }
    }
    Ok(())
}

pub fn save(stick_root: &Path, s: &Sequence) -> Result<(), String> {
    crate::bootmenu::write_synced(&stick_root.join(FILE), &serde_json::to_string_pretty(s).unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq() -> Sequence {
        let step = |e: &str| Step { entry: e.into(), fs: None };
        Sequence::new(vec![step("k0"), step("k1"), step("k0")], "k0")
    }

    #[test]
    fn a_stick_edited_to_format_with_anything_is_refused() {
        let dir = std::env::temp_dir().join(format!("bootmark-seq-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bootmark")).unwrap();
        let mut s = seq();
        s.steps[1].fs = Some("ext3".into());
        save(&dir, &s).unwrap();
        assert!(load(&dir).unwrap().is_some());
        s.steps[1].fs = Some("../../sbin/evil".into());
        save(&dir, &s).unwrap();
        assert!(load(&dir).unwrap_err().contains("does not create"));
        s.steps[1].fs = None;
        s.steps[2].entry = "k0 init=/bin/sh".into();
        save(&dir, &s).unwrap();
        assert!(load(&dir).unwrap_err().contains("not a menu label"));
        crate::fsutil::remove_tree(&dir).unwrap();
    }

    #[test]
    fn steps_run_in_order_across_reboots() {
        let mut s = seq();
        assert_eq!(s.decide(Some("k0")), Decision::Run { index: 0, fs: None });
        assert_eq!(s.states[0], State::Attempted);
        assert_eq!(s.complete(0, true), Some("k1".into()));
        // The next boot came up in k1 as the menu said.
        assert_eq!(s.decide(Some("k1")), Decision::Run { index: 1, fs: None });
        assert_eq!(s.complete(1, true), Some("k0".into()));
        assert_eq!(s.decide(Some("k0")), Decision::Run { index: 2, fs: None });
        assert_eq!(s.complete(2, true), None);
        assert!(s.finished());
        assert_eq!(s.decide(Some("k0")), Decision::Normal);
        assert_eq!(s.states, [State::Done; 3]);
    }

    #[test]
    fn a_boot_into_the_wrong_kernel_reboots_into_the_right_one() {
        let mut s = seq();
        assert_eq!(s.decide(Some("k1")), Decision::Reboot { entry: "k0".into(), failed: None });
        assert_eq!(s.states[0], State::Pending, "nothing was attempted");
    }

    #[test]
    fn a_step_that_hung_is_failed_once_and_never_retried() {
        let mut s = seq();
        assert!(matches!(s.decide(Some("k0")), Decision::Run { index: 0, .. }));
        // … the kernel hangs; someone resets the machine; k0 boots again.
        assert_eq!(s.decide(Some("k0")), Decision::Reboot { entry: "k1".into(), failed: Some(0) });
        assert_eq!(s.states[0], State::Failed);
        assert_eq!(s.decide(Some("k1")), Decision::Run { index: 1, fs: None });
        s.complete(1, true);
        assert!(matches!(s.decide(Some("k0")), Decision::Run { index: 2, .. }));
        // The last step hangs too: the sequence finishes instead of looping.
        assert_eq!(s.decide(Some("k0")), Decision::Finish { failed: Some(2) });
        assert!(s.finished());
    }
}
