//! A workload's overview figures: every drawn run's probe waits on one time
//! axis (groups overlaid, one colour each), a CDF of the probe's waits per
//! group over all its runs, and bars of the groups' figures.

use super::{Figure, Kept, SLOW_MS, colour, drawing, id, label, legend, linear_top, log_range, rows_of, slug, thin};
use crate::workstation::report::Row;
use crate::workstation::report::findings::STALL_MS;
use plotters::prelude::*;

const WIDTH: u32 = 760;

/// The overview figures of workload `w`, whose rows are `group`.
pub fn figures(w: &str, rows: &[Row], group: &[usize], kept: &Kept) -> Result<Vec<Figure>, String> {
    let mut out = Vec::new();
    if group.iter().any(|&i| kept.runs_of(i).next().is_some()) {
        out.push(waits_over_time(w, rows, group, kept)?);
    }
    if group.iter().any(|&i| kept.waits_of(i).is_some()) {
        out.push(cdf(w, rows, group, kept)?);
    }
    if group.iter().any(|&i| kept.waits_of(i).is_some_and(|h| h.read.n > 0)) {
        out.push(cdf_parts(w, rows, group, kept)?);
    }
    let bars: [(&str, &str, &str, BarOf); 4] = [
        ("throughput", "MiB/s (median; bars span min–max; more is better)", "MiB/s", throughput),
        ("p99", "the probe's p99 wait, ms (median of runs; less is better)", "ms", probe_p99),
        ("read", "the probe's 4 KiB read, median ms (median of runs; less is better)", "ms", read_p50),
        ("stall", "the worst probe wait of any run, ms (less is better)", "ms", worst_wait),
    ];
    for (name, caption, unit, figure) in bars {
        let drawn: Vec<(usize, Bar)> = group.iter().filter_map(|&i| figure(&rows[i]).map(|b| (i, b))).collect();
        if drawn.iter().any(|(_, b)| b.max > 0.0) {
            let mut fig = bar_chart(&format!("{name}-{}", slug(w)), &format!("{w}: {caption}"), unit, rows, &drawn)?;
            fig.records = drawn.iter().flat_map(|(i, _)| kept.runs_of(*i)).map(id).collect();
            out.push(fig);
        }
    }
    Ok(out)
}

