//! An unattended sequence as the stick holds it (`bootmark/sequence.json`):
//! the steps, each one's state, the next one. The image builder writes it;
//! each boot's /init reads and updates it (`init::sequence` decides the step).

use serde::{Deserialize, Serialize};

pub const FILE: &str = "bootmark/sequence.json";
pub const SCHEMA: &str = "bootmark.sequence/1";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Boot menu label (k0, k1, …).
    pub entry: String,
    /// Filesystem to create on the target first (needs the format confirmation on the command line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Pending,
    Attempted,
    Done,
    Failed,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sequence {
    pub schema: String,
    pub steps: Vec<Step>,
    pub states: Vec<State>,
    /// Index of the step the next boot should run.
    pub next: usize,
    /// The menu default to restore at the end.
    pub restore_default: String,
}
