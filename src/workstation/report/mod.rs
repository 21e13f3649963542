//! The report: records grouped (by kernel, filesystem, host, … and always by
//! workload), repetitions combined, each group compared with a baseline —
//! the seed's hand-written table (Hardware, OS/kernel, FS, real, user, sys)
//! plus what it could only describe in notes: throughput and responsiveness.

mod attribution;
pub mod findings;
pub mod fio;
mod groups;
pub mod html;
mod in_force;
mod mechanism;
pub mod pictures;
mod reproduce;
mod setting;
pub mod stats;
pub mod tested;
pub mod text;
mod traced;
pub mod verdict;
pub mod words;

use crate::schema::record::Record;
use crate::workstation::glance::Glance;
use serde::Serialize;
use serde_json::Value;
use stats::Summary;
use std::collections::HashMap;

/// What a grouping dimension reads from a record: one of [`DIMENSIONS`], or
/// any field by its dotted path (`vm.dirty_ratio`, `workload.params.files`).
pub fn dimension(record: &Record, name: &str) -> String {
    named_dimension(&Glance::of(record), name)
        .unwrap_or_else(|| field_by_path(record, name))
        .unwrap_or_else(|| "?".into())
}

/// One of [`DIMENSIONS`] (outer None: `name` is not one of them).
fn named_dimension(g: &Glance, name: &str) -> Option<Option<String>> {
    let (host, storage) = (&g.host, &g.storage);
    let device = storage.device.as_ref();
    let text = |t: Option<&std::borrow::Cow<str>>| t.map(|t| t.to_string());
    Some(match name {
        "kernel" => text(g.kernel.release.as_ref()),
        "fs" => text(storage.fs.as_ref()),
        "host" => text(host.dmi_product.as_ref().or(host.cpu_model.as_ref()).or(host.hostname.as_ref())),
        "plan" => Some(g.plan.name.to_string()),
        "scheduler" => text(storage.scheduler.as_ref()),
        "layers" => Some(crate::schema::layer::summary(&storage.layers)),
        "device" => text(device.and_then(|d| d.model.as_ref()).or(device.map(|d| &d.name))),
        "variant" => text(g.variant.as_ref().map(|v| &v.name)),
        "workload" => Some(format!("{} {}", g.workload.name, label(&g.workload.params)).trim_end().to_string()),
        // Records from before the firmware was read have none: "?".
        "firmware" => host.firmware.as_ref().map(|f| {
            crate::schema::machine::firmware_summary(f.boot_mode.as_deref(), f.secure_boot, f.lockdown.as_deref())
        }),
        _ => return None,
    })
}

/// A field named by its dotted path, as text (`label`).
fn field_by_path(record: &Record, path: &str) -> Option<String> {
    let tree = serde_json::to_value(record).ok()?;
    let pointer = format!("/{}", path.replace('.', "/"));
    tree.pointer(&pointer).filter(|v| !v.is_null()).map(label)
}

/// Names each row that shares its key and workload with another row of
/// other params by the params that differ: "seqwrite size=1073741824",
/// "fio job#3fa2c1" (a long or many-line value by a digest of its text).
fn name_rows(rows: &mut [Row]) {
    let mut alike: HashMap<(Vec<String>, String), Vec<usize>> = HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        alike.entry((r.key.clone(), r.workload.clone())).or_default().push(i);
    }
    for same in alike.values().filter(|same| same.len() > 1) {
        for &i in same {
            let mine = &rows[i].params;
            let differs: Vec<String> = match mine {
                Value::Object(fields) => fields
                    .iter()
                    .filter(|(k, v)| same.iter().any(|&j| rows[j].params.get(k.as_str()) != Some(*v)))
                    .map(|(k, v)| format!("{k}={}", short_label(v)))
                    .collect(),
                _ => Vec::new(),
            };
            let said = if differs.is_empty() { format!("params={}", short_label(mine)) } else { differs.join(" ") };
            rows[i].name = format!("{} {said}", rows[i].workload);
        }
    }
}

/// `label`, or for text over 24 characters or of several lines (a fio job)
/// "#" and six hex digits of its SHA-256: distinct, short, the same in
/// every report of it.
fn short_label(v: &Value) -> String {
    use sha2::{Digest, Sha256};
    let text = label(v);
    if text.chars().count() <= 24 && !text.contains('\n') {
        return text;
    }
    let d = Sha256::digest(text.as_bytes());
    format!("#{:02x}{:02x}{:02x}", d[0], d[1], d[2])
}

/// A value as a row label: strings without quotes, an object as its
/// `key=value` pairs ("block=16384 size=201326592"), not as JSON.
fn label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(fields) => fields.iter().map(|(k, v)| format!("{k}={}", label(v))).collect::<Vec<_>>().join(" "),
        Value::Array(items) => items.iter().map(label).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

pub const DIMENSIONS: [&str; 10] =
    ["kernel", "fs", "host", "plan", "scheduler", "device", "layers", "variant", "firmware", "workload"];

/// Refuses a --by name that is no dimension and no field of a record (a
/// dotted path is checked against the records: `Builder::finish`).
pub fn check_by(by: &[String]) -> Result<(), String> {
    let fields: Vec<String> = match serde_json::to_value(Record::blank("", 0)) {
        Ok(Value::Object(top)) => top.keys().cloned().collect(),
        _ => Vec::new(),
    };
    for name in by {
        if DIMENSIONS.contains(&name.as_str()) || name.contains('.') || fields.contains(name) {
            continue;
        }
        return Err(format!(
            "--by {name}: not a dimension{}; the dimensions: {}; or any field of a record by its dotted path (vm.dirty_ratio, workload.params.files: docs/record-format.md)",
            crate::suggest::did_you_mean(name, &DIMENSIONS),
            DIMENSIONS.join(", ")
        ));
    }
    Ok(())
}

/// What to group by when the user does not say: kernel, filesystem and
/// host; a sweep's records (`sweep`: any record has a variant) by variant
/// first, so that each variant is compared with the first one under the
/// same kernel.
pub fn default_by(sweep: bool) -> Vec<String> {
    let dims: &[&str] = if sweep { &["variant", "kernel", "fs", "host"] } else { &["kernel", "fs", "host"] };
    dims.iter().map(|d| d.to_string()).collect()
}

/// One row: a group of repetitions of one workload.
#[derive(Debug, Serialize)]
pub struct Row {
    /// Values of the --by dimensions, in order.
    pub key: Vec<String>,
    pub workload: String,
    /// The workload as the table and the verdict name it: `workload`, and
    /// where rows of one key share it, what of the params tells them apart.
    #[serde(skip)]
    pub name: String,
    pub params: Value,
    pub n: usize,
    pub not_ok: usize,
    pub real_s: Option<Summary>,
    /// Each run's real time, for the rank test (not printed).
    #[serde(skip)]
    pub real_runs: Vec<f64>,
    /// Each boot's median real time and whether it stalled over 1 s (not printed).
    #[serde(skip)]
    pub boots: Vec<(f64, bool)>,
    pub user_s: Option<Summary>,
    pub sys_s: Option<Summary>,
    pub durable_s: Option<Summary>,
    pub throughput_mib_s: Option<Summary>,
    pub throughput_harmonic_mean: Option<f64>,
    pub probe_p99_ms: Option<Summary>,
    /// The probe's ticks per run (its p99 of under 100 is their worst).
    pub probe_ticks: Option<Summary>,
    /// The median of the probe's uncached 4 KiB read (its own part of the
    /// response: not `ls`, not the timer), per run.
    pub probe_read_p50_ms: Option<Summary>,
    /// The median time the target's disk held a read (issue to completion,
    /// block tracepoints), per traced run: the device's share of the read's wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_read_p50_ms: Option<Summary>,
    /// The median time a read waited in the I/O scheduler's queue (block_rq_insert
    /// to issue), per traced run: where a read's wait before the device went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_read_p50_ms: Option<Summary>,
    pub max_stall_ms: Option<f64>,
    pub stalls_over_1s: Option<Summary>,
    pub recovery_s: Option<Summary>,
    /// The device's average write request, KiB (from /proc/diskstats).
    pub write_request_kib: Option<Summary>,
    /// The settings in force its runs did not share ("the dirty limit
    /// vm.dirty_ratio=20 in 2 runs, vm.dirty_bytes=4194304 in 1"): such a row
    /// is not pooled into any comparison, and a finding says why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings_differ: Vec<String>,
    /// The target queue's largest request the kernel would build (`queue/max_sectors_kb`),
    /// each value its runs recorded; empty for records from before it was recorded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub max_sectors_kb: Vec<String>,
    /// fio's own figures, per job and direction, for a `fio` workload's rows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fio: Vec<fio::FioRow>,
    /// Against the baseline row of the same workload: baseline mean real / this mean real.
    pub speedup: Option<f64>,
    pub significant: bool,
    pub baseline: bool,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The grouping dimensions; None: `default_by`, decided once every record is in.
    pub by: Option<Vec<String>>,
    /// A value of the first --by dimension whose rows are the baseline: the
    /// whole value, or a prefix that only one value has.
    pub baseline: Option<String>,
    /// A run whose timeline the pictures draw whatever their caps (RUN_ID:SEQ).
    pub timeline: Option<String>,
    /// Keep what the pictures need (HTML, --svg): off, the other formats keep no runs.
    pub pictures: bool,
    /// Confirmations of candidate causes (`--confirmation`): a cause one of
    /// them tested is said confirmed, refuted or undecided, with its runs.
    pub tested: Vec<tested::Tested>,
}

