//! Running a host program: one place, so every failure reads the same way —
//! the command line as it was run, its exit status and the tail of its
//! stderr (a long build log's last lines are where the error is).
//!
//! xtask/clippy.toml forbids `Command::new` and running a `Command` anywhere
//! else, so this is the one door: [`command`] builds one, [`run`] (output
//! captured), [`run_shown`] (output on the terminal), [`spawn`] (runs beside
//! us), [`output`] (any exit status) and [`succeeds`] (a probe) run it.
// The one module allowed to touch std's process API (xtask/clippy.toml).
#![allow(clippy::disallowed_methods)]

use crate::host::project::Result;
use std::ffi::OsStr;
use std::process::{Child, Command, ExitStatus, Output, Stdio};

/// Lines of stderr kept in an error.
const STDERR_TAIL_LINES: usize = 20;

/// A command for `program`, to be run by one of this module's functions.
pub fn command(program: impl AsRef<OsStr>) -> Command {
    Command::new(program)
}

/// Run `cmd` to completion; its stdout on success, else an error naming
/// the command line, how it ended and the tail of its stderr.
pub fn run(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().map_err(|e| format!("cannot run {}: {e}", shown(cmd)))?;
    if !out.status.success() {
        return Err(format!("{} failed ({}): {}", shown(cmd), out.status, tail(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run `cmd` with its output on the terminal (builds and installs a user
/// watches); an error names the command line and how it ended.
pub fn run_shown(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().map_err(|e| format!("cannot run {}: {e}", shown(cmd)))?;
    check(cmd, status)
}

/// `Ok` if `status` is success, else an error naming `cmd` and its status.
pub fn check(cmd: &Command, status: ExitStatus) -> Result<()> {
    if status.success() { Ok(()) } else { Err(format!("{} failed ({status})", shown(cmd))) }
}

/// Start `cmd` to run beside us (QEMU, a follower, a pipeline's stage).
pub fn spawn(cmd: &mut Command) -> Result<Child> {
    cmd.spawn().map_err(|e| format!("cannot run {}: {e}", shown(cmd)))
}

/// Run `cmd` to completion whatever its exit status, for callers that read
/// a failing program's output themselves (fsck, apt's dry run).
pub fn output(cmd: &mut Command) -> Result<Output> {
    cmd.output().map_err(|e| format!("cannot run {}: {e}", shown(cmd)))
}

/// Whether `cmd` runs and exits 0, its output discarded: a probe for a
/// tool or a Python module, where "no" is an answer and not an error.
pub fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The stderr tail of a finished program, as `run`'s errors show it.
pub fn stderr_tail(out: &Output) -> String {
    tail(&out.stderr)
}

/// The command line as a user would type it again.
pub fn shown(cmd: &Command) -> String {
    let mut line = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        let plain = !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
        line += &if plain { format!(" {a}") } else { format!(" '{}'", a.replace('\'', "'\\''")) };
    }
    if let Some(dir) = cmd.get_current_dir() {
        line = format!("(cd {} && {line})", dir.display());
    }
    line
}

/// The last lines of a program's stderr, trimmed.
fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.trim().lines().collect();
    let from = lines.len().saturating_sub(STDERR_TAIL_LINES);
    let cut = if from > 0 { format!("[… {from} lines]\n") } else { String::new() };
    cut + &lines[from..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_command_line_and_shows_the_end_of_stderr() {
        let script = "for i in $(seq 1 30); do echo line$i >&2; done; exit 3";
        let e = run(command("sh").args(["-c", script])).unwrap_err();
        assert!(e.starts_with("sh -c 'for i in"), "{e}");
        assert!(e.contains("exit status: 3"), "{e}");
        assert!(e.contains("[… 10 lines]") && e.contains("line11") && e.ends_with("line30"), "{e}");
        assert!(!e.contains("line10\n"), "{e}");
    }

    #[test]
    fn a_missing_program_is_named() {
        let e = run(&mut command("/nonexistent/tool")).unwrap_err();
        assert!(e.starts_with("cannot run /nonexistent/tool: "), "{e}");
        let e = spawn(command("/nonexistent/tool").arg("x y")).unwrap_err();
        assert!(e.starts_with("cannot run /nonexistent/tool 'x y': "), "{e}");
        assert!(!succeeds(&mut command("/nonexistent/tool")));
    }

    #[test]
    fn a_shown_run_names_the_command_and_its_status() {
        assert_eq!(
            run_shown(command("sh").args(["-c", "exit 4"])).unwrap_err(),
            "sh -c 'exit 4' failed (exit status: 4)"
        );
        assert!(run_shown(command("true").current_dir("/")).is_ok());
        assert!(succeeds(&mut command("true")) && !succeeds(&mut command("false")));
        let out = output(command("sh").args(["-c", "echo oops >&2; exit 1"])).unwrap();
        assert_eq!((out.status.code(), stderr_tail(&out)), (Some(1), "oops".to_string()));
    }
}
