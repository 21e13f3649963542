//! The HTML report: one self-contained file (no scripts, no external
//! resources) with the comparison table and SVG charts drawn by plotters —
//! throughput per group with min–max error bars for each workload, and for
//! one run the timeline that shows a stall building up: Dirty and Writeback
//! memory, and the probe's response time, with the workload's span marked.

use super::Row;
use super::findings::Finding;
use crate::schema::record::{Record, Timeline};
use crate::workstation::glance::Glance;
use plotters::prelude::*;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The record whose timeline the page draws, picked as records stream by:
/// the one asked for (RUN_ID:SEQ), or the one with the worst stall (the
/// first of equals: a copy is made only when a record is worse). Only records with the probe's per-tick timeline can
/// show a stall building up.
pub struct TimelinePick {
    wanted: Option<(String, u32)>,
    best: Option<(f64, Record)>,
}

impl TimelinePick {
    pub fn new(choice: Option<&str>) -> TimelinePick {
        let wanted =
            choice.and_then(|c| c.split_once(':')).and_then(|(run, seq)| Some((run.to_string(), seq.parse().ok()?)));
        TimelinePick { wanted, best: None }
    }

    /// A record; it is read whole only when it is picked. An error when it
    /// does not parse whole (it is then not drawn).
    pub fn offer(&mut self, g: &Glance) -> Result<(), String> {
        if g.probe_ticks == 0 {
            return Ok(());
        }
        match &self.wanted {
            Some((run, seq)) => {
                if self.best.is_none() && g.run_id == run.as_str() && g.seq == *seq {
                    self.best = Some((0.0, g.whole()?.clone()));
                }
            }
            None => {
                let stall = g.max_stall_ms();
                if self.best.as_ref().is_none_or(|(b, _)| stall > *b) {
                    self.best = Some((stall, g.whole()?.clone()));
                }
            }
        }
        Ok(())
    }

    /// The record picked; an error when `choice` named none.
    pub fn into_record(self, choice: Option<&str>) -> Result<Option<Record>, String> {
        match (self.best, choice) {
            (_, Some(c)) if self.wanted.is_none() => Err(format!("--timeline {c}: give RUN_ID:SEQ of a result record")),
            (None, Some(c)) => Err(format!("--timeline {c}: no such record (give RUN_ID:SEQ of a result record)")),
            (best, _) => Ok(best.map(|(_, r)| r)),
        }
    }
}

/// The page: findings first (each linked to the chart that shows it), then
/// the table, bar charts per workload, and one run's timeline.
/// The page of a finished report: its verdict and shared dimensions first.
pub fn page(report: &super::Report) -> Result<String, String> {
    let mut head = String::new();
    if !report.verdict.is_empty() {
        head += "<h2>Verdict</h2><ul>";
        for line in &report.verdict {
            head += &format!("<li>{}</li>", esc(line));
        }
        head += "</ul>";
    }
    if !report.constant.is_empty() {
        let same: Vec<String> = report.constant.iter().map(|(d, v)| format!("{d} <b>{}</b>", esc(v))).collect();
        head += &format!("<p>Every row: {}.</p>", same.join(" · "));
    }
    if let Some(setting) = &report.setting {
        head += &format!("<p>{}</p>", esc(setting));
    }
    let page = render(&report.rows, &report.by, report.timeline.as_ref(), &report.findings)?;
    Ok(page.replacen("<h1>bootmark report</h1>", &format!("<h1>bootmark report</h1>{head}"), 1))
}

