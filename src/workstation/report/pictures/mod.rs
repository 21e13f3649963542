//! The report's pictures: what a page (`html`) or a directory of SVG files
//! (`--svg DIR`) shows. For each workload: every drawn run's probe waits on
//! one time axis (kernels overlaid), a CDF of the probe's waits per group,
//! and bars of the groups' figures; for each drawn run: its timeline with
//! the writer's waits attributed (`run`).
//!
//! Records stream by (`Keeper::offer`): a group keeps the probe's waits of
//! every run as a log histogram (the CDF), and a few runs whole to draw —
//! the first ones and its worst stall — so that memory stays bounded by
//! groups, not records.

mod histogram;
mod run;
mod workload;

use super::Row;
use crate::schema::record::Record;
use crate::workstation::glance::Glance;
pub use histogram::LogHistogram;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Runs of one group drawn whole: the first five seen, and the worst stall of the others.
pub const RUNS_PER_GROUP: usize = 6;
/// The probe's slow-tick threshold (`responsiveness.stalls_over_100ms`), drawn beside the 1 s stall.
const SLOW_MS: f64 = 100.0;
/// Runs drawn in all: a fleet's report draws its first groups' runs and says how many it left out.
const RUNS_DRAWN: usize = 48;

/// One figure: an SVG with the records it was drawn from, and the ranges
/// of its main panel's axes (what a test checks against the data).
pub struct Figure {
    /// A file name without extension, and the page's anchor: `waits-seqwrite`, `run-<id>-<seq>`.
    pub id: String,
    pub title: String,
    /// RUN_ID:SEQ of each record drawn.
    pub records: Vec<String>,
    /// The main panel's axes: (from, to) across and up.
    pub x: (f64, f64),
    pub y: (f64, f64),
    /// The panels that drew data, as (name, top and bottom pixel rows of
    /// the SVG): what a screenshot must show ink in.
    pub drawn: Vec<(&'static str, u32, u32)>,
    pub svg: String,
}

impl Figure {
    /// The SVG as a file: its title and its records inside it, so that a
    /// pasted picture still says where it came from.
    pub fn file(&self) -> String {
        let about = format!(
            "<title>{}</title><desc>bootmark report; records (RUN_ID:SEQ): {}</desc>",
            esc(&self.title),
            esc(&self.records.join(" "))
        );
        match self.svg.find('>') {
            Some(end) => format!("{}{about}{}", &self.svg[..=end], &self.svg[end + 1..]),
            None => self.svg.clone(),
        }
    }
}

/// Points drawn per series, at most: a page stays a page (600,000 probe
/// samples made a 120 MB one). Past it, [`thin`] keeps each span's extremes.
pub const MAX_POINTS: usize = 2000;

/// At most [`MAX_POINTS`] of `points` (in time order): the lowest and the
/// highest of each of `MAX_POINTS / 2` equal spans of them, in time order,
/// so a stall or a spike is drawn however many samples surround it.
pub(super) fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points;
    }
    let span = points.len().div_ceil(MAX_POINTS / 2);
    let mut out = Vec::with_capacity(MAX_POINTS);
    for chunk in points.chunks(span) {
        let by_y = |a: &&(f64, f64), b: &&(f64, f64)| a.1.total_cmp(&b.1);
        let (low, high) = (chunk.iter().min_by(by_y), chunk.iter().max_by(by_y));
        if let (Some(&low), Some(&high)) = (low, high) {
            let pair = if low.0 <= high.0 { [low, high] } else { [high, low] };
            out.extend(pair.iter().copied().take(if low == high { 1 } else { 2 }));
        }
    }
    out
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// What the pictures need of the records, gathered as they stream by.
#[derive(Default)]
pub struct Keeper {
    /// Off unless a picture is asked for: the other formats keep nothing.
    on: bool,
    /// The run asked for by --timeline (RUN_ID:SEQ), always drawn.
    wanted: Option<(String, u32)>,
    wanted_seen: bool,
    /// Per group (the report's rows, in order): the probe's waits of every run.
    pub waits: Vec<Waits>,
    /// Per group: the runs kept whole, with their worst wait.
    kept: Vec<Vec<(f64, Record)>>,
    /// Runs with a probe timeline not kept (over the caps).
    pub left_out: usize,
}

impl Keeper {
    /// `on`: a picture will be drawn. `timeline`: a run to draw whatever
    /// the caps, RUN_ID:SEQ (one that is not is refused by `finish`).
    pub fn new(on: bool, timeline: Option<&str>) -> Keeper {
        let wanted =
            timeline.and_then(|t| t.split_once(':')).and_then(|(run, seq)| Some((run.to_string(), seq.parse().ok()?)));
        Keeper { on, wanted, ..Keeper::default() }
    }

