//! Fuzz the bisect's state file: any text gives a state or an error (never
//! a panic), and a state that loads can be described by `bisect status`
//! and asked for its next action without a panic, whatever its boots say.
//! The same text as a confirmation's verdict (`verdict.json`, which the
//! report reads): a verdict or an error, and a verdict's sentence never
//! carries a control character into a report.
#![no_main]

use bootmark::bisect::command::status_of;
use bootmark::bisect::session::State;
use bootmark::lab::{ImageEntries, ImageEntry};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(verdict) = bootmark::report::tested::Tested::parse(text) {
        assert!(!verdict.summary().chars().any(char::is_control), "{verdict:?}");
    }
    let Ok(state) = State::from_json(text) else { return };
    let entry = |label: &String| ImageEntry {
        label: label.clone(),
        title: format!("Debian {label}"),
        cmdline: String::new(),
        cmdline_room: None,
        kernel_release: None,
    };
    let image = ImageEntries { entries: state.candidates.iter().map(entry).collect(), plan_definition: None, iso_menus: None };
    let _ = status_of(&state, &image);
});
