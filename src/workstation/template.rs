//! A user's command template for `sh -c` (a `[server.qemu]` command, a
//! bisect's `--build`), filled in once: each `{name}` becomes its value in
//! one pass over the template, so a value is never scanned again for
//! placeholders (a path holding `{image}` stays that path). A path goes in
//! as one single-quoted shell word, so the template must have it bare:
//! inside quotes or backticks the quoting would be broken (`"{image}"`
//! would let the shell expand a `$(…)` in the path), and that is refused
//! before anything runs. A plain value (an entry label, a commit id,
//! settings) holds only characters no shell treats specially, checked by
//! its caller, so it may stand anywhere.

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

/// `template` with every `{name}` of `values` filled in, in one pass.
/// `what` names the template in errors (`--build`, `server "a"'s qemu.command`).
pub fn fill(template: &str, values: &[(&str, Value)], what: &str) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut quoting = Quoting::Bare;
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        if c == '{'
            && let Some((name, value)) = values.iter().find(|(name, _)| rest[1..].starts_with(&format!("{name}}}")))
        {
            match value {
                Value::Path(_) if quoting != Quoting::Bare => {
                    return Err(format!(
                        "{what}: {{{name}}} stands inside quotes or backticks, where the path bootmark puts there \
                         cannot be quoted safely: write it bare ({{{name}}}, not \"{{{name}}}\"); bootmark quotes it"
                    ));
                }
                Value::Path(path) => out.push_str(&shell_word(path)?),
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
    Ok(out)
}

/// A path as one single-quoted word for `sh -c` (a path holding `'` or
/// not UTF-8 is refused rather than escaped).
pub fn shell_word(path: &Path) -> Result<String, String> {
    let text = path.to_str().ok_or_else(|| format!("{}: not UTF-8: not put into `sh -c`", path.display()))?;
    if text.contains('\'') {
        return Err(format!("{text}: a path with ' is not put into `sh -c`"));
    }
    Ok(format!("'{text}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(template: &str, tree: &str, image: &str) -> Result<String, String> {
        let values = [
            ("tree", Value::Path(Path::new(tree))),
            ("image", Value::Path(Path::new(image))),
            ("commit", Value::Plain("abc123")),
        ];
        fill(template, &values, "--build")
    }

    #[test]
    fn each_placeholder_is_filled_once_and_its_value_never_scanned_again() {
        // The case: a --dir holding {image} and $(…).
        let got = build("cp {tree}/kernel {image}/kernel # {commit}", "d{image}$(touch X)/tree", "/i").unwrap();
        assert_eq!(got, "cp 'd{image}$(touch X)/tree'/kernel '/i'/kernel # abc123");
        assert_eq!(build("make -C {tree} O={image}", "/t", "/o{tree}").unwrap(), "make -C '/t' O='/o{tree}'");
    }

    #[test]
    fn a_path_placeholder_inside_quotes_is_refused() {
        for template in ["cp \"{image}\" x", "sh -c 'ls {tree}'", "echo `ls {image}`", "echo \"$(ls {tree})\""] {
            let e = build(template, "/t", "/i").unwrap_err();
            assert!(e.contains("inside quotes or backticks"), "{template}: {e}");
        }
        // Quotes closed before it, an escaped quote, plain values inside quotes: fine.
        assert_eq!(build("echo 'a' {image} \"b\"", "/t", "/i").unwrap(), "echo 'a' '/i' \"b\"");
        assert_eq!(build("echo \\' {image}", "/t", "/i").unwrap(), "echo \\' '/i'");
        assert_eq!(build("echo '{commit}' \"{commit}\"", "/t", "/i").unwrap(), "echo 'abc123' \"abc123\"");
        assert!(build("x {image}", "/t", "/it's").unwrap_err().contains("a path with '"));
    }

    #[test]
    fn unknown_braces_are_kept() {
        assert_eq!(build("echo ${HOME} {other} {tree", "/t", "/i").unwrap(), "echo ${HOME} {other} {tree");
    }
}
