//! JUnit XML for CI systems: one test case per checker; invalid is a failure, unknown an error
//! (so a CI job never counts an undecided check as passed). Pure: returns the XML text.

use crate::checker::{CheckResult, Verdict};
use crate::report::html::esc_xml as esc;

/// A `<testsuite>` named `suite` with one `<testcase>` per checker result.
pub fn junit_xml(suite: &str, results: &[CheckResult], duration_s: f64) -> String {
    let failures = results
        .iter()
        .filter(|r| r.verdict == Verdict::Invalid)
        .count();
    let errors = results
        .iter()
        .filter(|r| r.verdict == Verdict::Unknown)
        .count();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    xml.push_str(&format!(
        "<testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{duration_s:.3}\">\n",
        esc(suite),
        results.len()
    ));
    for r in results {
        xml.push_str(&format!(
            "  <testcase classname=\"{}\" name=\"{}\">",
            esc(suite),
            esc(&r.checker)
        ));
        let explanation = r
            .details
            .get("explanation")
            .and_then(|v| v.as_str())
            .unwrap_or(&r.summary);
        match r.verdict {
            Verdict::Valid => {}
            Verdict::Invalid => xml.push_str(&format!(
                "\n    <failure message=\"{}\">{}</failure>\n  ",
                esc(&r.summary),
                esc(explanation)
            )),
            Verdict::Unknown => xml.push_str(&format!(
                "\n    <error message=\"unknown: {}\">{}</error>\n  ",
                esc(&r.summary),
                esc(explanation)
            )),
        }
        xml.push_str("</testcase>\n");
    }
    xml.push_str("</testsuite>\n");
    xml
}

/// [`junit_xml`] for a run: the checkers plus a `completion` test case, an error when the run
/// did not complete its workload or its cleanup left something behind (so CI never counts an
/// interrupted run as passed).
pub fn junit_xml_run(
    suite: &str,
    results: &[CheckResult],
    duration_s: f64,
    completion: &crate::completion::CompletionRecord,
) -> String {
    let mut all = results.to_vec();
    let mut problems = Vec::new();
    if !completion.is_complete() {
        problems.push(completion.reason.clone());
    }
    if !completion.cleanup_ok() {
        problems.push(format!(
            "cleanup left behind: {}",
            completion.cleanup_failures.join("; ")
        ));
    }
    all.push(CheckResult {
        checker: "completion".into(),
        verdict: if problems.is_empty() {
            Verdict::Valid
        } else {
            Verdict::Unknown
        },
        summary: if problems.is_empty() {
            completion.reason.clone()
        } else {
            problems.join("; ")
        },
        details: serde_json::Value::Null,
    });
    junit_xml(suite, &all, duration_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(name: &str, verdict: Verdict, summary: &str) -> CheckResult {
        CheckResult {
            checker: name.into(),
            verdict,
            summary: summary.into(),
            details: json!({}),
        }
    }

    #[test]
    fn one_case_per_checker_with_failures_and_errors_counted() {
        let xml = junit_xml(
            "etcd-register",
            &[
                result("linearizable", Verdict::Invalid, "key 3: read <2> & \"x\""),
                result("session", Verdict::Valid, "ok"),
                result("other", Verdict::Unknown, "budget\u{1} exceeded"),
            ],
            12.5,
        );
        assert!(
            xml.contains(r#"tests="3" failures="1" errors="1" time="12.500""#),
            "{xml}"
        );
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert!(xml.contains("<failure message=\"key 3: read &lt;2&gt; &amp; &quot;x&quot;\""));
        assert!(xml.contains("<error message=\"unknown: budget  exceeded\""));
        assert_eq!(
            xml.matches("<testcase").count(),
            xml.matches("</testcase>").count()
        );
        assert!(!xml.contains('\u{1}'));
    }

    #[test]
    fn an_incomplete_run_is_an_error_case() {
        use crate::completion::CompletionRecord;
        let ok = [result("linearizable", Verdict::Valid, "ok")];
        let done = junit_xml_run("t", &ok, 1.0, &CompletionRecord::completed(60.0, 60.0));
        assert!(
            done.contains(r#"tests="2" failures="0" errors="0""#),
            "{done}"
        );
        let cut = junit_xml_run("t", &ok, 1.0, &CompletionRecord::interrupted(5.1, 60.0));
        assert!(cut.contains(r#"errors="1""#), "{cut}");
        assert!(cut.contains("interrupted after 5.1 s of 60 s"), "{cut}");
    }
}
