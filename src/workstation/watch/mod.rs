//! `bootmark watch`: follow a test server's console while it runs. The raw
//! console goes to `--log` as it arrives, each record to `--out` as soon as
//! it is verified (the collector's rules), and the terminal shows what
//! happens: boots, /init, each workload's heartbeat, results, kernel
//! trouble, silence (a stalled machine prints nothing), the run's end.
//! At the end, the comparison table of what arrived.

pub mod passed;
pub mod source;

use crate::schema::framing::{self, Assembler, Fed};
use crate::workstation::collect::serial::{BANNER, HUNG, OOPS, PANIC};
use crate::workstation::collect::{Collector, Document};
use source::{Chunk, Source};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// When to stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Until {
    /// After this many run records (one per boot that finished).
    Runs(u32),
    /// After the run record of a sequence's last step.
    Sequence,
}

impl std::str::FromStr for Until {
    type Err = String;
    fn from_str(s: &str) -> Result<Until, String> {
        match s {
            "run" => Ok(Until::Runs(1)),
            "sequence" => Ok(Until::Sequence),
            n => n.parse().ok().filter(|n| *n > 0).map(Until::Runs).ok_or_else(|| {
                format!("--until {n}: use run, sequence, or a number of runs (boots that reach their run record)")
            }),
        }
    }
}

pub struct Options {
    pub source: String,
    pub baud: u32,
    pub log: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub until: Until,
    /// Say so after this long without output.
    pub silence: Duration,
    /// Give up (exit 2) after this long without output.
    pub give_up: Duration,
}

/// How watching ended, for the exit status.
#[derive(Debug, PartialEq)]
pub enum Ending {
    /// Every run and record ok.
    AllOk,
    /// A run or a record reported failures.
    Failures,
    /// The console went silent past the limit, ended before the run record,
    /// or the deadline passed.
    Lost(String),
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

impl Ending {
    pub fn exit_code(&self) -> u8 {
        match self {
            Ending::AllOk => 0,
            Ending::Failures => 1,
            Ending::Lost(_) | Ending::Interrupted => 2,
        }
    }
}

/// Watch until `opts.until`, silence, or the source's end.
pub fn watch(opts: &Options) -> Result<(Ending, Vec<Document>), String> {
    let source = Source::open(&opts.source, opts.baud)?;
    if let Some(followed) = source.followed_path() {
        for (flag, path) in [("--log", &opts.log), ("--out", &opts.out)] {
            if let Some(p) = path {
                crate::workstation::output::check_not_an_input(p, flag, std::slice::from_ref(&followed))?;
            }
        }
    }
    let how = Follow {
        log: opts.log.clone(),
        out: opts.out.clone(),
        until: opts.until,
        silence: opts.silence,
        give_up: opts.give_up,
        deadline: None,
        prefix: String::new(),
        reopen_after: None,
        server_ended: None,
    };
    follow(source, &how, None)
}

/// Opens a console again (a BMC's serial-over-LAN session that ended or
/// stopped delivering): `bootmark lab`'s, never `bootmark watch`'s.
pub type Reopen<'a> = &'a mut dyn FnMut() -> Result<Source, String>;

/// How often a console is opened again within one follow, at most.
const MAX_REOPENS: u32 = 5;

/// How to follow an open console (`bootmark watch`'s flags, and what
/// `bootmark lab` adds for one step of a lab).
pub struct Follow<'a> {
    pub log: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub until: Until,
    pub silence: Duration,
    pub give_up: Duration,
    /// Give up at this long after the start, output or not.
    pub deadline: Option<Duration>,
    /// Put before every line shown (a lab step's name).
    pub prefix: String,
    /// With a `Reopen`: open the console again after this long without
    /// output (besides when it ends).
    pub reopen_after: Option<Duration>,
    /// Whether the server went off by itself (a lab's qemu server whose
    /// program ended), and why: once the console has settled after it
    /// (`source::SETTLED_AFTER`), the follow ends then rather than at its deadline.
    pub server_ended: Option<ServerEnded<'a>>,
}

/// Why a server went off by itself, once it has (`Follow::server_ended`).
pub type ServerEnded<'a> = &'a dyn Fn() -> Option<String>;

