//! The unattended sequence put on the stick (`--sequence`): which entry and
//! filesystem each boot runs; /init follows it (`bootmark::contract::sequence`).

use super::menu;

/// Steps: repetitions × filesystems × entries, kernels innermost so a
/// comparison is complete as early as possible.
pub(crate) fn build(
    entries: &[menu::Entry],
    repeat: u32,
    fss: &[String],
    default: usize,
) -> bootmark::contract::sequence::Sequence {
    use bootmark::contract::sequence::{Sequence, Step};
    let fss: Vec<Option<String>> = if fss.is_empty() { vec![None] } else { fss.iter().cloned().map(Some).collect() };
    let mut steps = Vec::new();
    for _ in 0..repeat.max(1) {
        for fs in &fss {
            for e in entries {
                steps.push(Step { entry: e.label.clone(), fs: fs.clone() });
            }
        }
    }
    Sequence::new(steps, &entries[default].label)
}
