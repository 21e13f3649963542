//! Where a fio job file may write: only inside the workload's own directory
//! on the target. A storage engineer's job file often names their own
//! device (`filename=/dev/sdb`); on the server under test that name can be
//! the installed OS, which bootmark exists to leave alone. So every option
//! whose value names a place must be a relative path that stays inside the
//! directory fio runs in (the workload's, on the target), and the options
//! that reach past any path — a command to run, a log to replay onto the
//! devices it names, a scheduler or cgroup to change, an engine that opens
//! devices or loads code — are refused, each naming its section, line and
//! option. The image builder checks an included job file when it builds,
//! and /init checks the job again before fio starts.
//!
//! The syntax is fio's job-file syntax (`init.c`, `parse_jobs_ini`): a
//! `[section]` per job (`[global]` for all), `option=value` or a bare
//! `option`, each line cut at its first `;` and `#`, `include FILE`; a job
//! with no `filename` writes the file its section names.
//! fio expands `${VAR}` from its environment (a kernel command line's
//! unknown `name=value` words land in /init's), so a `${` anywhere is
//! refused: what fio would open cannot be known before it runs.

use std::path::{Component, Path};

/// A job file's line this long, or longer, is refused (fio 3.33 reads 8192
/// bytes at a time, older fio 4096).
const MAX_LINE: usize = 4096;

/// Options whose value is one path or several separated by `:` (a `\:` is
/// a literal colon), each resolved by fio against the directory it runs in.
const PLACES: [&str; 10] = [
    "filename",
    "directory",
    "filename_format",
    "opendir",
    "write_iolog",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "merge_blktrace_file",
];

/// Options refused whatever their value, and why.
const REFUSED: [(&str, &str); 9] = [
    ("exec_prerun", "it runs a command outside the job, which bootmark cannot confine"),
    ("exec_postrun", "it runs a command outside the job, which bootmark cannot confine"),
    ("read_iolog", "a replayed log opens the files and devices it names"),
    ("replay_redirect", "it sends a replayed log to another device"),
    ("ioscheduler", "it changes a device's scheduler behind the record: give the plan a variant instead"),
    ("cgroup", "fio mounts and writes the cgroup file system for it"),
    ("trigger", "it runs a command"),
    ("trigger_cmd", "it runs a command"),
    ("trigger_file", "it names a file outside the job"),
];

/// The I/O engines that only do I/O on the files the job names; any other
/// (sg, exec, external:…, net, rdma, libpmem, dev-dax, nbd, xnvme, …)
/// opens devices, networks or programs by itself.
const FILE_ENGINES: [&str; 20] = [
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "posixaio",
    "mmap",
    "splice",
    "null",
    "falloc",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "cpuio",
];

/// A job option that would take fio outside the workload's directory.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    /// 1-based line of the job file.
    pub line: usize,
    /// The job's section (`global` for `[global]`), or "" before any.
    pub section: String,
    pub option: String,
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let section = if self.section.is_empty() { "before any section".into() } else { format!("[{}]", self.section) };
        write!(
            f,
            "line {}, {section}, option {}: {}. bootmark runs fio in the workload's own directory on the target and lets a job write nowhere else: name files relative to it (filename=data, directory=sub)",
            self.line, self.option, self.why
        )
    }
}

/// Every refusal in a job file's text, in line order (empty: it may run).
pub fn check(text: &str) -> Vec<Refusal> {
    let mut section = String::new();
    let mut refusals = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let refuse = |section: &str, option: &str, why: String| Refusal {
            line: i + 1,
            section: section.into(),
            option: option.into(),
            why,
        };
        // fio reads a line in pieces of 8192 bytes (4096 in older fio): the
        // rest of a longer one is another line, unseen by a check of whole lines.
        if raw.len() >= MAX_LINE {
            refusals.push(refuse(
                &section,
                "(a long line)",
                format!("{} bytes: fio reads a line of {MAX_LINE} bytes or more as several", raw.len()),
            ));
            continue;
        }
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if line.contains("${") {
            refusals.push(refuse(
                &section,
                line,
                "fio would put an environment variable here, so where it writes is unknown until it runs".into(),
            ));
            continue;
        }
        // fio cuts every line at its first ';' and its first '#' (strip_blank_end).
        let line = line.split([';', '#']).next().unwrap_or("").trim();
        if let Some(name) = line.strip_prefix('[') {
            // fio takes the name as all but the line's last character, `]` or not.
            let Some(name) = name.strip_suffix(']') else {
                refusals.push(refuse(
                    &section,
                    line,
                    "a section line without its closing ]: fio would take another name".into(),
                ));
                continue;
            };
            section = name.trim().to_string();
            // A job without a filename writes the file its section names (add_job):
            // [/dev/sdb] is a job on that disk.
            if !section.starts_with("global")
                && let Some(why) = outside(&section, false)
            {
                refusals.push(refuse(
                    &section,
                    "[section]",
                    format!("a job with no filename writes the file its section names, and {why}"),
                ));
            }
            continue;
        }
        let (option, value) = match line.split_once('=') {
            Some((o, v)) => (o.trim(), Some(v.trim())),
            None => (line, None),
        };
        if let Some(why) = refused_option(option, value) {
            refusals.push(refuse(&section, option, why));
        }
    }
    refusals
}

