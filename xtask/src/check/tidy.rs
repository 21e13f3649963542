//! Tests that fail when the repository drifts from what its documents say
//! (as rust-analyzer's tidy tests do): ARCHITECTURE.md's code map against
//! the files, the README's kernel parameters against `bootmark boot-params`,
//! links that leave the repository, stale "later" notes, the lint configs
//! that hold the old-kernel rules and the one process runner, module docs,
//! and docs/lava.md's regexes against the code.

#[cfg(test)]
mod tests {
    use crate::host::project::project_root;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    fn read(rel: &str) -> String {
        std::fs::read_to_string(project_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// Files under `dir` (relative to the root) whose name ends with `ext`, as relative paths.
    fn files(dir: &str, ext: &str) -> Vec<String> {
        let root = project_root();
        let mut out = Vec::new();
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.to_string_lossy().ends_with(ext) {
                    out.push(p.strip_prefix(&root).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        out.sort();
        out
    }

    /// The source files a newcomer may open.
    fn sources() -> Vec<String> {
        ["src", "xtask/src", "tests", "fuzz/fuzz_targets"].iter().flat_map(|d| files(d, ".rs")).collect()
    }

    /// A code map row: its folder, the files it names (in its role and
    /// open-first cells, relative to the folder unless they name a path
    /// from the root) and the row's text.
    struct Row {
        folder: String,
        files: Vec<String>,
        open_first: Vec<String>,
        text: String,
    }

    /// The names in a cell that are files or folders (`x.rs`, `a/`,
    /// `plans/*.json`), resolved as the row's text means them.
    fn paths_in(cell: &str, folder: &str) -> Vec<String> {
        let is_path =
            |n: &str| n.ends_with('/') || [".rs", ".md", ".json", ".toml", ".list"].iter().any(|e| n.ends_with(e));
        cell.split('`')
            .skip(1)
            .step_by(2)
            .filter(|n| is_path(n) && !n.contains(' '))
            .map(|n| {
                let in_folder = format!("{folder}{n}");
                if !exists(&in_folder) && n.contains('/') && exists(n) { n.to_string() } else { in_folder }
            })
            .collect()
    }

    fn code_map() -> Vec<Row> {
        let text = read("ARCHITECTURE.md");
        let map = text.split("## Code map").nth(1).expect("ARCHITECTURE.md has a code map");
        let map = map.split("\n## ").next().unwrap();
        map.lines()
            .filter(|l| l.starts_with("| `"))
            .map(|row| {
                let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
                let folder = cells[0].trim().trim_matches('`').to_string();
                assert!(folder.ends_with('/'), "a code map row is a folder (`dir/`): {row}");
                Row {
                    files: cells.iter().skip(1).flat_map(|c| paths_in(c, &folder)).collect(),
                    open_first: cells.get(2).map(|c| paths_in(c, &folder)).unwrap_or_default(),
                    folder,
                    text: row.to_string(),
                }
            })
            .collect()
    }

    /// Does a path of the map exist (`dir/*.ext` when some file matches)?
    fn exists(p: &str) -> bool {
        match p.split_once('*') {
            Some((dir, pattern)) => !files(dir, pattern).is_empty(),
            None => project_root().join(p).exists(),
        }
    }

    #[test]
    fn every_folder_of_code_has_a_row_and_every_named_file_exists() {
        let rows = code_map();
        assert!(rows.len() > 15, "the code map was not found");
        for row in &rows {
            assert!(
                exists(&row.folder),
                "ARCHITECTURE.md's code map has a row for {}, which does not exist",
                row.folder
            );
            assert!(!row.open_first.is_empty(), "{}: name the files a newcomer opens first", row.folder);
            for p in &row.files {
                assert!(exists(p), "ARCHITECTURE.md's row for {} names {p}, which does not exist", row.folder);
            }
        }
        let folders: BTreeSet<String> =
            sources().iter().map(|f| format!("{}/", Path::new(f).parent().unwrap().display())).collect();
        let missing: Vec<&String> = folders.iter().filter(|f| !rows.iter().any(|r| &r.folder == *f)).collect();
        assert!(missing.is_empty(), "folders of code ARCHITECTURE.md's code map has no row for: {missing:?}");
    }

    /// The page of the guide with the `bootmark.*` parameter table.
    const PARAMETERS_PAGE: &str = "docs/on-the-server.md";

    /// The parameter names of the guide's `bootmark.*` table.
    fn readme_parameters() -> BTreeSet<String> {
        read(PARAMETERS_PAGE)
            .lines()
            .filter(|l| l.starts_with("| `bootmark."))
            .flat_map(|l| {
                l.split('`')
                    .filter_map(|s| s.strip_prefix("bootmark."))
                    .map(|s| s.split(['=', ' ']).next().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn the_readme_lists_exactly_the_boot_parameters_bootmark_reads() {
        let reference: BTreeSet<String> = bootmark::contract::cmdline::reference()
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("bootmark."))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect();
        assert!(reference.len() >= 10, "{reference:?}");
        assert_eq!(readme_parameters(), reference, "{PARAMETERS_PAGE}'s table vs `bootmark boot-params`");
    }

    #[test]
    fn the_readme_layout_names_real_folders() {
        let readme = read("README.md");
        let layout = readme.split("## Layout").nth(1).expect("README has a Layout section");
        let layout = layout.split("\n## ").next().unwrap();
        let folders: Vec<&str> = layout.split('`').skip(1).step_by(2).filter(|s| s.ends_with('/')).collect();
        assert!(folders.len() >= 4, "{folders:?}");
        for f in folders {
            assert!(project_root().join(f).is_dir(), "README's layout names {f}, which is not a folder");
        }
    }

    #[test]
    fn the_readme_is_a_front_door() {
        let readme = read("README.md");
        let first = readme.lines().position(|l| l.trim() == "cargo xtask demo");
        assert!(first.is_some_and(|i| i < 40), "README.md: the first command is not on the first screen ({first:?})");
        let tests = readme.lines().position(|l| l.trim() == "cargo xtask test");
        assert!(tests.is_some_and(|i| i < 40), "README.md: the test command is not on the first screen ({tests:?})");
        let lines = readme.lines().count();
        assert!(lines < 200, "README.md has {lines} lines: what it is, the two commands, a session, where to read on");
        for page in
            ["docs/servers-and-kernels.md", "docs/on-the-server.md", "docs/results.md", "docs/console-and-fleets.md"]
        {
            assert!(read("README.md").contains(&format!("]({page})")), "README.md links the guide page {page}");
        }
    }

    /// Every section of docs/measurements.md names the command that made
    /// its figures and when they were measured.
    #[test]
    fn every_measurement_names_its_command_and_date() {
        let text = read("docs/measurements.md");
        let sections: Vec<&str> = text.split("\n## ").skip(1).collect();
        assert!(sections.len() >= 8, "{}", sections.len());
        for s in sections {
            let title = s.lines().next().unwrap();
            assert!(s.lines().any(|l| l.starts_with("Command: `")), "measurements: '{title}' has no `Command:` line");
            let dated = s.lines().filter(|l| l.starts_with("Measured: ")).any(|l| {
                l.split(|c: char| !(c.is_ascii_digit() || c == '-'))
                    .any(|w| w.len() == 10 && w.as_bytes()[4] == b'-' && w.as_bytes()[7] == b'-' && w.starts_with("20"))
            });
            assert!(dated, "measurements: '{title}' has no `Measured: YYYY-MM-DD` line");
        }
    }

    /// Each `PROGRAM WORD… --flag…` command line named in the README and the
    /// guide (code blocks, code spans and prose alike), with `\` line
    /// continuations joined: the words after PROGRAM and the flags on the line.
    fn commands_named(program: &str) -> Vec<(String, Vec<String>, Vec<String>)> {
        let mut docs = vec!["README.md".to_string(), "ARCHITECTURE.md".to_string()];
        docs.extend(files("docs", ".md"));
        let mut out = Vec::new();
        for doc in docs {
            let text = read(&doc).replace("\\\n", " ");
            for line in text.lines() {
                for (at, _) in line.match_indices(&format!("{program} ")) {
                    if line[..at]
                        .ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '/' || c == '.')
                    {
                        continue;
                    }
                    let rest = &line[at + program.len() + 1..];
                    let rest = rest.split(['`', '#', '|', ';', ')', '>', '<', '"']).next().unwrap();
                    let words: Vec<&str> =
                        rest.split_whitespace().map(|w| w.trim_matches(['[', ']', ',', '.', ':'])).collect();
                    let path: Vec<String> = words
                        .iter()
                        .take_while(|w| {
                            !w.is_empty()
                                && !w.starts_with('-')
                                && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                        })
                        .map(|w| w.to_string())
                        .collect();
                    let flags: Vec<String> = words
                        .iter()
                        .filter(|w| w.starts_with("--") && w.len() > 2)
                        .map(|w| w.split(['=', '|']).next().unwrap().to_string())
                        .collect();
                    out.push((doc.clone(), path, flags));
                }
            }
        }
        out
    }

    #[test]
    fn every_cargo_xtask_command_and_flag_in_the_docs_exists() {
        use clap::CommandFactory;
        let cli = crate::Cli::command();
        let named = commands_named("cargo xtask");
        assert!(named.len() > 40, "{}", named.len());
        for (doc, path, flags) in named {
            let Some(first) = path.first() else { continue };
            let mut cmd =
                cli.find_subcommand(first).unwrap_or_else(|| panic!("{doc}: `cargo xtask {first}` is no command"));
            // `check NAME`: the scenario's own flags.
            if let Some(sub) = path.get(1).and_then(|w| cmd.find_subcommand(w)) {
                cmd = sub;
            }
            let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
            for f in flags {
                let name = f.trim_start_matches('-');
                assert!(
                    name == "help" || longs.contains(&name),
                    "{doc}: `cargo xtask {}` has no {f} (it has {longs:?})",
                    path.join(" ")
                );
            }
        }
    }

    #[test]
    fn every_bootmark_command_and_flag_in_the_docs_exists() {
        let bin = project_root().join("target/debug/bootmark");
        let sh = crate::host::process::shell_in(&project_root()).unwrap();
        crate::host::process::run(crate::host::process::cmd!(sh, "cargo build -q -p bootmark --bin bootmark")).unwrap();
        let mut helps = std::collections::BTreeMap::new();
        let named = commands_named("bootmark");
        let mut checked = 0;
        for (doc, path, flags) in named {
            // `bootmark` in prose ("bootmark writes only…") names no command.
            let Some(first) = path.first().filter(|w| !flags.is_empty() || w.len() > 2) else { continue };
            // `bootmark lab run`, `bootmark bisect run`: the subcommand's own flags, where it is one.
            let second = path.get(1).filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            let sub = second.map(|second| {
                let key = format!("{first} {second}");
                let help = helps.entry(key.clone()).or_insert_with(|| {
                    crate::host::process::output(crate::host::process::cmd!(sh, "{bin} {first} {second} --help"))
                        .unwrap()
                });
                (key, help.status.success())
            });
            let key = match sub {
                Some((key, true)) => key,
                _ => first.clone(),
            };
            let help = helps.entry(key.clone()).or_insert_with(|| {
                crate::host::process::output(crate::host::process::cmd!(sh, "{bin} {first} --help")).unwrap()
            });
            if !help.status.success() {
                // Prose such as "bootmark writes…": only a line with flags claims a command.
                assert!(flags.is_empty(), "{doc}: `bootmark {first}` with {flags:?} is no command");
                continue;
            }
            checked += 1;
            let text = String::from_utf8_lossy(&help.stdout);
            for f in flags {
                assert!(
                    f == "--help"
                        || text.contains(&format!("{f} "))
                        || text.contains(&format!("{f}\n"))
                        || text.contains(&format!("{f}="))
                        || text.contains(&format!("{f},")),
                    "{doc}: `bootmark {key}` has no {f}"
                );
            }
        }
        assert!(checked > 15, "{checked}");
    }

    /// Documents and sources, with their text.
    fn texts() -> Vec<(String, String)> {
        let mut all: Vec<String> = sources();
        all.extend(["README.md", "ARCHITECTURE.md"].map(String::from));
        all.extend(files("docs", ".md"));
        // This file names the very phrases it looks for.
        all.into_iter().filter(|f| f != "xtask/src/check/tidy.rs").map(|f| (read(&f), f)).map(|(t, f)| (f, t)).collect()
    }

    #[test]
    fn nothing_points_outside_the_repository() {
        for (file, text) in texts() {
            for (i, line) in text.lines().enumerate() {
                assert!(
                    !line.contains("../shared") && !line.contains("](/work") && !line.contains("](../"),
                    "{file}:{}: a link outside the repository: {line}",
                    i + 1
                );
            }
        }
    }

    #[test]
    fn no_stale_notes_about_work_to_come() {
        // Phrases that announce a part as missing.
        let stale = ["later:", "(later", "later /init", "not yet implemented", "TODO", "FIXME"];
        for (file, text) in texts() {
            // Prose only: comments in sources, every line of documents.
            let prose = |l: &str| !file.ends_with(".rs") || l.trim_start().starts_with("//");
            for (i, line) in text.lines().enumerate().filter(|(_, l)| prose(l)) {
                if let Some(p) = stale.iter().find(|p| line.contains(*p)) {
                    panic!("{file}:{}: '{p}' — is it still to come? {line}", i + 1);
                }
            }
        }
    }

    /// The old-kernel rules of the /init code (threads, std locks, *at-only
    /// std calls, panicking prints) are clippy bans in image/clippy.toml,
    /// read only by the image build's lint in .ci/run; this holds the two
    /// together so neither can quietly drop a rule.
    #[test]
    fn the_old_kernel_bans_are_linted_on_the_image_build() {
        let bans = read("image/clippy.toml");
        for rule in [
            "std::thread::spawn",
            "std::sync::Mutex",
            "std::sync::RwLock",
            "std::sync::Condvar",
            "std::sync::mpsc::channel",
            "std::fs::remove_dir_all",
            "std::fs::hard_link",
            "std::eprintln",
            "std::println",
        ] {
            assert!(bans.contains(&format!("path = \"{rule}\"")), "image/clippy.toml does not ban {rule}");
        }
        let ci = read(".ci/run");
        assert!(
            ci.lines().any(|l| l.starts_with("CLIPPY_CONF_DIR=\"$PWD/image\" cargo clippy -p bootmark --no-default-features")),
            ".ci/run must lint the /init build with image/clippy.toml"
        );
    }

    /// One way to run a program: xtask/clippy.toml bans std's process API
    /// and running xshell's commands, and only host/process.rs may allow it.
    #[test]
    fn only_the_process_runner_runs_programs() {
        let bans = read("xtask/clippy.toml");
        let banned = ["new", "output", "status", "spawn"].map(|m| format!("std::process::Command::{m}"));
        let banned_xshell = ["run", "read", "read_stderr", "output"].map(|m| format!("xshell::Cmd::{m}"));
        for path in banned.iter().chain(&banned_xshell) {
            assert!(bans.contains(&format!("path = \"{path}\"")), "xtask/clippy.toml does not ban {path}");
        }
        let allow = ["clippy::", "disallowed_methods"].concat();
        for file in sources().iter().filter(|f| f.starts_with("xtask/") && *f != "xtask/src/check/tidy.rs") {
            let allowed = read(file).contains(&allow);
            assert_eq!(allowed, file == "xtask/src/host/process.rs", "{file}: only host/process.rs runs programs");
        }
        // The door is xshell, xtask's alone: the static /init runs no host
        // programs through a shell library and stays small.
        assert!(read("xtask/Cargo.toml").contains("\nxshell = "), "xtask/Cargo.toml: xshell is the door's library");
        assert!(!read("Cargo.toml").contains("xshell"), "Cargo.toml: the image side does not depend on xshell");
    }

    /// The workstation side is one folder, gated whole by the feature in src/lib.rs.
    #[test]
    fn architecture_names_the_workstation_side_as_the_code_gates_it() {
        let lib = read("src/lib.rs");
        assert!(
            lib.contains("#[cfg(feature = \"workstation\")]\npub mod workstation;"),
            "src/lib.rs gates src/workstation/ whole behind the workstation feature"
        );
        let rows = code_map();
        for folder in ["src/workstation/", "src/image_side/", "src/schema/"] {
            assert!(rows.iter().any(|r| r.folder == folder), "ARCHITECTURE.md has no row for {folder}");
        }
        let workstation = rows.iter().find(|r| r.folder == "src/workstation/").unwrap();
        assert!(workstation.text.contains("workstation only"), "its row says so: {}", workstation.text);
        // Each side's row names what it never imports, as the checks below hold it.
        for (folder, never) in [
            ("src/schema/", "never imports either side"),
            ("src/image_side/", "Never imports the workstation"),
            ("src/workstation/", "Never imports the image side but its plan"),
        ] {
            let row = rows.iter().find(|r| r.folder == folder).unwrap();
            assert!(row.text.contains(never), "ARCHITECTURE.md's row for {folder} says \"{never}\": {}", row.text);
        }
        assert!(
            read("ARCHITECTURE.md").contains("cfg(feature = \"workstation\")"),
            "ARCHITECTURE.md says where the split is made"
        );
    }

    #[test]
    fn every_module_opens_with_a_doc_line() {
        for file in sources() {
            let text = read(&file);
            assert!(text.starts_with("//!"), "{file}: open with a `//!` line saying what the module is");
        }
    }

    /// docs/lava.md shows the monitor `cargo xtask lava` writes.
    #[test]
    fn docs_lava_shows_the_monitor_regexes_of_the_code() {
        use bootmark::sink::lava::{END, PATTERN, START};
        let doc = read("docs/lava.md");
        for (key, regex) in [("start", START), ("end", END), ("pattern", PATTERN)] {
            let line = format!("{key}: '{regex}'");
            assert!(doc.lines().any(|l| l.trim() == line), "docs/lava.md lacks the line `{line}`");
        }
    }

    /// Other crates reach the image side only through `bootmark::contract`
    /// (and the record, framing and journal modules), never `init::` itself.
    #[test]
    fn the_workstation_side_uses_the_contract_not_init_internals() {
        let outside: Vec<String> = sources().into_iter().filter(|f| !f.starts_with("src/")).collect();
        assert!(outside.iter().any(|f| f == "xtask/src/check/boots/support.rs"), "{outside:?}");
        let internal = ["bootmark::", "init::"].concat();
        for file in outside.iter().filter(|f| *f != "xtask/src/check/tidy.rs") {
            for (i, line) in read(file).lines().enumerate() {
                assert!(!line.contains(&internal), "{file}:{}: uses {internal} directly: {line}", i + 1);
            }
        }
    }

    /// A source file's module path: `xtask/src/build/image/mod.rs` → `build::image`.
    fn module_of(file: &str, src: &str) -> Vec<String> {
        let rel = file.strip_prefix(src).unwrap().trim_start_matches('/').trim_end_matches(".rs");
        let rel = rel.strip_suffix("/mod").unwrap_or(rel);
        if matches!(rel, "main" | "lib") { Vec::new() } else { rel.split('/').map(String::from).collect() }
    }

    /// The modules a file's non-test code names through `crate::` or `super::` paths.
    fn imports_of(text: &str, me: &[String], is_mod_rs: bool) -> Vec<Vec<String>> {
        let code = text.split("#[cfg(test)]").next().unwrap();
        let mut out = Vec::new();
        for (prefix, base) in [
            ("crate::", Vec::new()),
            ("super::", {
                // `super` of a folder's mod.rs or of a file is the module above it.
                let up = if is_mod_rs || !me.is_empty() { me.len().saturating_sub(1) } else { 0 };
                me[..up].to_vec()
            }),
        ] {
            for (at, _) in code.match_indices(prefix) {
                // Not part of a longer name (`foo_super::`).
                if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let rest = &code[at + prefix.len()..];
                let path: Vec<&str> = rest
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .next()
                    .unwrap()
                    .split("::")
                    .filter(|p| !p.is_empty())
                    .collect();
                let tail = &rest[path.iter().map(|p| p.len() + 2).sum::<usize>().min(rest.len())..];
                let mut stems = vec![path.iter().map(|p| p.to_string()).collect::<Vec<_>>()];
                if let Some(list) = tail.strip_prefix('{').and_then(|t| t.split('}').next()) {
                    let first = stems.pop().unwrap();
                    for item in list.split(',') {
                        let head = item.trim().split("::").next().unwrap_or("").trim().to_string();
                        let mut p = first.clone();
                        if !head.is_empty() && head != "self" {
                            p.push(head);
                        }
                        stems.push(p);
                    }
                }
                for stem in stems {
                    out.push(base.iter().cloned().chain(stem).collect());
                }
            }
        }
        out
    }

    /// Import cycles between sibling modules (parent ↔ child is Rust's way
    /// and not counted): for each source tree, each cycle as a list.
    fn import_cycles(src: &str) -> Vec<Vec<String>> {
        use std::collections::{BTreeMap, BTreeSet};
        let files = files(src, ".rs");
        let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(f, src)).collect();
        // parent → sibling → siblings it imports
        let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for f in &files {
            let me = module_of(f, src);
            for mut target in imports_of(&read(f), &me, f.ends_with("/mod.rs")) {
                while !target.is_empty() && !modules.contains(&target) {
                    target.pop();
                }
                let k = me.iter().zip(&target).take_while(|(a, b)| a == b).count();
                if k == me.len() || k == target.len() {
                    continue; // my ancestor or my descendant
                }
                edges.entry(me[..k].to_vec()).or_default().entry(me[k].clone()).or_default().insert(target[k].clone());
            }
        }
        let mut cycles = Vec::new();
        for (parent, graph) in &edges {
            // A cycle exists where a node reaches itself.
            for start in graph.keys() {
                let mut stack = vec![vec![start.clone()]];
                let mut seen = BTreeSet::new();
                while let Some(path) = stack.pop() {
                    for next in graph.get(path.last().unwrap()).into_iter().flatten() {
                        if next == start {
                            let mut c: Vec<String> = path
                                .iter()
                                .map(|m| [&parent[..], std::slice::from_ref(m)].concat().join("::"))
                                .collect();
                            c.sort();
                            if !cycles.contains(&c) {
                                cycles.push(c);
                            }
                        } else if seen.insert(next.clone()) {
                            stack.push([&path[..], std::slice::from_ref(next)].concat());
                        }
                    }
                }
            }
        }
        cycles
    }

    /// Imports of an item that a folder's mod.rs defines, from inside that
    /// folder (`super::Args` from `image/sources.rs`): the step depends on
    /// the command that runs it. The crate root's shared names (`Result`,
    /// `project_root`) are not counted.
    fn upward_imports(src: &str) -> Vec<String> {
        use std::collections::BTreeSet;
        let files = files(src, ".rs");
        let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(f, src)).collect();
        let mut found = BTreeSet::new();
        for f in &files {
            let me = module_of(f, src);
            for named in imports_of(&read(f), &me, f.ends_with("/mod.rs")) {
                let mut target = named.clone();
                while !target.is_empty() && !modules.contains(&target) {
                    target.pop();
                }
                let is_ancestor = target.len() < me.len() && me.starts_with(&target);
                if !target.is_empty() && is_ancestor && named.len() > target.len() {
                    found.insert(format!("{f}: {}", named.join("::")));
                }
            }
        }
        found.into_iter().collect()
    }

    /// In xtask a folder's mod.rs is a command and its files are the steps
    /// it runs: what a step needs from the command (its flags, its helpers)
    /// lives in a leaf beside it, so `image::Args` is read in one place. In
    /// `src/` a folder's mod.rs is the concept's interface that its files
    /// implement (`workload::Context`, `Outcome`), as in rust-analyzer, and
    /// is not checked.
    #[test]
    fn no_xtask_step_imports_from_its_command() {
        let upward = upward_imports("xtask/src");
        assert!(
            upward.is_empty(),
            "items imported from a parent mod.rs (move them to a leaf beside the importer): {upward:#?}"
        );
        assert!(!upward_imports("src").is_empty(), "the check sees src/'s interface imports, so it would see xtask's");
    }

    /// main.rs is wiring: what every room shares lives in `host/project.rs`,
    /// so no file's code reaches up to the crate root for an item.
    #[test]
    fn nothing_in_xtask_imports_from_main() {
        let mut upward = Vec::new();
        for f in files("xtask/src", ".rs").iter().filter(|f| !f.ends_with("/main.rs")) {
            let me = module_of(f, "xtask/src");
            let text = read(f);
            for named in imports_of(&text, &me, f.ends_with("/mod.rs")) {
                // A path of one name that is no module is an item of the crate root (`crate::Result`).
                let root = project_root().join("xtask/src");
                if named.len() == 1 && !root.join(&named[0]).is_dir() && !root.join(format!("{}.rs", named[0])).exists()
                {
                    upward.push(format!("{f}: crate::{}", named[0]));
                }
            }
        }
        assert!(upward.is_empty(), "items imported from xtask's main.rs (move them to host/project.rs): {upward:#?}");
        let found = imports_of("use crate::Result;\nuse crate::host::fs;\n", &["boot".to_string()], false);
        assert!(found.contains(&vec!["Result".to_string()]), "the check sees a crate-root import: {found:?}");
    }

    /// xtask's rooms by height: a room imports only rooms below it (host ←
    /// build ← boot, bench ← check), as ARCHITECTURE's xtask/src/ row says.
    #[test]
    fn xtask_rooms_import_downward_only() {
        let height =
            |room: &str| ["host", "build", "boot|bench", "check"].iter().position(|r| r.split('|').any(|n| n == room));
        let mut upward = Vec::new();
        for f in files("xtask/src", ".rs").iter().filter(|f| !f.ends_with("/main.rs")) {
            let me = module_of(f, "xtask/src");
            let mine = height(&me[0]).unwrap_or_else(|| panic!("{f}: a room ARCHITECTURE does not rank"));
            for named in imports_of(&read(f), &me, f.ends_with("/mod.rs")) {
                let Some(theirs) = named.first().and_then(|r| height(r)) else { continue };
                if named[0] != me[0] && theirs >= mine {
                    upward.push(format!("{f}: crate::{}", named.join("::")));
                }
            }
        }
        assert!(upward.is_empty(), "imports up or across xtask's rooms: {upward:#?}");
        assert!(read("ARCHITECTURE.md").contains("host ← build ← boot, bench ← check"), "the map says the order");
    }

    #[test]
    fn no_import_cycles_between_sibling_modules() {
        for src in ["src", "xtask/src"] {
            let cycles = import_cycles(src);
            assert!(
                cycles.is_empty(),
                "{src}: modules that import each other (make the shared part a leaf): {cycles:?}"
            );
        }
        // The parser sees what the check needs.
        let me = vec!["build".to_string(), "image".to_string(), "sources".to_string()];
        let found = imports_of("use super::{Args, deb};\nuse crate::build::kernel::{bzimage, config};\n", &me, false);
        assert!(found.contains(&vec!["build".into(), "image".into(), "deb".into()]), "{found:?}");
        assert!(found.contains(&vec!["build".into(), "kernel".into(), "config".into()]), "{found:?}");
    }

    /// What both sides of src/ may import besides the schema: small leaves
    /// with no side of their own. `contract` is the bridge to /init's rules
    /// (the command line the lab reads budgets from).
    const SHARED_LEAVES: [&str; 8] =
        ["schema", "bootmenu", "fsutil", "partition_table", "interrupt", "contract", "size", "suggest"];
    /// The one part of the image side the workstation reads: the plan (the
    /// lab's step budgets); its data is not yet a leaf of its own.
    const PLAN: [&str; 2] = ["image_side", "plan"];

    /// For each non-wiring file of src/, its top module and the modules its
    /// code imports (the top one, and under a side the one below it).
    fn src_imports() -> Vec<(String, String, BTreeSet<String>)> {
        files("src", ".rs")
            .into_iter()
            .filter(|f| !matches!(f.as_str(), "src/main.rs" | "src/lib.rs"))
            .map(|f| {
                let me = module_of(&f, "src");
                let tops = imports_of(&read(&f), &me, f.ends_with("/mod.rs"))
                    .into_iter()
                    .filter_map(|p| match p.first().map(String::as_str) {
                        Some(side @ ("image_side" | "workstation")) if p.len() > 1 => Some(format!("{side}::{}", p[1])),
                        Some(top) => Some(top.to_string()),
                        None => None,
                    })
                    .collect();
                (f, me[0].clone(), tops)
            })
            .collect()
    }

    /// The top modules of `imports` outside `allowed`, as `file: module` lines.
    fn outside(file: &str, imports: &BTreeSet<String>, allowed: &dyn Fn(&str) -> bool) -> Vec<String> {
        imports.iter().filter(|m| !allowed(m)).map(|m| format!("{file}: crate::{m}")).collect()
    }

    /// The schema is the leaf both sides stand on: it imports nothing of
    /// either (`size` formats its byte counts).
    #[test]
    fn the_schema_imports_nothing_of_either_side() {
        let mut found = Vec::new();
        for (file, top, imports) in src_imports().iter().filter(|(_, top, _)| top == "schema") {
            found.extend(outside(file, imports, &|m| m == top || m == "size"));
        }
        assert!(found.is_empty(), "src/schema/ imports from a side (move the data into schema/): {found:#?}");
    }

    /// The workstation reads what the image wrote through the schema and
    /// the shared leaves only (and the plan); the image side never imports
    /// the workstation.
    #[test]
    fn the_sides_meet_only_in_the_schema_and_the_shared_leaves() {
        let side = |m: &str| m.split("::").next().unwrap_or("").to_string();
        let plan = PLAN.join("::");
        let (mut from_image, mut into_workstation) = (Vec::new(), Vec::new());
        let all = src_imports();
        assert!(
            all.iter().any(|(_, top, _)| top == "workstation") && all.iter().any(|(_, top, _)| top == "image_side")
        );
        for (file, top, imports) in all {
            if top == "workstation" {
                from_image.extend(outside(&file, &imports, &|m| {
                    side(m) == "workstation" || m == plan || SHARED_LEAVES.contains(&m)
                }));
            } else {
                into_workstation.extend(outside(&file, &imports, &|m| side(m) != "workstation"));
            }
        }
        assert!(from_image.is_empty(), "the workstation imports the image side (use schema/): {from_image:#?}");
        assert!(into_workstation.is_empty(), "the image side imports the workstation: {into_workstation:#?}");
        // The check sees an import across: a report that reads a measure module.
        let me = ["workstation".to_string(), "report".to_string()];
        let text = "use crate::image_side::measure::sampler::DiskDelta;\n";
        let tops: BTreeSet<String> = imports_of(text, &me, false).into_iter().map(|p| p[..2].join("::")).collect();
        assert_eq!(outside("r.rs", &tops, &|m| SHARED_LEAVES.contains(&m)), ["r.rs: crate::image_side::measure"]);
    }

    #[test]
    fn the_checks_themselves_can_fail() {
        assert!(exists("image/modules/*.list") && !exists("image/modules/*.nothing"));
        assert_eq!(
            paths_in("`a.rs` and `Record`, `plans/*.json`, `xtask/clippy.toml`", "d/"),
            ["d/a.rs", "d/plans/*.json", "xtask/clippy.toml"]
        );
        let rows = code_map();
        let init = rows.iter().find(|r| r.folder == "src/image_side/init/").unwrap();
        assert!(init.open_first.contains(&"src/image_side/init/target.rs".to_string()), "{:?}", init.open_first);
        assert!(!PathBuf::from("src/nonexistent.rs").exists());
    }
}