/// A finished report: the table's rows, the findings, what the pictures draw.
pub struct Report {
    pub by: Vec<String>,
    pub rows: Vec<Row>,
    pub findings: Vec<findings::Finding>,
    /// The runs kept to draw and every group's probe waits (`Options::pictures`).
    pub pictures: pictures::Kept,
    /// Dimensions with one value in every row, as (dimension, value): said
    /// once above the table instead of in every row and label.
    pub constant: Vec<(String, String)>,
    /// The verdict's lines (`verdict::lines`).
    pub verdict: Vec<String>,
    /// What the machine was where it was not real hardware (an emulated,
    /// throttled disk), said once at the top (`setting::Setting`).
    pub setting: Option<String>,
    /// What it takes to run it again (`--format text` prints it).
    pub reproduce: reproduce::Reproducer,
    /// Each row's baseline row, and each row's boots: what `comparisons` reads.
    baseline_of: Vec<Option<usize>>,
    boots: Vec<usize>,
    tested: Vec<tested::Tested>,
}

impl Report {
    /// Each group against its baseline, for programs. Made on demand: across
    /// boots each carries a bootstrap interval (10,000 resamples), which a
    /// fleet's thousands of groups would pay for in every format.
    pub fn comparisons(&self) -> Vec<verdict::Comparison> {
        let variants = self.by.first().is_some_and(|d| d == "variant");
        let given = verdict::Confirmations::new(&self.tested, &self.by);
        verdict::comparisons(&self.rows, &self.baseline_of, &self.boots, &self.findings, variants, &given)
    }

    /// The confirmations given that the report left out, and why: each
    /// said, so that none is silently dropped.
    pub fn confirmations_unused(&self) -> Vec<(&tested::Tested, &'static str)> {
        if self.tested.is_empty() {
            return Vec::new();
        }
        let used: Vec<tested::Tested> =
            self.comparisons().into_iter().flat_map(|c| c.causes).flat_map(|c| c.confirmations).collect();
        let by_kernel = verdict::Confirmations::new(&self.tested, &self.by).kernel_at.is_some();
        let why = |t: &tested::Tested| match t.agrees_with_its_figures() {
            false => "its medians did not move the way a confirmed removal moves them (changed above found)",
            true if !by_kernel => "this report is not grouped by kernel",
            true => {
                "no cause of this report is that experiment on that kernel (a request size whose baseline ran at that setting)"
            }
        };
        self.tested.iter().filter(|t| !used.contains(t)).map(|t| (t, why(t))).collect()
    }

    /// `--format json`: the verdict, the structured comparisons, the setting,
    /// the dimensions said once, the rows and the findings, for programs.
    pub fn json(&self) -> Value {
        serde_json::json!({
            "verdict": self.verdict,
            "comparisons": self.comparisons(),
            "noise_floor": self.rows.iter().filter_map(verdict::noise_floor).collect::<Vec<_>>(),
            "setting": self.setting,
            "constant": self.constant,
            "rows": self.rows,
            "findings": self.findings,
        })
    }
}

type GroupKey = (Vec<String>, String, String);

/// A report built one record at a time (`add`), so that a fleet's records
/// stream through: each group keeps its figures, not its records.
pub struct Builder {
    opts: Options,
    groups: Vec<groups::Group>,
    index: HashMap<GroupKey, usize>,
    /// Any record of a sweep (the default grouping then starts with the variant).
    sweep: bool,
    /// The dimensions records are keyed by: --by, or the default grouping with the variant.
    key_by: Vec<String>,
    pictures: pictures::Keeper,
    setting: setting::Setting,
    reproduce: reproduce::Reproducer,
    pub results: usize,
}

impl Builder {
    pub fn new(opts: Options) -> Builder {
        let pictures = pictures::Keeper::new(opts.pictures, opts.timeline.as_deref());
        let key_by = opts.by.clone().unwrap_or_else(|| default_by(true));
        Builder {
            opts,
            groups: Vec::new(),
            index: HashMap::new(),
            sweep: false,
            key_by,
            pictures,
            setting: setting::Setting::default(),
            reproduce: reproduce::Reproducer::default(),
            results: 0,
        }
    }

