//! The HTML report: one self-contained file (no scripts, no external
//! resources): the verdict, the findings (each linked to the figure that
//! shows it), the comparison table, and the pictures (`pictures`) inline
//! as SVG, each with the records it was drawn from.

use super::Row;
use super::findings::Finding;
use super::pictures::{self, Figure, esc};

/// The page of a finished report: its verdict and shared dimensions
/// first, then the findings, the table and the figures.
pub fn page(report: &super::Report) -> Result<String, String> {
    Ok(page_with(report, &pictures::figures(&report.rows, &report.pictures)?))
}

/// The page with figures already drawn (`--svg` wrote the same ones).
pub fn page_with(report: &super::Report, figures: &[Figure]) -> String {
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
    let page = render(&report.rows, &report.by, figures, report.pictures.left_out, &report.findings);
    page.replacen("<h1>bootmark report</h1>", &format!("<h1>bootmark report</h1>{head}"), 1)
}

/// The page's body: findings, table, figures. `left_out`: runs not drawn (over the caps).
pub fn render(rows: &[Row], by: &[String], figures: &[Figure], left_out: usize, findings: &[Finding]) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>bootmark report</title><style>\
         body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;font-size:13px}\
         td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f3f3f3}td.l{text-align:left}\
         .sig{font-weight:bold}h2{margin-top:1.5em}li{margin:.4em 0}figure{margin:1em 0}\
         figcaption{font-size:12px;color:#555;max-width:760px}</style></head><body><h1>bootmark report</h1>",
    );
    html += &findings_list(findings, figures);
    html += &table(rows, by);
    html += "<h2>Pictures</h2><p>Per workload: every drawn run's probe waits on one time axis, a CDF of the waits of every run, the groups' figures; then each drawn run's timeline (the writer's waits attributed, the kernel's dirty limits, the flush marked).";
    if left_out > 0 {
        html += &format!(
            " {left_out} more run(s) with a timeline are in the table and the CDFs but not drawn one by one (at most {} per group); <code>--timeline RUN_ID:SEQ</code> draws one.",
            pictures::RUNS_PER_GROUP
        );
    }
    html += "</p>";
    for f in figures {
        html += &format!(
            "<figure id=\"{}\" data-x=\"{}..{}\" data-y=\"{}..{}\" data-drawn=\"{}\" data-records=\"{}\">{}<figcaption>{} — records: {}</figcaption></figure>",
            esc(&f.id),
            f.x.0,
            f.x.1,
            f.y.0,
            f.y.1,
            f.drawn.iter().map(|(n, top, bottom)| format!("{n}:{top}-{bottom}")).collect::<Vec<_>>().join(" "),
            esc(&f.records.join(" ")),
            f.svg,
            esc(&f.title),
            if f.records.is_empty() { "none drawn".to_string() } else { esc(&f.records.join(", ")) },
        );
    }
    html += "</body></html>\n";
    html
}

/// Findings at the top, each linked to what shows it: its record's
/// timeline when that is drawn, else its workload's waits.
fn findings_list(findings: &[Finding], figures: &[Figure]) -> String {
    if findings.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Findings</h2><ul>");
    for f in findings {
        let workload = f.subject.rsplit(" · ").next().unwrap_or("");
        let drawn =
            |r: &str| figures.iter().find(|fig| fig.id.starts_with("run-") && fig.records.iter().any(|x| x == r));
        let overview = figures.iter().find(|fig| fig.id.ends_with(&format!("-{workload}")));
        let link = match (&f.record, f.record.as_deref().and_then(drawn)) {
            (_, Some(fig)) => format!("<a href=\"#{}\">its run's timeline</a>", esc(&fig.id)),
            (Some(r), None) => format!(
                "{}its timeline: <code>--timeline {}</code>",
                overview.map(|o| format!("<a href=\"#{}\">pictures</a>; ", esc(&o.id))).unwrap_or_default(),
                esc(r)
            ),
            (None, None) => overview.map(|o| format!("<a href=\"#{}\">pictures</a>", esc(&o.id))).unwrap_or_default(),
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
