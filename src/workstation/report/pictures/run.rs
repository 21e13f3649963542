//! One run's timeline, on its workload's shared time axis (seconds since
//! the workload began), in four panels:
//! - the probe's waits, points on a log axis, with the thresholds;
//! - where the writer waited at each sample (the attribution strip: its
//!   wchan and stack by mechanism, and the `balance_dirty_pages`
//!   tracepoint's pauses where the run has them);
//! - Dirty and Writeback memory with the kernel's own dirty and background
//!   limits (`nr_dirty_threshold`, `nr_dirty_background_threshold`);
//! - the disk's write throughput.
//!
//! Every panel marks where the writes returned (the flush began), where the
//! data was durable (the flush ended), and where a SysRq-W dump was taken.

use super::{Figure, MAX_POINTS, SLOW_MS, drawing, id, legend, linear_top, log_range, rows_of, slug, thin};
use crate::schema::record::{Record, Timeline};
use crate::workstation::report::findings::STALL_MS;
use crate::workstation::report::mechanism::{self, Mechanism, Wait};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// The kernel's vmstat thresholds count pages: 4 KiB on x86.
const PAGE_KIB: f64 = 4.0;
/// The per-tick series of the dirty-throttling tracepoint (`/init`'s tracing reader).
const TRACED_PAUSES: &str = "traced_dirty_pause_ms";

pub fn figure_id(r: &Record) -> String {
    format!("run-{}-{}", slug(&r.run_id), r.seq)
}

/// Times since the workload began: a vertical line each, named.
struct Mark {
    at: f64,
    name: &'static str,
    colour: RGBColor,
}

fn marks(r: &Record) -> Vec<Mark> {
    let t = &r.times;
    let mut out = Vec::new();
    let green = RGBColor(0, 140, 70);
    if let Some(at) = t.writes_returned_s {
        out.push(Mark { at, name: "writes returned, flush began", colour: green });
    }
    if let Some(at) = t.durable_s.filter(|d| Some(*d) != t.writes_returned_s) {
        out.push(Mark { at, name: "durable: flush ended", colour: RGBColor(0, 90, 160) });
    }
    // /init takes a dump once the probe has been silent for 1 s; the
    // record keeps the dumps' lines, not their times: mark where that rule took them.
    let dumps = r.blocked_tasks.iter().filter(|l| l.contains("Show Blocked State")).count();
    let tl = &r.timeline;
    let silences = tl.probe_t_s.iter().zip(&tl.probe_response_ms).filter(|(_, ms)| **ms >= STALL_MS);
    for (due, _) in silences.take(dumps) {
        out.push(Mark { at: due + 1.0 - tl.workload_start_s, name: "SysRq-W dump", colour: RGBColor(200, 0, 160) });
    }
    out
}

type Chart<'a, 'b, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, Y>>;

fn draw_marks<Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, Y>,
    marks: &[Mark],
    (y0, y1): (f64, f64),
    legend: bool,
) -> Result<(), String> {
    let mut named: Vec<&str> = Vec::new();
    for m in marks {
        let style = m.colour.stroke_width(2);
        let drawn = chart.draw_series(DashedLineSeries::new([(m.at, y0), (m.at, y1)], 5, 3, style)).map_err(drawing)?;
        if legend && !named.contains(&m.name) {
            named.push(m.name);
            drawn.label(m.name).legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
        }
    }
    Ok(())
}

/// The axes a workload's run figures share (small multiples): time since
/// the workload began, the probe's waits (log), memory and the disk's writes.
#[derive(Clone, Copy, Debug)]
pub struct Axes {
    pub x: (f64, f64),
    pub waits: (f64, f64),
    pub memory_mib: f64,
    pub disk_mib_s: f64,
}

/// The axes that hold every one of `runs`.
pub fn axes<'a>(runs: impl Iterator<Item = &'a Record>) -> Axes {
    let (mut x, mut waits, mut memory, mut disk) = ((0.0f64, 1.0f64), (f64::INFINITY, 0.0f64), 0.0f64, 0.0f64);
    for r in runs {
        let tl = &r.timeline;
        for t in tl.t_s.iter().chain(&tl.probe_t_s) {
            x = (x.0.min(t - tl.workload_start_s), x.1.max(t - tl.workload_start_s));
        }
        for ms in &tl.probe_response_ms {
            waits = (waits.0.min(*ms), waits.1.max(*ms));
        }
        memory = memory_lines(tl).iter().flat_map(|l| l.1.iter().map(|p| p.1)).fold(memory, f64::max);
        disk = write_rates(tl).iter().map(|p| p.1).fold(disk, f64::max);
    }
    Axes {
        x,
        waits: log_range(waits.0, waits.1, &[SLOW_MS, STALL_MS]),
        memory_mib: linear_top(memory),
        disk_mib_s: linear_top(disk),
    }
}

