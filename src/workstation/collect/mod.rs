//! The collector: serial logs (raw, or inside LAVA job logs), stick directories and stick images in,
//! validated documents out, and a precise account of everything that could
//! not be used. Nothing here touches /proc or devices.
//!
//! A document is a `bootmark.result/1` record or a `bootmark.run/1` record.
//! From serial and from the stick's journal, only documents whose SHA-256
//! matched are accepted; from legacy `.jsonl` files, only lines that parse
//! as JSON with a known schema. The same
//! document seen twice (serial and stick) is kept once; two different
//! documents under the same (schema, run_id, seq) are both reported.

pub mod lava;
pub mod serial;
pub mod stick;

pub use crate::schema::record::Document;
use crate::schema::record::{Record, RunRecord, SCHEMA, begins_with_schema};
use crate::workstation::glance::Glance;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Something that could not be used, and exactly where.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Problem {
    pub file: String,
    /// Line number in a log (1-based), when it applies.
    pub line: Option<u64>,
    pub run_id: Option<String>,
    pub seq: Option<u32>,
    pub why: String,
}

impl Problem {
    /// A boot's planned runs that never ran: that boot's own news (it
    /// stopped early and said why), not damage to the input.
    pub fn is_not_run(&self) -> bool {
        self.why.starts_with(NOT_RUN)
    }
}

/// A boot seen in a serial log, and what it printed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BootSeen {
    pub file: String,
    /// Line of the `Linux version` banner (0 when the capture starts mid-boot).
    pub line: u64,
    pub kernel: Option<String>,
    pub documents: usize,
    pub panics: usize,
    pub oopses: usize,
    pub hung_tasks: usize,
    /// A boot that printed no complete document: never finished, or crashed.
    pub no_results: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct Collected {
    /// Accepted documents, in the order first seen.
    pub documents: Vec<Document>,
    pub problems: Vec<Problem>,
    /// What was damaged but cost nothing: a framed line cut, or a copy of a
    /// record left incomplete, where an intact copy of the same record was
    /// accepted from elsewhere (the boot repeated in the capture, the stick).
    pub notes: Vec<Problem>,
    pub boots: Vec<BootSeen>,
    /// Documents seen more than once with identical content.
    pub duplicates: usize,
    /// Damaged framed lines past the first [`DAMAGED_LINES_KEPT`]: counted,
    /// not listed (a noisy line or a hostile file can hold millions).
    pub damaged_lines_not_listed: u64,
}

/// How far (s) a result may start outside its run record's span: both
/// clocks are read on the same machine, so only rounding separates them.
const CLOCK_SLACK_S: f64 = 2.0;

/// How a boot's planned runs that never ran are named: the boot stopped
/// early (and said why), nothing was lost on the way.
pub const NOT_RUN: &str = "not run:";

/// How many damaged framed lines are listed one by one.
pub const DAMAGED_LINES_KEPT: usize = 1000;

/// A document's identity (schema, run id, seq), hashed to 128 bits: a
/// fleet's million records are deduplicated in tens of MB, and two
/// different identities colliding is not a practical concern.
type Key = u128;