/// Why one option (with its value, if any) is refused, if it is.
fn refused_option(option: &str, value: Option<&str>) -> Option<String> {
    // Any line starting with these 7 letters is an include (init.c).
    if option.starts_with("include") {
        return Some("an included file's options could not be checked: put them in this file".into());
    }
    if let Some((_, why)) = REFUSED.iter().find(|(o, _)| *o == option) {
        return Some((*why).into());
    }
    let value = value.unwrap_or("");
    // A log named by nothing is named after its job (checked as the section's name).
    if option.starts_with("write_") && option.ends_with("_log") && value.is_empty() {
        return None;
    }
    if PLACES.contains(&option) {
        return split_paths(value).into_iter().find_map(|p| outside(&p, option == "filename_format"));
    }
    // The job's name: a job without a filename writes the file it names.
    if option == "name" {
        return outside(value, false)
            .map(|why| format!("a job with no filename writes the file its name names, and {why}"));
    }
    // A pattern in single quotes is a file fio reads into the data it writes.
    if matches!(option, "buffer_pattern" | "verify_pattern") && value.contains('\'') {
        return Some(quoted(value, "names a file fio would read into what it writes"));
    }
    match option {
        "ioengine" if !FILE_ENGINES.contains(&value) => Some(
            "the engine reaches past the files the job names (devices, networks or code of its own); engines that only use files: sync, psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, mmap, splice, null, falloc, ftruncate, filecreate, filestat, filedelete, dircreate, dirstat, dirdelete, cpuio".into(),
        ),
        // mem=mmap:/path, iomem=mmaphuge:/path: fio's buffers in that file.
        "mem" | "iomem" => value.split_once(':').and_then(|(_, path)| outside(path.trim(), false)),
        _ => None,
    }
}

/// `'text' why`: one way of saying it, for every refusal of a value.
fn quoted(text: &str, why: &str) -> String {
    let mut out = String::with_capacity(text.len() + why.len() + 3);
    out.push('\'');
    out.push_str(text);
    out.push_str("' ");
    out.push_str(why);
    out
}

/// The paths of a `:`-separated value, `\:` kept as a colon.
fn split_paths(value: &str) -> Vec<String> {
    let mut paths = vec![String::new()];
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => paths.last_mut().unwrap().push(chars.next().unwrap()),
            ':' => paths.push(String::new()),
            c => paths.last_mut().unwrap().push(c),
        }
    }
    paths
}

/// Why `path` is not a place inside the directory fio runs in, if it is
/// not. `$jobname`, `$jobnum`, `$filenum` and `$clientuid` are fio's own
/// names for a file_format's parts (`$clientuid` checked as empty, which it
/// is when fio runs alone, and as a name); any other `$` is refused.
fn outside(path: &str, format: bool) -> Option<String> {
    if path.is_empty() {
        return Some(String::from("an empty path"));
    }
    // $jobname is the job's name (checked: never empty), $jobnum and $filenum numbers.
    let expanded = |clientuid: &str| {
        let mut rest = path.to_string();
        if format {
            for own in ["$jobname", "$jobnum", "$filenum"] {
                rest = rest.replace(own, "x");
            }
            rest = rest.replace("$clientuid", clientuid);
        }
        rest
    };
    for rest in [expanded(""), expanded("x")] {
        if rest.contains('$') {
            return Some(quoted(path, "holds a $ fio would expand, so where it writes is unknown until it runs"));
        }
        if rest.starts_with('/') {
            return Some(quoted(path, "is an absolute path: it can name any disk or file of the server"));
        }
        if rest.is_empty()
            || !Path::new(&rest).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Some(quoted(path, "climbs out of the workload's directory with '..', or names nothing"));
        }
    }
    None
}

