//! The `bootmark` command: flag parsing and wiring only.

// The old-kernel bans (image/clippy.toml) are for code that runs as PID 1.
// Here that is `init::main()`, which never returns; the rest is the CLI a
// user runs from a shell, where a failed print may end the process.
#![allow(clippy::disallowed_macros)]

use bootmark::plan::{self, Plan};
use bootmark::run::{self, Options, RunError};
use bootmark::sink::{JsonlFile, Sink, Stdout};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Run the same disk benchmark under many kernels and compare them.
///
/// bootmark measures how a kernel handles big writes: throughput, the latency
/// of every write() and read(), and how unresponsive the machine gets while
/// it writes (a probe lists a directory and reads a file every 100 ms).
#[derive(Parser)]
#[command(name = "bootmark", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[cfg(feature = "workstation")]
#[derive(Subcommand)]
enum LabCommand {
    /// Check a lab file (servers, credentials, the image's entries) and print every step a
    /// run would take, with its deadline; nothing is powered, booted or written.
    #[command(after_help = "Example:
  bootmark lab plan rack3.toml")]
    Plan {
        /// The lab file (TOML; see docs/lab.md).
        lab: PathBuf,
    },
    /// Run every step not yet done, then print the report of all steps' records. A step
    /// without its run record by its deadline is powered off and recorded as failed; the
    /// lab goes on. Ctrl-C leaves the state whole: run this again to resume.
    ///
    /// Exit status: 0 every step ok, 1 a step failed or reported failures, 2 the lab
    /// could not run (a bad lab file, a BMC that does not answer) or was interrupted.
    #[command(after_help = "Example:
  bootmark lab run rack3.toml      # again after Ctrl-C or a crash: resumes")]
    Run {
        /// The lab file (TOML; see docs/lab.md).
        lab: PathBuf,
    },
    /// What a lab has done so far: a line per step (its outcome, log and why it failed).
    Status {
        /// The lab file (TOML; see docs/lab.md).
        lab: PathBuf,
    },
}