    /// A record of group `group`. It is read whole only for its waits (an
    /// error when it then does not parse: it is left out of the pictures).
    pub fn offer(&mut self, group: usize, g: &Glance) -> Result<(), String> {
        if !self.on || g.probe_ticks == 0 {
            return Ok(());
        }
        if self.waits.len() <= group {
            self.waits.resize_with(group + 1, Waits::default);
            self.kept.resize_with(group + 1, Vec::new);
        }
        let r = g.whole()?;
        let (tl, waits) = (&r.timeline, &mut self.waits[group]);
        tl.probe_response_ms.iter().for_each(|&ms| waits.whole.add(ms));
        tl.probe_read_ms.iter().for_each(|&ms| waits.read.add(ms));
        tl.probe_ls_ms.iter().for_each(|&ms| waits.ls.add(ms));
        let worst = g.max_stall_ms();
        let asked = is_run(&self.wanted, r);
        self.wanted_seen |= asked;
        let drawn: usize = self.kept_count();
        let kept = &mut self.kept[group];
        if asked || (kept.len() < RUNS_PER_GROUP && drawn < RUNS_DRAWN) {
            kept.push((worst, r.clone()));
            return Ok(());
        }
        // Full: the last place holds the worst stall of the runs after the
        // first ones (never in place of the asked-for run).
        let last = RUNS_PER_GROUP - 1;
        if kept.len() == RUNS_PER_GROUP && !is_run(&self.wanted, &kept[last].1) && worst > kept[last].0 {
            kept[last] = (worst, r.clone());
        }
        self.left_out += 1;
        Ok(())
    }

    fn kept_count(&self) -> usize {
        self.kept.iter().map(Vec::len).sum()
    }

    /// An error when --timeline named a record that never came.
    pub fn finish(self, timeline: Option<&str>) -> Result<Kept, String> {
        match (timeline, &self.wanted) {
            (Some(t), None) => return Err(format!("--timeline {t}: give RUN_ID:SEQ of a result record")),
            (Some(t), Some(_)) if !self.wanted_seen => {
                return Err(format!(
                    "--timeline {t}: no such record (give RUN_ID:SEQ of a result record with a probe timeline)"
                ));
            }
            _ => {}
        }
        Ok(Kept { waits: self.waits, runs: self.kept, left_out: self.left_out, wanted: self.wanted })
    }
}

/// A group's probe waits over every run: each tick's whole response, and
/// its read and its `ls` apart (records from before the parts were kept have none).
#[derive(Clone, Debug, Default)]
pub struct Waits {
    pub whole: LogHistogram,
    pub read: LogHistogram,
    pub ls: LogHistogram,
}

/// What was kept for the pictures, per group (the report's rows).
#[derive(Default)]
pub struct Kept {
    pub waits: Vec<Waits>,
    pub runs: Vec<Vec<(f64, Record)>>,
    pub left_out: usize,
    wanted: Option<(String, u32)>,
}

impl Kept {
    /// The runs of group `row`, in the order they came (the worst stall where it replaced one).
    pub fn runs_of(&self, row: usize) -> impl Iterator<Item = &Record> {
        self.runs.get(row).into_iter().flatten().map(|(_, r)| r)
    }

    fn waits_of(&self, row: usize) -> Option<&Waits> {
        self.waits.get(row).filter(|w| w.whole.n > 0)
    }

    /// Whether this run was asked for by --timeline.
    fn is_wanted(&self, r: &Record) -> bool {
        is_run(&self.wanted, r)
    }
}

/// Refuses a --svg DIR that is an input or a file; made if missing.
pub fn check_dir(dir: &Path, inputs: &[PathBuf]) -> Result<(), String> {
    let same = |p: &Path| p.canonicalize().ok().zip(dir.canonicalize().ok()).is_some_and(|(a, b)| a == b);
    if inputs.iter().any(|i| same(i)) {
        return Err(format!("--svg {}: is an input; give a directory for the pictures", dir.display()));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(format!("--svg {}: not a directory; give a directory for the pictures", dir.display()));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("--svg {}: cannot make it: {e}", dir.display()))
}

/// Each figure as DIR/ID.svg, each written whole beside its place and
/// renamed into it; how many were written. Every place is checked first:
/// a link there, or a file bootmark did not write, stops it before any is written.
pub fn write_files(dir: &Path, figures: &[Figure]) -> Result<usize, String> {
    let path = |f: &Figure| dir.join(format!("{}.svg", f.id));
    for f in figures {
        replaceable(&path(f))?;
    }
    for f in figures {
        let path = path(f);
        let mut file = crate::workstation::output::Pending::create(&path)?;
        std::io::Write::write_all(&mut file, f.file().as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        file.commit()?;
    }
    Ok(figures.len())
}

/// What [`Figure::file`] puts near the start of every picture.
const OURS: &str = "<desc>bootmark report; records";

/// `path` may be written: nothing is there, or a picture bootmark wrote.
fn replaceable(path: &Path) -> Result<(), String> {
    let next = "remove it or give --svg another directory";
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("--svg: {}: {e}", path.display())),
        Ok(m) => m,
    };
    if meta.file_type().is_symlink() {
        return Err(format!("--svg: {} is a link; a picture is not written through it: {next}", path.display()));
    }
    // Only a regular file is opened (a FIFO there would block the open).
    let mut head = vec![0u8; 4096];
    let n = match meta.is_file() {
        true => std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0),
        false => 0,
    };
    if !meta.is_file() || !String::from_utf8_lossy(&head[..n]).contains(OURS) {
        return Err(format!(
            "--svg: {} is there and is not a picture bootmark wrote, so it is not replaced: {next}",
            path.display()
        ));
    }
    Ok(())
}

