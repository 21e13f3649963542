//! The host xtask runs on: the one process runner, apt, and the tables of
//! host tools (what must exist, which Debian package has it) with their
//! install step.

pub mod apt;
pub mod deps;
pub mod process;
pub mod tools;