/// Follow `source` until `how.until`, silence, the deadline, Ctrl-C (when
/// the caller installed `run::interrupt`) or the source's end — which,
/// with `reopen`, is met by opening the console again (and so is silence
/// past `how.reopen_after`), at most MAX_REOPENS times.
pub fn follow(mut source: Source, how: &Follow, mut reopen: Option<Reopen>) -> Result<(Ending, Vec<Document>), String> {
    let open = |p: &Option<PathBuf>| {
        p.as_ref()
            .map(|p| {
                std::fs::File::options().create(true).append(true).open(p).map_err(|e| format!("{}: {e}", p.display()))
            })
            .transpose()
    };
    let mut w = Watcher::new(source.name(), open(&how.log)?, open(&how.out)?, how.prefix.clone());
    w.say(&format!("watching {} (Ctrl-C stops; the log and records so far are kept)", source.name()));
    let started = Instant::now();
    let mut last_data = Instant::now();
    let mut last_open = Instant::now();
    let mut reopens = 0;
    let mut silence_said = false;
    // When the server was first seen off by itself, and why (`Follow::server_ended`):
    // asked once, as the answer reads the end of the server's output again.
    let mut ended: Option<(Instant, String)> = None;
    loop {
        if let Some(end) = w.finished(how.until) {
            return Ok((end, w.into_documents()));
        }
        if crate::interrupt::interrupted() {
            w.flush_partial();
            return Ok((Ending::Interrupted, w.into_documents()));
        }
        if let Some(deadline) = how.deadline
            && started.elapsed() >= deadline
        {
            let why = format!("no run record within the deadline of {} s", deadline.as_secs());
            return Ok((Ending::Lost(w.guess(&why)), w.into_documents()));
        }
        match source.read(500).map_err(|e| format!("{}: {e}", source.name()))? {
            Chunk::Data(bytes) => {
                last_data = Instant::now();
                silence_said = false;
                w.feed(&bytes, how.until);
                if w.unterminated >= NOT_A_CONSOLE {
                    let why = format!("{} MiB without a single line end: this is not a console", NOT_A_CONSOLE >> 20);
                    return Ok((Ending::Lost(why), w.into_documents()));
                }
            }
            // The followed file holds another stream now. A line begun in the
            // last one is kept: after a copytruncate rotation the new file goes
            // on with its rest (a new boot's first line joins a cut one: noise).
            Chunk::Restart => {}
            Chunk::End => {
                w.flush_partial();
                // A server that went off by itself took its console with it
                // (QEMU's tcp server): its own words, not a reconnect's error.
                if let Some(why) = how.server_ended.and_then(|ended| ended()) {
                    return Ok((w.server_went_off(how.until, &why), w.into_documents()));
                }
                if let Some(again) = reopen.as_mut().filter(|_| reopens < MAX_REOPENS) {
                    w.say("!! the console ended: opening it again");
                    (source, last_open, reopens) = (again()?, Instant::now(), reopens + 1);
                    continue;
                }
                let end = w.finished(how.until).unwrap_or_else(|| Ending::Lost(w.guess("the console ended")));
                return Ok((end, w.into_documents()));
            }
            Chunk::Quiet => {
                // Ended, and the console has settled since: all it will hold, it has given.
                let settled = |since: Instant| since.elapsed() >= source::SETTLED_AFTER;
                if ended.is_none() {
                    ended = how.server_ended.and_then(|ended| ended()).map(|why| (Instant::now(), why));
                }
                if let Some((at, why)) = &ended
                    && settled(*at)
                    && settled(last_data)
                {
                    return Ok((w.server_went_off(how.until, why), w.into_documents()));
                }
                let quiet = last_data.elapsed();
                if let (Some(after), Some(again)) = (how.reopen_after, reopen.as_mut())
                    && quiet >= after
                    && last_open.elapsed() >= after
                    && reopens < MAX_REOPENS
                {
                    w.say(&format!("!! no output for {} s: opening the console again", quiet.as_secs()));
                    (source, last_open, reopens) = (again()?, Instant::now(), reopens + 1);
                    continue;
                }
                if quiet >= how.give_up {
                    let why = format!("no output for {} s", quiet.as_secs());
                    return Ok((Ending::Lost(w.guess(&why)), w.into_documents()));
                }
                if quiet >= how.silence && !silence_said {
                    silence_said = true;
                    w.say(&format!("!! no output for {} s: the machine may be stalled", quiet.as_secs()));
                }
            }
        }
    }
}

/// The longest console line kept whole: framed lines are under 200 bytes,
/// kernel lines under 1 KiB.
const MAX_LINE: usize = 64 << 10;