    /// A record, at a glance. An error names a record that had to be read
    /// whole (for a dotted --by path, a finding or the timeline) and did
    /// not parse: it is then left out of what needed it whole.
    pub fn add(&mut self, r: &Glance) -> Result<(), String> {
        // Without --by the grouping is decided at the end: group by the
        // variant too, and drop it then if no record had one.
        let mut key = Vec::with_capacity(self.key_by.len());
        for d in &self.key_by {
            let value = match named_dimension(r, d) {
                Some(v) => v,
                None => field_by_path(r.whole()?, d),
            };
            key.push(value.unwrap_or_else(|| "?".into()));
        }
        self.results += 1;
        self.sweep |= r.variant.is_some();
        self.setting.offer(r);
        self.reproduce.offer(r);
        let k = (key, r.workload.name.to_string(), r.workload.params.to_string());
        let at = match self.index.get(&k) {
            Some(&i) => i,
            None => {
                self.groups.push(groups::Group::new(k.0.clone(), k.1.clone(), k.2.clone()));
                self.index.insert(k, self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        let grouped = self.groups[at].add(r);
        self.pictures.offer(at, r).and(grouped)
    }

    /// The rows, baselines marked, and the findings. Fails when --baseline
    /// names no value or more than one, or when --timeline names no record.
    pub fn finish(mut self) -> Result<Report, String> {
        let default_grouping = self.opts.by.is_none();
        let by = match self.opts.by.take() {
            Some(by) => by,
            None => {
                if !self.sweep {
                    self.groups.iter_mut().for_each(|g| drop(g.key.remove(0)));
                }
                default_by(self.sweep)
            }
        };
        // A field path no record has would make every row "?": say so instead.
        for (i, name) in by.iter().enumerate().filter(|(_, d)| !DIMENSIONS.contains(&d.as_str())) {
            if self.groups.iter().all(|g| g.key.get(i).is_none_or(|v| v == "?")) {
                return Err(format!(
                    "--by {name}: no record has this field (a dotted path into the record: docs/record-format.md)"
                ));
            }
        }
        let mut rows: Vec<Row> = self.groups.iter().map(groups::Group::row).collect();
        let baseline = match &self.opts.baseline {
            Some(wanted) => {
                let values: Vec<&str> = rows.iter().filter_map(|r| r.key.first().map(String::as_str)).collect();
                Some(baseline_value(&values, wanted, by.first().map_or("kernel", String::as_str))?)
            }
            None => None,
        };
        let mut baseline_of = mark_baselines(&mut rows, &self.groups, baseline.as_deref());
        unpool_differing_settings(&mut rows, &mut baseline_of);
        // Dimensions the user did not ask for are dropped where they do not
        // vary (said once above the table); asked-for ones stay.
        let (by, constant) = if default_grouping { drop_constant(&mut rows, by) } else { (by, Vec::new()) };
        name_rows(&mut rows);
        let mut found = Vec::new();
        for (row, group) in rows.iter().zip(&self.groups) {
            found.extend(in_force::finding(row, findings::subject(row)));
            found.extend(group.evidence.findings(&findings::subject(row)));
        }
        let boots: Vec<usize> = self.groups.iter().map(groups::Group::boots).collect();
        found.extend(findings::comparisons(&rows, &baseline_of, &boots));
        let findings = findings::fold(found);
        let tested = std::mem::take(&mut self.opts.tested);
        let verdict = verdict::lines(&rows, &baseline_of, &by, &findings, &verdict::Confirmations::new(&tested, &by));
        let pictures = self.pictures.finish(self.opts.timeline.as_deref())?;
        let setting = self.setting.said();
        let reproduce = self.reproduce;
        Ok(Report { by, rows, findings, pictures, constant, verdict, setting, reproduce, baseline_of, boots, tested })
    }
}

/// A row whose runs ran under different settings in force is compared with
/// nothing, and nothing with it: its runs are not one sample.
fn unpool_differing_settings(rows: &mut [Row], baseline_of: &mut [Option<usize>]) {
    for i in 0..rows.len() {
        let base = baseline_of[i];
        if !rows[i].settings_differ.is_empty() || base.is_some_and(|b| !rows[b].settings_differ.is_empty()) {
            baseline_of[i] = None;
            (rows[i].speedup, rows[i].significant) = (None, false);
        }
    }
}

/// Take the dimensions whose value is the same in every row out of `by` and
/// the rows' keys, returning them as (dimension, value). The first stays
/// when none varies: a table needs a first column.
fn drop_constant(rows: &mut [Row], by: Vec<String>) -> (Vec<String>, Vec<(String, String)>) {
    let Some(first) = rows.first() else { return (by, Vec::new()) };
    let varies: Vec<bool> = (0..by.len()).map(|i| rows.iter().any(|r| r.key.get(i) != first.key.get(i))).collect();
    let keep: Vec<bool> = if varies.iter().any(|v| *v) { varies } else { (0..by.len()).map(|i| i == 0).collect() };
    let constant = by
        .iter()
        .zip(&keep)
        .enumerate()
        .filter(|(_, (_, k))| !**k)
        .map(|(i, (d, _))| (d.clone(), first.key.get(i).cloned().unwrap_or_default()))
        .collect();
    for r in rows.iter_mut() {
        r.key = r.key.iter().zip(&keep).filter(|(_, k)| **k).map(|(v, _)| v.clone()).collect();
    }
    (by.into_iter().zip(&keep).filter(|(_, k)| **k).map(|(d, _)| d).collect(), constant)
}

/// What goes above the table in Markdown: the verdict, and the dimensions
/// every row shares.
pub fn heading(report: &Report) -> String {
    let mut out = String::new();
    if !report.verdict.is_empty() {
        out += "## Verdict\n\n";
        for line in &report.verdict {
            out += &format!("- {line}\n");
        }
        out += "\n";
    }
    if !report.constant.is_empty() {
        let same: Vec<String> = report.constant.iter().map(|(d, v)| format!("{d} {v}")).collect();
        out += &format!("Every row: {}.\n\n", same.join(" · "));
    }
    if let Some(setting) = &report.setting {
        out += &format!("{setting}\n\n");
    }
    out
}

/// Group and summarise result records (each is copied only where a
/// finding or the timeline needs it whole).
pub fn report<'a>(records: impl IntoIterator<Item = &'a Record>, opts: Options) -> Result<Report, String> {
    let mut b = Builder::new(opts);
    for r in records {
        b.add(&Glance::of(r))?;
    }
    b.finish()
}

/// The one value `wanted` names: itself, or the only value it is a prefix
/// of. `6.1` must not also pick `2.6.16.1`, nor `2.6.9` quietly pick one of
/// `2.6.9-42.EL` and `2.6.9-55.EL`.
pub fn baseline_value(values: &[&str], wanted: &str, dimension: &str) -> Result<String, String> {
    let mut distinct: Vec<&str> = values.to_vec();
    distinct.sort();
    distinct.dedup();
    if distinct.contains(&wanted) {
        return Ok(wanted.to_string());
    }
    let prefixed: Vec<&str> = distinct.iter().copied().filter(|v| v.starts_with(wanted)).collect();
    match prefixed[..] {
        [one] => Ok(one.to_string()),
        [] => {
            Err(format!("--baseline {wanted}: no {dimension} is or starts with it; there are: {}", distinct.join(", ")))
        }
        _ => {
            Err(format!("--baseline {wanted} is ambiguous: {} all start with it; give one whole", prefixed.join(", ")))
        }
    }
}

/// The baseline of each workload (+ the other --by dimensions) is the row whose
/// first dimension is `baseline`, or the first such row seen. Speedup and
/// significance both compare means (of real time): the test is on means,
/// so the ratio beside it is too.
/// Returns each row's baseline row.
fn mark_baselines(rows: &mut [Row], groups: &[groups::Group], baseline: Option<&str>) -> Vec<Option<usize>> {
    // Peers: the same workload and parameters, the same --by values but the first.
    let mut peers: HashMap<(&str, &str, &[String]), Vec<usize>> = HashMap::new();
    for (i, g) in groups.iter().enumerate() {
        peers.entry((g.workload.as_str(), g.params.as_str(), g.key.get(1..).unwrap_or(&[]))).or_default().push(i);
    }
    let mut baseline_of = vec![None; rows.len()];
    for same in peers.values() {
        let base = match baseline {
            Some(b) => same.iter().copied().find(|&j| rows[j].key.first().is_some_and(|k| k == b)),
            None => same.first().copied(),
        };
        let Some(b) = base else { continue };
        for &i in same {
            baseline_of[i] = Some(b);
            rows[i].baseline = b == i;
            if b != i {
                let versus: Vec<_> = rows[i]
                    .fio
                    .iter()
                    .map(|f| rows[b].fio.iter().find(|g| g.stream == f.stream).map(|g| fio::compare(f, g)))
                    .collect();
                rows[i].fio.iter_mut().zip(versus).for_each(|(f, v)| f.versus = v);
            }
            if let (Some(this), Some(base)) = (&rows[i].real_s, &rows[b].real_s)
                && b != i
                && this.mean > 0.0
            {
                rows[i].speedup = Some(base.mean / this.mean);
                // Across boots the boot is the unit: its medians, by rank.
                rows[i].significant = match verdict::boots_differ(&rows[i], &rows[b]) {
                    Some(differ) => differ,
                    None => stats::significant(this, base),
                };
            }
        }
    }
    baseline_of
}

fn cell(s: &Option<Summary>, digits: usize) -> String {
    match s {
        None => "—".into(),
        Some(s) if s.n == 1 || s.min == s.max => format!("{:.*}", digits, s.median),
        Some(s) => format!("{:.*} ({:.*}–{:.*})", digits, s.median, digits, s.min, digits, s.max),
    }
}

fn versus(r: &Row) -> String {
    versus_in(r, "×", "—", " (not significant)")
}

/// The "vs baseline" cell with the given spellings of times, none and a
/// difference that is not significant (`--format text` spells them in ASCII).
pub(super) fn versus_in(r: &Row, times: &str, none: &str, not_significant: &str) -> String {
    match r.speedup {
        _ if r.baseline => "baseline".into(),
        None => none.into(),
        Some(x) if (x - 1.0).abs() < 0.005 => "same".into(),
        Some(x) => {
            let word = if x >= 1.0 { format!("{x:.2}{times} faster") } else { format!("{:.2}{times} slower", 1.0 / x) };
            if r.significant { word } else { format!("{word}{not_significant}") }
        }
    }
}

/// Whether a row's "vs baseline" cell states a significant difference
/// (Markdown bolds it, HTML colours it).
pub fn stands_out(r: &Row) -> bool {
    r.significant && !r.baseline && r.speedup.is_some_and(|x| (x - 1.0).abs() >= 0.005)
}

/// One table row as text, for every format that draws the table: the --by
/// values, then one cell per entry of COLUMNS.
pub fn cells(r: &Row) -> Vec<String> {
    let mut cells = r.key.clone();
    cells.push(r.name.clone());
    cells.push(if r.not_ok > 0 { format!("{} ({} not ok)", r.n, r.not_ok) } else { r.n.to_string() });
    cells.push(cell(&r.real_s, 2));
    cells.push(cell(&r.user_s, 2));
    cells.push(cell(&r.sys_s, 2));
    cells.push(cell(&r.throughput_mib_s, 1));
    cells.push(cell(&r.probe_p99_ms, 1));
    cells.push(r.max_stall_ms.map(|m| format!("{m:.0}")).unwrap_or("—".into()));
    cells.push(cell(&r.stalls_over_1s, 0));
    cells.push(cell(&r.recovery_s, 1));
    cells.push(versus(r));
    let fio = r.fio.iter().map(fio::FioRow::line);
    cells.push(fio.chain(r.notes.iter().cloned()).collect::<Vec<_>>().join("; "));
    cells
}

/// The table's columns after the --by dimensions (Markdown and HTML alike).
pub const COLUMNS: [&str; 12] = [
    "workload",
    "n",
    "real s",
    "user s",
    "sys s",
    "MiB/s",
    "probe p99 ms",
    "max stall ms",
    "stalls >1s",
    "recovery s",
    "vs baseline (means)",
    "notes",
];

/// The Markdown table (one row per group; medians with min–max).
pub fn markdown(rows: &[Row], by: &[String]) -> String {
    let mut head: Vec<String> = by.iter().map(|b| b.to_string()).collect();
    head.extend(COLUMNS.map(String::from));
    let mut out = format!("| {} |\n|{}|\n", head.join(" | "), head.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in rows {
        let mut cells: Vec<String> = cells(r).into_iter().map(|c| c.replace('|', "/")).collect();
        let versus = cells.len() - 2;
        if stands_out(r) {
            cells[versus] = format!("**{}**", cells[versus]);
        }
        out += &format!("| {} |\n", cells.join(" | "));
    }
    out
}

/// CSV: one row per group, medians and CI half-widths as plain numbers.
/// Every dimension has its column, those the same in every row too
/// (`constant`, first): a spreadsheet joins files by them.
pub fn csv(rows: &[Row], by: &[String], constant: &[(String, String)]) -> String {
    let mut out = constant.iter().map(|(d, _)| format!("{d},")).collect::<String>() + &by.join(",");
    out += ",workload,n,not_ok,real_median_s,real_ci95_s,user_median_s,sys_median_s,throughput_median_mib_s,throughput_hmean_mib_s,probe_p99_median_ms,max_stall_ms,stalls_over_1s_median,recovery_median_s,speedup_vs_baseline,significant\n";
    let m = |s: &Option<Summary>| s.as_ref().map(|s| s.median.to_string()).unwrap_or_default();
    let q = |v: &str| if v.contains([',', '"']) { format!("\"{}\"", v.replace('"', "\"\"")) } else { v.to_string() };
    for r in rows {
        let mut f: Vec<String> = constant.iter().map(|(_, v)| q(v)).chain(r.key.iter().map(|k| q(k))).collect();
        f.push(q(&r.workload));
        f.push(r.n.to_string());
        f.push(r.not_ok.to_string());
        f.push(m(&r.real_s));
        f.push(r.real_s.as_ref().and_then(|s| s.ci95).map(|c| c.to_string()).unwrap_or_default());
        f.push(m(&r.user_s));
        f.push(m(&r.sys_s));
        f.push(m(&r.throughput_mib_s));
        f.push(r.throughput_harmonic_mean.map(|v| v.to_string()).unwrap_or_default());
        f.push(m(&r.probe_p99_ms));
        f.push(r.max_stall_ms.map(|v| v.to_string()).unwrap_or_default());
        f.push(m(&r.stalls_over_1s));
        f.push(m(&r.recovery_s));
        f.push(r.speedup.map(|v| v.to_string()).unwrap_or_default());
        f.push(r.significant.to_string());
        out += &f.join(",");
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::record::{Responsiveness, Status};
    use serde_json::json;

    fn rows(records: &[Record], opts: &Options) -> Result<Vec<Row>, String> {
        report(records, opts.clone()).map(|r| r.rows)
    }

    fn by(dims: &[&str]) -> Option<Vec<String>> {
        Some(dims.iter().map(|d| d.to_string()).collect())
    }

    fn rec(kernel: &str, wall: f64, seq: u32) -> Record {
        let mut r = crate::schema::record::tests::record();
        r.seq = seq;
        r.kernel.release = Some(kernel.into());
        r.storage.fs = Some("ext3".into());
        r.host.hostname = Some("h".into());
        r.workload.name = "seqwrite".into();
        r.workload.params = json!({"size": 1073741824});
        r.times = crate::schema::record::Times { wall_s: wall, user_s: 0.1, sys_s: 2.0, ..Default::default() };
        r.throughput_mib_s = 1024.0 / wall;
        r.responsiveness = Some(Responsiveness {
            p99_ms: 10.0,
            max_ms: 5000.0,
            stalls_over_1s: 3,
            recovery_s: Some(1.5),
            ..Default::default()
        });
        r
    }

    /// `rec` with the disk's counters: `requests` writes for `rec`'s 1 GiB.
    fn rec_with_requests(kernel: &str, wall: f64, seq: u32, requests: u64) -> Record {
        let mut r = rec(kernel, wall, seq);
        r.counters.disk_delta = Some(crate::schema::measures::DiskDelta {
            device: "sda".into(),
            ms_io: None,
            ms_writing: None,
            reads: 0,
            sectors_read: 0,
            sectors_written: 2 * 1024 * 1024,
            writes: requests,
        });
        r
    }

    /// `r` with its reads timed in the device by the block tracepoints: the
    /// disk held them `p50_ms` at the median.
    fn reads_held(mut r: Record, p50_ms: f64) -> Record {
        use crate::schema::events::{KernelEvents, REQUEST_EVENTS, Requests};
        use crate::schema::measures::LatencySummary;
        r.storage.device = Some(crate::schema::machine::Device { disk: "sda".into(), ..Default::default() });
        let held = LatencySummary { count: 100, p50_ms, max_ms: p50_ms * 3.0, ..LatencySummary::default() };
        let reads = Requests { count: 100, kib_p50: 4, kib_max: 4, device_ms: held, queued_ms: None };
        r.kernel_events = Some(KernelEvents {
            enabled: REQUEST_EVENTS.iter().map(|e| e.to_string()).collect(),
            requests: [("sda R".to_string(), reads)].into(),
            ..KernelEvents::default()
        });
        r
    }

    /// A fio run of the seed's job: the writer's 48 MiB and the reader's p99, in boot `boot`.
    fn fio_rec(kernel: &str, boot: u32, reader_p99_ms: f64) -> Record {
        let mut r = rec(kernel, 4.0, boot);
        r.run_id = format!("{kernel}-boot{boot}");
        r.workload.name = "fio".into();
        r.workload.params = json!({"job": "[writer]..."});
        let direction = |mib: f64, iops: f64, p99: f64| json!({"io_bytes": 1, "bw_bytes": mib * 1048576.0, "iops": iops, "runtime_ms": 4000, "clat": {"count": 100, "p99_ms": p99}});
        r.details = json!({"fio": {"version": "fio-3.33", "jobs": [
            {"name": "writer", "error": 0, "write": direction(12.0, 768.0, 2.0)},
            {"name": "reader", "error": 0, "read": direction(0.1, 25.0, reader_p99_ms)}]}});
        r
    }

    #[test]
    fn a_fio_readers_p99_that_differs_across_boots_is_in_the_verdict_and_under_its_row() {
        let mut records = Vec::new();
        for (boot, (old, new)) in [(11.0, 34.0), (12.0, 36.0), (10.5, 33.0), (11.5, 35.5)].into_iter().enumerate() {
            records.push(fio_rec("6.1.0-57-amd64", boot as u32, old));
            records.push(fio_rec("6.12.118+deb13-amd64", 10 + boot as u32, new));
        }
        let r = report(&records, Options::default()).unwrap();
        let v = &r.verdict[0];
        // The real time is the job file's (4 s each): fio's streams are the comparison.
        assert!(v.starts_with("6.12.118+deb13-amd64 against 6.1.0-57-amd64: fio the same time"), "{v}");
        assert!(
            v.contains("; fio reader read clat p99 11.2 → 34.8 ms (significant across 4 vs 4 boots, p 0.03)"),
            "{v}"
        );
        assert!(!v.contains("writer write"), "the writer did not change: {v}");
        let new = r.rows.iter().find(|row| row.key[0].starts_with("6.12")).unwrap();
        let reader = new.fio.iter().find(|f| f.stream == "reader read").unwrap();
        let p99 = reader.versus.as_ref().unwrap().clat_p99_ms.as_ref().unwrap();
        assert!(p99.significant && (p99.ratio - 34.75 / 11.25).abs() < 1e-9, "{p99:?}");
        assert!(r.rows.iter().find(|row| row.baseline).unwrap().fio.iter().all(|f| f.versus.is_none()));
        let md = markdown(&r.rows, &r.by);
        assert!(md.contains("clat p99 34.75 ms; against the baseline: clat p99 3.09× (significant"), "{md}");
    }

    #[test]
    fn rows_of_one_workload_with_other_params_are_named_by_what_differs() {
        let (seed, mut reader) = (fio_rec("6.1.0-57-amd64", 1, 10.0), fio_rec("6.1.0-57-amd64", 1, 12.0));
        reader.seq = 2;
        reader.workload.params = json!({"job": "[reader]\nrw=randread\nbs=4k\n"});
        let (gib, mut two) = (rec("6.1.0-57-amd64", 10.0, 3), rec("6.1.0-57-amd64", 20.0, 4));
        two.workload.params = json!({"size": 2147483648u64});
        let alone = {
            let mut r = rec("6.1.0-57-amd64", 5.0, 5);
            r.workload.name = "manyfiles".into();
            r
        };
        let r = report([&seed, &reader, &gib, &two, &alone], Options::default()).unwrap();
        let mut names: Vec<&str> = r.rows.iter().map(|row| row.name.as_str()).collect();
        names.sort();
        assert_eq!(names.len(), 5);
        // The reader's job is several lines: a digest of it; the other's is short enough to show.
        assert!(names[0].starts_with("fio job=#") && names[0].len() == "fio job=#".len() + 6, "{names:?}");
        assert_eq!(
            names[1..],
            ["fio job=[writer]...", "manyfiles", "seqwrite size=1073741824", "seqwrite size=2147483648"]
        );
        let text = text::render(&r);
        for name in &names {
            assert!(text.contains(name), "{name} not in\n{text}");
        }
        // The same job text gets the same name in any report.
        let again = report([&reader], Options::default()).unwrap();
        assert_eq!(again.rows[0].name, "fio", "a row alone keeps its workload's name");
        let both = report([&reader, &seed], Options::default()).unwrap();
        let named = |rep: &Report, p99: f64| {
            rep.rows.iter().find(|row| row.fio[1].clat_p99_ms.as_ref().unwrap().median == p99).unwrap().name.clone()
        };
        assert_eq!(named(&both, 12.0), named(&r, 12.0));
    }

    #[test]
    fn three_kernels_on_one_disk_lead_with_a_verdict_and_drop_what_does_not_vary() {
        let mut records = Vec::new();
        for (i, wall) in [20.0, 20.2, 19.8].iter().enumerate() {
            records.push(rec_with_requests("5.10.0-46-amd64", *wall, i as u32, 8192));
            records.push(rec_with_requests("6.1.0-57-amd64", wall + 0.1, 10 + i as u32, 8192));
            records.push(rec_with_requests("6.12.118+deb13-amd64", wall * 0.62, 20 + i as u32, 930));
        }
        let r = report(&records, Options::default()).unwrap();
        assert_eq!(r.by, ["kernel"], "fs and host do not vary");
        assert_eq!(r.constant, [("fs".to_string(), "ext3".to_string()), ("host".to_string(), "h".to_string())]);
        assert!(r.rows.iter().all(|row| row.key.len() == 1));
        assert_eq!(r.verdict.len(), 2, "{:?}", r.verdict);
        assert!(r.verdict[0].starts_with("6.1.0-57-amd64 against 5.10.0-46-amd64: no difference"), "{}", r.verdict[0]);
        let v = &r.verdict[1];
        assert!(
            v.starts_with("6.12.118+deb13-amd64 against 5.10.0-46-amd64: seqwrite 1.61× faster (significant)"),
            "{v}"
        );
        // Sizes that differ beside a time that differs are a correlation: no cause.
        assert!(!v.contains("Cause") && !v.contains("Candidate"), "{v}");
        let md = heading(&r) + &markdown(&r.rows, &r.by);
        assert!(md.starts_with("## Verdict\n\n- 6.1.0-57-amd64 against"), "{md}");
        assert!(md.contains("Every row: fs ext3 · host h.\n\n| kernel | workload |"), "{md}");
        // The comparison finding names the request sizes too.
        let c = r.findings.iter().find(|f| f.rule == "comparison").unwrap();
        assert!(
            c.sentence.contains("the disk got 1.1 MiB write requests instead of 128 KiB (a size"),
            "{}",
            c.sentence
        );
        // Dimensions asked for stay, varying or not.
        let asked = report(&records, Options { by: by(&["kernel", "fs"]), ..Options::default() }).unwrap();
        assert_eq!((asked.by.len(), asked.constant.len()), (2, 0));
    }

    /// Larger requests are a candidate cause of reads waiting longer, never
    /// of reads waiting less, and only where the block tracepoints show the
    /// disk itself holding the reads longer; a time difference the runs do
    /// not bear out gets no cause at all.
    #[test]
    fn a_cause_is_named_only_where_its_direction_and_the_runs_agree() {
        let with_p99 = |mut r: Record, p99: f64| {
            r.responsiveness.as_mut().unwrap().p99_ms = p99;
            r
        };
        let mut records = Vec::new();
        for (i, wall) in [20.0, 21.5, 18.5].iter().enumerate() {
            records.push(with_p99(rec_with_requests("5.10", *wall, i as u32, 8192), 40.0));
            // Larger requests, reads waiting less, a time that differs by chance.
            records.push(with_p99(rec_with_requests("6.12", wall * 1.05, 10 + i as u32, 930), 15.0));
        }
        let r = report(&records, Options::default()).unwrap();
        let v = &r.verdict[0];
        assert!(v.contains("(not significant), probe p99 40 → 15 ms"), "{v}");
        assert!(!v.contains("Cause"), "{v}");
        // The same requests with reads waiting longer: the cause, with its effect.
        for r in records.iter_mut().filter(|r| r.kernel.release.as_deref() == Some("6.12")) {
            r.responsiveness.as_mut().unwrap().p99_ms = 90.0;
        }
        // Untimed in the device, the reads' wait is not shown to be behind the requests: no cause.
        let r = report(&records, Options::default()).unwrap();
        assert!(!r.verdict[0].contains("Cause") && !r.verdict[0].contains("Candidate"), "{}", r.verdict[0]);
        // The disk itself held the reads longer on 6.12 (block tracepoints): a candidate, never more.
        let probe_read = |r: &mut Record, ms: f64| r.responsiveness.as_mut().unwrap().read.p50_ms = ms;
        for r in records.iter_mut() {
            let slow = r.kernel.release.as_deref() == Some("6.12");
            probe_read(r, if slow { 22.0 } else { 3.0 });
            *r = reads_held(r.clone(), if slow { 18.0 } else { 1.5 });
        }
        let r = report(&records, Options::default()).unwrap();
        assert!(
            r.verdict[0].contains(
                "Candidate cause (one boot a side: more boots, or a plan variant that removes it, would test it): seqwrite: its write requests were 1.1 MiB where 5.10's were 128 KiB (a size the kernel decides: max_sectors_kb, merging; these records do not carry the queue's settings): a read queued behind a larger request waits longer (the disk held its reads 18.0 ms against 1.5 ms at the median: block tracepoints)"
            ),
            "{}",
            r.verdict[0]
        );
        assert!(!r.verdict[0].contains(". Cause:"), "{}", r.verdict[0]);
        // Records that carry the queue's limit: a limit equal on both sides is no cause of the sizes.
        for r in records.iter_mut() {
            r.storage.queue.insert("queue/max_sectors_kb".into(), "1280".into());
        }
        let r = report(&records, Options::default()).unwrap();
        let said = "(the queue's max_sectors_kb is 1280 on both: the sizes differ by merging, not by that limit)";
        assert!(r.verdict[0].contains(said), "{}", r.verdict[0]);
    }

    /// The demo's strongest signal: 6.12's uncached 4 KiB read at a 22 ms
    /// median against 3 ms, with the whole response's p99 and the time alike.
    #[test]
    fn a_slower_probe_read_alone_makes_a_comparison_with_its_medians() {
        let with_read = |mut r: Record, p50: f64| {
            r.responsiveness.as_mut().unwrap().read.p50_ms = p50;
            r
        };
        let mut records = Vec::new();
        for (i, wall) in [20.0, 20.2, 19.8].iter().enumerate() {
            records.push(with_read(rec("5.10", *wall, i as u32), 3.0));
            records.push(with_read(rec("6.12", *wall, 10 + i as u32), 22.0));
        }
        let r = report(&records, Options::default()).unwrap();
        let c = r.findings.iter().find(|f| f.rule == "comparison").expect("a comparison");
        assert!(
            c.sentence.contains("the probe's uncached 4 KiB read took 22.0 ms instead of 3.0 ms at the median"),
            "{}",
            c.sentence
        );
        assert!(c.evidence.contains(&"responsiveness.read.p50_ms median 22.0 vs 3.0".to_string()), "{:?}", c.evidence);
        // Alike reads: no comparison at all.
        for r in records.iter_mut() {
            r.responsiveness.as_mut().unwrap().read.p50_ms = 3.0;
        }
        assert!(!report(&records, Options::default()).unwrap().findings.iter().any(|f| f.rule == "comparison"));
    }

    /// The block tracepoints time each read in the device: where the disk
    /// carries the read's longer wait, the request-size cause cites it; where
    /// the disk held reads alike on both sides, the read waited before
    /// reaching it, and larger requests in the disk are no cause of that.
    #[test]
    fn a_device_that_held_the_reads_proves_the_request_size_cause_and_one_that_did_not_refutes_it() {
        use crate::schema::events::{KernelEvents, REQUEST_EVENTS, Requests};
        use crate::schema::measures::LatencySummary;
        // `queued_ms`: the reads' median insert to issue, where block_rq_insert was read.
        let traced = |mut r: Record, read_ms: f64, device_ms: f64, queued_ms: Option<f64>| {
            let p = r.responsiveness.as_mut().unwrap();
            (p.p99_ms, p.read.p50_ms) = (read_ms * 3.0, read_ms);
            r.storage.device = Some(crate::schema::machine::Device { disk: "sda".into(), ..Default::default() });
            r.storage.scheduler = Some("mq-deadline".into());
            let held = |p50_ms| LatencySummary { count: 120, p50_ms, max_ms: 40.0, ..LatencySummary::default() };
            let reads = Requests {
                count: 120,
                kib_p50: 4,
                kib_max: 4,
                device_ms: held(device_ms),
                queued_ms: queued_ms.map(held),
            };
            let mut enabled = REQUEST_EVENTS.map(String::from).to_vec();
            enabled.extend(queued_ms.map(|_| crate::schema::events::INSERT_EVENT.to_string()));
            r.kernel_events = Some(KernelEvents {
                enabled,
                requests: [("sda R".to_string(), reads)].into(),
                ..KernelEvents::default()
            });
            r
        };
        let traced_both = |device_612: f64, queued: Option<(f64, f64)>| {
            let mut records = Vec::new();
            for (i, wall) in [20.0, 20.2, 19.8].iter().enumerate() {
                let q = |side: fn((f64, f64)) -> f64| queued.map(side);
                records.push(traced(rec_with_requests("5.10", *wall, i as u32, 8192), 3.2, 1.5, q(|q| q.1)));
                records.push(traced(
                    rec_with_requests("6.12", *wall, 10 + i as u32, 930),
                    21.2,
                    device_612,
                    q(|q| q.0),
                ));
            }
            report(&records, Options::default()).unwrap()
        };
        let demo = |device_612: f64| traced_both(device_612, None);
        let r = demo(18.8);
        let proof = "a read queued behind a larger request waits longer (the disk held its reads 18.8 ms against 1.5 ms at the median: block tracepoints)";
        assert!(r.verdict[0].contains(proof), "{}", r.verdict[0]);
        let c = r.findings.iter().find(|f| f.rule == "comparison").unwrap();
        let said = "took 21.2 ms instead of 3.2 ms at the median, of which the disk itself held reads 18.8 ms against 1.5 ms (median issue to completion, block tracepoints): the difference is the disk's";
        assert!(c.sentence.contains(said), "{}", c.sentence);
        // The disk held reads alike: the wait was before it, and no request size explains that.
        let r = demo(1.6);
        assert!(!r.verdict[0].contains("Cause"), "{}", r.verdict[0]);
        let c = r.findings.iter().find(|f| f.rule == "comparison").unwrap();
        assert!(
            c.sentence.contains("most of the difference passed before the read reached the device: where, these events do not say (block_rq_insert was not read on both sides)"),
            "{}",
            c.sentence
        );
        // With block_rq_insert read: the 17.9 ms before the device, 15 of them in the scheduler's queue.
        let comparison = |r: Report| r.findings.into_iter().find(|f| f.rule == "comparison").unwrap().sentence;
        let queue = comparison(traced_both(1.6, Some((15.2, 0.2))));
        let said = "most of the difference passed before the read reached the device, in the I/O scheduler's queue (or waiting there for the driver's tag), which held reads 15.2 ms against 0.2 ms (median insert to issue, block_rq_insert)";
        assert!(queue.contains(said), "{queue}");
        // Or not there: before the queue, which the events do not see.
        let above = comparison(traced_both(1.6, Some((0.4, 0.2))));
        let said = "most of the difference passed before the read reached the device, and not in the I/O scheduler's queue, which held reads 0.4 ms against 0.2 ms (median insert to issue, block_rq_insert): before it";
        assert!(above.contains(said), "{above}");
    }

    /// 6.12's runs of one group, one of them still under another variant's
    /// 4 MiB dirty limit: the row says so, is compared with nothing (nor is
    /// 5.10's with it), and the finding names the setting.
    #[test]
    fn runs_under_different_settings_in_force_are_not_pooled() {
        let with_vm = |mut r: Record, bytes: i64| {
            r.vm = [("dirty_ratio", if bytes > 0 { 0 } else { 20 }), ("dirty_bytes", bytes)]
                .iter()
                .map(|(k, v)| (k.to_string(), Some(*v)))
                .collect();
            r
        };
        let mut records = Vec::new();
        for (i, wall) in [20.0, 20.2, 19.8].iter().enumerate() {
            records.push(with_vm(rec("5.10", *wall, i as u32), 0));
            let leaked = if i == 2 { 4194304 } else { 0 };
            records.push(with_vm(rec("6.12", wall * 2.0, 10 + i as u32), leaked));
        }
        let r = report(&records, Options::default()).unwrap();
        let row = r.rows.iter().find(|row| row.key[0] == "6.12").unwrap();
        assert_eq!(row.settings_differ, ["the dirty limit vm.dirty_ratio=20 in 2 runs, vm.dirty_bytes=4194304 in 1"]);
        assert!(r.rows.iter().find(|row| row.key[0] == "5.10").unwrap().settings_differ.is_empty());
        assert!(r.comparisons().is_empty(), "{:?}", r.comparisons());
        assert!(!r.findings.iter().any(|f| f.rule == "comparison"));
        assert!(r.verdict.iter().all(|v| !v.contains("faster") && !v.contains("slower")), "{:?}", r.verdict);
        let unpooled = r.findings.iter().find(|f| f.rule == "settings-differ").unwrap();
        assert!(unpooled.subject.contains("6.12"), "{}", unpooled.subject);
        assert!(unpooled.sentence.contains("vm.dirty_bytes=4194304 in 1"), "{}", unpooled.sentence);
        // The same runs all under one limit: compared as before.
        let alike: Vec<Record> = records.into_iter().map(|r| with_vm(r, 0)).collect();
        let r = report(&alike, Options::default()).unwrap();
        assert!(!r.findings.iter().any(|f| f.rule == "settings-differ"));
        assert!(r.findings.iter().any(|f| f.rule == "comparison"));
    }

    /// Five boots a kernel, three runs each: the boot is the unit. Each
    /// boot's median is one sample, the rank test decides, and the stalls
    /// are counted by boot (Fisher's exact test); one boot a side says it
    /// holds for those boots only.
    #[test]
    fn boots_are_the_unit_when_there_are_several() {
        let mut records = Vec::new();
        for boot in 0..5u32 {
            for run in 0..3u32 {
                let mut old = rec("5.10", 20.0 + f64::from(boot) * 0.1 + f64::from(run) * 0.01, run);
                old.run_id = format!("old-boot-{boot}");
                old.responsiveness.as_mut().unwrap().max_ms = 300.0;
                records.push(old);
                let mut new = rec("6.12", 21.0 + f64::from(boot) * 0.1 + f64::from(run) * 0.01, run);
                new.run_id = format!("new-boot-{boot}");
                // A stall over 1 s in four of its five boots.
                new.responsiveness.as_mut().unwrap().max_ms = if boot < 4 && run == 1 { 1500.0 } else { 300.0 };
                records.push(new);
            }
        }
        let r = report(&records, Options::default()).unwrap();
        assert!(r.verdict[0].contains("(significant across 5 vs 5 boots, p 0.01)"), "{}", r.verdict[0]);
        assert!(!r.verdict[0].contains("one boot"), "{}", r.verdict[0]);
        let comparisons = r.comparisons();
        let a = comparisons[0].across_boots.as_ref().expect("across boots");
        assert_eq!((a.boots, a.stalled_boots), ([5, 5], [0, 4]));
        // Complete separation of 5 against 5: SciPy's exact p 0.007937; Fisher's 0/5 against 4/5: 0.047619.
        assert!((a.mann_whitney_p - 0.007936507936507938).abs() < 1e-12, "{a:?}");
        assert!((a.fisher_p - 0.04761904761904762).abs() < 1e-12, "{a:?}");
        let [lo, hi] = a.ratio_interval.unwrap();
        assert!(lo > 1.0 && lo <= a.ratio && a.ratio <= hi, "{a:?}");
        // The same runs as one boot a side: a line that says so, once.
        for r in records.iter_mut() {
            r.run_id = r.run_id.split("-boot-").next().unwrap().to_string();
        }
        let r = report(&records, Options::default()).unwrap();
        assert!(r.verdict[0].ends_with("15 runs in one boot each: holds for these boots."), "{}", r.verdict[0]);
        assert!(r.comparisons()[0].across_boots.is_none());
    }

    /// Six boots a kernel whose medians wander ±4 %: each kernel's first
    /// three boots against its last three land 2 % apart (A/A), so a 1 %
    /// difference between the kernels is said to be within that floor.
    #[test]
    fn a_kernel_against_itself_gives_the_noise_floor() {
        let walls = [20.0, 20.8, 19.6, 20.4, 21.0, 19.4];
        let mut records = Vec::new();
        for (boot, wall) in walls.iter().enumerate() {
            for (kernel, factor) in [("5.10", 1.0), ("6.12", 1.01)] {
                let mut r = rec(kernel, wall * factor, 0);
                r.run_id = format!("{kernel}-boot-{boot}");
                records.push(r);
            }
        }
        let r = report(&records, Options::default()).unwrap();
        assert!(r.verdict[0].contains("; within the A/A noise floor of 2.0 %)"), "{}", r.verdict[0]);
        let aa = &r.verdict[1];
        assert!(aa.starts_with("A/A noise floor (each group's first boots against its last, in real time): seqwrite 5.10 1.020× (3 vs 3 boots, p 1.00); seqwrite 6.12 1.020× (3 vs 3 boots, p 1.00); the largest 2.0 %: a difference between kernels no larger than its workload's floor"), "{aa}");
        let floors: Vec<verdict::NoiseFloor> = r.rows.iter().filter_map(verdict::noise_floor).collect();
        // SciPy 1.10: mannwhitneyu([20.0, 20.8, 19.6], [20.4, 21.0, 19.4], method='exact').pvalue = 1.0
        assert!((floors[0].mann_whitney_p - 1.0).abs() < 1e-12, "{:?}", floors[0]);
        assert_eq!((floors[0].boots, floors[0].medians_s), ([3, 3], [20.0, 20.4]));
        let c = &r.comparisons()[0];
        assert!((c.noise_floor.unwrap() - 0.02).abs() < 1e-9, "{c:?}");
        assert!(r.json()["noise_floor"].as_array().unwrap().len() == 2);
        // Three boots a side: no halves of two, no floor.
        let r = report(&records[..6], Options::default()).unwrap();
        assert!(r.verdict.iter().all(|l| !l.contains("A/A")) && r.comparisons()[0].noise_floor.is_none());
    }

    #[test]
    fn a_fleet_verdict_sums_up_its_groups_and_names_the_largest_differences() {
        let mut records = Vec::new();
        for host in 0..10u32 {
            for (seq, wall) in [20.0, 20.2, 19.8].iter().enumerate() {
                let mut old = rec("5.10", *wall, host * 10 + seq as u32);
                old.host.hostname = Some(format!("h{host}"));
                let mut new = rec("6.12", if host == 7 { wall * 1.5 } else { *wall }, 500 + host * 10 + seq as u32);
                new.host.hostname = Some(format!("h{host}"));
                records.extend([old, new]);
            }
        }
        let r = report(&records, Options { by: by(&["kernel", "host"]), ..Options::default() }).unwrap();
        assert_eq!(r.verdict.len(), 1);
        let v = &r.verdict[0];
        assert!(v.starts_with("6.12 against 5.10: 10 groups: 9 the same, 1 differ (1 significantly)"), "{v}");
        assert!(v.contains("the largest: seqwrite on h7 1.50× slower (significant)"), "{v}");
    }

    #[test]
    fn one_kernel_has_nothing_to_compare_and_says_so() {
        let r = report(&[rec("6.1.0-57-amd64", 20.0, 0)], Options::default()).unwrap();
        assert_eq!(
            r.verdict,
            ["One kernel only (6.1.0-57-amd64): nothing to compare it with; the table gives its figures."]
        );
    }

    #[test]
    fn findings_of_one_rule_across_groups_are_folded_into_one() {
        let f = |subject: &str, rule: &'static str| findings::Finding {
            rule,
            subject: subject.into(),
            sentence: format!("{subject} flushed"),
            evidence: vec!["times.durable_s = 1".into()],
            record: Some(format!("{subject}:0")),
            names_cause: false,
        };
        let folded = findings::fold(vec![
            f("5.10 · seqwrite", "flush"),
            f("5.10 · seqwrite", "comparison"),
            f("6.1 · seqwrite", "flush"),
            f("6.12 · seqwrite", "comparison"),
            f("6.12 · seqwrite", "flush"),
        ]);
        assert_eq!(folded.len(), 3, "{folded:?}");
        let flush = &folded[0];
        assert_eq!(flush.subject, "5.10 · seqwrite; 6.1 · seqwrite; 6.12 · seqwrite");
        assert_eq!(flush.sentence, "in 3 groups, each alike; in 5.10 · seqwrite: 5.10 · seqwrite flushed");
        assert_eq!(flush.evidence.len(), 3);
        assert!(flush.evidence[2].starts_with("6.12 · seqwrite: "));
        assert_eq!(flush.record.as_deref(), Some("5.10 · seqwrite:0"));
        assert_eq!(folded.iter().filter(|f| f.rule == "comparison").count(), 2, "comparisons are not folded");
    }

    #[test]
    fn the_seed_comparison_comes_out_as_a_significant_speedup() {
        let records = vec![
            rec("2.6.9-42.ELsmp", 315.0, 0),
            rec("2.6.9-42.ELsmp", 310.0, 1),
            rec("2.6.9-42.ELsmp", 320.0, 2),
            rec("2.6.16.1", 112.0, 3),
            rec("2.6.16.1", 110.0, 4),
            rec("2.6.16.1", 114.0, 5),
        ];
        let opts = Options { by: by(&["kernel", "fs"]), baseline: Some("2.6.9".into()), ..Options::default() };
        let dims = opts.by.clone().unwrap();
        let rows = rows(&records, &opts).unwrap();
        assert_eq!(rows.len(), 2);
        assert!(rows[0].baseline);
        let new = &rows[1];
        assert_eq!(new.real_s.as_ref().unwrap().median, 112.0);
        assert!((new.speedup.unwrap() - 315.0 / 112.0).abs() < 1e-9);
        assert!(new.significant);
        let md = markdown(&rows, &dims);
        assert!(md.contains("| 2.6.16.1 | ext3 | seqwrite | 3 | 112.00 (110.00–114.00)"), "{md}");
        assert!(md.contains("**2.81× faster**"), "{md}");
        let page = html::render(&rows, &dims, &[], 0, &[]);
        assert!(page.contains("<td class=\"sig\">2.81× faster</td>"), "HTML marks the same cell: {page}");
        assert_eq!(page.matches("class=\"sig\"").count(), 1, "only the significant comparison");
        let csv = csv(&rows, &dims, &[]);
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().nth(2).unwrap().starts_with("2.6.16.1,ext3,seqwrite,3,0,112,"));
    }

    /// `6.1` must not match `2.6.16.1`; a prefix picks a value only when it
    /// is the only one with it.
    #[test]
    fn the_baseline_is_a_whole_value_or_an_unambiguous_prefix() {
        let values = ["2.6.16.1", "6.1.0-50-amd64", "2.6.9-42.EL", "2.6.9-55.EL", "6.1.0-50-amd64"];
        assert_eq!(baseline_value(&values, "6.1", "kernel").unwrap(), "6.1.0-50-amd64");
        assert_eq!(baseline_value(&values, "2.6.16.1", "kernel").unwrap(), "2.6.16.1");
        let err = baseline_value(&values, "2.6.9", "kernel").unwrap_err();
        assert!(err.contains("ambiguous") && err.contains("2.6.9-42.EL, 2.6.9-55.EL"), "{err}");
        let err = baseline_value(&values, "16.1", "kernel").unwrap_err();
        assert!(err.contains("no kernel is or starts with it"), "substrings do not count: {err}");
        let records = vec![rec("2.6.16.1", 100.0, 0), rec("6.1.0-50-amd64", 50.0, 1)];
        let opts = Options { by: by(&["kernel"]), baseline: Some("6.1".into()), ..Options::default() };
        let rows = rows(&records, &opts).unwrap();
        assert!(rows[1].baseline && !rows[0].baseline, "6.1 picked 6.1.0-50-amd64, not 2.6.16.1");
        let opts = Options { by: by(&["kernel"]), baseline: Some("5.10".into()), ..Options::default() };
        assert!(report(&records, opts).is_err());
    }

    /// Every run with a probe timeline is drawn up to the caps; past them a
    /// worse stall takes the mildest run's place, and --timeline draws its run whatever the caps.
    #[test]
    fn html_draws_each_run_the_worst_stall_and_the_run_asked_for() {
        let timeline = |worst: f64| -> crate::schema::record::Timeline {
            serde_json::from_value(json!({"interval_s": 0.25, "t_s": [0.0, 0.25, 0.5],
                "series": {"dirty_kib": [0, 204800, null], "writeback_kib": [0, 1024, 0]},
                "probe_t_s": [0.1, 0.2], "probe_response_ms": [1.0, worst], "probe_read_ms": [0.5, worst * 0.9],
                "probe_ls_ms": [0.4, 2.0], "workload_start_s": 0.1, "workload_end_s": 0.4}))
            .unwrap()
        };
        let mut records: Vec<Record> =
            (0..10).map(|i| rec(if i < 2 { "2.6.9" } else { "2.6.16.1" }, 100.0, i)).collect();
        for (i, r) in records.iter_mut().enumerate() {
            let worst = if i == 9 { 5000.0 } else { 40.0 + i as f64 };
            r.responsiveness.as_mut().unwrap().max_ms = worst;
            r.timeline = timeline(worst);
        }
        let opts = Options { by: by(&["kernel"]), pictures: true, ..Options::default() };
        let r = report(&records, opts.clone()).unwrap();
        let drawn =
            |r: &Report| -> Vec<u32> { (0..r.rows.len()).flat_map(|i| r.pictures.runs_of(i).map(|x| x.seq)).collect() };
        assert_eq!(drawn(&r), [0, 1, 2, 3, 4, 5, 6, 9], "2.6.16.1's first five runs and its worst stall");
        assert_eq!(r.pictures.left_out, 2);
        assert_eq!(r.pictures.waits[1].whole.n, 16, "its CDF counts every run's waits");
        let asked = |t: &str| report(&records, Options { timeline: Some(t.into()), ..opts.clone() });
        assert!(drawn(&asked("r:8").unwrap()).contains(&8));
        assert!(asked("nope:9").err().unwrap().contains("no such record"));
        assert!(asked("r").err().unwrap().contains("RUN_ID:SEQ"));
        let page = html::page(&r).unwrap();
        assert!(page.starts_with("<!doctype html>") && page.ends_with("</html>\n"));
        assert_eq!(page.matches("<figure id=\"run-").count(), 8, "one timeline per drawn run");
        assert_eq!((r.pictures.waits[1].read.n, r.pictures.waits[1].ls.max_ms), (16, 2.0), "the parts apart");
        for id in ["waits-seqwrite", "cdf-seqwrite", "parts-seqwrite", "throughput-seqwrite", "stall-seqwrite"] {
            assert!(page.contains(&format!("<figure id=\"{id}\"")), "{id}");
        }
        assert!(page.contains("2 more run(s) with a timeline"), "the runs left out are said");
        assert_eq!(page.matches("<tr>").count(), 3, "header and two rows");
        assert!(!page.contains("<script"), "self-contained, no scripts");
        let plain = report(&records, Options { pictures: false, ..opts }).unwrap();
        assert_eq!(drawn(&plain), [0u32; 0], "no pictures asked: no runs kept");
    }

    /// The named dimensions read typed fields; any other is a dotted path
    /// into the record, and a missing one is `?`, not an error.
    #[test]
    fn dimensions_read_named_fields_and_dotted_paths() {
        let mut r = rec("2.6.16.1", 10.0, 0);
        r.vm.insert("dirty_ratio".into(), Some(40));
        r.storage.scheduler = Some("anticipatory".into());
        assert_eq!(dimension(&r, "kernel"), "2.6.16.1");
        assert_eq!(dimension(&r, "scheduler"), "anticipatory");
        assert_eq!(dimension(&r, "host"), "h", "no DMI, no CPU model: the hostname");
        assert_eq!(dimension(&r, "device"), "?", "no block device");
        assert_eq!(dimension(&r, "layers"), "plain", "no LVM or md under it");
        r.storage.layers = vec![
            crate::schema::layer::Layer { kind: "md".into(), md_level: Some("raid5".into()), ..Default::default() },
            crate::schema::layer::Layer { kind: "disk".into(), ..Default::default() },
            crate::schema::layer::Layer { kind: "disk".into(), ..Default::default() },
            crate::schema::layer::Layer { kind: "disk".into(), ..Default::default() },
        ];
        assert_eq!(dimension(&r, "layers"), "md raid5 → 3 disks");
        assert_eq!(dimension(&r, "vm.dirty_ratio"), "40");
        assert_eq!(dimension(&r, "workload.params.size"), "1073741824");
        assert_eq!(dimension(&r, "workload.name"), "seqwrite", "strings without quotes");
        assert_eq!(dimension(&r, "vm.nonexistent"), "?");
    }

    #[test]
    fn failed_runs_are_counted_and_explained_not_averaged() {
        let mut bad = rec("6.1", 9999.0, 1);
        bad.status = Status::Timeout;
        bad.error = Some("the workload ran past its deadline".into());
        let opts = Options { by: by(&["kernel"]), ..Options::default() };
        let rows = rows(&[rec("6.1", 10.0, 0), bad.clone(), bad], &opts).unwrap();
        assert_eq!((rows[0].n, rows[0].not_ok), (3, 2));
        assert_eq!(rows[0].real_s.as_ref().unwrap().median, 10.0);
        assert_eq!(rows[0].notes[0], "timeout: the workload ran past its deadline (×2)", "said once, counted");
    }
}
