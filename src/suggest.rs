//! "Did you mean …?" for a name the user mistyped (`--by kernal`,
//! `--plan quik`): the closest of the valid choices by edit distance, when
//! it is close enough to be the one meant.

/// The choice closest to `given`, if at most a third of its letters (and at
/// least one) differ; the first of equals.
pub fn closest<'a>(given: &str, choices: &[&'a str]) -> Option<&'a str> {
    let allowed = (given.chars().count() / 3).max(1);
    choices
        .iter()
        .map(|c| (distance(given, c), *c))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// " (did you mean 'kernel'?)" when one choice is close, else "".
pub fn did_you_mean(given: &str, choices: &[&str]) -> String {
    closest(given, choices).map(|c| format!(" (did you mean '{c}'?)")).unwrap_or_default()
}

/// Levenshtein distance: letters inserted, deleted or changed.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb)).min(above + 1).min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_name_is_suggested_and_a_far_one_is_not() {
        let dims = ["kernel", "fs", "host", "variant"];
        assert_eq!(closest("kernal", &dims), Some("kernel"));
        assert_eq!(closest("varient", &dims), Some("variant"));
        assert_eq!(closest("fss", &dims), Some("fs"));
        assert_eq!(closest("disk", &dims), None, "nothing near: no guess");
        assert_eq!(did_you_mean("quik", &["seed", "quick", "dd"]), " (did you mean 'quick'?)");
        assert_eq!(did_you_mean("nosuch", &["seed", "quick", "dd"]), "");
        assert_eq!((distance("", "ab"), distance("abc", "abc"), distance("kitten", "sitting")), (2, 0, 3));
    }
}
