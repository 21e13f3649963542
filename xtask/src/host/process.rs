//! Running a host program: one place, so every failure reads the same way —
//! the command line as it was run, its exit status and the tail of its
//! stderr (a long build log's last lines are where the error is).
//!
//! Commands are xshell's, the idiom of rust-analyzer's xtask: a [`Shell`]
//! carries the working directory and environment ([`shell`], [`shell_in`]),
//! and [`cmd!`] splices arguments without shell quoting
//! (`cmd!(sh, "qemu-img create -f raw {path} {size}")`). This module runs
//! them: [`run`] (output captured), [`run_shown`] (output on the terminal),
//! [`run_with`] (output where the caller says), [`output`] (any exit
//! status), [`succeeds`] (a probe) and [`spawn`] (runs beside us). Where
//! xshell has no way (exit status with inherited streams, redirection, a
//! child left running), the command becomes std's here and nowhere else.
//! xtask/clippy.toml forbids running a command, std's or xshell's,
//! anywhere else.
// The one module allowed to touch std's process API and to run xshell's
// commands (xtask/clippy.toml).
#![allow(clippy::disallowed_methods)]

use crate::host::project::Result;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
pub use xshell::{Cmd, Shell, cmd};

/// Lines of stderr kept in an error.
const STDERR_TAIL_LINES: usize = 20;

/// A shell whose commands run in this process's working directory.
pub fn shell() -> Result<Shell> {
    Shell::new().map_err(|e| format!("cannot start a shell: {e}"))
}

/// A shell whose commands run in `dir` (make in a source tree, apt-get
/// download into a cache).
pub fn shell_in(dir: &Path) -> Result<Shell> {
    let sh = shell()?;
    sh.change_dir(dir);
    Ok(sh)
}

