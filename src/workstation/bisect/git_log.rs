//! A git range's bisect written as `git bisect log` writes it, so that
//! `git bisect replay FILE` in the user's tree reaches the same commit:
//! the ends first, then each step's mark. Git has no "unsure": a step the
//! test could not decide, like a build or boot that failed, is a `skip`.

use super::search::{Answer, Outcome};

/// The log of a bisect over `commits` (oldest, the good end, first; the
/// bad end last), each step's mark with the test's figures as a comment.
pub fn write(commits: &[String], answer: &Answer) -> String {
    let (Some(good), Some(bad)) = (commits.first(), commits.last()) else { return String::new() };
    let mut out = String::from("git bisect start\n");
    out += &format!("# bad: [{bad}] the bad end, measured\ngit bisect bad {bad}\n");
    out += &format!("# good: [{good}] the good end, measured\ngit bisect good {good}\n");
    for step in &answer.steps {
        let Some(commit) = commits.get(step.candidate) else { continue };
        let (mark, why) = match step.outcome {
            Outcome::Good => ("good", format!("like the good end: log-likelihood ratio {:.1}", step.llr)),
            Outcome::Bad => ("bad", format!("like the bad end: log-likelihood ratio {:.1}", step.llr)),
            Outcome::Unsure => ("skip", format!("unsure: log-likelihood ratio {:.1} at the cap", step.llr)),
            Outcome::Skip => ("skip", "did not build or boot".to_string()),
        };
        out += &format!("# {mark}: [{commit}] {} boot(s); {why}\ngit bisect {mark} {commit}\n", step.values.len());
    }
    if let Some(first) = answer.found().and_then(|c| commits.get(c)) {
        out += &format!("# first bad commit: [{first}]\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workstation::bisect::search::Step;

    #[test]
    fn the_log_marks_the_ends_then_each_step() {
        let commits: Vec<String> = (0..5).map(|i| format!("c{i}")).collect();
        let step = |candidate, outcome, llr| Step { candidate, values: vec![1.0; 4], llr, outcome };
        let answer = Answer {
            last_good: 1,
            first_bad: 3,
            between: vec![],
            steps: vec![step(2, Outcome::Bad, 5.5), step(1, Outcome::Good, -4.8), step(3, Outcome::Skip, 0.0)],
            boots: 12,
        };
        let log = write(&commits, &Answer { first_bad: 2, ..answer });
        let marks: Vec<&str> = log.lines().filter(|l| l.starts_with("git bisect")).collect();
        assert_eq!(
            marks,
            [
                "git bisect start",
                "git bisect bad c4",
                "git bisect good c0",
                "git bisect bad c2",
                "git bisect good c1",
                "git bisect skip c3"
            ]
        );
        assert!(log.contains("# bad: [c2] 4 boot(s); like the bad end: log-likelihood ratio 5.5\n"), "{log}");
        assert!(log.ends_with("# first bad commit: [c2]\n"), "{log}");
    }
}