/// The job file's refusals as one message, or Ok.
pub fn allowed(text: &str, what: &str) -> Result<(), String> {
    let refusals = check(text);
    if refusals.is_empty() {
        return Ok(());
    }
    let each: Vec<String> = refusals.iter().map(Refusal::to_string).collect();
    Err(format!("{what} may write outside the workload's directory, so it is refused: {}", each.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(job: &str) -> Vec<(usize, String, String)> {
        check(job).into_iter().map(|r| (r.line, r.section, r.option)).collect()
    }

    #[test]
    fn a_job_naming_a_device_is_refused_with_its_section_and_option() {
        let job = "[global]\nioengine=psync\n\n[w]\nfilename=/dev/sdb\nrw=write\nsize=8m\n";
        assert_eq!(why(job), [(5, "w".into(), "filename".into())]);
        let message = allowed(job, "job file /etc/jobs/job.fio").unwrap_err();
        assert!(message.contains("line 5, [w], option filename: '/dev/sdb' is an absolute path"), "{message}");
    }

    #[test]
    fn jobs_writing_inside_their_directory_may_run() {
        for job in [
            "[global]\nioengine=libaio\ndirect=1\n[w]\nrw=write\nsize=$mb_memory\n",
            "[w]\nfilename=data\n[r]\nfilename=sub/data:sub/other\ndirectory=./here\n",
            "[w]\nfilename_format=$jobname.$jobnum.$filenum\nwrite_lat_log=w\n; filename=/dev/sda\n# ioengine=sg\n",
            "[w]\nfilename=with\\:colon\nmem=mmap:buffers\nrw=trim\n",
            "[x]\nioengine = io_uring\nfilename = a : b\n",
            "[x]\nfilename=data ; /dev/sdb\n[global]\nrw=write # filename=/dev/sdb\n[sdb]\nrw=read\n",
            "[w]\nwrite_bw_log\nwrite_lat_log=\nname=writer\nbuffer_pattern=0xdeadbeef\nfilename_format=$jobname.$filenum\n",
        ] {
            assert_eq!(why(job), [], "{job}");
        }
    }

    #[test]
    fn every_way_out_is_refused() {
        let cases = [
            ("[a]\nfilename=data:/dev/sdb\n", "filename"),
            ("[a]\ndirectory=/mnt\n", "directory"),
            ("[a]\ndirectory=../..\n", "directory"),
            ("[a]\nfilename=sub/../../x\n", "filename"),
            ("[a]\nfilename_format=/dev/sd$jobnum\n", "filename_format"),
            ("[a]\nfilename_format=$HOME/x\n", "filename_format"),
            ("[a]\nopendir=/\n", "opendir"),
            ("[a]\nwrite_iolog=/etc/passwd\n", "write_iolog"),
            ("[a]\nwrite_bw_log=/tmp/bw\n", "write_bw_log"),
            ("[a]\nexec_prerun=dd if=/dev/zero of=/dev/sdb\n", "exec_prerun"),
            ("[a]\nread_iolog=replay.log\n", "read_iolog"),
            ("[a]\nreplay_redirect=/dev/sdb\n", "replay_redirect"),
            ("[a]\nioscheduler=none\n", "ioscheduler"),
            ("[a]\ncgroup=x\n", "cgroup"),
            ("[a]\nioengine=sg\n", "ioengine"),
            ("[a]\nioengine=external:/lib/x.so\n", "ioengine"),
            ("[a]\nioengine=exec\n", "ioengine"),
            ("[a]\nmem=mmaphuge:/huge/f\n", "mem"),
            ("[a]\nfilename=\n", "filename"),
            ("include other.fio\n", "include other.fio"),
            ("[a]\nfilename=${DISK}\n", "filename=${DISK}"),
            ("[a]\n${LINE}\n", "${LINE}"),
            ("[/dev/sdb]\nrw=write\n", "[section]"),
            ("[../x]\nrw=write\n", "[section]"),
            ("[a]\ninclude\tother.fio\n", "include\tother.fio"),
            // Found by trying (helper, 2026-12-06): each wrote outside its directory.
            ("[a]\nfilename_format=$clientuid/tmp/victim\n", "filename_format"),
            ("[a\nfilename_format=$jobname/tmp/victim\n", "[a"),
            (&format!("#{}filename=/tmp/victim\n", "A".repeat(8190)), "(a long line)"),
            ("[a]\nbuffer_pattern='/etc/shadow'\n", "buffer_pattern"),
            ("[a]\nname=/dev/sdb\n", "name"),
        ];
        for (job, option) in cases {
            let got = why(job);
            assert_eq!(got.len(), 1, "{job}: {got:?}");
            assert_eq!(got[0].2, option, "{job}");
        }
    }

    #[test]
    fn the_engine_refusal_names_every_file_engine() {
        let why = refused_option("ioengine", Some("sg")).unwrap();
        assert!(why.ends_with(&FILE_ENGINES.join(", ")), "{why}");
    }

    #[test]
    fn an_escaped_colon_is_part_of_a_path_and_a_plain_one_separates() {
        assert_eq!(split_paths(r"a\:b:c"), ["a:b", "c"]);
        assert_eq!(split_paths("/dev/sda"), ["/dev/sda"]);
    }
}