pub fn render(rows: &[Row], by: &[String], timeline: Option<&Record>, findings: &[Finding]) -> Result<String, String> {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>bootmark report</title><style>\
         body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;font-size:13px}\
         td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f3f3f3}td.l{text-align:left}\
         .sig{font-weight:bold}h2{margin-top:1.5em}li{margin:.4em 0}</style></head><body><h1>bootmark report</h1>",
    );
    let drawn = timeline.map(|r| format!("{}:{}", r.run_id, r.seq));
    html += &findings_list(findings, drawn.as_deref());
    html += &table(rows, by);
    let mut workloads: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
    workloads.dedup();
    workloads.sort();
    workloads.dedup();
    html += "<h2>Throughput and the worst stall per group (median, bars span min–max)</h2>";
    for w in workloads {
        let group: Vec<&Row> = rows.iter().filter(|r| r.workload == w).collect();
        html += &format!("<div id=\"{}\">", esc(&anchor(w)));
        if group.iter().any(|r| throughput(r).is_some_and(|t| t.max > 0.0)) {
            html += &bar_chart(&format!("{w}: MiB/s (more is better)"), "MiB/s", &group, throughput)?;
        }
        if group.iter().any(|r| max_stall_s(r).is_some_and(|s| s.max > 0.0)) {
            html += &bar_chart(&format!("{w}: worst probe stall, s (less is better)"), "seconds", &group, max_stall_s)?;
        }
        html += "</div>";
    }
    if let Some(r) = timeline {
        html += &format!(
            "<h2 id=\"timeline\">Timeline of {} (run {}, seq {}, kernel {})</h2>",
            esc(&r.workload.name),
            esc(&r.run_id),
            r.seq,
            esc(r.kernel.release.as_deref().unwrap_or("?"))
        );
        html += &timeline_chart(&r.timeline)?;
    }
    html += "</body></html>\n";
    Ok(html)
}

/// The id of a workload's charts.
fn anchor(workload: &str) -> String {
    format!("charts-{workload}")
}

/// Findings at the top, each linked to what shows it: the timeline when it
/// is the one drawn, else the workload's bar charts.
fn findings_list(findings: &[Finding], drawn: Option<&str>) -> String {
    if findings.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Findings</h2><ul>");
    for f in findings {
        let workload = f.subject.rsplit(" · ").next().unwrap_or("");
        let link = match &f.record {
            Some(r) if Some(r.as_str()) == drawn => "<a href=\"#timeline\">timeline</a>".to_string(),
            Some(r) => format!(
                "<a href=\"#{}\">charts</a>; its timeline: <code>--timeline {}</code>",
                esc(&anchor(workload)),
                esc(r)
            ),
            None => format!("<a href=\"#{}\">charts</a>", esc(&anchor(workload))),
        };
        out += &format!("<li><b>{}</b> ({}): {} [{link}]</li>", esc(f.rule), esc(&f.subject), esc(&f.sentence));
    }
    out + "</ul>"
}

fn table(rows: &[Row], by: &[String]) -> String {
    let mut t = String::from("<table><tr>");
    for h in by.iter().map(String::as_str).chain(super::COLUMNS) {
        t += &format!("<th>{}</th>", esc(h));
    }
    t += "</tr>";
    for row in rows {
        t += "<tr>";
        let cells = super::cells(row);
        let (versus, notes) = (cells.len() - 2, cells.len() - 1);
        for (i, c) in cells.iter().enumerate() {
            // Text columns (the --by values, workload, notes) align left.
            let class = match i {
                _ if i == versus && super::stands_out(row) => " class=\"sig\"",
                _ if i <= by.len() || i == notes => " class=\"l\"",
                _ => "",
            };
            t += &format!("<td{class}>{}</td>", esc(c));
        }
        t += "</tr>";
    }
    t + "</table>"
}

/// One bar of a chart: the median, with a min–max error bar.
#[derive(Clone, Copy)]
struct Bar {
    median: f64,
    min: f64,
    max: f64,
}

fn throughput(r: &Row) -> Option<Bar> {
    r.throughput_mib_s.as_ref().map(|t| Bar { median: t.median, min: t.min, max: t.max })
}

/// The worst probe stall of a group, in seconds (one figure: no error bar).
fn max_stall_s(r: &Row) -> Option<Bar> {
    r.max_stall_ms.map(|m| Bar { median: m / 1000.0, min: m / 1000.0, max: m / 1000.0 })
}