#[cfg(feature = "workstation")]
#[derive(Subcommand)]
enum BisectCommand {
    /// Find the first candidate of a ladder (the image's entries from the good end to the
    /// bad one) whose metric is like the bad end's, booting each step on the lab's servers
    /// until a sequential test across boots decides it.
    ///
    /// The ends are measured first (at least 4 boots each) and must be told apart: a
    /// Mann–Whitney test across boots (p < 0.05), medians at least two pooled standard
    /// deviations apart and beyond the ends' A/A noise floor; otherwise the bisect stops and
    /// says so with their numbers. Each step then boots its candidate until Wald's
    /// sequential test says "like the good end" or "like the bad end" (α = β = 1 %), or
    /// calls it unsure at --cap boots; a boot that fails or hangs counts as none (skip).
    /// With several servers the ends boot side by side and a round tests as many candidates
    /// at once; their hardware (from their records) must agree. The state is saved after
    /// every boot: Ctrl-C, then the same command, resumes. docs/bisect.md explains.
    ///
    /// Exit status: 0 the first bad candidate found, 1 the ends not distinct or candidates
    /// left unsure, 2 bad flags, a lab that could not run, or interrupted.
    #[command(after_help = "Example:
  bootmark bisect run rack3.toml --metric seqwrite.read_p50_ms --good k0 --bad k5")]
    Run {
        /// The lab file (TOML; see docs/lab.md): the image and the servers.
        lab: PathBuf,
        /// What to measure, WORKLOAD.FIGURE: seqwrite.read_p50_ms, manyfiles.real_s,
        /// seqwrite.stalls_over_1s… (a wrong name lists the figures).
        #[arg(long)]
        metric: String,
        /// The image's entry known good.
        #[arg(long)]
        good: String,
        /// The image's entry known bad.
        #[arg(long)]
        bad: String,
        /// The candidates in order, from --good to --bad (default: the image's entries between
        /// them, variants' entries left out).
        #[arg(long, value_delimiter = ',', value_name = "ENTRY,...")]
        ladder: Option<Vec<String>>,
        #[command(flatten)]
        session: BisectSession,
    },
    /// Find the smallest set of settings that makes one kernel bad: of the vm sysctls and
    /// target-queue settings that differ between two sets (--good, --bad), which ones,
    /// booting --entry with every difference given on its command line (bootmark.set=).
    ///
    /// The ends are that entry with all the good values and with all the bad ones, measured
    /// and told apart as `bisect run` does; then delta debugging (ddmin) halves the
    /// differences, each subset booted until the sequential test decides it. A subset left
    /// unsure counts as not bad and is listed with the answer. A set of settings is a
    /// `bootmark capture` output or records (a records file or console log) of a boot under
    /// the settings as found: another kernel's, say. The lab's servers pass the settings to
    /// the boot through its PXE or ISO menu, or `{set}` in a `[server.qemu]` command.
    ///
    /// Exit status: 0 the smallest bad set found, 1 the ends not distinct or subsets left
    /// unsure, 2 bad flags, a lab that could not run, or interrupted.
    #[command(after_help = "Example:
  bootmark bisect settings rack3.toml --metric seqwrite.read_p50_ms --entry k2 \\
      --good k0-records.jsonl --bad k2-records.jsonl")]
    Settings {
        /// The lab file (TOML; see docs/lab.md): the image and the servers.
        lab: PathBuf,
        /// What to measure, WORKLOAD.FIGURE (as `bisect run`).
        #[arg(long)]
        metric: String,
        /// The image's entry every step boots (the kernel that is bad with the bad settings).
        #[arg(long, value_name = "ENTRY")]
        entry: String,
        /// The good settings: a `bootmark capture` output or records of a boot under them.
        #[arg(long, value_name = "FILE")]
        good: PathBuf,
        /// The bad settings, likewise.
        #[arg(long, value_name = "FILE")]
        bad: PathBuf,
        #[command(flatten)]
        session: BisectSession,
    },
    /// Find the first bad commit of a git range of your kernel tree: each commit a step boots
    /// is built into an image of its own by --build, then booted on the lab's servers and
    /// decided as `bisect run` decides a ladder's step.
    ///
    /// The candidates are the commits on --bad's first-parent line after --good (a merge is
    /// one candidate). They are built one at a time in a checkout of the bisect's own (a
    /// `git clone --shared` of --tree, which stays as it is), moved from commit to commit so
    /// that a build going by file times rebuilds only what changed; each image is kept, and a
    /// commit whose build fails is a skip. --build runs under `sh -c` in the current directory
    /// with {tree} the checkout, {image} the directory to write the image to, {commit} the id.
    /// A `[server.qemu]` command boots the step's image through `{image}`. At the end the
    /// steps are written as `git bisect` marks them (DIR/git-bisect.log): `git bisect replay`
    /// in your tree reaches the same commit.
    ///
    /// Exit status as `bisect run`.
    #[command(after_help = "Example (from bootmark's checkout):
  bootmark bisect git rack3.toml --metric seqwrite.read_p50_ms --tree ~/linux \
      --good v6.1 --bad v6.2 --build 'cargo xtask image --kernel-src {tree} \
      --kernel-src-config kernel-configs/6.1 --target LABEL=SCRATCH --out {image}'")]
    Git {
        /// The lab file (TOML; see docs/lab.md): the servers (its image is not booted).
        lab: PathBuf,
        /// What to measure, WORKLOAD.FIGURE (as `bisect run`).
        #[arg(long)]
        metric: String,
        /// Your kernel's git tree (left as it is).
        #[arg(long, value_name = "DIR")]
        tree: PathBuf,
        /// The commit known good (a tag, branch or id).
        #[arg(long, value_name = "REV")]
        good: String,
        /// The commit known bad, a descendant of --good.
        #[arg(long, value_name = "REV")]
        bad: String,
        /// The command that builds one commit's image: {tree}, {image}, {commit} filled in.
        #[arg(long, value_name = "COMMAND")]
        build: String,
        /// The entry of each commit's image to boot.
        #[arg(long, value_name = "ENTRY", default_value = "k0")]
        entry: String,
        #[command(flatten)]
        session: BisectSession,
    },
    /// Where a bisect is: every candidate's boots and values, what each step said, and the
    /// answer or the next boots. Boots nothing.
    Status {
        /// The lab file (TOML; see docs/lab.md).
        lab: PathBuf,
        /// The bisect's directory, if not the default.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// How a bisect boots, the same for every kind.
#[cfg(feature = "workstation")]
#[derive(clap::Args)]
struct BisectSession {
    /// Boot only this server of the lab (repeatable; default: all of them).
    #[arg(long = "server", value_name = "NAME")]
    servers: Vec<String>,
    /// The most boots a step gets before it is called unsure (default 12; given again when
    /// a bisect is resumed, it applies from then on).
    #[arg(long)]
    cap: Option<usize>,
    /// The bisect's directory: its state and every boot's log and records (default:
    /// `bisect` in the lab's state directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// A step's boot with no run record by its deadline (a hang) counts as one like the
    /// bad end's worst, not as a skip: for bisecting a kernel that hangs the machine.
    #[arg(long)]
    hang_is_bad: bool,
}

#[cfg(feature = "workstation")]
impl BisectSession {
    fn asked(self, metric: String, over: bootmark::bisect::command::Over) -> bootmark::bisect::command::Asked {
        let BisectSession { servers, cap, dir, hang_is_bad } = self;
        bootmark::bisect::command::Asked { metric, over, servers, cap, dir, hang_is_bad }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run a plan of workloads in a directory and write one JSON record per workload run.
    ///
    /// Everything is created inside DIR/bootmark-<run-id>/ and removed at the
    /// end (or on Ctrl-C). Records go to --out (appended) or stdout; a one-line
    /// summary per workload goes to stderr.
    #[command(
        after_help = "Examples:\n  bootmark run --plan quick --dir /mnt/test\n  bootmark run --plan seed --dir /mnt/test --out results.jsonl\n  bootmark run --plan my-plan.json --dir . --repeat 3"
    )]
    Run {
        /// A built-in plan name (see `bootmark plans`) or a path to a JSON plan file.
        #[arg(long, short, value_name = "PLAN")]
        plan: String,
        /// A directory on the filesystem under test.
        #[arg(long, short, value_name = "DIR")]
        dir: PathBuf,
        /// Append records to this JSONL file instead of printing them on stdout (`-`: stdout).
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Run the plan's workload list this many times (overrides the plan's `repeat`).
        #[arg(long, value_name = "N")]
        repeat: Option<u32>,
        /// Turn the responsiveness probe off (to measure what it costs).
        #[arg(long)]
        no_probe: bool,
        /// Read the kernel's tracepoints over each workload (dirty throttling's pauses, writeback
        /// throttling's steps, each request's size and device time, journal commits) into the
        /// records. Tracing is machine-wide: needs root, and is left alone if anyone else uses it.
        #[arg(long)]
        kernel_events: bool,
        /// Of a sweep plan, run only these variants (comma-separated names, in the plan's order).
        /// A sweep changes /proc/sys/vm and the target disk's queue settings: it needs root, and
        /// puts back what it found at the end.
        #[arg(long, value_name = "NAMES")]
        variants: Option<String>,
        /// Run the plan's programs confined as a boot runs them: no disk reachable by name
        /// (docs/plans.md). Needs root.
        #[arg(long)]
        confine_programs: bool,
        /// Keep the files the workloads wrote, for inspection.
        #[arg(long)]
        keep: bool,
        /// No per-workload lines on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    #[cfg(feature = "workstation")]
    /// Collect validated records from serial logs, stick directories and stick images.
    ///
    /// Serial records are accepted only when every chunk is present and the
    /// SHA-256 matches; the same record from serial and stick is kept once.
    /// Everything that could not be used is listed on stderr (file, line,
    /// run id, seq, why), and so is every result a boot's run record counts
    /// that no input holds, and every boot whose run record never came.
    ///
    /// Exit status: 0 every result present and verified, 1 something missing, damaged or
    /// implausible (listed), 2 nothing could be done (an --out that is an input, an unwritable
    /// output). The same for report and export.
    #[command(after_help = "Examples:
  bootmark collect serial-*.log /media/stick --out records.jsonl
  ipmitool -I lanplus -H BMC -U USER sol activate | bootmark collect -")]
    Collect {
        /// Serial logs, bootmark/results directories, .jsonl files or usb.img files.
        #[arg(required = true, value_name = "INPUT")]
        inputs: Vec<PathBuf>,
        /// Write the records here (JSONL) instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    #[cfg(feature = "workstation")]
    /// Compare records: one row per group with medians, ranges and a ratio against a baseline,
    /// then findings: the likely cause of stalls and slow writes, with the numbers behind it.
    ///
    /// Exit status: 0 every result present and verified, 1 something missing, damaged or
    /// implausible (listed on stderr; the table shows what was usable), 2 no table (no records,
    /// a bad --baseline or --timeline).
    #[command(after_help = "Example:
  bootmark report serial-*.log usb.img --by kernel,fs --baseline 2.6.9
  bootmark report k0.log k2.log --confirmation lab.state/confirm-same-boot")]
    Report {
        /// Records (JSONL from `collect`), or anything `collect` reads.
        #[arg(required = true, value_name = "INPUT")]
        inputs: Vec<PathBuf>,
        /// md: the verdict, the table and the findings as Markdown; text: the same in plain
        /// ASCII of at most 80 columns with how to reproduce it (for an email to a kernel list);
        /// csv: the table, one row a group; json: verdict, rows and findings for programs;
        /// html: one page with the charts.
        #[arg(long, default_value = "md", value_parser = ["md", "text", "csv", "json", "html"])]
        format: String,
        /// With --format html or --svg: a run whose timeline is drawn even past the caps (at most
        /// 6 runs drawn per group, the worst stall among them; 48 in all), as RUN_ID:SEQ.
        #[arg(long, value_name = "RUN_ID:SEQ")]
        timeline: Option<String>,
        /// Also write each picture as its own SVG file into DIR (made if missing), for pasting:
        /// waits-, cdf-, throughput-, p99-, read-, stall-WORKLOAD.svg and run-RUN_ID-SEQ.svg,
        /// each naming the records it was drawn from.
        #[arg(long, value_name = "DIR")]
        svg: Option<PathBuf>,
        /// Group by these (comma-separated): kernel, fs, host, plan, scheduler, device, layers
        /// (plain, or the LVM/md stack: "dm linear → md raid1 → 2 disks"), variant,
        /// firmware (BIOS or UEFI, Secure Boot, lockdown), workload (its name and parameters), or a
        /// record field path such as vm.dirty_ratio [default: kernel,fs,host; a sweep's records:
        /// variant,kernel,fs,host].
        #[arg(long, value_delimiter = ',')]
        by: Option<Vec<String>>,
        /// Rows whose first --by value is this, or the only value starting with it, are the
        /// baseline (default: the first seen). "vs baseline" compares mean real times.
        #[arg(long)]
        baseline: Option<String>,
        /// A `bootmark confirm` that tested a candidate cause: its directory, or the verdict.json
        /// it wrote (repeatable). The cause whose experiment it ran on that kernel (the same
        /// setting and metric) is then said confirmed ("Cause"), refuted ("Not the cause") or
        /// undecided, with its figures and run ids, in the verdict of md, text, html and json
        /// (JSON: the cause's `status` and `confirmations`); confirmations of one cause that
        /// disagree leave it a candidate, each said; one left out is named on stderr, with why.
        #[arg(long, value_name = "DIR|FILE")]
        confirmation: Vec<PathBuf>,
    },
    #[cfg(feature = "workstation")]
    /// Export records for another system: a KCIDB I/O document (KernelCI's common results
    /// database, schema v5.3) on stdout, for `kcidb-submit` or KCIDB's submission API.
    ///
    /// One checkout and build per kernel, one test per workload run (path bootmark.WORKLOAD,
    /// MiB/s in `number`) and per figure (probe p99, max stall, stalls over 1 s, durable);
    /// ids come from the records, so the same records give the same document.
    ///
    /// Exit status: 0 every result present and verified, 1 something missing, damaged or
    /// implausible (listed on stderr), 2 no document (no records, a bad --origin or --image).
    #[command(after_help = "Example:
  bootmark export --origin mylab --image target/image job-*.yaml > submission.json")]
    Export {
        /// Records (JSONL from `collect`), or anything `collect` reads.
        #[arg(required = true, value_name = "INPUT")]
        inputs: Vec<PathBuf>,
        /// Your CI system's name in KCIDB (lowercase letters, digits, _): every id starts with it.
        #[arg(long, default_value = "bootmark")]
        origin: String,
        /// Image directories the boots came from (repeatable): each kernel's package and config
        /// hash from their manifest.json.
        #[arg(long, value_name = "DIR")]
        image: Vec<PathBuf>,
    },
    #[cfg(feature = "workstation")]
    /// Follow a test server's console live: the raw log kept, records verified as they arrive,
    /// progress, stalls and kernel trouble shown, the comparison table at the end.
    ///
    /// Exit status: 0 every run ok, 1 a run or record reported failures, 2 the console went
    /// silent past --give-up or ended before the run record (with a guess at why).
    #[command(after_help = "Sources:
  bootmark watch /dev/ttyUSB0 --log run.log --out records.jsonl      # a serial cable
  ipmitool -I lanplus -H BMC -U USER sol activate | bootmark watch - --log run.log   # IPMI SOL
  bootmark watch tcp:consoles:3001 --log run.log                      # ser2net, conserver
  bootmark watch /var/log/conserver/server1.log                       # a log another tool appends to")]
    Watch {
        /// A serial device, - for standard input, a growing log file, or tcp:HOST:PORT.
        source: String,
        /// A serial device's speed.
        #[arg(long, default_value_t = 115200, value_parser = parse_baud)]
        baud: u32,
        /// Append the raw console here as it arrives.
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        /// Append each verified record here (JSONL) as it arrives.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Stop after the first run record (run), a sequence's last step (sequence), or N runs.
        #[arg(long, default_value = "run")]
        until: bootmark::watch::Until,
        /// Say so after this many seconds without output (a stalled machine prints nothing).
        #[arg(long, value_name = "SECONDS", default_value_t = 40)]
        silence: u64,
        /// Give up (exit 2) after this many seconds without output.
        #[arg(long, value_name = "SECONDS", default_value_t = 1800)]
        give_up: u64,
    },
    #[cfg(feature = "workstation")]
    /// Servers reached only through their BMC (IPMI or Redfish), taken through every kernel
    /// of an image, repeated and interleaved, from this workstation.
    ///
    /// `bootmark lab run LAB.toml` boots each server into each entry in turn (PXE through
    /// the lab's TFTP root, or the image's ISO as virtual media; the power and the next
    /// boot's device through IPMI or Redfish), follows its console (serial over LAN, a
    /// console server's port or log) to the run record or the step's deadline, saves the state after every step (run it
    /// again to resume) and prints the report. The lab file is described in docs/lab.md.
    #[command(subcommand)]
    Lab(LabCommand),
    #[cfg(feature = "workstation")]
    /// From "this kernel is worse" to the candidate that made it worse: a ladder of an
    /// image's entries bisected on a lab's servers, each step decided by a test across boots.
    #[command(subcommand)]
    Bisect(BisectCommand),
    #[cfg(feature = "workstation")]
    /// Test a candidate cause by experiment: boot one kernel as found and with the one
    /// setting the cause names changed, boot after boot on the lab's servers, until a test
    /// across boots says confirmed, refuted, or can't tell.
    ///
    /// The report calls a mechanism a *candidate* until a run that changes its setting alone
    /// tests it ("the queue's max_sectors_kb: 1280 against 128"). This is that run. Each boot
    /// is one value (the median of its runs of the metric's workload); both sides are booted
    /// alike, side by side with two servers or more. From 5 boots a side to --cap, each look
    /// tests at 0.05 / looks (so a change that is not there is called confirmed at most 2.5 %
    /// of the time; the rank test's p exact, ties and all):
    ///   confirmed — the changed boots differ from the found ones in the cause's direction
    ///     (Mann–Whitney), beyond the found boots' A/A noise floor, not provably short of half
    ///     the way;
    ///   refuted — provably short of half the way to --toward (or ×0.8 without it); "refuted as
    ///     the explanation" where the change itself is real: a part of the difference at most;
    ///   can't tell — neither by --cap, with the figures.
    /// The state is saved after every boot: Ctrl-C, then the same command, resumes.
    ///
    /// With --same-boot, one boot instead: each of its --runs repetitions runs the metric's
    /// workload as found and with --set, which first alternating (bootmark.set=
    /// +changed:SET,repeat=N,workloads=W), each run one value, one look at 0.05. Minutes instead of ten boots, and it holds for that boot only: across
    /// boots (the boot as the unit) is the confirmation without it.
    /// A verdict is written to verdict.json in --dir: `bootmark report --confirmation DIR` says
    /// the cause it tested confirmed or refuted, with its figures and runs.
    /// docs/confirm.md explains, with a run on QEMU.
    ///
    /// Exit status: 0 confirmed, 3 refuted, 1 can't tell or no test possible, 2 bad flags, a
    /// lab that could not run, or interrupted.
    #[command(after_help = "Example (6.12's probe p99 49 ms against 6.1's 15: is it the request size?):
  bootmark confirm rack3.toml --entry k2 --metric seqwrite.probe_p99_ms \\
      --set queue.max_sectors_kb=128 --toward 15")]
    Confirm {
        /// The lab file (TOML; see docs/lab.md): the image and the servers.
        lab: PathBuf,
        /// What the cause acts on, WORKLOAD.FIGURE (as `bisect run`): seqwrite.probe_p99_ms…
        #[arg(long, required_unless_present = "from", conflicts_with = "from")]
        metric: Option<String>,
        /// The image's entry to boot both ways (the kernel the cause was found on).
        #[arg(long, value_name = "ENTRY")]
        entry: String,
        /// The change that removes the cause, as `bootmark.set=` takes it:
        /// queue.max_sectors_kb=128, vm.dirty_bytes=4194304,vm.dirty_background_bytes=1048576…
        #[arg(long, value_name = "KEY=VALUE,...", required_unless_present = "from", conflicts_with = "from")]
        set: Option<String>,
        /// Take the metric, the setting and --toward from a report's JSON: its first cause
        /// with a test (`bootmark report --format json`, or a bisect's report.json).
        #[arg(long, value_name = "REPORT.json")]
        from: Option<PathBuf>,
        /// Where the metric would be without the cause (the good kernel's figure, from the
        /// report); without it, the cause must explain a change of ×0.8 (×1.25 the other way).
        #[arg(long, value_name = "VALUE", conflicts_with = "from")]
        toward: Option<f64>,
        /// The change gives the cause instead (the good kernel given the bad one's setting):
        /// the metric should get worse, toward the bad kernel's --toward.
        #[arg(long)]
        gives: bool,
        /// Boot only this server of the lab (repeatable; default: all of them).
        #[arg(long = "server", value_name = "NAME")]
        servers: Vec<String>,
        /// The most boots a side (5 to 16, default 8).
        #[arg(long, conflicts_with = "same_boot")]
        cap: Option<usize>,
        /// Both sides in one boot of one server, interleaved (a value per run): holds for that boot.
        #[arg(long)]
        same_boot: bool,
        /// With --same-boot: runs a side (5 to 16, default 6).
        #[arg(long, requires = "same_boot")]
        runs: Option<usize>,
        /// The confirmation's directory: its state and every boot's log and records
        /// (default: `confirm`, or `confirm-same-boot`, in the lab's state directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Write this system's settings as installed (vm sysctls, the disk queue under DIR) as a
    /// sweep variant, to replay next to a kernel's defaults.
    ///
    /// A distribution's init scripts change what the kernel defaults to (sysctl.conf, elevator=,
    /// readahead). Run this on the server before booting the stick, add the printed object to
    /// your plan's "variants", and the stick's boot measures the kernel both ways. The note
    /// keeps what cannot be replayed by a variant: the command line, mount options, write cache.
    #[command(after_help = "Example:
  bootmark capture --dir /srv/data > as-installed.json")]
    Capture {
        /// A directory on the disk whose queue settings to capture.
        #[arg(long, short, value_name = "DIR")]
        dir: PathBuf,
        /// The variant's name.
        #[arg(long, default_value = "as-installed")]
        name: String,
    },
    /// Explain the kernel command line parameters bootmark reads when it boots as /init.
    BootParams,
    /// List the built-in plans, or print one as JSON (a starting point for your own).
    Plans {
        /// Print this plan's JSON.
        name: Option<String>,
    },
}

fn main() -> ExitCode {
    if bootmark::init::is_init() {
        bootmark::init::main();
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Plans { name } => plans(name.as_deref()),
        #[cfg(feature = "workstation")]
        Command::Collect { inputs, out } => collect(&inputs, out.as_deref()),
        #[cfg(feature = "workstation")]
        Command::Report { inputs, format, by, baseline, timeline, svg, confirmation } => {
            let asked = Asked { by, baseline, timeline, svg, confirmations: confirmation };
            report(&inputs, &format, asked)
        }
        #[cfg(feature = "workstation")]
        Command::Export { inputs, origin, image } => export(&inputs, &origin, &image),
        Command::Capture { dir, name } => capture(&dir, &name),
        #[cfg(feature = "workstation")]
        Command::Watch { source, baud, log, out, until, silence, give_up } => {
            let opts = bootmark::watch::Options {
                source,
                baud,
                log,
                out,
                until,
                silence: std::time::Duration::from_secs(silence),
                give_up: std::time::Duration::from_secs(give_up),
            };
            watch(&opts)
        }
        #[cfg(feature = "workstation")]
        Command::Lab(LabCommand::Plan { lab }) => lab_plan(&lab),
        #[cfg(feature = "workstation")]
        Command::Lab(LabCommand::Run { lab }) => lab_run(&lab),
        #[cfg(feature = "workstation")]
        Command::Lab(LabCommand::Status { lab }) => lab_status(&lab),
        #[cfg(feature = "workstation")]
        Command::Bisect(BisectCommand::Run { lab, metric, good, bad, ladder, session }) => {
            let over = bootmark::bisect::command::Over::Ladder { good, bad, ladder };
            bisect_run(&lab, &session.asked(metric, over))
        }
        #[cfg(feature = "workstation")]
        Command::Bisect(BisectCommand::Settings { lab, metric, entry, good, bad, session }) => {
            let over = bootmark::bisect::command::Over::Settings { entry, good, bad };
            bisect_run(&lab, &session.asked(metric, over))
        }
        #[cfg(feature = "workstation")]
        Command::Bisect(BisectCommand::Git { lab, metric, tree, good, bad, build, entry, session }) => {
            let over = bootmark::bisect::command::Over::Git { tree, good, bad, build, entry };
            bisect_run(&lab, &session.asked(metric, over))
        }
        #[cfg(feature = "workstation")]
        Command::Bisect(BisectCommand::Status { lab, dir }) => bisect_status(&lab, dir.as_deref()),
        #[cfg(feature = "workstation")]
        Command::Confirm { lab, metric, entry, set, from, toward, gives, servers, cap, same_boot, runs, dir } => {
            use bootmark::bisect::{command, confirm, same_boot, session::Experiment};
            let (metric, set, toward) = match (from, metric, set) {
                (Some(report), _, _) => match confirm::from_report(&report) {
                    Ok(t) => {
                        println!(
                            "confirm: the report's cause: {}\nconfirm: its test: --set {} --metric {} --toward {}",
                            t.said, t.set, t.metric, t.toward
                        );
                        (t.metric, t.set, Some(t.toward))
                    }
                    Err(e) => return usage(&e),
                },
                (None, Some(metric), Some(set)) => (metric, set, toward),
                _ => return usage("give --metric and --set, or --from a report's JSON"),
            };
            let experiment = Experiment { entry, set, removes: !gives, toward };
            if same_boot {
                if servers.len() > 1 {
                    return usage("--same-boot boots one server: give at most one --server");
                }
                let runs = runs.unwrap_or(same_boot::DEFAULT_RUNS);
                let server = servers.into_iter().next();
                return confirm_same_boot(&lab, &same_boot::Asked { metric, experiment, runs, server, dir });
            }
            let over = command::Over::Confirm(experiment);
            bisect_run(&lab, &command::Asked { metric, over, servers, cap, dir, hang_is_bad: false })
        }
        Command::BootParams => {
            print!("{}", bootmark::init::cmdline::reference());
            ExitCode::SUCCESS
        }
        Command::Run { plan, dir, out, repeat, no_probe, kernel_events, variants, confine_programs, keep, quiet } => {
            let mut plan = match Plan::load(&plan) {
                Ok(p) => p,
                Err(e) => return usage(&e),
            };
            if let Some(r) = repeat {
                plan.repeat = r;
            }
            if no_probe {
                plan.probe.enabled = false;
            }
            if let Some(names) = variants {
                match bootmark::variant::select(&plan.variants, &names) {
                    Ok(v) => plan.variants = v,
                    Err(e) => return usage(&format!("--variants: {e}")),
                }
            }
            if let Err(e) = plan.validate() {
                return usage(&e);
            }
            // SAFETY: geteuid has no arguments.
            if confine_programs && unsafe { libc::geteuid() } != 0 {
                return usage(
                    "--confine-programs needs root: it gives each program its own mount namespace and drops capabilities",
                );
            }
            let mut sink: Box<dyn Sink> = match &out {
                Some(path) if path.as_os_str() == "-" => Box::new(Stdout),
                Some(path) => match JsonlFile::append(path) {
                    Ok(s) => Box::new(s),
                    Err(e) => return usage(&format!("cannot open --out {}: {e}", path.display())),
                },
                None => Box::new(Stdout),
            };
            let opts = Options {
                plan,
                dir,
                keep,
                verbose: !quiet,
                deadline_ns: None,
                run_id: None,
                remount: None,
                dump_blocked_tasks: false,
                // The user's own machine, run by hand: confined only when asked.
                confine_programs,
                // What a boot image costs its server; not this machine's business.
                footprint: None,
                kernel_events: match kernel_events {
                    true => bootmark::measure::tracing::Events::AtRunTime,
                    false => bootmark::measure::tracing::Events::Off,
                },
            };
            match run::run(&opts, sink.as_mut()) {
                Ok(s) if s.failed == 0 => ExitCode::SUCCESS,
                Ok(s) => {
                    fail(&format!("{} of {} workload runs did not finish (see their records)", s.failed, s.records))
                }
                Err(RunError::Interrupted) => {
                    eprintln!("bootmark: {}", RunError::Interrupted);
                    ExitCode::from(130)
                }
                Err(e) => fail(&e.to_string()),
            }
        }
    }
}

fn plans(name: Option<&str>) -> ExitCode {
    match name {
        None => {
            let width = plan::builtin().map(|(name, _)| name.len()).max().unwrap_or(0);
            for (name, text) in plan::builtin() {
                let p = Plan::from_json(text).expect("built-in plans are tested");
                println!("{name:<width$}  {}", p.description);
            }
            ExitCode::SUCCESS
        }
        Some(n) => match plan::builtin().find(|(b, _)| *b == n) {
            Some((_, text)) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            None => usage(&format!(
                "no built-in plan '{n}'{}; built-in plans: {}",
                bootmark::suggest::did_you_mean(n, &plan::builtin_names()),
                plan::builtin_names().join(", ")
            )),
        },
    }
}

#[cfg(feature = "workstation")]
fn lab_plan(path: &std::path::Path) -> ExitCode {
    use bootmark::lab;
    let described = lab_read(path).and_then(|l| {
        let image = lab::ImageEntries::read(&l.manifest)?;
        let plans = lab::plan(&l, &image)?;
        Ok(lab::describe(&l, &image, &plans))
    });
    match described {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => cannot(&e),
    }
}

#[cfg(feature = "workstation")]
fn lab_read(path: &std::path::Path) -> Result<bootmark::lab::file::Lab, String> {
    bootmark::lab::file::Lab::read(path, &|var| std::env::var(var).ok())
}

#[cfg(feature = "workstation")]
fn lab_run(path: &std::path::Path) -> ExitCode {
    use bootmark::lab::state::Status;
    let lab = match lab_read(path) {
        Ok(l) => l,
        Err(e) => return cannot(&e),
    };
    let ended = match bootmark::lab::session::run(&lab) {
        Ok(e) => e,
        Err(e) => return cannot(&e),
    };
    let files = ended.state.record_files(&lab.state_dir);
    print!("{}", ended.state.describe());
    if ended.interrupted {
        return ExitCode::from(EXIT_CANNOT);
    }
    let rendered = (!files.is_empty()).then(|| rendered_report(&files, &["md", "html"], Asked::default()));
    let reported = match rendered {
        None => ExitCode::SUCCESS,
        Some(Ok((texts, c))) => {
            let html = lab.state_dir.join("report.html");
            if let Err(e) = std::fs::write(&html, &texts[1]) {
                return cannot(&format!("cannot write {}: {e}", html.display()));
            }
            println!("\n{}report: {}", texts[0], html.display());
            judged(&c)
        }
        Some(Err(e)) => cannot(&e),
    };
    let failed = ended.state.steps.iter().filter_map(|s| s.outcome.as_ref()).any(|o| o.status != Status::Ok);
    if failed { ExitCode::FAILURE } else { reported }
}

#[cfg(feature = "workstation")]
fn lab_status(path: &std::path::Path) -> ExitCode {
    let lab = match bootmark::lab::file::Lab::read_without_passwords(path) {
        Ok(l) => l,
        Err(e) => return cannot(&e),
    };
    match bootmark::lab::state::State::load(&lab.state_dir) {
        Ok(Some(state)) => {
            print!("{}", state.describe());
            ExitCode::SUCCESS
        }
        Ok(None) => cannot(&format!("{}: this lab has not run yet (no {})", path.display(), lab.state_dir.display())),
        Err(e) => cannot(&e),
    }
}

/// `bootmark confirm --same-boot`: one boot, and its verdict's exit status.
#[cfg(feature = "workstation")]
fn confirm_same_boot(path: &std::path::Path, asked: &bootmark::bisect::same_boot::Asked) -> ExitCode {
    use bootmark::bisect::command::Ended;
    let lab = match lab_read(path) {
        Ok(l) => l,
        Err(e) => return cannot(&e),
    };
    match bootmark::bisect::same_boot::run(&lab, asked) {
        Ok((Ended::Found, _)) => ExitCode::SUCCESS,
        Ok((Ended::Refuted, _)) => ExitCode::from(EXIT_REFUTED),
        Ok((Ended::Interrupted, _)) => ExitCode::from(EXIT_CANNOT),
        Ok(_) => ExitCode::FAILURE,
        Err(e) => cannot(&e),
    }
}

#[cfg(feature = "workstation")]
fn bisect_run(path: &std::path::Path, asked: &bootmark::bisect::command::Asked) -> ExitCode {
    use bootmark::bisect::command::{self, Ended};
    let lab = match lab_read(path) {
        Ok(l) => l,
        Err(e) => return cannot(&e),
    };
    let ended = match command::run(&lab, asked) {
        Ok(Ended::Interrupted) => return ExitCode::from(EXIT_CANNOT),
        Ok(e) => e,
        Err(e) => return cannot(&e),
    };
    // Every boot's records in one report, a row per candidate's kernel, beside the state.
    let dir = asked.dir_in(&lab);
    let files = command::record_files(&dir);
    if !files.is_empty() {
        match rendered_report(&files, &["html", "json"], Asked::default()) {
            Ok((texts, _)) => {
                // The JSON beside the page: its causes' tests are what `bootmark confirm --from` reads.
                for (name, text) in ["report.html", "report.json"].iter().zip(&texts) {
                    if let Err(e) = std::fs::write(dir.join(name), text) {
                        return cannot(&format!("cannot write {}: {e}", dir.join(name).display()));
                    }
                }
                println!(
                    "report of every boot's records: {} (and report.json: `bootmark confirm --from` reads its causes)",
                    dir.join("report.html").display()
                );
                // A ladder's next step, where its report names a cause one setting would test.
                let ladder = matches!(asked.over, command::Over::Ladder { .. });
                if let (Ended::Found, true, Ok(t)) =
                    (&ended, ladder, bootmark::bisect::confirm::from_report(&dir.join("report.json")))
                {
                    println!(
                        "next, its candidate cause ({}): bootmark confirm {} --entry ENTRY --from {} [--same-boot], \
                         ENTRY the first bad",
                        t.set,
                        path.display(),
                        dir.join("report.json").display()
                    );
                }
            }
            Err(e) => eprintln!("bootmark: no report of the boots' records: {e}"),
        }
    }
    match ended {
        Ended::Found => ExitCode::SUCCESS,
        Ended::Refuted => ExitCode::from(EXIT_REFUTED),
        _ => ExitCode::FAILURE,
    }
}

#[cfg(feature = "workstation")]
fn bisect_status(path: &std::path::Path, dir: Option<&std::path::Path>) -> ExitCode {
    let described = bootmark::lab::file::Lab::read_without_passwords(path)
        .and_then(|lab| bootmark::bisect::command::status(&lab, dir));
    match described {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => cannot(&e),
    }
}

/// A run that failed (exit 1).
fn fail(msg: &str) -> ExitCode {
    eprintln!("bootmark: error: {msg}");
    ExitCode::FAILURE
}

/// A command given what it cannot work with — a flag's value, a plan, a
/// path (exit 2, as clap exits for a flag it does not know): nothing ran.
fn usage(msg: &str) -> ExitCode {
    eprintln!("bootmark: error: {msg}");
    ExitCode::from(2)
}

/// The exit-code contract of collect, watch, report and export: 0 when
/// every result is present and verified, 1 when something is missing,
/// damaged, implausible or not ok (the problems are printed), 2 when the
/// command could not do its job (bad flags, an output it must not or
/// cannot write, no records at all; for watch, a console that went silent
/// or ended before its run did).
#[cfg(feature = "workstation")]
const EXIT_PROBLEMS: u8 = 1;
#[cfg(feature = "workstation")]
const EXIT_CANNOT: u8 = 2;
#[cfg(feature = "workstation")]
/// `bootmark confirm`: the cause refuted (0 is confirmed, 1 can't tell).
const EXIT_REFUTED: u8 = 3;

#[cfg(feature = "workstation")]
fn cannot(msg: &str) -> ExitCode {
    eprintln!("bootmark: error: {msg}");
    ExitCode::from(EXIT_CANNOT)
}

#[cfg(feature = "workstation")]
fn judged(c: &bootmark::collect::Collected) -> ExitCode {
    if c.problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(EXIT_PROBLEMS) }
}

#[cfg(feature = "workstation")]
fn print_problems(c: &bootmark::collect::Collected) {
    for p in &c.problems {
        let at = p.line.map(|l| format!(":{l}")).unwrap_or_default();
        let rec = match (&p.run_id, p.seq) {
            (Some(r), Some(s)) => format!(" run {r} seq {s}:"),
            _ => String::new(),
        };
        eprintln!("bootmark: {}{at}:{rec} {}", p.file, p.why);
    }
    for n in &c.notes {
        let at = n.line.map(|l| format!(":{l}")).unwrap_or_default();
        eprintln!("bootmark: note: {}{at}: {}", n.file, n.why);
    }
    if c.damaged_lines_not_listed > 0 {
        eprintln!(
            "bootmark: and {} more damaged framed lines, not listed (the first {} are)",
            c.damaged_lines_not_listed,
            bootmark::collect::DAMAGED_LINES_KEPT
        );
    }
    // A boot without results is already a problem above; these are the troubled ones.
    for b in c.boots.iter().filter(|b| b.panics > 0 || b.oopses > 0 || b.hung_tasks > 0) {
        eprintln!(
            "bootmark: boot at {}:{} (kernel {}): {} documents, {} panics, {} oops/BUG, {} hung-task warnings",
            b.file,
            b.line,
            b.kernel.as_deref().unwrap_or("?"),
            b.documents,
            b.panics,
            b.oopses,
            b.hung_tasks,
        );
    }
}

#[cfg(feature = "workstation")]
fn collect(inputs: &[PathBuf], out: Option<&std::path::Path>) -> ExitCode {
    use bootmark::output;
    // Records stream to the output as they are recovered: memory holds
    // keys, not records. A file output is renamed into place at the end.
    let (c, accepted) = match out {
        Some(path) => {
            if let Err(e) = output::check_not_an_input(path, "--out", inputs) {
                return cannot(&e);
            }
            let mut pending = match output::Pending::create(path) {
                Ok(p) => p,
                Err(e) => return cannot(&e),
            };
            let collected = bootmark::collect::collect_to(inputs, &mut pending);
            if let Err(e) = pending.commit() {
                return cannot(&e);
            }
            collected
        }
        None => {
            let mut sink = std::io::BufWriter::new(std::io::stdout().lock());
            let collected = bootmark::collect::collect_to(inputs, &mut sink);
            if let Err(e) = std::io::Write::flush(&mut sink) {
                return cannot(&format!("cannot write the records: {e}"));
            }
            collected
        }
    };
    print_problems(&c);
    eprintln!(
        "bootmark: {accepted} documents, {} duplicates merged, {} problems, {} notes",
        c.duplicates,
        c.problems.len(),
        c.notes.len()
    );
    judged(&c)
}

#[cfg(feature = "workstation")]
fn report(inputs: &[PathBuf], format: &str, asked: Asked) -> ExitCode {
    let (text, c) = match rendered_report(inputs, &[format], asked) {
        Ok((mut texts, c)) => (texts.remove(0), c),
        Err(e) => return cannot(&e),
    };
    print!("{text}");
    judged(&c)
}

/// What `bootmark report` was asked beside its inputs and format.
#[cfg(feature = "workstation")]
#[derive(Default)]
struct Asked {
    by: Option<Vec<String>>,
    baseline: Option<String>,
    timeline: Option<String>,
    svg: Option<PathBuf>,
    /// `--confirmation`: confirmations' directories or verdict files.
    confirmations: Vec<PathBuf>,
}

/// The report of `inputs` in each of `formats` (md, csv, json, html), its
/// problems printed; or why there is none.
#[cfg(feature = "workstation")]
fn rendered_report(
    inputs: &[PathBuf],
    formats: &[&str],
    asked: Asked,
) -> Result<(Vec<String>, bootmark::collect::Collected), String> {
    use bootmark::report::{self, findings};
    let Asked { by, baseline, timeline, svg, confirmations } = asked;
    let svg = svg.as_deref();
    // Records stream from the collector into the report's groups: memory
    // grows with groups × runs, not with the records.
    if let Some(by) = &by {
        report::check_by(by)?;
    }
    let pictures = formats.contains(&"html") || svg.is_some();
    if timeline.is_some() && !pictures {
        return Err("--timeline picks a run the pictures draw: add --format html or --svg DIR".into());
    }
    if let Some(dir) = svg {
        report::pictures::check_dir(dir, inputs)?;
    }
    // Read before the records: a confirmation that cannot be read stops the report at once.
    let tested = confirmations
        .iter()
        .map(|p| report::tested::Tested::read(p).map_err(|e| format!("--confirmation {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let opts = report::Options { by, baseline, timeline, pictures, tested };
    let mut builder = report::Builder::new(opts);
    let c = bootmark::collect::collect_glancing(inputs, &mut |record| builder.add(record));
    print_problems(&c);
    if builder.results == 0 {
        return Err("no result records in the inputs".into());
    }
    let report = builder.finish()?;
    for (t, why) in report.confirmations_unused() {
        eprintln!(
            "bootmark: --confirmation: it tested {} on {} ({}) for {}; not in the report: {why}",
            t.set,
            t.entry,
            t.kernel.as_deref().unwrap_or("kernel unknown"),
            t.metric
        );
    }
    // Drawn once, for the page and the files alike.
    let figures = match pictures {
        true => report::pictures::figures(&report.rows, &report.pictures)
            .map_err(|e| format!("cannot draw the charts: {e}"))?,
        false => Vec::new(),
    };
    if let Some(dir) = svg {
        let n = report::pictures::write_files(dir, &figures)?;
        eprintln!("bootmark: wrote {n} pictures to {}", dir.display());
    }
    let (rows, by, found) = (&report.rows, &report.by, &report.findings);
    let texts = formats
        .iter()
        .map(|format| match *format {
            "csv" => Ok(report::csv(rows, by, &report.constant)),
            "text" => Ok(report::text::render(&report)),
            "json" => Ok(format!("{}\n", serde_json::to_string_pretty(&report.json()).unwrap())),
            "html" => Ok(report::html::page_with(&report, &figures)),
            _ => Ok(format!("{}{}{}", report::heading(&report), report::markdown(rows, by), findings::markdown(found))),
        })
        .collect::<Result<Vec<String>, String>>()?;
    Ok((texts, c))
}

/// `bootmark export`: the records as a KCIDB submission on stdout.
#[cfg(feature = "workstation")]
fn export(inputs: &[PathBuf], origin: &str, images: &[PathBuf]) -> ExitCode {
    use bootmark::kcidb;
    if let Err(e) = kcidb::check_origin(origin) {
        return cannot(&e);
    }
    let mut sources = std::collections::BTreeMap::new();
    for dir in images {
        match kcidb::sources_from_manifest(dir) {
            Ok(found) => sources.extend(found),
            Err(e) => return cannot(&e),
        }
    }
    let c = bootmark::collect::collect(inputs);
    print_problems(&c);
    if c.results().next().is_none() && c.runs().next().is_none() {
        return cannot("no records in the inputs");
    }
    let doc = kcidb::export(c.results(), c.runs(), &kcidb::Options { origin: origin.into(), sources });
    println!("{}", serde_json::to_string_pretty(&doc).expect("JSON serialises"));
    judged(&c)
}

/// `bootmark capture`: the settings as installed, as a variant (JSON on stdout).
fn capture(dir: &std::path::Path, name: &str) -> ExitCode {
    use bootmark::measure::evidence;
    let storage = evidence::storage(dir);
    let Some(device) = storage.device.as_ref() else {
        return usage(&format!(
            "--dir {}: not on a block device (or no such directory); give a directory on the disk to test",
            dir.display()
        ));
    };
    let kernel = evidence::kernel();
    let note = format!(
        "as installed on {} (Linux {}); kernel command line: {}; {} on {} mounted {} {}; drive write cache: {} (command line, mount options and write cache are not replayed by a variant)",
        evidence::host().hostname.unwrap_or_default(),
        kernel.release.unwrap_or_default(),
        kernel.cmdline.unwrap_or_default(),
        storage.dir,
        device.name,
        storage.fs.as_deref().unwrap_or("?"),
        storage.mount_options.as_deref().unwrap_or("?"),
        storage.write_cache.as_deref().unwrap_or("unknown")
    );
    let knobs = bootmark::variant::Knobs::for_disk(Some(&device.disk));
    let variant = bootmark::variant::capture(&knobs, name, note);
    if let Err(e) = variant.validate() {
        return usage(&format!("--name: {e}"));
    }
    println!("{}", serde_json::to_string_pretty(&variant).expect("a variant serialises"));
    ExitCode::SUCCESS
}

/// `bootmark watch`: follow, then the table of what arrived.
#[cfg(feature = "workstation")]
fn watch(opts: &bootmark::watch::Options) -> ExitCode {
    use bootmark::report::{self, findings};
    let (ending, documents) = match bootmark::watch::watch(opts) {
        Ok(r) => r,
        Err(e) => return cannot(&e),
    };
    let records = documents.iter().filter_map(|d| d.result());
    if let Ok(r) = report::report(records, report::Options::default())
        && !r.rows.is_empty()
    {
        println!("\n{}{}{}", report::heading(&r), report::markdown(&r.rows, &r.by), findings::markdown(&r.findings));
    }
    for (what, path) in [("log", &opts.log), ("records", &opts.out)] {
        if let Some(p) = path {
            println!("{what}: {}", p.display());
        }
    }
    match &ending {
        bootmark::watch::Ending::Lost(why) => eprintln!("bootmark: {why}"),
        bootmark::watch::Ending::Interrupted => eprintln!("bootmark: interrupted"),
        bootmark::watch::Ending::Failures => eprintln!("bootmark: a run or a record reported failures"),
        bootmark::watch::Ending::AllOk => {}
    }
    ExitCode::from(ending.exit_code())
}

/// The serial speeds `watch` can set.
#[cfg(feature = "workstation")]
fn parse_baud(s: &str) -> Result<u32, String> {
    match s.parse() {
        Ok(b @ (9600 | 19200 | 38400 | 57600 | 115200)) => Ok(b),
        _ => Err("use 9600, 19200, 38400, 57600 or 115200".into()),
    }
}