/// Bytes without any line end after which the source is given up on
/// (`watch - < /dev/zero`): no console is that quiet about lines.
const NOT_A_CONSOLE: u64 = 64 << 20;

/// What has been seen so far, and where it goes.
struct Watcher {
    source: String,
    /// Put before every line shown.
    prefix: String,
    log: Option<std::fs::File>,
    out: Option<std::fs::File>,
    partial: Vec<u8>,
    /// How much of `partial` is known to hold no line end.
    scanned: usize,
    /// Bytes dropped as lines longer than MAX_LINE, and whether that was said.
    dropped_bytes: u64,
    /// Bytes since the last line end.
    unterminated: u64,
    dropped_said: bool,
    asm: Assembler,
    collector: Collector<'static>,
    tty: bool,
    /// A heartbeat is on the status line (a terminal only).
    status_shown: bool,
    boots: u32,
    init_started: bool,
    panics: u32,
    runs: u32,
    failures: u32,
    /// The last run record's sequence is finished (or it had none).
    sequence_over: bool,
}

impl Watcher {
    fn new(source: String, log: Option<std::fs::File>, out: Option<std::fs::File>, prefix: String) -> Watcher {
        Watcher {
            source,
            prefix,
            log,
            out,
            partial: Vec::new(),
            scanned: 0,
            dropped_bytes: 0,
            unterminated: 0,
            dropped_said: false,
            asm: Assembler::default(),
            collector: Collector::new(None),
            tty: std::io::stdout().is_terminal(),
            status_shown: false,
            boots: 0,
            init_started: false,
            panics: 0,
            runs: 0,
            failures: 0,
            sequence_over: false,
        }
    }

    /// Bytes as they arrived: to the log at once, then line by line until
    /// `until` is met (what comes after the last run record is not shown).
    fn feed(&mut self, bytes: &[u8], until: Until) {
        if let Some(log) = self.log.as_mut() {
            let _ = log.write_all(bytes).and_then(|()| log.flush());
        }
        self.partial.extend_from_slice(bytes);
        self.unterminated = match memchr::memrchr(b'\n', bytes) {
            Some(i) => (bytes.len() - i - 1) as u64,
            None => self.unterminated + bytes.len() as u64,
        };
        while let Some(end) = memchr::memchr(b'\n', &self.partial[self.scanned..]).map(|i| self.scanned + i) {
            self.scanned = 0;
            if self.finished(until).is_some() {
                return;
            }
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            self.line(&String::from_utf8_lossy(&line));
        }
        // No line end in what is left: scan only what comes next, and drop
        // a "line" longer than any console line (binary noise, /dev/zero).
        self.scanned = self.partial.len();
        if self.partial.len() > MAX_LINE {
            self.dropped_bytes += self.partial.len() as u64;
            self.partial.clear();
            self.scanned = 0;
            if !self.dropped_said {
                self.dropped_said = true;
                self.say(&format!(
                    "!! over {} KiB without a line end: dropped (not a console? the log keeps every byte)",
                    MAX_LINE >> 10
                ));
            }
        }
    }

