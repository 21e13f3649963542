//! `--format text`: what a kernel developer pastes into an email to a
//! kernel list — plain ASCII, no line over 80 columns: the verdict, what
//! the machine was, a compact table (one block of rows per first --by
//! value), the findings wrapped, and how to run it again.

use super::reproduce::Reproducer;
use super::{Report, Row, Summary};

const WIDTH: usize = 80;

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    if !report.verdict.is_empty() {
        out += "Verdict\n";
        for line in &report.verdict {
            out += &wrap(line, "* ", "  ");
        }
        out += "\n";
    }
    if let Some(setting) = &report.setting {
        out += &wrap(setting, "", "");
        out += "\n";
    }
    if !report.constant.is_empty() {
        let same: Vec<String> = report.constant.iter().map(|(d, v)| format!("{d} {v}")).collect();
        out += &wrap(&format!("Every row: {}.", same.join(" / ")), "", "");
        out += "\n";
    }
    out += &table(&report.rows, &report.by);
    if !report.findings.is_empty() {
        out += "\nFindings\n";
        for f in &report.findings {
            let record = f.record.as_deref().map(|r| format!(" [record {r}]")).unwrap_or_default();
            out += &wrap(&format!("{} ({}): {}{record}", f.rule, f.subject, f.sentence), "* ", "  ");
        }
    }
    out += &reproduce(&report.reproduce);
    ascii(&out)
}

/// The table: a line per value of the first dimensions, its workloads' rows under it.
fn table(rows: &[Row], by: &[String]) -> String {
    let name_width = rows.iter().map(|r| r.name.len()).max().unwrap_or(8).clamp(8, 24);
    let header = format!(
        "  {:<name_width$} {:>3} {:>8} {:>7} {:>7} {:>8}  {}",
        "workload", "n", "real s", "MiB/s", "p99 ms", "stall ms", "vs baseline"
    );
    let mut out = format!("{}\n{header}\n", by.join(" / "));
    let mut current: Option<&[String]> = None;
    for r in rows {
        if current != Some(r.key.as_slice()) {
            out += &wrap(&r.key.join(" / "), "", "  ");
            current = Some(&r.key);
        }
        let mut name = r.name.clone();
        if name.len() > name_width {
            name.truncate(name_width - 1);
            name.push('~');
        }
        let n = if r.not_ok > 0 { format!("{}!", r.n) } else { r.n.to_string() };
        out += &format!(
            "  {name:<name_width$} {n:>3} {:>8} {:>7} {:>7} {:>8}  {}\n",
            median(&r.real_s, 2),
            median(&r.throughput_mib_s, 1),
            median(&r.probe_p99_ms, 1),
            r.max_stall_ms.map_or("-".into(), |m| format!("{m:.0}")),
            versus(r)
        );
        for f in &r.fio {
            out += &wrap(&f.line(), "    ", "      ");
        }
    }
    out + "Medians over the runs; n! some runs not ok; ns: not significant (the 95 %\nintervals of the mean real times overlap).\n"
}

fn median(s: &Option<Summary>, digits: usize) -> String {
    s.as_ref().map_or("-".into(), |s| format!("{:.digits$}", s.median))
}

fn versus(r: &Row) -> String {
    super::versus_in(r, "x", "-", " ns")
}