/// Horizontal bars, one per group, of `figure` (rows without it are left out).
fn bar_chart(caption: &str, unit: &str, rows: &[&Row], figure: fn(&Row) -> Option<Bar>) -> Result<String, String> {
    let rows: Vec<(&Row, Bar)> = rows.iter().filter_map(|r| figure(r).map(|b| (*r, b))).collect();
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let mut svg = String::new();
    {
        let height = 80 + 34 * rows.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (760, height)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let top = rows.iter().map(|(_, b)| b.max).fold(0.0, f64::max) * 1.1;
        let labels: Vec<String> = rows
            .iter()
            .map(|(r, _)| {
                let l = r.key.join(" · ");
                if l.chars().count() > 44 { format!("{}…", l.chars().take(43).collect::<String>()) } else { l }
            })
            .collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(300)
            .build_cartesian_2d(0f64..top.max(1.0), (0..rows.len().saturating_sub(1)).into_segmented())
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_desc(unit)
            .draw()
            .map_err(e)?;
        for (i, (r, t)) in rows.iter().enumerate() {
            let color = if r.baseline { RGBColor(150, 150, 150) } else { RGBColor(70, 120, 190) };
            chart
                .draw_series([Rectangle::new(
                    [(0.0, SegmentValue::Exact(i)), (t.median, SegmentValue::Exact(i + 1))],
                    color.filled(),
                )])
                .map_err(e)?;
            chart
                .draw_series([ErrorBar::new_horizontal(
                    SegmentValue::CenterOf(i),
                    t.min,
                    t.median,
                    t.max,
                    BLACK.filled(),
                    8,
                )])
                .map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    Ok(svg)
}

/// A /proc series of the timeline, as floats (null where the kernel had no value).
fn column(t: &Timeline, key: &str) -> Vec<Option<f64>> {
    t.series.get(key).map(|c| c.iter().map(|v| v.map(|v| v as f64)).collect()).unwrap_or_default()
}

type TimeChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// One panel of the timeline: seconds across, `y_max` up, the workload's span shaded.
fn time_panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    x_desc: &str,
    x_max: f64,
    y_max: f64,
    (start, end): (f64, f64),
) -> Result<TimeChart<'a, 'b>, String> {
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(e)?;
    chart.configure_mesh().x_desc(x_desc).draw().map_err(e)?;
    chart
        .draw_series([Rectangle::new([(start, 0.0), (end.max(start), y_max)], RGBColor(255, 235, 200).filled())])
        .map_err(e)?;
    Ok(chart)
}

fn timeline_chart(timeline: &Timeline) -> Result<String, String> {
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let t = &timeline.t_s;
    let dirty = column(timeline, "dirty_kib");
    let writeback = column(timeline, "writeback_kib");
    let (probe_t, probe) = (&timeline.probe_t_s, &timeline.probe_response_ms);
    let (start, end) = (timeline.workload_start_s, timeline.workload_end_s);
    let x_max = t.iter().chain(probe_t).copied().fold(1.0, f64::max);
    let mib = |v: &Option<f64>| v.map(|k| k / 1024.0);
    let mem_max = dirty.iter().chain(&writeback).filter_map(mib).fold(1.0, f64::max) * 1.1;
    let probe_max = probe.iter().copied().fold(1.0, f64::max) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let (upper, lower) = root.split_vertically(260);
        let mut mem = time_panel(&upper, "Dirty and Writeback memory (MiB)", "seconds", x_max, mem_max, (start, end))?;
        for (name, col, color) in [("Dirty", &dirty, RED), ("Writeback", &writeback, BLUE)] {
            let pts: Vec<(f64, f64)> = t.iter().zip(col.iter()).filter_map(|(x, v)| mib(v).map(|y| (*x, y))).collect();
            mem.draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(e)?
                .label(name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        }
        mem.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(e)?;
        let mut pr = time_panel(
            &lower,
            "Probe response: how long `ls` + a 4 KiB read waited (ms)",
            "seconds (shaded: the workload)",
            x_max,
            probe_max,
            (start, end),
        )?;
        pr.draw_series(LineSeries::new(probe_t.iter().copied().zip(probe.iter().copied()), BLACK.stroke_width(1)))
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(svg)
}
