//! A user's command template for `sh -c` (a `[server.qemu]` command, a
//! bisect's `--build`), filled in once: each `{name}` becomes its value in
//! one pass over the template, so a value is never scanned again for
//! placeholders (a path holding `{image}` stays that path).
//!
//! A path never becomes shell text: `{image}` becomes `"${BOOTMARK_IMAGE}"`
//! and the path goes to `sh` in that environment variable, whose value the
//! shell never parses again — wherever the template puts it (a comment, a
//! heredoc, backticks), a `$(…)` or a quote in the path is only text. The
//! template must still have a path placeholder bare, as a word of its own
//! (inside quotes it would not expand as meant), and that is refused before
//! anything runs. A plain value (an entry label, a commit id, settings)
//! holds only characters no shell treats specially, checked by its caller,
//! so it goes in as it is and may stand anywhere.

use std::path::Path;

/// A placeholder's value.
pub enum Value<'a> {
    /// A path: one shell word, single-quoted here.
    Path(&'a Path),
    /// Text whose characters the caller checked are plain.
    Plain(&'a str),
}

/// Where the scan is in the shell's quoting.
#[derive(Clone, Copy, PartialEq)]
enum Quoting {
    Bare,
    Single,
    Double,
    Backtick,
}

/// A filled template: the text for `sh -c`, and the environment its path
/// placeholders expand from.
#[derive(Debug, PartialEq)]
pub struct Filled {
    pub text: String,
    pub env: Vec<(String, std::ffi::OsString)>,
}

impl Filled {
    /// As a log shows it: the variables, then the command.
    pub fn shown(&self) -> String {
        let vars: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={}", v.to_string_lossy())).collect();
        match vars.is_empty() {
            true => self.text.clone(),
            false => format!("{}  # with {}", self.text, vars.join(", ")),
        }
    }
}

/// The environment variable a path placeholder expands from: `{image}` → `BOOTMARK_IMAGE`.
fn variable(name: &str) -> String {
    format!("BOOTMARK_{}", name.to_ascii_uppercase())
}

/// `template` with every `{name}` of `values` filled in, in one pass.
/// `what` names the template in errors (`--build`, `server "a"'s qemu.command`).
pub fn fill(template: &str, values: &[(&str, Value)], what: &str) -> Result<Filled, String> {
    let mut out = String::with_capacity(template.len());
    let mut env = Vec::new();
    let mut quoting = Quoting::Bare;
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        if c == '{'
            && let Some((name, value)) = values.iter().find(|(name, _)| rest[1..].starts_with(&format!("{name}}}")))
        {
            match value {
                Value::Path(_) if quoting != Quoting::Bare => {
                    return Err(format!(
                        "{what}: {{{name}}} stands inside quotes or backticks, where the path would not expand as \
                         meant: write it bare ({{{name}}}, not \"{{{name}}}\"): the shell gets the path in ${}",
                        variable(name)
                    ));
                }
                Value::Path(path) => {
                    out.push_str(&format!("\"${{{}}}\"", variable(name)));
                    if !env.iter().any(|(k, _)| *k == variable(name)) {
                        env.push((variable(name), path.as_os_str().to_os_string()));
                    }
                }
                Value::Plain(text) => out.push_str(text),
            }
            rest = &rest[name.len() + 2..];
            continue;
        }
        quoting = match (quoting, c) {
            (Quoting::Bare, '\'') => Quoting::Single,
            (Quoting::Bare, '"') => Quoting::Double,
            (Quoting::Bare | Quoting::Double, '`') => Quoting::Backtick,
            (Quoting::Single, '\'') | (Quoting::Double, '"') | (Quoting::Backtick, '`') => Quoting::Bare,
            (q, _) => q,
        };
        // A backslash outside single quotes keeps the next character literal: copy both.
        let len = match (quoting, c) {
            (Quoting::Bare | Quoting::Double | Quoting::Backtick, '\\') => {
                1 + rest[1..].chars().next().map_or(0, char::len_utf8)
            }
            _ => c.len_utf8(),
        };
        out.push_str(&rest[..len]);
        rest = &rest[len..];
    }
    Ok(Filled { text: out, env })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(template: &str, tree: &str, image: &str) -> Result<Filled, String> {
        let values = [
            ("tree", Value::Path(Path::new(tree))),
            ("image", Value::Path(Path::new(image))),
            ("commit", Value::Plain("abc123")),
        ];
        fill(template, &values, "--build")
    }

    /// What `sh -c` makes of the filled template: its stdout.
    fn run(f: &Filled) -> String {
        let out = std::process::Command::new("sh").args(["-c", &f.text]).envs(f.env.iter().cloned()).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn each_placeholder_is_filled_once_and_a_path_reaches_the_shell_as_a_variable() {
        // The case: a --dir holding {image} and $(…).
        let f = build("echo {tree}/kernel {image}/kernel # {commit}", "d{image}$(echo RAN)/tree", "/i").unwrap();
        assert_eq!(f.text, "echo \"${BOOTMARK_TREE}\"/kernel \"${BOOTMARK_IMAGE}\"/kernel # abc123");
        assert_eq!(run(&f), "d{image}$(echo RAN)/tree/kernel /i/kernel\n");
        assert_eq!(f.env[0], ("BOOTMARK_TREE".to_string(), "d{image}$(echo RAN)/tree".into()));
    }

    /// Where a quote tracker can be fooled (a comment's apostrophe, a
    /// backtick closed inside double quotes, a heredoc): the path is still
    /// only text, never run.
    #[test]
    fn a_path_is_never_run_wherever_the_template_puts_it() {
        let path = "/tmp/x$(printf RAN)`printf RAN`'\"";
        let mut filled = 0;
        for template in [
            "# don't\necho {image}",
            "echo \"built `date +%Y` from {image}\"",
            "cat <<EOF\n{image}\nEOF",
            "echo {image}; echo {image}",
        ] {
            // Refused (the quote tracker fooled the safe way) or filled: never run.
            let Ok(f) = build(template, "/t", path) else { continue };
            filled += 1;
            let out = run(&f);
            assert!(!out.contains("xRAN") && out.contains("x$(printf RAN)`printf RAN`"), "{template}: {out}");
        }
        assert!(filled >= 3, "{filled}");
    }

    #[test]
    fn a_path_placeholder_inside_quotes_is_refused() {
        for template in ["cp \"{image}\" x", "sh -c 'ls {tree}'", "echo `ls {image}`", "echo \"$(ls {tree})\""] {
            let e = build(template, "/t", "/i").unwrap_err();
            assert!(e.contains("inside quotes or backticks"), "{template}: {e}");
        }
        // Quotes closed before it, an escaped quote, plain values inside quotes: fine.
        assert_eq!(build("echo 'a' {image} \"b\"", "/t", "/i").unwrap().text, "echo 'a' \"${BOOTMARK_IMAGE}\" \"b\"");
        assert_eq!(build("echo \\' {image}", "/t", "/i").unwrap().text, "echo \\' \"${BOOTMARK_IMAGE}\"");
        assert_eq!(build("echo '{commit}' \"{commit}\"", "/t", "/i").unwrap().text, "echo 'abc123' \"abc123\"");
    }

    #[test]
    fn unknown_braces_are_kept() {
        assert_eq!(build("echo ${HOME} {other} {tree", "/t", "/i").unwrap().text, "echo ${HOME} {other} {tree");
    }
}