/// The run's figure on its workload's shared `axes`, labelled `group` and
/// its waits in the group's colour.
pub fn figure(r: &Record, group: &str, colour: RGBColor, axes: Axes) -> Result<Figure, String> {
    let tl = &r.timeline;
    let start = tl.workload_start_s;
    let marks = marks(r);
    let (x0, x1) = axes.x;
    let waits = &tl.probe_response_ms;
    let (y0, y1) = axes.waits;
    let title = format!(
        "{} · {group} · run {} (kernel {})",
        r.workload.name,
        id(r),
        r.kernel.release.as_deref().unwrap_or("?")
    );
    let mut svg = String::new();
    let mut drawn = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 660)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let root = root.titled(&title, ("sans-serif", 14)).map_err(drawing)?;
        let (probe, rest) = root.split_vertically(200);
        let (strip, rest) = rest.split_vertically(104);
        let (memory, disk) = rest.split_vertically(190);

        let points: Vec<(f64, f64)> = tl.probe_t_s.iter().zip(waits).map(|(t, ms)| (t - start, ms.max(y0))).collect();
        let thinned = points.len() > MAX_POINTS;
        let points = thin(points);
        let caption = match thinned {
            false => "the probe's waits, ms (log): ls + a 4 KiB read + the timer's lateness".to_string(),
            true => format!(
                "the probe's waits, ms (log): {} samples, each span's lowest and highest of {MAX_POINTS} drawn",
                waits.len()
            ),
        };
        let mut chart = ChartBuilder::on(&probe)
            .caption(caption, ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(24)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
            .map_err(drawing)?;
        chart.configure_mesh().x_desc("seconds since the workload began").draw().map_err(drawing)?;
        for (y, style) in [(SLOW_MS, RGBColor(150, 150, 150)), (STALL_MS, RGBColor(90, 90, 90))] {
            chart
                .draw_series(DashedLineSeries::new([(x0, y), (x1, y)], 6, 4, style.stroke_width(1)))
                .map_err(drawing)?;
        }
        let style = colour.filled();
        chart.draw_series(points.into_iter().map(|p| Circle::new(p, 2, style))).map_err(drawing)?;
        if !waits.is_empty() {
            drawn.push(("probe", rows_of(&probe)));
        }
        draw_marks(&mut chart, &marks, (y0, y1), true)?;
        if !marks.is_empty() {
            legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }

        if attribution_strip(&strip, r, (x0, x1))? {
            drawn.push(("attribution", rows_of(&strip)));
        }
        if memory_panel(&memory, tl, (x0, x1), axes.memory_mib, &marks)? {
            drawn.push(("memory", rows_of(&memory)));
        }
        if disk_panel(&disk, tl, (x0, x1), axes.disk_mib_s, &marks)? {
            drawn.push(("disk", rows_of(&disk)));
        }
        root.present().map_err(drawing)?;
    }
    let drawn = drawn.into_iter().map(|(n, (t, b))| (n, t, b)).collect();
    Ok(Figure { id: figure_id(r), title, records: vec![id(r)], x: (x0, x1), y: (y0, y1), drawn, svg })
}

/// A panel on the shared time axis from 0 to `top`, `caption` at its top.
fn panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    (x0, x1): (f64, f64),
    top: f64,
) -> Result<Chart<'a, 'b, RangedCoordf64>, String> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 13))
        .margin(6)
        .x_label_area_size(24)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..top)
        .map_err(drawing)?;
    chart.configure_mesh().x_desc("seconds since the workload began").draw().map_err(drawing)?;
    Ok(chart)
}

/// A colour for each mechanism; grey for a wait no frame names, none for running.
fn mechanism_colour(m: Mechanism) -> RGBColor {
    match m {
        Mechanism::DirtyThrottling => RGBColor(214, 39, 40),
        Mechanism::WritebackInWrite => RGBColor(247, 182, 210),
        Mechanism::WritebackThrottling => RGBColor(255, 127, 14),
        Mechanism::QosThrottling => RGBColor(255, 187, 120),
        Mechanism::RequestStarvation => RGBColor(148, 103, 189),
        Mechanism::PageWriteback => RGBColor(31, 119, 180),
        Mechanism::PageIo => RGBColor(174, 199, 232),
        Mechanism::Journal => RGBColor(44, 160, 44),
        Mechanism::CacheFlush => RGBColor(23, 190, 207),
        Mechanism::Reclaim => RGBColor(140, 86, 75),
    }
}

const UNKNOWN: RGBColor = RGBColor(160, 160, 160);