/// Every drawn run's probe waits, as points on a log axis against seconds
/// since its workload began, one colour per group, with the stall threshold.
fn waits_over_time(w: &str, rows: &[Row], group: &[usize], kept: &Kept) -> Result<Figure, String> {
    let runs: Vec<(usize, &crate::schema::record::Record)> =
        group.iter().enumerate().flat_map(|(c, &i)| kept.runs_of(i).map(move |r| (c, r))).collect();
    // The axes its runs' own figures share.
    let axes = super::run::axes(runs.iter().map(|(_, r)| *r));
    let ((x0, x1), (y0, y1)) = (axes.x, axes.waits);
    let mut svg = String::new();
    let drawn;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 340)).into_drawing_area();
        drawn = vec![("waits", rows_of(&root))];
        root.fill(&WHITE).map_err(drawing)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{w}: the probe's waits over time, every drawn run"), ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
            .map_err(drawing)?;
        chart.configure_mesh().x_desc("seconds since the workload began").y_desc("ms (log)").draw().map_err(drawing)?;
        threshold(&mut chart, x0, x1, SLOW_MS, "100 ms (the record's stalls_over_100ms)")?;
        threshold(&mut chart, x0, x1, STALL_MS, "1 s: a stall (findings; SysRq-W is taken)")?;
        for (c, &i) in group.iter().enumerate() {
            let points: Vec<(f64, f64)> = kept
                .runs_of(i)
                .flat_map(|r| {
                    let tl = &r.timeline;
                    let run: Vec<(f64, f64)> = tl
                        .probe_t_s
                        .iter()
                        .zip(&tl.probe_response_ms)
                        .map(|(t, ms)| (t - tl.workload_start_s, ms.max(y0)))
                        .collect();
                    thin(run)
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            let style = colour(c).filled();
            let n = kept.runs_of(i).count();
            chart
                .draw_series(points.into_iter().map(|p| Circle::new(p, 2, style)))
                .map_err(drawing)?
                .label(format!("{} ({n} run{})", label(&rows[i]), if n == 1 { "" } else { "s" }))
                .legend(move |(x, y)| Circle::new((x + 8, y), 3, style));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(drawing)?;
    }
    Ok(Figure {
        id: format!("waits-{}", slug(w)),
        title: format!("{w}: the probe's waits over time (ls + a 4 KiB read + the timer's lateness), every drawn run"),
        records: runs.iter().map(|(_, r)| id(r)).collect(),
        x: (x0, x1),
        y: (y0, y1),
        drawn: drawn.into_iter().map(|(n, (t, b))| (n, t, b)).collect(),
        svg,
    })
}

/// The fraction of the probe's waits at most so long, per group, over
/// every run of the group (not only the drawn ones).
fn cdf(w: &str, rows: &[Row], group: &[usize], kept: &Kept) -> Result<Figure, String> {
    let hists: Vec<(usize, &super::LogHistogram)> =
        group.iter().enumerate().filter_map(|(c, &i)| kept.waits_of(i).map(|h| (c, &h.whole))).collect();
    let lo = hists.iter().map(|(_, h)| h.min_ms).fold(f64::INFINITY, f64::min);
    let hi = hists.iter().map(|(_, h)| h.max_ms).fold(0.0, f64::max);
    let (x0, x1) = log_range(lo, hi, &[]);
    let mut svg = String::new();
    let drawn;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 320)).into_drawing_area();
        drawn = vec![("cdf", rows_of(&root))];
        root.fill(&WHITE).map_err(drawing)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{w}: the probe's waits, CDF over every run"), ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(60)
            .build_cartesian_2d((x0..x1).log_scale(), 0f64..1.0)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("wait, ms (log): ls + a 4 KiB read + the timer's lateness")
            .y_desc("fraction of waits ≤ x")
            .draw()
            .map_err(drawing)?;
        for (c, h) in &hists {
            let i = group[*c];
            let steps = steps(h, x0);
            let style = colour(*c).stroke_width(2);
            chart
                .draw_series(LineSeries::new(steps, style))
                .map_err(drawing)?
                .label(format!("{} ({} waits, p99 ≤ {:.0} ms)", label(&rows[i]), h.n, h.quantile(0.99).unwrap_or(0.0)))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(drawing)?;
    }
    let records = group.iter().flat_map(|&i| kept.runs_of(i)).map(id).collect();
    Ok(Figure {
        id: format!("cdf-{}", slug(w)),
        title: format!("{w}: CDF of the probe's waits per group, every run (records named: the drawn ones)"),
        records,
        x: (x0, x1),
        y: (0.0, 1.0),
        drawn: drawn.into_iter().map(|(n, (t, b))| (n, t, b)).collect(),
        svg,
    })
}

/// The probe's own parts per group, over every run whose record keeps
/// them: its 4 KiB read (solid) and its `ls` (dashed) — which of them the
/// kernels changed, where the whole wait cannot say.
fn cdf_parts(w: &str, rows: &[Row], group: &[usize], kept: &Kept) -> Result<Figure, String> {
    let parts: Vec<(usize, &super::Waits)> = group
        .iter()
        .enumerate()
        .filter_map(|(c, &i)| kept.waits_of(i).filter(|h| h.read.n > 0).map(|h| (c, h)))
        .collect();
    let all = parts.iter().flat_map(|(_, h)| [&h.read, &h.ls]).filter(|h| h.n > 0);
    let (lo, hi) = all.fold((f64::INFINITY, 0.0f64), |(lo, hi), h| (lo.min(h.min_ms), hi.max(h.max_ms)));
    let (x0, x1) = log_range(lo, hi, &[]);
    let mut svg = String::new();
    let drawn;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 340)).into_drawing_area();
        drawn = vec![("parts", rows_of(&root))];
        root.fill(&WHITE).map_err(drawing)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{w}: the probe's 4 KiB read (solid) and ls (dashed), CDF over every run"),
                ("sans-serif", 15),
            )
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(60)
            .build_cartesian_2d((x0..x1).log_scale(), 0f64..1.0)
            .map_err(drawing)?;
        chart.configure_mesh().x_desc("wait, ms (log)").y_desc("fraction of ticks ≤ x").draw().map_err(drawing)?;
        for (c, h) in &parts {
            let i = group[*c];
            for (part, hist, dashed) in [("read", &h.read, false), ("ls", &h.ls, true)] {
                let steps = steps(hist, x0);
                let style = colour(*c).stroke_width(2);
                let name = format!("{} {part} (p99 ≤ {:.1} ms)", label(&rows[i]), hist.quantile(0.99).unwrap_or(0.0));
                let series = if dashed {
                    chart.draw_series(DashedLineSeries::new(steps, 6, 4, style)).map_err(drawing)?
                } else {
                    chart.draw_series(LineSeries::new(steps, style)).map_err(drawing)?
                };
                series.label(name).legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
            }
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(drawing)?;
    }
    Ok(Figure {
        id: format!("parts-{}", slug(w)),
        title: format!("{w}: CDFs of the probe's read and ls per group, every run (records named: the drawn ones)"),
        records: group.iter().flat_map(|&i| kept.runs_of(i)).map(id).collect(),
        x: (x0, x1),
        y: (0.0, 1.0),
        drawn: drawn.into_iter().map(|(n, (t, b))| (n, t, b)).collect(),
        svg,
    })
}

