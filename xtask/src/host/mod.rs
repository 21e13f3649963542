//! The host xtask runs on: the one process runner, files with errors that
//! name their path (fs), apt, and the tables of
//! host tools (what must exist, which Debian package has it) with their
//! install step.

pub mod apt;
pub mod apt_suite;
pub mod deps;
pub mod fs;
pub mod process;
pub mod tools;