fn key(schema: &str, run_id: &str, seq: u32) -> Key {
    use std::hash::{Hash, Hasher};
    let half = |salt: u64| {
        let mut h = std::hash::DefaultHasher::new();
        (salt, schema, run_id, seq).hash(&mut h);
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

impl Collected {
    /// The result records accepted, in the order first seen.
    pub fn results(&self) -> impl Iterator<Item = &Record> {
        self.documents.iter().filter_map(Document::result)
    }

    /// The run records accepted (one per boot that finished), in the order first seen.
    pub fn runs(&self) -> impl Iterator<Item = &RunRecord> {
        self.documents.iter().filter_map(Document::run)
    }
}

/// Collecting in progress: what was accepted so far, a digest of every
/// document seen (for deduplication without keeping it), and where accepted
/// documents go: memory, or a stream or consumer instead — so collecting a
/// console server's multi-gigabyte capture needs memory for keys, not records.
pub struct Collector<'a> {
    pub collected: Collected,
    /// Each accepted document's identity → (a digest of its bytes, where it was first read: an index into `files`).
    seen: HashMap<Key, (u64, usize)>,
    /// Problems (by index) that are a damaged copy of a record, with the
    /// record (run id, seq) they name when they can: notes instead when that
    /// record is accepted intact, or when nothing at all is missing.
    damaged_copies: Vec<(usize, Option<(String, u32)>)>,
    destination: Destination<'a>,
    /// Documents accepted (kept in memory or streamed).
    pub accepted: usize,
    /// Each boot's documents, for the completeness check, by run id.
    runs: HashMap<String, RunSeen>,
    /// The inputs' names, which `RunSeen` points into (one copy per input,
    /// not per boot: a fleet's million records come from a few files).
    files: Vec<String>,
    /// Whether the input being read is one a boot writes (a serial log, a
    /// stick's journal), whose boots end with a run record; `.jsonl` files
    /// from `bootmark run` have none.
    pub from_boot: bool,
    /// Damaged framed lines seen (listed or only counted).
    damaged_lines: usize,
}

/// What was seen of one boot: its result records' seqs and its run record's count.
#[derive(Debug, Default)]
struct RunSeen {
    /// Where its first document was read: an index into `Collector::files`.
    file: usize,
    /// The result records' seqs, in the order seen (sorted when judged).
    seqs: Vec<u32>,
    /// The run record's `records`: how many result records the boot emitted.
    emitted: Option<u32>,
    /// The run record's start and end (its own clock).
    clock: Option<(f64, f64)>,
    /// The result records that started first and last: (seq, start).
    earliest: Option<(u32, f64)>,
    latest: Option<(u32, f64)>,
    from_boot: bool,
    /// The run record's planned runs (its `plan` fact, less the runs of
    /// variants the kernel could not apply), and its error if it stopped early.
    owed: Option<u32>,
    error: Option<String>,
}

/// The workload runs a boot's plan owed, from its run record's `plan` fact
/// (absent before images recorded it, or when the plan never loaded).
fn runs_owed(r: &RunRecord) -> Option<u32> {
    let plan = r.facts.get("plan")?;
    let runs = plan.get("runs")?.as_u64()?;
    let skipped = plan.get("runs_skipped").and_then(|v| v.as_u64()).unwrap_or(0);
    u32::try_from(runs.saturating_sub(skipped)).ok()
}

/// Where accepted documents go.
enum Destination<'a> {
    Memory,
    /// Their JSON bytes as lines (`collect --out`).
    Write(&'a mut dyn std::io::Write),
    /// Result records at a glance, to a consumer (`report` streams them into
    /// its groups); an error it returns is a problem of that record. Run
    /// records are deduplicated, not handed on.
    Glance(&'a mut dyn FnMut(&Glance) -> Result<(), String>),
}

/// A document as read: whole, or (for `Destination::Glance`) at a glance.
/// One lives at a time, on the stack: boxing the glance would cost an
/// allocation per record.
#[allow(clippy::large_enum_variant)]
enum Read<'b> {
    Whole(Document),
    Glance(Glance<'b>),
}

impl Read<'_> {
    fn key(&self) -> Key {
        match self {
            Read::Whole(d) => key(d.schema(), d.run_id(), d.seq()),
            Read::Glance(g) => key(&g.schema, &g.run_id, g.seq),
        }
    }

    fn run_id(&self) -> &str {
        match self {
            Read::Whole(d) => d.run_id(),
            Read::Glance(g) => &g.run_id,
        }
    }

    fn seq(&self) -> u32 {
        match self {
            Read::Whole(d) => d.seq(),
            Read::Glance(g) => g.seq,
        }
    }
}

impl std::ops::Deref for Collector<'_> {
    type Target = Collected;
    fn deref(&self) -> &Collected {
        &self.collected
    }
}

