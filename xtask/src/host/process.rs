//! Running a host program: one place, so every failure reads the same way —
//! the command line as it was run, its exit status and the tail of its
//! stderr (a long build log's last lines are where the error is).

use crate::Result;
use std::process::Command;

/// Lines of stderr kept in an error.
const STDERR_TAIL_LINES: usize = 20;

/// Run `cmd` to completion; its stdout on success, else an error naming
/// the command line, how it ended and the tail of its stderr.
pub fn run(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().map_err(|e| format!("cannot run {}: {e}", shown(cmd)))?;
    if !out.status.success() {
        return Err(format!("{} failed ({}): {}", shown(cmd), out.status, tail(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
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
        let e = run(Command::new("sh").args(["-c", script])).unwrap_err();
        assert!(e.starts_with("sh -c 'for i in"), "{e}");
        assert!(e.contains("exit status: 3"), "{e}");
        assert!(e.contains("[… 10 lines]") && e.contains("line11") && e.ends_with("line30"), "{e}");
        assert!(!e.contains("line10\n"), "{e}");
    }

    #[test]
    fn a_missing_program_is_named() {
        let e = run(&mut Command::new("/nonexistent/tool")).unwrap_err();
        assert!(e.starts_with("cannot run /nonexistent/tool: "), "{e}");
    }
}
