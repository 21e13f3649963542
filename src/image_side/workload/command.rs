//! `command`: a program the user brings — a reproducer from a bug report, a
//! database's load generator, the seed's own "open N files and write them
//! round-robin" — run in a directory on the target under the same probe,
//! sampler and watchdog as the built-in workloads.
//!
//! The program runs as a child of the worker, so the worker's wait4 usage
//! (user, sys, faults, switches) and /proc/self/io include it once reaped.
//! Its exit status decides the record's status; the last `output_limit`
//! bytes of its stdout and of its stderr are kept in the record and the rest
//! only counted, so a chatty program cannot flood the serial line. The
//! worker stops it at `time_limit_s`, or shortly before the run's watchdog
//! would, so a hung program still leaves its output and figures so far.
//!
//! The program is started and followed by `exec` (fork, execve, poll).

use super::{Context, Failed, Outcome, PhaseTimes, since};
use crate::image_side::confine::Confinement;
use crate::image_side::exec;
use crate::image_side::measure::clock::mono_ns;
use crate::size::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Where a bare program name is looked for when the environment has no PATH
/// (PID 1 gets none from the kernel); `cargo xtask image --include` puts
/// programs in the first.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";

/// How long before the run's watchdog the worker stops the program itself,
/// so the record keeps the program's output and the worker's figures.
const WATCHDOG_MARGIN_NS: u64 = 2_000_000_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// An absolute path, or a name looked up in PATH (default [`DEFAULT_PATH`]).
    pub program: String,
    /// Arguments; `{dir}` in any of them becomes the working directory.
    pub args: Vec<String>,
    /// Working directory, relative to the workload's own directory on the
    /// target (created); default that directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Stop the program after this many seconds: a timeout record with its
    /// output and figures so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit_s: Option<f64>,
    /// After the program exits, sync() and time it: `durable_s`.
    pub final_sync: bool,
    /// Bytes of stdout, and of stderr, kept in the record (the last ones).
    pub output_limit: Bytes,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            program: String::new(),
            args: Vec::new(),
            cwd: None,
            time_limit_s: None,
            final_sync: false,
            output_limit: Bytes(4 << 10),
        }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), String> {
        if self.program.is_empty() {
            return Err("program is required: an absolute path, or a name in PATH (/usr/local/bin in an image, where `cargo xtask image --include` puts it)".into());
        }
        if self.program.contains('/') && !self.program.starts_with('/') {
            return Err(format!(
                "program '{}' must be an absolute path or a bare name, not a relative path",
                self.program
            ));
        }
        if let Some(cwd) = &self.cwd {
            let p = Path::new(cwd);
            if !p.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
                return Err(format!(
                    "cwd '{cwd}' must stay inside the workload's directory: a relative path without '..'"
                ));
            }
        }
        if let Some(t) = self.time_limit_s
            && !(t > 0.0 && t <= 7.0 * 86_400.0)
        {
            return Err(format!("time_limit_s must be above 0 and at most a week, not {t}"));
        }
        if self.output_limit.0 > 64 << 10 {
            return Err(format!(
                "output_limit must be at most 64KiB (it travels in every record), not {}",
                self.output_limit
            ));
        }
        Ok(())
    }

    /// The directory names a plan's programs are found in, for the image
    /// builder's check that an `--include` provides each.
    pub fn candidates(&self) -> Vec<PathBuf> {
        candidates(&self.program)
    }
}

/// The kernel's I/O counters of this process and its reaped children
/// (/proc/self/io: 2.6.20+ with task I/O accounting), and the bytes read to
/// get them (they count in `rchar`).
fn task_io() -> Option<(BTreeMap<String, i64>, u64)> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    let mut counters = BTreeMap::new();
    for line in text.lines() {
        let (k, v) = line.split_once(':')?;
        counters.insert(k.trim().to_string(), v.trim().parse().ok()?);
    }
    Some((counters, text.len() as u64))
}

/// Where an image must hold `program` for a workload to find it.
pub fn candidates(program: &str) -> Vec<PathBuf> {
    if program.starts_with('/') {
        return vec![PathBuf::from(program)];
    }
    DEFAULT_PATH.split(':').map(|d| Path::new(d).join(program)).collect()
}

/// The program's path: as given when absolute, else the first match in PATH.
fn find_program(name: &str) -> io::Result<PathBuf> {
    if name.starts_with('/') {
        return match std::fs::metadata(name) {
            Ok(m) if m.is_file() => Ok(PathBuf::from(name)),
            Ok(_) => Err(io::Error::other(format!("program {name} is not a file"))),
            Err(e) => Err(io::Error::other(format!("program {name}: {e}"))),
        };
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| DEFAULT_PATH.into());
    path.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file()).ok_or_else(|| {
        io::Error::other(format!(
            "program '{name}' is not in {path} (an image gets it with `cargo xtask image --include PATH`)"
        ))
    })
}

