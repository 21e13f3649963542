//! What a record says about the plan's variant it ran under. `variant`
//! applies the settings and fills this in.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a record says about its variant: what was asked, what the kernel
/// shows afterwards, and what could not be applied and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub name: String,
    /// "vm.dirty_ratio" → "10", "queue.scheduler" → "none".
    pub asked: BTreeMap<String, String>,
    /// The same keys as read back after writing (null: nothing to read).
    pub read_back: BTreeMap<String, Option<String>>,
    /// Keys not in effect → why ("this kernel has no /proc/sys/vm/dirty_bytes").
    pub not_applied: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Applied {
    pub fn fully(&self) -> bool {
        self.not_applied.is_empty()
    }

    /// Not one of the settings it asked for is in effect (a scheduler this
    /// kernel lacks): running it would only measure the settings as found
    /// again, so it is skipped and said so.
    pub fn nothing_applied(&self) -> bool {
        !self.asked.is_empty() && self.asked.keys().all(|k| self.not_applied.contains_key(k))
    }
}
