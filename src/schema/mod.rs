//! The schema: everything the image side writes and the workstation reads —
//! result and run records and every type they carry, the serial framing and
//! the stick's journal — and what the image builder writes for /init to
//! read (the module set, a sequence). Both sides import it; it imports nothing of either
//! (a tidy test holds that), so "may I change this struct?" has one answer
//! here: only as docs/record-format.md says a schema changes.
//!
//! The code that gathers evidence or measures stays on the image side
//! (`measure`, `layers::stack`, `variant`); only the data lives here.

pub mod events;
pub mod framing;
pub mod journal;
pub mod layer;
pub mod machine;
pub mod measures;
pub mod modules;
pub mod record;
pub mod sequence;
pub mod variant;