pub fn run(p: &Params, ctx: &Context) -> io::Result<Outcome> {
    let program = find_program(&p.program)?;
    let dir = match &p.cwd {
        Some(cwd) => ctx.dir.join(cwd),
        None => ctx.dir.clone(),
    };
    std::fs::create_dir_all(&dir).map_err(|e| io::Error::other(format!("cannot create {}: {e}", dir.display())))?;
    let args: Vec<String> = p.args.iter().map(|a| a.replace("{dir}", &dir.to_string_lossy())).collect();
    // Which program ran, exactly: a rebuilt one is another experiment.
    let sha256 = std::fs::read(&program).map(|b| crate::schema::framing::sha256_hex(&b)).ok();
    let own_limit = p.time_limit_s.map(|t| (t * 1e9) as u64);
    let io_before = task_io();

    let start = mono_ns();
    let watchdog = ctx.deadline_ns.map(|d| d.saturating_sub(WATCHDOG_MARGIN_NS));
    let limit_ns = [own_limit.map(|l| start + l), watchdog].into_iter().flatten().min().unwrap_or(u64::MAX);
    let confinement = match ctx.confine_programs {
        true => Some(Confinement::prepare(true)?),
        false => None,
    };
    let mut started = exec::start(&program, &args, &dir, p.output_limit.0 as usize, confinement.as_ref())?;
    let ended = exec::follow(&mut started, limit_ns)?;
    let wall_s = since(start);
    let durable_s = p.final_sync.then(|| {
        // SAFETY: sync has no arguments and no memory effects.
        unsafe { libc::sync() };
        since(start)
    });
    let end = mono_ns();

    let (stdout, stderr) = (&started.stdout.tail, &started.stderr.tail);
    let mut notes = Vec::new();
    let mut io = BTreeMap::new();
    let (mut written, mut read) = (0, 0);
    match (io_before, task_io()) {
        (Some((before, first_read)), Some((after, _))) => {
            for (k, v) in after {
                io.insert(k.clone(), v - before.get(&k).copied().unwrap_or(0));
            }
            let field = |k: &str| io.get(k).copied().unwrap_or(0).max(0) as u64;
            // wchar/rchar count every write()/read(): less the program's
            // output, which the worker read from its pipes, and the first
            // look at /proc/self/io itself.
            let output = stdout.total + stderr.total;
            written = field("wchar").saturating_sub(output);
            read = field("rchar").saturating_sub(output + first_read);
        }
        _ => notes.push(
            "no /proc/self/io on this kernel (2.6.20+ with task I/O accounting): bytes moved unknown; the disk counters show the device's"
                .to_string(),
        ),
    }
    if ended.left_behind && !ended.stopped_at_limit {
        notes.push("the program left processes running when it ended; they were killed".into());
    }
    let own_limit_hit = own_limit.filter(|l| start + l == limit_ns).and(p.time_limit_s);
    let failed = failure(&program, &ended, stderr, own_limit_hit);
    let status = ended.exit.status;
    // docs/record-format.md, `details`.
    let details = serde_json::json!({
        "program": program,
        "program_sha256": sha256,
        "exit": ended.exit.describe(),
        "exit_code": libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        "stdout": stdout.text(),
        "stdout_bytes": stdout.total,
        "stderr": stderr.text(),
        "stderr_bytes": stderr.total,
        "io": io,
        "confined": confinement.as_ref().map(Confinement::facts),
    });
    Ok(Outcome {
        bytes_written: written,
        bytes_read: read,
        times: PhaseTimes { wall_s, durable_s, ..PhaseTimes::default() },
        start_ns: start,
        end_ns: if durable_s.is_some() { end } else { ended.at_ns },
        details,
        notes,
        failed,
        ..Outcome::default()
    })
}

/// Why the program's run is not ok, if it is not: stopped at a limit (its
/// `time_limit_s` when that was the limit, else the watchdog's margin), or a
/// non-zero exit.
fn failure(program: &Path, ended: &exec::Ended, stderr: &exec::Tail, own_limit_hit: Option<f64>) -> Option<Failed> {
    let name = program.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    if ended.stopped_at_limit {
        let why = match own_limit_hit {
            Some(t) => format!("its time limit of {t} s"),
            None => "the run's watchdog".into(),
        };
        return Some(Failed {
            message: format!(
                "{name} was still running at {why} and was stopped; its output and figures so far are kept"
            ),
            timed_out: true,
        });
    }
    if ended.exit.success() {
        return None;
    }
    let tail = stderr.last_lines(3);
    let said = if tail.is_empty() { "nothing on stderr".to_string() } else { format!("its stderr ends: {tail}") };
    Some(Failed { message: format!("{name} {}; {said}", ended.exit.describe()), timed_out: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_refuse_what_cannot_run() {
        let p = |json: &str| serde_json::from_str::<Params>(json).unwrap().validate();
        assert!(p(r#"{}"#).unwrap_err().contains("program is required"));
        assert!(p(r#"{"program":"bin/x"}"#).unwrap_err().contains("relative path"));
        assert!(p(r#"{"program":"x","cwd":"../up"}"#).unwrap_err().contains("inside"));
        assert!(p(r#"{"program":"x","cwd":"/abs"}"#).unwrap_err().contains("inside"));
        assert!(p(r#"{"program":"x","time_limit_s":0}"#).unwrap_err().contains("time_limit_s"));
        assert!(p(r#"{"program":"x","output_limit":"1MiB"}"#).unwrap_err().contains("64KiB"));
        assert!(p(r#"{"program":"x","args":["a"],"cwd":"sub","time_limit_s":5,"final_sync":true}"#).is_ok());
    }

    #[test]
    fn a_bare_name_is_looked_for_in_the_default_path() {
        let p = Params { program: "seedwrite".into(), ..Params::default() };
        assert_eq!(p.candidates()[0], Path::new("/usr/local/bin/seedwrite"));
        let p = Params { program: "/opt/x".into(), ..Params::default() };
        assert_eq!(p.candidates(), [PathBuf::from("/opt/x")]);
    }
}