/// A histogram's CDF as a staircase from `x0`.
fn steps(h: &super::LogHistogram, x0: f64) -> Vec<(f64, f64)> {
    let mut steps = vec![(x0, 0.0)];
    for (ms, f) in h.cdf() {
        let last = steps.last().map_or(0.0, |p| p.1);
        steps.push((ms.max(x0), last));
        steps.push((ms.max(x0), f));
    }
    steps
}

type LogChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::combinators::LogCoord<f64>>,
>;

/// A dashed horizontal line at `y` across the chart, named in the legend.
fn threshold<'a>(chart: &mut LogChart<'a, 'a>, x0: f64, x1: f64, y: f64, name: &str) -> Result<(), String> {
    let style = RGBColor(120, 120, 120).stroke_width(1);
    chart
        .draw_series(DashedLineSeries::new([(x0, y), (x1, y)], 6, 4, style))
        .map_err(drawing)?
        .label(name)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
    Ok(())
}

/// What a bar chart draws of a row.
type BarOf = fn(&Row) -> Option<Bar>;

/// One bar of a chart: the median, with a min–max error bar.
#[derive(Clone, Copy)]
struct Bar {
    median: f64,
    min: f64,
    max: f64,
}

fn summary_bar(s: Option<&crate::workstation::report::stats::Summary>) -> Option<Bar> {
    s.map(|t| Bar { median: t.median, min: t.min, max: t.max })
}

fn throughput(r: &Row) -> Option<Bar> {
    summary_bar(r.throughput_mib_s.as_ref())
}

fn probe_p99(r: &Row) -> Option<Bar> {
    summary_bar(r.probe_p99_ms.as_ref())
}

fn read_p50(r: &Row) -> Option<Bar> {
    summary_bar(r.probe_read_p50_ms.as_ref())
}

/// The worst wait of a group, ms (one figure: no error bar).
fn worst_wait(r: &Row) -> Option<Bar> {
    r.max_stall_ms.map(|m| Bar { median: m, min: m, max: m })
}

/// Horizontal bars, one per group, scaled to the data.
fn bar_chart(fig: &str, caption: &str, unit: &str, rows: &[Row], bars: &[(usize, Bar)]) -> Result<Figure, String> {
    let top = linear_top(bars.iter().map(|(_, b)| b.max).fold(0.0, f64::max));
    let labels: Vec<String> = bars.iter().map(|(i, _)| label(&rows[*i])).collect();
    let mut svg = String::new();
    let drawn;
    {
        let height = 80 + 34 * bars.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        drawn = vec![("bars", rows_of(&root))];
        root.fill(&WHITE).map_err(drawing)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(300)
            .build_cartesian_2d(0f64..top, (0..bars.len().saturating_sub(1)).into_segmented())
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_desc(unit)
            .draw()
            .map_err(drawing)?;
        for (n, (i, b)) in bars.iter().enumerate() {
            let c = if rows[*i].baseline { RGBColor(150, 150, 150) } else { RGBColor(70, 120, 190) };
            chart
                .draw_series([Rectangle::new(
                    [(0.0, SegmentValue::Exact(n)), (b.median, SegmentValue::Exact(n + 1))],
                    c.filled(),
                )])
                .map_err(drawing)?;
            if b.max > b.min {
                chart
                    .draw_series([ErrorBar::new_horizontal(
                        SegmentValue::CenterOf(n),
                        b.min,
                        b.median,
                        b.max,
                        BLACK.filled(),
                        8,
                    )])
                    .map_err(drawing)?;
            }
        }
        root.present().map_err(drawing)?;
    }
    Ok(Figure {
        id: fig.to_string(),
        title: caption.to_string(),
        records: Vec::new(),
        x: (0.0, top),
        y: (0.0, bars.len() as f64),
        drawn: drawn.into_iter().map(|(n, (t, b))| (n, t, b)).collect(),
        svg,
    })
}
