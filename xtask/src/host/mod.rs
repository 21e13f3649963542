//! The host xtask runs on: the one process runner, files with errors that
//! name their path (fs), apt, and the tables of
//! host tools (what must exist, which Debian package has it) with their
//! install step; and the roots every room shares (`project`: `Result`,
//! the project's root, a command's default flags), here at the bottom so
//! that no room imports upward from `main.rs`.

pub mod apt;
pub mod apt_suite;
pub mod cpu;
pub mod deps;
pub mod fs;
pub mod process;
pub mod project;
pub mod tools;