/// How to run it again: the plans, each kernel's build and command line,
/// the image command, the records' runs.
fn reproduce(r: &Reproducer) -> String {
    if r.kernels.is_empty() {
        return String::new();
    }
    let mut out = "\nTo reproduce\n".to_string();
    out += &wrap(&format!("plan: {} (bootmark plans NAME prints it)", r.plans.join(", ")), "  ", "    ");
    out += "  kernels:\n";
    for (release, build, cmdline) in &r.kernels {
        out += &wrap(&format!("{release}: {build}"), "    ", "      ");
        out += &wrap(&format!("cmdline: {cmdline}"), "      ", "        ");
    }
    let debian = r.kernels.iter().all(|(_, build, _)| build.starts_with("Debian "));
    let kernels: Vec<String> = r
        .kernels
        .iter()
        .map(|(release, _, _)| {
            if debian {
                format!("--kernel-deb linux-image-{release}")
            } else {
                format!("--kernel <{release}'s bzImage>")
            }
        })
        .collect();
    let plan = r.plans.first().map_or("PLAN", String::as_str);
    let suite = if debian { " (NAME@SUITE for a suite your apt sources lack)" } else { "" };
    out += &wrap(&format!("image: cargo xtask image --plan {plan} {}{suite}", kernels.join(" ")), "  ", "    ");
    let mut runs: Vec<String> = r.named_runs.iter().map(|(id, n)| format!("{id} ({n})")).collect();
    if r.runs > r.named_runs.len() {
        runs.push(format!("and {} more", r.runs - r.named_runs.len()));
    }
    out += &wrap(&format!("records (run id, records): {}", runs.join(", ")), "  ", "    ");
    out
}

/// `text` in lines of at most WIDTH columns (counted in characters): the
/// first after `first`, the rest after `rest`; a word longer than a line
/// (a kernel command line's trace_event=…) is cut across lines.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    // Spelled out first: "←" takes two columns as "<-".
    let text = ascii(text);
    let mut out = String::new();
    let mut line = first.to_string();
    let mut fresh = true;
    for word in text.split_whitespace() {
        let len = |s: &str| s.chars().count();
        if !fresh && len(&line) + 1 + len(word) > WIDTH {
            out += line.trim_end();
            out += "\n";
            line = rest.to_string();
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        let mut word = word;
        while len(&line) + len(word) > WIDTH {
            let room = WIDTH - len(&line);
            let at_most = word.char_indices().nth(room).map_or(word.len(), |(i, _)| i);
            // After a comma where one fits (a trace_event= list stays readable).
            let cut = word[..at_most].rfind(',').map_or(at_most, |i| i + 1);
            line += &word[..cut];
            out += &line;
            out += "\n";
            line = rest.to_string();
            word = &word[cut..];
        }
        line += word;
        fresh = false;
    }
    out += line.trim_end();
    out + "\n"
}

/// Plain ASCII: the report's typography spelled out, anything else `?`.
pub fn ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if c.is_ascii() => out.push(c),
            '–' | '−' => out.push('-'),
            '—' => out += "--",
            '·' => out.push('/'),
            '×' => out.push('x'),
            '←' => out += "<-",
            '→' => out += "->",
            'µ' | 'μ' => out.push('u'),
            '≤' => out += "<=",
            '≥' => out += ">=",
            '…' => out += "...",
            '±' => out += "+/-",
            '‘' | '’' => out.push('\''),
            '“' | '”' => out.push('"'),
            _ => out.push('?'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wrap_at_80_and_long_words_are_cut() {
        let long = format!("cmdline: {}", "trace_event=writeback:balance_dirty_pages,".repeat(5));
        let wrapped = wrap(&long, "    ", "      ");
        assert!(wrapped.lines().all(|l| l.chars().count() <= WIDTH), "{wrapped}");
        assert_eq!(wrapped.split_whitespace().collect::<String>(), long.split_whitespace().collect::<String>());
        assert_eq!(wrap("a b", "* ", "  "), "* a b\n");
        assert!(wrapped.lines().nth(1).unwrap().ends_with(','), "cut after a comma: {wrapped}");
        // Counted as printed: each arrow is two columns.
        let arrows = "x ← ".repeat(30);
        assert!(wrap(&arrows, "", "").lines().all(|l| l.len() <= WIDTH && l.is_ascii()));
        let words = "word ".repeat(40);
        let w = wrap(&words, "* ", "  ");
        assert!(w.lines().count() == 3 && w.lines().skip(1).all(|l| l.starts_with("  word")), "{w}");
    }

    #[test]
    fn the_reports_typography_becomes_ascii() {
        assert_eq!(
            ascii("12 → 52 ms · 1.02× — rq_qos_wait ← wbt_wait (75000 µs)"),
            "12 -> 52 ms / 1.02x -- rq_qos_wait <- wbt_wait (75000 us)"
        );
        assert_eq!(ascii("日本"), "??");
    }
}
