//! The test runners' reports, read: passed, failed and skipped counts from JUnit/xUnit XML
//! (pytest, Maven Surefire, SwiftPM) and from libtest's `test result:` lines.

use std::path::PathBuf;

use crate::Error;

/// Passed, failed and skipped counts of a runner.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
}

impl Counts {
    pub fn add(&mut self, other: Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }
}

/// The `test result: ok. 12 passed; 0 failed; 1 ignored; …` line libtest prints per binary.
pub fn libtest_summary(line: &str) -> Option<Counts> {
    let rest = line.strip_prefix("test result: ")?;
    let count = |word: &str| {
        rest.split(';').find_map(|part| {
            let mut words = part.split_whitespace().skip_while(|w| w.ends_with('.'));
            let n = words.next()?.parse().ok()?;
            (words.next()? == word).then_some(n)
        })
    };
    Some(Counts { passed: count("passed")?, failed: count("failed")?, skipped: count("ignored").unwrap_or(0) })
}

/// One test case of a JUnit report.
#[derive(Debug, PartialEq, Eq)]
pub struct Case {
    pub name: String,
    pub outcome: Outcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed,
    Skipped,
}

/// Every `<testcase>` of a JUnit/xUnit XML report (pytest, Surefire and SwiftPM write this
/// format): failed when it has a `<failure>` or `<error>` child, skipped with `<skipped>`.
pub fn junit_cases(xml: &str) -> Result<Vec<Case>, Error> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| Error::msg(e.to_string()))?;
    Ok(doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            let child = |tag: &str| n.children().any(|c| c.has_tag_name(tag));
            let outcome = if child("failure") || child("error") {
                Outcome::Failed
            } else if child("skipped") {
                Outcome::Skipped
            } else {
                Outcome::Passed
            };
            Case { name: n.attribute("name").unwrap_or_default().to_owned(), outcome }
        })
        .collect())
}

/// The counts of the cases `keep` selects.
pub fn count(cases: &[Case], keep: impl Fn(&Case) -> bool) -> Counts {
    let mut c = Counts::default();
    for case in cases.iter().filter(|c| keep(c)) {
        match case.outcome {
            Outcome::Passed => c.passed += 1,
            Outcome::Failed => c.failed += 1,
            Outcome::Skipped => c.skipped += 1,
        }
    }
    c
}

/// The cases of every report file given.
pub fn read_reports(files: &[PathBuf]) -> Result<Vec<Case>, Error> {
    let mut cases = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| Error::msg(format!("cannot read {}: {e}", f.display())))?;
        cases.extend(junit_cases(&text).map_err(|e| Error::msg(format!("{}: {e}", f.display())))?);
    }
    if cases.is_empty() {
        return Err(Error::msg(format!("no test cases in {files:?}")));
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libtest_summaries() {
        let line = "test result: FAILED. 12 passed; 2 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.31s";
        assert_eq!(libtest_summary(line), Some(Counts { passed: 12, failed: 2, skipped: 1 }));
        assert_eq!(libtest_summary("test result: ok. 0 passed; 0 failed; 0 ignored"), Some(Counts::default()));
        assert_eq!(libtest_summary("test foo ... ok"), None);
    }

    #[test]
    fn reads_junit_reports_of_each_runner() {
        // pytest (xunit2), Surefire and SwiftPM, trimmed.
        let pytest = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4">
            <testcase classname="tests.test_vectors" name="test_vector[agent/a.json]" time="0.01"/>
            <testcase classname="tests.test_vectors" name="test_vector[agent/b.json]" time="0.01"><failure message="x">y</failure></testcase>
            <testcase classname="tests.test_x" name="test_skip"><skipped message="no"/></testcase>
            <testcase classname="tests.test_x" name="test_ok"/></testsuite></testsuites>"#;
        let cases = junit_cases(pytest).unwrap();
        assert_eq!(count(&cases, |_| true), Counts { passed: 2, failed: 1, skipped: 1 });
        assert_eq!(count(&cases, |c| c.name.starts_with("test_vector[")), Counts { passed: 1, failed: 1, skipped: 0 });

        let surefire = r#"<?xml version="1.0" encoding="UTF-8"?>
            <testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" name="dev.acpinject.ConformanceTest" tests="2" errors="1" skipped="0" failures="0">
            <properties><property name="java.version" value="17"/></properties>
            <testcase name="every vector()[1]" classname="dev.acpinject.ConformanceTest" time="0.1"/>
            <testcase name="threads()" classname="dev.acpinject.ConformanceTest" time="0.1"><error type="E">trace</error></testcase></testsuite>"#;
        let cases = junit_cases(surefire).unwrap();
        assert_eq!(count(&cases, |_| true), Counts { passed: 1, failed: 1, skipped: 0 });
        assert_eq!(count(&cases, |c| c.name.starts_with("every vector()[")), Counts { passed: 1, failed: 0, skipped: 0 });

        let xunit = r#"<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="TestResults" errors="0" tests="2" failures="1" time="1.2">
            <testcase classname="AcpInjectFFITests.ConformanceTests" name="testEveryVector" time="0.5"></testcase>
            <testcase classname="AcpInjectFFITests.ThreadsTests" name="testThreads" time="0.7"><failure message="failed"></failure></testcase></testsuite></testsuites>"#;
        assert_eq!(count(&junit_cases(xunit).unwrap(), |_| true), Counts { passed: 1, failed: 1, skipped: 0 });
        assert!(junit_cases("<testsuite>").is_err());
    }
}