/// Whether `r` is the run RUN_ID:SEQ named (none named: no).
fn is_run(named: &Option<(String, u32)>, r: &Record) -> bool {
    named.as_ref().is_some_and(|(run, seq)| r.run_id == *run && r.seq == *seq)
}

/// A record's id as the report's --timeline takes it.
pub fn id(r: &Record) -> String {
    format!("{}:{}", r.run_id, r.seq)
}

/// Every figure of a report: per workload (alphabetical) its overview
/// figures, then its runs' timelines. The run asked for by --timeline comes first.
pub fn figures(rows: &[Row], kept: &Kept) -> Result<Vec<Figure>, String> {
    let mut workloads: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
    workloads.sort();
    workloads.dedup();
    let mut out = Vec::new();
    for w in workloads {
        let group: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].workload == w).collect();
        out.extend(workload::figures(w, rows, &group, kept)?);
        let axes = run::axes(group.iter().flat_map(|&i| kept.runs_of(i)));
        for (c, &i) in group.iter().enumerate() {
            for r in kept.runs_of(i) {
                out.push(run::figure(r, &label(&rows[i]), colour(c), axes)?);
            }
        }
    }
    let asked = kept.runs.iter().flatten().find(|(_, r)| kept.is_wanted(r)).map(|(_, r)| run::figure_id(r));
    if let Some(at) = asked.and_then(|id| out.iter().position(|f| f.id == id)) {
        let figure = out.remove(at);
        out.insert(0, figure);
    }
    Ok(out)
}

/// A row's name in a legend: its --by values.
fn label(row: &Row) -> String {
    let l = row.key.join(" · ");
    if l.chars().count() > 40 { format!("{}…", l.chars().take(39).collect::<String>()) } else { l }
}

/// The chart's legend, at `at`, over the data but see-through.
fn legend<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    at: SeriesLabelPosition,
) -> Result<(), String>
where
    X: plotters::coord::ranged1d::Ranged,
    Y: plotters::coord::ranged1d::Ranged,
{
    chart
        .configure_series_labels()
        .position(at)
        .label_font(("sans-serif", 11))
        .background_style(WHITE.mix(0.6))
        .border_style(BLACK)
        .draw()
        .map_err(drawing)
}

/// An area's rows of pixels in its SVG, top and bottom.
fn rows_of(area: &DrawingArea<SVGBackend, plotters::coord::Shift>) -> (u32, u32) {
    let top = area.get_base_pixel().1.max(0) as u32;
    (top, top + area.dim_in_pixel().1)
}

/// A figure id's characters: letters, digits, '-' and '.'; anything else '-'.
fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '-' }).collect()
}

/// Colours for groups, in order (a kernel keeps its colour in every figure of a workload).
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

type DrawError = DrawingAreaErrorKind<std::io::Error>;

fn drawing(e: DrawError) -> String {
    e.to_string()
}

/// An axis range on a log scale that holds `lo..hi` and `must` (a threshold
/// to show), in whole decades.
fn log_range(lo: f64, hi: f64, must: &[f64]) -> (f64, f64) {
    let lo = must.iter().copied().fold(lo, f64::min).max(1e-3);
    let hi = must.iter().copied().fold(hi, f64::max).max(lo * 10.0);
    (10f64.powf(lo.log10().floor()), 10f64.powf(hi.log10().ceil()))
}

/// An axis from 0 that holds `hi`, with a little room above.
fn linear_top(hi: f64) -> f64 {
    if hi > 0.0 { hi * 1.1 } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ranges_are_whole_decades_around_the_data_and_the_thresholds() {
        assert_eq!(log_range(1.5, 20.0, &[100.0]), (1.0, 100.0));
        assert_eq!(log_range(1.5, 2400.0, &[100.0]), (1.0, 10000.0));
        assert_eq!(log_range(0.0, 0.0, &[]), (0.001, 0.01), "no data: a decade, not a panic");
    }

    #[test]
    fn a_figure_file_carries_its_title_and_records() {
        let f = Figure {
            id: "waits-x".into(),
            title: "a < b".into(),
            records: vec!["r:0".into(), "r:1".into()],
            x: (0.0, 1.0),
            y: (0.0, 1.0),
            drawn: Vec::new(),
            svg: "<svg width=\"1\"><rect/></svg>".into(),
        };
        assert_eq!(
            f.file(),
            "<svg width=\"1\"><title>a &lt; b</title><desc>bootmark report; records (RUN_ID:SEQ): r:0 r:1</desc><rect/></svg>"
        );
    }
}