    fn flush_partial(&mut self) {
        if !self.partial.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.partial)).into_owned();
            self.line(&line);
        }
    }

    fn line(&mut self, raw: &str) {
        let line = raw.trim_end_matches(['\r', '\n']);
        if let Some(Ok(framed)) = framing::parse_line(line) {
            if let Fed::Record(_, _, bytes) = self.asm.feed(framed) {
                self.record(&bytes);
            }
            return;
        }
        if let Some(pos) = line.find(BANNER) {
            self.boots += 1;
            self.init_started = false;
            let version = line[pos + BANNER.len()..].split_whitespace().next().unwrap_or("?").to_string();
            self.say(&format!("== boot {}: Linux {version}", self.boots));
        } else if line.contains("starting as /init") {
            self.init_started = true;
            self.say(line.trim());
        } else if line.trim_start().starts_with("... ") {
            self.status(line.trim());
        } else if line.contains(PANIC) {
            self.panics += 1;
            self.say(&format!("!! {}", line.trim()));
        } else if [OOPS[0], OOPS[1], HUNG, "I/O error"].iter().any(|m| line.contains(m)) {
            self.say(&format!("!! {}", line.trim()));
        } else if line.starts_with("bootmark: ") {
            self.say(line);
        }
    }

    /// A reassembled document: verified by the collector, kept, written out.
    fn record(&mut self, bytes: &[u8]) {
        let before = self.collector.documents.len();
        self.collector.accept_bytes(bytes, &self.source, None);
        let Some(doc) = self.collector.documents.get(before).cloned() else {
            if let Some(p) = self.collector.problems.last() {
                let why = p.why.clone();
                self.say(&format!("!! a record could not be used: {why}"));
            }
            return;
        };
        if let Some(out) = self.out.as_mut() {
            let _ = out.write_all(bytes).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush());
        }
        match &doc {
            Document::Result(r) => {
                if r.status != crate::schema::record::Status::Ok {
                    self.failures += 1;
                }
                let status = r.status.name();
                self.say(&format!("  ✓ record {} verified ({}, {status})", r.seq, r.workload.name));
            }
            Document::Run(r) => {
                self.runs += 1;
                if r.status != crate::schema::record::Status::Ok || r.failed_records > 0 {
                    self.failures += 1;
                }
                let states = r.facts.get("sequence").and_then(|s| s.get("states")).and_then(|s| s.as_array());
                self.sequence_over = states.is_none_or(|s| {
                    s.iter().all(|st| !matches!(st.as_str(), Some("pending" | "Pending" | "attempted" | "Attempted")))
                });
                let error = r.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
                self.say(&format!(
                    "== run {} {}: {} records, {} not ok{error}",
                    r.run_id,
                    r.status.name(),
                    r.records,
                    r.failed_records
                ));
                // The run record comes last: a result it counts that has not
                // come by now was lost on the line.
                let missing = self.collector.missing_of(&r.run_id);
                if !missing.is_empty() {
                    self.failures += 1;
                    let seqs: Vec<String> = missing.iter().map(u32::to_string).collect();
                    self.say(&format!(
                        "!! run {}: record {} missing (damaged on the line; collect the stick too if there is one)",
                        r.run_id,
                        seqs.join(", ")
                    ));
                }
            }
        }
    }

    fn finished(&self, until: Until) -> Option<Ending> {
        let done = match until {
            Until::Runs(n) => self.runs >= n,
            Until::Sequence => self.runs > 0 && self.sequence_over,
        };
        done.then_some(if self.failures == 0 { Ending::AllOk } else { Ending::Failures })
    }

    /// Why the run was not seen to its end, from what the console showed.
    /// How a follow ends once the server went off by itself (`why`): as
    /// its records say if they are all there, else lost in the server's own
    /// words (with nothing printed, no guess about the console).
    fn server_went_off(&mut self, until: Until, why: &str) -> Ending {
        self.flush_partial();
        let said = if self.boots == 0 { format!("{why}; no kernel printed") } else { self.guess(why) };
        self.finished(until).unwrap_or(Ending::Lost(said))
    }

    fn guess(&self, what: &str) -> String {
        let why = if self.panics > 0 {
            "the kernel panicked (see the log)"
        } else if self.boots == 0 {
            "no kernel banner was seen: is console=ttyS0,115200 (or the port your console is on) on the kernel command line?"
        } else if !self.init_started {
            "the kernel never started bootmark as /init: no initramfs, or the disk/USB driver missing (see the log's last lines)"
        } else if self.runs == 0 {
            "bootmark started but its run record never came: a hang or a reset during the run"
        } else {
            "fewer runs than --until asked for"
        };
        format!("{what}: {why}")
    }

    fn into_documents(self) -> Vec<Document> {
        self.collector.collected.documents
    }

    /// A line for the person watching.
    fn say(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        if self.status_shown {
            let _ = write!(out, "\r\x1b[K");
            self.status_shown = false;
        }
        let _ = writeln!(out, "{}{text}", self.prefix);
        let _ = out.flush();
    }

    /// A heartbeat: redrawn in place on a terminal, a plain line otherwise.
    fn status(&mut self, text: &str) {
        if !self.tty {
            return self.say(text);
        }
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r\x1b[K{}{text}", self.prefix);
        let _ = out.flush();
        self.status_shown = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_parses_and_says_what_is_allowed() {
        assert_eq!("run".parse::<Until>(), Ok(Until::Runs(1)));
        assert_eq!("3".parse::<Until>(), Ok(Until::Runs(3)));
        assert_eq!("sequence".parse::<Until>(), Ok(Until::Sequence));
        assert!("0".parse::<Until>().unwrap_err().contains("use run, sequence"));
    }
}