/// Where the writer waited at each sample during the workload: row 0 from
/// wchan and its stack, row 1 (where recorded) from the dirty-throttling
/// tracepoint's pauses in that tick; the colours' key in a row beneath.
/// Whether any cell was drawn.
fn attribution_strip(area: &DrawingArea<SVGBackend, Shift>, r: &Record, (x0, x1): (f64, f64)) -> Result<bool, String> {
    let tl = &r.timeline;
    let start = tl.workload_start_s;
    let traced = tl.series.get(TRACED_PAUSES);
    let rows = if traced.is_some() { 2.0 } else { 1.0 };
    let (cells, key) = area.split_vertically(area.dim_in_pixel().1 as i32 - 36);
    let mut chart = ChartBuilder::on(&cells)
        .caption(
            if traced.is_some() {
                "where the writer waited: wchan/stack (lower row), balance_dirty_pages tracepoint (upper row)"
            } else {
                "where the writer waited: its wchan and stack at each sample (blank: running or not shown)"
            },
            ("sans-serif", 13),
        )
        .margin(6)
        .x_label_area_size(0)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..rows)
        .map_err(drawing)?;
    chart.configure_mesh().disable_mesh().disable_y_axis().draw().map_err(drawing)?;
    let step = tl.interval_s.max(0.01);
    let mut named: Vec<(String, RGBColor)> = Vec::new();
    let mut cells = 0;
    // Samples next to each other in one colour are one cell: a long run
    // of samples is a few rectangles, not one each.
    let mut run: Option<(f64, f64, RGBColor)> = None;
    let mut cell = |run: Option<(f64, f64, RGBColor)>| -> Result<(), String> {
        if let Some((from, to, colour)) = run {
            chart.draw_series([Rectangle::new([(from, 0.05), (to, 0.95)], colour.filled())]).map_err(drawing)?;
        }
        Ok(())
    };
    let version = r.kernel.release.as_deref().and_then(mechanism::version);
    let writes_end = r.times.writes_returned_s.unwrap_or(f64::INFINITY);
    for (i, (t, w)) in tl.t_s.iter().zip(&tl.writer_wchan).enumerate() {
        let (Some(w), true) = (w.as_deref(), *t >= tl.workload_start_s && *t <= tl.workload_end_s) else { continue };
        let context = mechanism::Context { version, writing: t - start <= writes_end };
        let state = tl.writer_state.get(i).and_then(|s| s.as_deref());
        let (colour, name) = match mechanism::classify_sample(w, state, tl.writer_stack_at(i), context) {
            Wait::NotShown => continue,
            Wait::Unknown { .. } => (UNKNOWN, "a function no mechanism names"),
            Wait::In { mechanism, .. } => (mechanism_colour(mechanism), mechanism.name()),
        };
        let (from, to) = (t - start, t - start + step);
        run = match run {
            Some((f, end, c)) if c == colour && from <= end + step * 0.5 => Some((f, to, c)),
            other => {
                cell(other)?;
                Some((from, to, colour))
            }
        };
        cells += 1;
        if !named.iter().any(|(n, _)| n == name) {
            named.push((name.to_string(), colour));
        }
    }
    cell(run)?;
    if let Some(pauses) = traced {
        let red = mechanism_colour(Mechanism::DirtyThrottling);
        for (t, p) in tl.t_s.iter().zip(pauses) {
            if p.is_some_and(|p| p > 0) {
                let cell = Rectangle::new([(t - start, 1.05), (t - start + step, 1.95)], red.filled());
                chart.draw_series([cell]).map_err(drawing)?;
                cells += 1;
            }
        }
    }
    colour_key(&key, &named)?;
    Ok(cells > 0)
}

/// A row of coloured squares with their names, left to right.
fn colour_key(area: &DrawingArea<SVGBackend, Shift>, named: &[(String, RGBColor)]) -> Result<(), String> {
    let (mut x, mut y) = (66, 4);
    for (name, colour) in named {
        let width = 24 + 6 * name.len() as i32;
        if x + width > 750 {
            (x, y) = (66, y + 16);
        }
        area.draw(&Rectangle::new([(x, y + 1), (x + 12, y + 11)], colour.filled())).map_err(drawing)?;
        area.draw(&Text::new(name.clone(), (x + 16, y), ("sans-serif", 11))).map_err(drawing)?;
        x += width;
    }
    Ok(())
}

/// A /proc series of the timeline as (seconds since the workload began, value × `scale`), every sample.
fn samples(tl: &Timeline, key: &str, scale: f64) -> Vec<(f64, f64)> {
    let Some(column) = tl.series.get(key) else { return Vec::new() };
    tl.t_s.iter().zip(column).filter_map(|(t, v)| v.map(|v| (t - tl.workload_start_s, v as f64 * scale))).collect()
}

/// [`samples`], thinned to what a panel draws.
fn series(tl: &Timeline, key: &str, scale: f64) -> Vec<(f64, f64)> {
    thin(samples(tl, key, scale))
}