impl std::ops::DerefMut for Collector<'_> {
    fn deref_mut(&mut self) -> &mut Collected {
        &mut self.collected
    }
}

impl<'a> Collector<'a> {
    pub fn new(stream: Option<&'a mut dyn std::io::Write>) -> Collector<'a> {
        let destination = match stream {
            Some(w) => Destination::Write(w),
            None => Destination::Memory,
        };
        Collector {
            collected: Collected::default(),
            seen: HashMap::new(),
            destination,
            damaged_copies: Vec::new(),
            accepted: 0,
            runs: Default::default(),
            files: Vec::new(),
            from_boot: true,
            damaged_lines: 0,
        }
    }

    /// Each accepted result record goes to `each`, at a glance, instead of memory.
    pub fn glancing(each: &'a mut dyn FnMut(&Glance) -> Result<(), String>) -> Collector<'a> {
        Collector {
            collected: Collected::default(),
            seen: HashMap::new(),
            destination: Destination::Glance(each),
            damaged_copies: Vec::new(),
            accepted: 0,
            runs: Default::default(),
            files: Vec::new(),
            from_boot: true,
            damaged_lines: 0,
        }
    }

    /// Add a document given as its JSON bytes (as recovered from a log or a
    /// stick file), deduplicating against earlier sources. Every document is
    /// read as its typed record (a record that does not fit its schema is a
    /// problem, not a row with holes) — or, for a glancing consumer, as a
    /// [`Glance`]; streaming writes the bytes as they are.
    pub fn accept_bytes(&mut self, bytes: &[u8], file: &str, line: Option<u64>) {
        let bad = |why: String| Problem { file: file.into(), line, run_id: None, seq: None, why };
        let glancing = matches!(self.destination, Destination::Glance(_)) && begins_with_schema(bytes, SCHEMA);
        let read = match glancing {
            true => Glance::from_json(bytes).map(Read::Glance),
            false => Document::from_json(bytes).map(Read::Whole),
        };
        let read = match read {
            Ok(r) => r,
            Err(why) => return self.reject(bytes, bad(why)),
        };
        // Verified bytes can still hold figures that cannot be true: they
        // are a problem here, for every command alike, never a table row.
        let implausible = match &read {
            Read::Glance(g) => g.implausible(),
            Read::Whole(Document::Result(r)) => {
                Glance::of(r).implausible().or_else(|| crate::workstation::glance::timeline_implausible(&r.timeline))
            }
            Read::Whole(Document::Run(_)) => None,
        };
        if let Some(why) = implausible {
            return self.reject(bytes, bad(format!("implausible record: {why}")));
        }
        // Only to tell identical copies from different ones: a fast 64-bit hash
        // (SipHash with fixed keys) is enough, the SHA-256 was checked already.
        let digest = {
            use std::hash::{Hash, Hasher};
            let mut h = std::hash::DefaultHasher::new();
            bytes.hash(&mut h);
            h.finish()
        };
        let k = read.key();
        match self.seen.get(&k) {
            Some((d, _)) if *d == digest => self.collected.duplicates += 1,
            Some((_, first)) => {
                let first = self.files[*first].clone();
                self.collected.problems.push(Problem {
                    file: file.into(),
                    line,
                    run_id: Some(read.run_id().to_string()),
                    seq: Some(read.seq()),
                    why: format!(
                        "this copy differs from the one read first, from {first}, under the same run id and seq (both verified): the report uses {first}'s"
                    ),
                })
            }
            None => {
                let first = self.file_index(file);
                self.seen.insert(k, (digest, first));
                self.accepted += 1;
                self.note_for_completeness(&read, file);
                let handed = match (&mut self.destination, read) {
                    (Destination::Write(out), _) => out
                        .write_all(bytes)
                        .and_then(|()| out.write_all(b"\n"))
                        .map_err(|e| format!("cannot write the output: {e}")),
                    (Destination::Glance(each), Read::Glance(g)) => each(&g),
                    (Destination::Glance(each), Read::Whole(Document::Result(r))) => each(&Glance::of(&r)),
                    (Destination::Glance(_), Read::Whole(Document::Run(_))) => Ok(()),
                    (Destination::Memory, Read::Whole(doc)) => {
                        self.collected.documents.push(doc);
                        Ok(())
                    }
                    (Destination::Memory, Read::Glance(_)) => unreachable!("only a glancing collector glances"),
                };
                if let Err(why) = handed {
                    self.collected.problems.push(bad(why));
                }
            }
        }
    }

    /// A framed line that could not be used: listed while there are few,
    /// counted past [`DAMAGED_LINES_KEPT`]. What it costs a record is
    /// named anyway, by the record (incomplete, missing).
    pub fn damaged_line(&mut self, problem: Problem, claims: Option<(String, u32)>) {
        if self.damaged_lines < DAMAGED_LINES_KEPT {
            self.damaged_copy(problem, claims);
        } else {
            self.collected.damaged_lines_not_listed += 1;
        }
        self.damaged_lines += 1;
    }

    /// A problem that is a damaged copy of the record `claims` names (a
    /// damaged line's own words, or an incomplete copy's): it becomes a note
    /// if an intact copy of that record is accepted by the end.
    pub fn damaged_copy(&mut self, problem: Problem, claims: Option<(String, u32)>) {
        self.damaged_copies.push((self.collected.problems.len(), claims));
        self.collected.problems.push(problem);
    }

    /// Damaged copies that cost nothing: notes, not problems. A copy of a
    /// record accepted intact from elsewhere; and, when nothing else is a
    /// problem — every result each boot's run record counts was read
    /// verified, and every boot seen has its run record —, every damaged
    /// line, even one whose record cannot be read from it (cut inside its
    /// run id). What a damaged line claims is a hint, never trusted further:
    /// a record it wrongly names is judged by itself.
    fn damaged_copies_to_notes(&mut self) {
        let mut intact_in: HashMap<usize, String> = HashMap::new();
        for (i, claim) in &self.damaged_copies {
            let kinds = [SCHEMA, crate::schema::record::RUN_SCHEMA];
            let first = claim
                .as_ref()
                .and_then(|(run_id, seq)| kinds.iter().find_map(|k| self.seen.get(&key(k, run_id, *seq))));
            if let Some((_, first)) = first {
                intact_in.insert(*i, format!("an intact copy of this record was read from {}", self.files[*first]));
            }
        }
        let damaged: std::collections::HashSet<usize> = self.damaged_copies.iter().map(|(i, _)| *i).collect();
        let only_damage =
            (0..self.collected.problems.len()).all(|i| damaged.contains(&i) || intact_in.contains_key(&i));
        let problems = std::mem::take(&mut self.collected.problems);
        for (i, mut p) in problems.into_iter().enumerate() {
            let cost_nothing = match intact_in.remove(&i) {
                Some(why) => Some(why),
                None if only_damage && damaged.contains(&i) => {
                    Some("every result each boot's run record counts was read intact".to_string())
                }
                None => None,
            };
            match cost_nothing {
                Some(why) => {
                    p.why += &format!("; {why}: nothing lost");
                    self.collected.notes.push(p);
                }
                None => self.collected.problems.push(p),
            }
        }
        self.damaged_copies.clear();
    }

    /// A verified document that does not fit its schema: named by its run
    /// id and seq when those can be read, and counted as seen (rejected
    /// here, not also missing).
    fn reject(&mut self, bytes: &[u8], mut problem: Problem) {
        #[derive(serde::Deserialize)]
        struct Head {
            run_id: String,
            seq: u32,
        }
        if let Ok(head) = serde_json::from_slice::<Head>(bytes) {
            let file = self.file_index(&problem.file);
            let seen = self.runs.entry(head.run_id.clone()).or_insert_with(|| RunSeen { file, ..RunSeen::default() });
            seen.seqs.push(head.seq);
            (problem.run_id, problem.seq) = (Some(head.run_id), Some(head.seq));
        }
        self.collected.problems.push(problem);
    }

    /// `file`'s index in `files`, adding it when it is new (the same input
    /// names every document it gives, one after another).
    fn file_index(&mut self, file: &str) -> usize {
        if self.files.last().is_none_or(|f| f != file) {
            self.files.push(file.to_string());
        }
        self.files.len() - 1
    }

    fn note_for_completeness(&mut self, read: &Read, file: &str) {
        let file = self.file_index(file);
        let seen = match self.runs.get_mut(read.run_id()) {
            Some(seen) => seen,
            None => {
                self.runs.entry(read.run_id().to_string()).or_insert_with(|| RunSeen { file, ..RunSeen::default() })
            }
        };
        seen.from_boot |= self.from_boot;
        let started = match read {
            Read::Whole(Document::Run(r)) => {
                seen.emitted = Some(r.records);
                seen.clock = Some((r.started_unix_s, r.finished_unix_s));
                seen.owed = runs_owed(r);
                seen.error = r.error.clone();
                return;
            }
            Read::Whole(Document::Result(r)) => r.started_unix_s,
            Read::Glance(g) => g.started_unix_s,
        };
        seen.seqs.push(read.seq());
        let (seq, earliest, latest) = (read.seq(), &mut seen.earliest, &mut seen.latest);
        if earliest.is_none_or(|(_, t)| started < t) {
            *earliest = Some((seq, started));
        }
        if latest.is_none_or(|(_, t)| started > t) {
            *latest = Some((seq, started));
        }
    }

    /// Result records of `run_id` its run record counts but no input gave.
    pub fn missing_of(&self, run_id: &str) -> Vec<u32> {
        let Some(seen) = self.runs.get(run_id) else { return Vec::new() };
        let mut seqs = seen.seqs.clone();
        seqs.sort_unstable();
        (0..seen.emitted.unwrap_or(0)).filter(|s| seqs.binary_search(s).is_err()).collect()
    }

    /// After the last input: each result record a run record counts but no
    /// input gave, and each boot without its run record, as problems — a
    /// lost result is named, never silently absent.
    pub fn check_complete(&mut self) {
        // A boot known only from its damaged records (a capture cut before
        // any of them verified) still lacks its run record.
        let unseen: Vec<(String, String)> = self
            .collected
            .problems
            .iter()
            .filter_map(|p| {
                p.run_id.as_ref().filter(|r| !self.runs.contains_key(*r)).map(|r| (r.clone(), p.file.clone()))
            })
            .collect();
        for (run_id, file) in unseen {
            let file = self.file_index(&file);
            self.runs.entry(run_id).or_insert(RunSeen { file, from_boot: true, ..RunSeen::default() });
        }
        let mut problems = Vec::new();
        let mut run_ids: Vec<&String> = self.runs.keys().collect();
        run_ids.sort(); // run ids begin with their boot's time: problems in boot order
        for run_id in run_ids {
            let seen = &self.runs[run_id];
            let problem = |seq: Option<u32>, why: String| Problem {
                file: self.files[seen.file].clone(),
                line: None,
                run_id: Some(run_id.clone()),
                seq,
                why,
            };
            // A result started outside its boot's own clock was not measured then.
            if let Some((from, to)) = seen.clock {
                let latest = seen.latest.filter(|l| Some(l.0) != seen.earliest.map(|e| e.0));
                for (seq, started) in [seen.earliest, latest].into_iter().flatten() {
                    if started < from - CLOCK_SLACK_S || started > to + CLOCK_SLACK_S {
                        problems.push(problem(Some(seq), format!(
                            "implausible record: it started at {started}, outside its boot's own clock ({from} to {to})"
                        )));
                    }
                }
            }
            if let (Some(owed), Some(n)) = (seen.owed, seen.emitted)
                && n < owed
            {
                let why = seen.error.as_deref().map(|e| format!(" (the boot's error: {e})")).unwrap_or_default();
                problems.push(problem(None, format!(
                    "{NOT_RUN} the boot's plan had {owed} workload runs and it emitted {n} result records, so {} planned runs never ran{why}",
                    owed - n
                )));
            }
            match seen.emitted {
                Some(n) => problems.extend(self.missing_of(run_id).into_iter().map(|seq| {
                    problem(Some(seq), format!(
                        "missing: the boot's run record says it emitted {n} result records, and no input holds a verified copy of this one (a damaged line with no other copy? collect the stick too)"
                    ))
                })),
                None if seen.from_boot => problems.push(problem(None, format!(
                    "no run record for this boot ({} result records seen): the capture ends before the boot finished, or its run record was damaged, so its records cannot be known to be complete",
                    seen.seqs.iter().collect::<std::collections::BTreeSet<_>>().len()
                ))),
                None => {}
            }
        }
        self.collected.problems.extend(problems);
        self.damaged_copies_to_notes();
    }

    /// Read one input of any kind; a failure to read it is a problem, not an abort.
    pub fn read(&mut self, path: &Path) {
        let before = (self.accepted, self.collected.problems.len(), self.collected.boots.len());
        let why = match self.read_input(path) {
            Err(e) => format!("cannot read: {e}"),
            // A log that showed nothing of a boot is not a quiet success.
            Ok(true) if before == (self.accepted, self.collected.problems.len(), self.collected.boots.len()) => {
                "no bootmark output in it: no framed record and no kernel banner (a serial log of a bootmark boot, a stick, or records from collect were expected)".into()
            }
            Ok(_) => return,
        };
        let file = if path == Path::new(STDIN) { "standard input".into() } else { path.display().to_string() };
        self.collected.problems.push(Problem { file, line: None, run_id: None, seq: None, why });
    }

    /// Read one input; true when it was read as a console log.
    fn read_input(&mut self, path: &Path) -> std::io::Result<bool> {
        if path == Path::new(STDIN) {
            return self.read_stream(std::io::stdin().lock(), "standard input").map(|()| true);
        }
        use std::os::unix::fs::FileTypeExt;
        let kind = std::fs::metadata(path)?.file_type();
        if kind.is_char_device() {
            return Err(std::io::Error::other(
                "a character device (a terminal, a serial port, /dev/zero) has no end to collect: follow a live console with `bootmark watch`, or collect the log it wrote",
            ));
        }
        if kind.is_fifo() || kind.is_socket() {
            // One handle: a pipe read to sniff it cannot be read again.
            return self.read_stream(std::fs::File::open(path)?, &path.display().to_string()).map(|()| true);
        }
        match classify(path)? {
            Input::SerialLog(p) => serial::collect_log(&p, self).map(|()| true),
            Input::LavaLog(p) => std::fs::File::open(&p)
                .and_then(|f| {
                    let console = lava::ConsoleText::new(std::io::BufReader::new(f));
                    serial::collect_reader(console, &p.display().to_string(), self)
                })
                .map(|()| true),
            Input::StickDir(p) => stick::collect_dir(&p, self).map(|()| false),
            Input::StickImage(p) => stick::collect_image(&p, self).map(|()| false),
        }
    }

    /// A stream (standard input, a pipe, a FIFO): records as JSON lines (from
    /// `collect`), a LAVA job log or a serial log, told apart by the first
    /// bytes, which stay in the buffer.
    fn read_stream(&mut self, input: impl std::io::Read, file: &str) -> std::io::Result<()> {
        use std::io::BufRead;
        let mut input = std::io::BufReader::with_capacity(1 << 16, input);
        let head = input.fill_buf()?;
        if crate::schema::journal::is_journal(head) {
            return Err(std::io::Error::other(
                "a stick's journal cannot be read from a pipe: give the file or the stick",
            ));
        }
        if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
            stick::collect_lines(input, file, self)
        } else if lava::is_lava_log(head) {
            serial::collect_reader(lava::ConsoleText::new(input), file, self)
        } else {
            serial::collect_reader(input, file, self)
        }
    }
}

/// The input name that stands for standard input.
pub const STDIN: &str = "-";

/// What kind of input a path is.
pub enum Input {
    SerialLog(PathBuf),
    /// A LAVA job log (the console inside YAML mappings).
    LavaLog(PathBuf),
    StickDir(PathBuf),
    StickImage(PathBuf),
}

/// Guess: a directory is a stick (or its bootmark/results); a file starting
/// with an MBR or FAT boot sector is a stick image; anything else is a log.
pub fn classify(path: &Path) -> std::io::Result<Input> {
    if path.is_dir() {
        return Ok(Input::StickDir(path.to_path_buf()));
    }
    let mut head = [0u8; 512];
    use std::io::Read;
    let n = std::fs::File::open(path)?.read(&mut head)?;
    let jsonl = path.extension().is_some_and(|e| e == "jsonl") || crate::schema::journal::is_journal(&head[..n]);
    if !jsonl && n == 512 && head[510] == 0x55 && head[511] == 0xaa {
        return Ok(Input::StickImage(path.to_path_buf()));
    }
    if jsonl {
        return Ok(Input::StickDir(path.to_path_buf()));
    }
    Ok(if lava::is_lava_log(&head[..n]) {
        Input::LavaLog(path.to_path_buf())
    } else {
        Input::SerialLog(path.to_path_buf())
    })
}

/// Collect from every input, in order, keeping the documents in memory.
pub fn collect(inputs: &[PathBuf]) -> Collected {
    let mut c = Collector::new(None);
    for path in inputs {
        c.read(path);
    }
    c.check_complete();
    c.collected
}

/// Collect from every input, handing each accepted result record to `each`,
/// at a glance, as soon as it is complete; returns the account without
/// documents. An error from `each` becomes a problem of that record.
pub fn collect_glancing(inputs: &[PathBuf], each: &mut dyn FnMut(&Glance) -> Result<(), String>) -> Collected {
    let mut c = Collector::glancing(each);
    for path in inputs {
        c.read(path);
    }
    c.check_complete();
    c.collected
}

/// Collect from every input, writing each accepted document to `out` as a
/// JSON line as soon as it is complete; returns the account without documents.
pub fn collect_to(inputs: &[PathBuf], out: &mut dyn std::io::Write) -> (Collected, usize) {
    let mut c = Collector::new(Some(out));
    for path in inputs {
        c.read(path);
    }
    c.check_complete();
    let accepted = c.accepted;
    (c.collected, accepted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_record(facts: serde_json::Value) -> RunRecord {
        let mut r: RunRecord = serde_json::from_value(serde_json::json!({
            "schema": crate::schema::record::RUN_SCHEMA, "run_id": "r", "seq": 2, "status": "ok", "error": null,
            "started_unix_s": 0.0, "finished_unix_s": 1.0, "bootmark": {"version": "0"},
            "kernel": crate::schema::record::Kernel::default(), "host": crate::schema::record::Host::default(),
            "records": 2, "failed_records": 0, "facts": {}, "kernel_log": crate::schema::record::KernelLog::default(),
        }))
        .unwrap();
        r.facts = facts.as_object().unwrap().clone();
        r
    }

    #[test]
    fn the_runs_owed_are_the_plans_less_the_variants_the_kernel_could_not_apply() {
        assert_eq!(runs_owed(&run_record(serde_json::json!({}))), None, "an older image: nothing to check");
        assert_eq!(runs_owed(&run_record(serde_json::json!({"plan": {"name": "quick", "runs": 6}}))), Some(6));
        let swept = serde_json::json!({"plan": {"name": "sweep", "runs": 12, "runs_skipped": 6}});
        assert_eq!(runs_owed(&run_record(swept)), Some(6));
    }
}
