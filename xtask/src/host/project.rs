//! What every room of xtask shares: its `Result`, where the project is,
//! and a command's flags as given. At the bottom of the house, so nothing
//! imports upward from `main.rs` to get them.

/// What every xtask step returns: an error is a sentence for the user
/// (it names its path, command line or flag).
pub type Result<T> = std::result::Result<T, String>;

/// The workspace root (xtask lives one level below it).
pub fn project_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A command's flags as `cargo xtask` leaves them when given only `args`:
/// what programmatic callers (the demo, the tests, one command inside
/// another) start from, so each default lives in one place, its `#[arg]`.
pub fn flags_given<A: clap::Args + clap::FromArgMatches>(args: &[&str]) -> A {
    let cmd = A::augment_args(clap::Command::new("xtask").no_binary_name(true));
    let matches = cmd.try_get_matches_from(args).unwrap_or_else(|e| panic!("flags {args:?}: {e}"));
    A::from_arg_matches(&matches).unwrap_or_else(|e| panic!("flags {args:?}: {e}"))
}