/// A line of the memory panel: its name, points in MiB, colour, and whether dashed (a limit).
type Line = (&'static str, Vec<(f64, f64)>, RGBColor, bool);

/// Dirty and Writeback, and the kernel's two limits.
fn memory_lines(tl: &Timeline) -> [Line; 4] {
    let mib = 1.0 / 1024.0;
    [
        ("Dirty", series(tl, "dirty_kib", mib), RGBColor(214, 39, 40), false),
        ("Writeback", series(tl, "writeback_kib", mib), RGBColor(31, 119, 180), false),
        (
            "dirty limit (nr_dirty_threshold)",
            series(tl, "nr_dirty_threshold", PAGE_KIB * mib),
            RGBColor(214, 39, 40),
            true,
        ),
        (
            "background limit (nr_dirty_background_threshold)",
            series(tl, "nr_dirty_background_threshold", PAGE_KIB * mib),
            RGBColor(255, 127, 14),
            true,
        ),
    ]
}

/// Whether any line was drawn.
fn memory_panel(
    area: &DrawingArea<SVGBackend, Shift>,
    tl: &Timeline,
    span: (f64, f64),
    top: f64,
    marks: &[Mark],
) -> Result<bool, String> {
    let lines = memory_lines(tl);
    let any = lines.iter().any(|l| !l.1.is_empty());
    let mut chart = panel(area, "Dirty and Writeback, MiB, with the kernel's limits", span, top)?;
    for (name, points, colour, dashed) in lines {
        if points.is_empty() {
            continue;
        }
        let style = colour.stroke_width(2);
        let drawn = if dashed {
            chart.draw_series(DashedLineSeries::new(points, 6, 4, style)).map_err(drawing)?
        } else {
            chart.draw_series(LineSeries::new(points, style)).map_err(drawing)?
        };
        drawn.label(name).legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
    }
    draw_marks(&mut chart, marks, (0.0, top), false)?;
    if any {
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    }
    Ok(any)
}

/// The disk's write throughput between samples, MiB/s (512-byte sectors).
fn write_rates(tl: &Timeline) -> Vec<(f64, f64)> {
    // Rates from every sample, thinned only once computed.
    let sectors = samples(tl, "disk_sectors_written", 1.0);
    let rates: Vec<(f64, f64)> = sectors
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| (w[1].0, (w[1].1 - w[0].1).max(0.0) * 512.0 / 1048576.0 / (w[1].0 - w[0].0)))
        .collect();
    thin(rates)
}

/// Whether it wrote at all.
fn disk_panel(
    area: &DrawingArea<SVGBackend, Shift>,
    tl: &Timeline,
    span: (f64, f64),
    top: f64,
    marks: &[Mark],
) -> Result<bool, String> {
    let rates = write_rates(tl);
    let mut chart = panel(area, "the disk's writes, MiB/s", span, top)?;
    let wrote = rates.iter().any(|p| p.1 > 0.0);
    chart.draw_series(LineSeries::new(rates, RGBColor(44, 160, 44).stroke_width(2))).map_err(drawing)?;
    draw_marks(&mut chart, marks, (0.0, top), false)?;
    Ok(wrote)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_each_spans_extremes_in_time_order() {
        let few: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 1.0)).collect();
        assert_eq!(thin(few.clone()), few);
        // 600,000 samples of 5 ms with one stall of 3 s in the middle.
        let mut many: Vec<(f64, f64)> = (0..600_000).map(|i| (i as f64 * 0.01, 5.0)).collect();
        many[300_123].1 = 3000.0;
        let drawn = thin(many);
        assert!(drawn.len() <= MAX_POINTS, "{}", drawn.len());
        assert!(drawn.contains(&(3001.23, 3000.0)), "the stall is drawn");
        assert!(drawn.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
    }

    /// The flush's marks from the record's times; a SysRq-W dump where
    /// /init's rule took it: 1 s into a silence, for each dump the record
    /// holds (the second silence had none: the kernel printed one dump).
    #[test]
    fn marks_come_from_the_times_and_the_dump_rule() {
        let mut r = crate::schema::record::tests::record();
        r.times.writes_returned_s = Some(2.0);
        r.times.durable_s = Some(5.0);
        r.timeline.workload_start_s = 10.0;
        r.timeline.probe_t_s = vec![11.0, 12.0, 13.0, 14.0];
        r.timeline.probe_response_ms = vec![5.0, 1500.0, 8.0, 2500.0];
        r.blocked_tasks = vec!["sysrq: Show Blocked State".into(), "task:dd state:D".into()];
        let got: Vec<(f64, &str)> = marks(&r).iter().map(|m| (m.at, m.name)).collect();
        assert_eq!(got, [(2.0, "writes returned, flush began"), (5.0, "durable: flush ended"), (3.0, "SysRq-W dump")]);
        r.blocked_tasks.clear();
        assert_eq!(marks(&r).len(), 2, "no dump in the record: none marked");
    }
}