/// Run `cmd` to completion; its stdout on success, else an error naming
/// the command line, how it ended and the tail of its stderr.
pub fn run(cmd: Cmd<'_>) -> Result<String> {
    let (line, out) = finished(cmd);
    let out = out?;
    if !out.status.success() {
        return Err(format!("{line} failed ({}): {}", out.status, tail(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run `cmd` with its output on the terminal (builds and installs a user
/// watches); an error names the command line and how it ended.
pub fn run_shown(cmd: Cmd<'_>) -> Result<()> {
    // xshell's own `run` reports no exit status: std's `status` does.
    let mut cmd = Command::from(cmd);
    let status = cmd.status().map_err(|e| format!("cannot run {}: {e}", shown_std(&cmd)))?;
    check(&cmd, status)
}

/// Run `cmd` to completion with its streams where `streams` says (a long
/// tool's output into a log file); an error names the command line and
/// how it ended. xshell can only capture or inherit them.
pub fn run_with(cmd: Cmd<'_>, streams: Streams) -> Result<()> {
    let mut cmd = Command::from(cmd);
    streams.apply(&mut cmd);
    let status = cmd.status().map_err(|e| format!("cannot run {}: {e}", shown_std(&cmd)))?;
    check(&cmd, status)
}

/// `Ok` if `status` is success, else an error naming `cmd` and its status.
fn check(cmd: &Command, status: ExitStatus) -> Result<()> {
    if status.success() { Ok(()) } else { Err(format!("{} failed ({status})", shown_std(cmd))) }
}

/// Where a program started by [`spawn`] reads and writes: each stream
/// inherited unless set (xshell has no streams beside a finished run's).
#[derive(Default)]
pub struct Streams {
    pub stdin: Option<Stdio>,
    pub stdout: Option<Stdio>,
    pub stderr: Option<Stdio>,
}

impl Streams {
    /// All three to /dev/null: a program whose output is not read.
    pub fn null() -> Streams {
        Streams { stdin: Some(Stdio::null()), stdout: Some(Stdio::null()), stderr: Some(Stdio::null()) }
    }

    pub fn stdin(mut self, s: impl Into<Stdio>) -> Streams {
        self.stdin = Some(s.into());
        self
    }

    pub fn stdout(mut self, s: impl Into<Stdio>) -> Streams {
        self.stdout = Some(s.into());
        self
    }

    pub fn stderr(mut self, s: impl Into<Stdio>) -> Streams {
        self.stderr = Some(s.into());
        self
    }

    fn apply(self, cmd: &mut Command) {
        let Streams { stdin, stdout, stderr } = self;
        if let Some(s) = stdin {
            cmd.stdin(s);
        }
        if let Some(s) = stdout {
            cmd.stdout(s);
        }
        if let Some(s) = stderr {
            cmd.stderr(s);
        }
    }
}

/// Start `cmd` to run beside us (QEMU, a follower, a pipeline's stage),
/// its streams as `streams` says.
pub fn spawn(cmd: Cmd<'_>, streams: Streams) -> Result<Child> {
    spawn_std(Command::from(cmd), streams)
}

/// [`spawn`] for the one command xshell cannot hold: a program that must
/// start under a seccomp filter (`pre_exec`, the old-kernel harness).
pub fn spawn_prepared(cmd: Cmd<'_>, streams: Streams, prepare: impl FnOnce(&mut Command)) -> Result<Child> {
    let mut cmd = Command::from(cmd);
    prepare(&mut cmd);
    spawn_std(cmd, streams)
}

fn spawn_std(mut cmd: Command, streams: Streams) -> Result<Child> {
    streams.apply(&mut cmd);
    cmd.spawn().map_err(|e| format!("cannot run {}: {e}", shown_std(&cmd)))
}

/// Run `cmd` to completion whatever its exit status, for callers that read
/// a failing program's output themselves (fsck, apt's dry run).
pub fn output(cmd: Cmd<'_>) -> Result<Output> {
    finished(cmd).1
}

/// Whether `cmd` runs and exits 0, its output discarded: a probe for a
/// tool or a Python module, where "no" is an answer and not an error.
pub fn succeeds(cmd: Cmd<'_>) -> bool {
    cmd.quiet().ignore_status().ignore_stdout().ignore_stderr().output().is_ok_and(|o| o.status.success())
}

/// The stderr tail of a finished program, as `run`'s errors show it.
pub fn stderr_tail(out: &Output) -> String {
    tail(&out.stderr)
}

/// Run `cmd` with stdout and stderr captured, whatever its exit status:
/// the command line as shown, and the output or why it could not start.
fn finished(cmd: Cmd<'_>) -> (String, Result<Output>) {
    let cmd = cmd.quiet().ignore_status();
    let out = cmd.output();
    let line = shown(cmd);
    let out = out.map_err(|e| format!("cannot run {line}: {e}"));
    (line, out)
}

/// The command line as a user would type it again.
pub fn shown(cmd: Cmd<'_>) -> String {
    shown_std(&Command::from(cmd))
}

fn shown_std(cmd: &Command) -> String {
    let mut line = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        let plain = !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
        line += &if plain { format!(" {a}") } else { format!(" '{}'", a.replace('\'', "'\\''")) };
    }
    // xshell names the shell's directory on every command: say it only
    // where it is not the one the user typed in.
    let here = std::env::current_dir().ok();
    if let Some(dir) = cmd.get_current_dir().filter(|d| Some(d.to_path_buf()) != here) {
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
        let sh = shell().unwrap();
        let script = "for i in $(seq 1 30); do echo line$i >&2; done; exit 3";
        let e = run(cmd!(sh, "sh -c {script}")).unwrap_err();
        assert!(e.starts_with("sh -c 'for i in"), "{e}");
        assert!(e.contains("exit status: 3"), "{e}");
        assert!(e.contains("[… 10 lines]") && e.contains("line11") && e.ends_with("line30"), "{e}");
        assert!(!e.contains("line10\n"), "{e}");
    }

    #[test]
    fn a_missing_program_is_named() {
        let sh = shell().unwrap();
        let e = run(cmd!(sh, "/nonexistent/tool")).unwrap_err();
        assert!(e.starts_with("cannot run /nonexistent/tool: "), "{e}");
        let e = spawn(cmd!(sh, "/nonexistent/tool 'x y'"), Streams::default()).unwrap_err();
        assert!(e.starts_with("cannot run /nonexistent/tool 'x y': "), "{e}");
        assert!(!succeeds(cmd!(sh, "/nonexistent/tool")));
    }

    #[test]
    fn a_shown_run_names_the_command_and_its_status() {
        let sh = shell().unwrap();
        assert_eq!(run_shown(cmd!(sh, "sh -c 'exit 4'")).unwrap_err(), "sh -c 'exit 4' failed (exit status: 4)");
        assert!(run_shown(shell_in(Path::new("/")).unwrap().cmd("true")).is_ok());
        assert!(succeeds(cmd!(sh, "true")) && !succeeds(cmd!(sh, "false")));
        let out = output(cmd!(sh, "sh -c 'echo oops >&2; exit 1'")).unwrap();
        assert_eq!((out.status.code(), stderr_tail(&out)), (Some(1), "oops".to_string()));
    }

    #[test]
    fn a_command_line_names_its_directory_only_when_it_is_not_ours() {
        let sh = shell().unwrap();
        assert_eq!(shown(cmd!(sh, "true")), "true");
        assert_eq!(shown(shell_in(Path::new("/nonexistent")).unwrap().cmd("make")), "(cd /nonexistent && make)");
    }
}
