//! The end of a long run: a history too big to hold (over `results::Ask::stream_above` on
//! disk, `import::STREAM_ABOVE` at the end of a run and in `report`) is checked as it streams
//! (`core::stream`: memory bounded by the keys still open) and, in the same read, digested
//! (`report::digest`: the charts' samples, recovery's attempts, counts and a sparse history)
//! into what results.json, the plots and the run page are written from, as the whole path
//! writes them from the history in memory. The file is read again only for ops the results
//! name that the digest did not keep (witnesses: an invalid run), for late keys the stream
//! could not settle from their end states, and for the linearizability witness page (the ops
//! of the keys it draws).
//!
//! Taken when the run recorded a model the stream checks (register, cas-register,
//! list-append) and every check the run gets can be made as the history streams; otherwise, or
//! when the stream finds something it cannot judge as the whole check would, the history is
//! read whole, as before. Does not own the streamed check, the digest or results.json's layout
//! (`runner::results`).

use super::RunError;
use crate::checker::compose::Plan;
use crate::checker::linear::LinearResult;
use crate::checker::{CheckResult, Verdict};
use crate::history::{History, Name};
use crate::report::digest::{DigestBuilder, wanted_positions};
use crate::report::plots::Samples;
use crate::report::recovery::{Recovery, Shade};
use crate::store::RunDir;
use crate::stream::{Outcome, StreamPlan};
use crate::systems::external::protocol::{ProtocolErrorKind, count_error};
use std::collections::BTreeMap;

/// A long run's checks, made as its history streamed, and its digest, read in the same pass.
pub(super) struct StreamedCheck {
    pub(super) verdict: Verdict,
    pub(super) results: Vec<CheckResult>,
    pub(super) linear: LinearResult,
    pub(super) digested: Digested,
}

/// Check the run's history as it streams with `plan` (a plan whose model the stream checks,
/// `crate::stream::streams`), digesting it in the same read; `None` = check it whole (the
/// stream found something it cannot judge as the whole check would). `Err`: the history could
/// not be read again for the ops the results name.
pub(super) fn check(run_dir: &RunDir, plan: &Plan) -> Result<Option<Box<StreamedCheck>>, RunError> {
    let path = run_dir.history_path();
    let name = path.display().to_string();
    let open = || std::fs::File::open(&path).map(|f| std::io::BufReader::with_capacity(1 << 20, f));
    let mut digest = DigestBuilder::new();
    let mut protocol_errors = BTreeMap::new();
    let mut see = |op: &crate::history::Op| {
        count_error(&mut protocol_errors, op);
        digest.push(op);
    };
    let sp = StreamPlan::new(plan.clone(), None);
    let s = match crate::stream::check_jsonl_seeing(open, &name, &sp, &mut see) {
        Outcome::Checked(s) => s,
        Outcome::Whole(why) | Outcome::Unreadable(why) => {
            tracing::info!("{name}: checked whole: {why}");
            return Ok(None);
        }
    };
    let mut results = vec![crate::checker::compose::linear_check_result(
        &s.result,
        &plan.model,
        &plan.options,
    )];
    // The session guarantees, checked in the same stream, merge into the verdict as the whole
    // check's do (`checker::compose`).
    let mut verdict = s.result.verdict;
    if let Some(session) = &s.session {
        verdict = verdict.merge(session.verdict);
        results.push(session.check_result());
    }
    let mut d = digest.finish();
    d.sparse.warnings = s.warnings.clone();
    d.sparse.cut_short = s.cut_short.clone();
    let named = serde_json::to_value(&results).unwrap_or_default();
    crate::report::digest::keep_wanted(&mut d, &path, wanted_positions(&named))?;
    let recovery = crate::report::recovery::analyse_attempts(
        d.attempts,
        &d.sparse,
        d.end_ns,
        &Default::default(),
    );
    let digested = Digested {
        sparse: d.sparse,
        samples: d.samples,
        end_ns: d.end_ns,
        invokes: d.client_invokes,
        completions: d.client_completions,
        recovery,
        protocol_errors,
    };
    Ok(Some(Box::new(StreamedCheck {
        verdict,
        results,
        linear: s.result,
        digested,
    })))
}

/// What results.json and the pages need from a long run's history, read once.
pub(super) struct Digested {
    /// See [`crate::report::digest::Digest::sparse`].
    pub(super) sparse: History,
    pub(super) samples: Samples,
    pub(super) end_ns: u64,
    pub(super) invokes: u64,
    pub(super) completions: u64,
    pub(super) recovery: Recovery,
    pub(super) protocol_errors: BTreeMap<ProtocolErrorKind, u64>,
}

/// Write the linearizability witness page of an invalid `r` (the whole history's positions)
/// from the ops of the keys it draws, read from the history file.
pub(super) fn write_witness_page(run_dir: &RunDir, r: &LinearResult) -> Result<(), RunError> {
    use crate::report::witness_html::{MAX_INVALID_PARTS, render_witness_html_at};
    let drawn: Vec<Option<&str>> = r
        .parts
        .iter()
        .filter(|p| p.verdict == Verdict::Invalid && p.witness.is_some())
        .take(MAX_INVALID_PARTS)
        .map(|p| p.key.as_deref())
        .collect();
    if drawn.iter().any(Option::is_none) {
        // A part of the whole history (no key): the stream never checks one.
        return Ok(());
    }
    let keys: std::collections::HashSet<Name> =
        drawn.into_iter().flatten().map(Name::new).collect();
    let (mut ops, mut positions) = (Vec::new(), Vec::new());
    crate::report::digest::each_op(&run_dir.history_path(), |op| {
        if op.is_client() && op.key.as_ref().is_some_and(|k| keys.contains(k)) {
            positions.push(op.index);
            ops.push(op);
        }
    })?;
    let page = render_witness_html_at(r, &History::from_ops(ops), &positions);
    run_dir.write_text(crate::store::LINEAR_WITNESS_FILE, &page)?;
    Ok(())
}

/// The plots and the run page from a digest (`shades`: its recovery's); failures are
/// warnings, as `results::render_pages`' (which also writes the reports index).
pub(super) fn render_pages(run_dir: &RunDir, d: Digested, shades: Vec<Shade>) {
    let Digested {
        sparse,
        samples,
        end_ns,
        ..
    } = d;
    if let Err(e) =
        crate::report::render_run_digest(&run_dir.path, &sparse, samples, end_ns, shades)
    {
        tracing::warn!("plots: {e}");
    }
    if let Err(e) = crate::report::page::write_run_page_with(&run_dir.path, Some(&sparse)) {
        tracing::warn!("run page: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::results::{Ask, write_results_asked};
    use crate::store::RunDir;
    use serde_json::Value;
    use std::path::Path;

    /// A copy of a report fixture (tests/data/reports) whose test.json records `model`.
    fn fixture(name: &str, model: &str) -> tempfile::TempDir {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/reports")
            .join(name);
        let dir = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(&from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
            }
        }
        let test_json = dir.path().join("test.json");
        let mut test: Value =
            serde_json::from_str(&std::fs::read_to_string(&test_json).unwrap()).unwrap();
        test["check"] = serde_json::json!({ "model": model });
        std::fs::write(&test_json, serde_json::to_string(&test).unwrap()).unwrap();
        dir
    }

    fn end(dir: &Path, stream_above: u64) -> Value {
        let ask = Ask {
            check_time_limit_s: 30.0,
            // Witnesses minimized within the time limit, not within a budget drawn from how
            // long the search took (`fast`): on a loaded machine that budget can run out in one
            // check and not in the other, and the explanations then differ.
            witness: crate::checker::linear::WitnessMode::Minimal,
            stream_above,
        };
        write_results_asked(&RunDir::open(dir), &ask, None, None).unwrap();
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
    }

    /// `v` without the times a check measures (they differ from one check to the next).
    fn timeless(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.retain(|k, _| {
                    !k.ends_with("time_ms") && k != "first_invalid_ms" && k != "settled_budget_ms"
                });
                m.values_mut().for_each(timeless);
            }
            Value::Array(a) => a.iter_mut().for_each(timeless),
            // "in 66 ms (verdict 13 ms, …)": each number before " ms" becomes "N".
            Value::String(t) => *t = ms_blind(t),
            _ => {}
        }
    }

    /// `t` with every number before " ms" made "N" (check times differ from one check to the
    /// next).
    fn ms_blind(t: &str) -> String {
        let pieces: Vec<&str> = t.split(" ms").collect();
        let last = pieces.len() - 1;
        pieces
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == last {
                    p.to_string()
                } else {
                    format!("{}N ms", p.trim_end_matches(|c: char| c.is_ascii_digit()))
                }
            })
            .collect()
    }

    /// The first place two values differ: a path and both sides, shortened.
    fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                keys.into_iter().find_map(|k| {
                    let (p, q) = (x.get(k), y.get(k));
                    match (p, q) {
                        (Some(p), Some(q)) => first_difference(p, q, format!("{at}/{k}")),
                        _ => Some(format!("{at}/{k}: {:?} vs {:?}", p.is_some(), q.is_some())),
                    }
                })
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}/{i}"))),
            _ if a == b => None,
            _ => {
                let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
                Some(format!("{at}: {} vs {}", short(a), short(b)))
            }
        }
    }

    /// `a` and `b` are the same text, else a panic showing where they first differ.
    fn same_text(a: &str, b: &str, what: &str) {
        if a == b {
            return;
        }
        let at = a
            .bytes()
            .zip(b.bytes())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        let around = |t: &str| {
            t.get(at.saturating_sub(200)..(at + 120).min(t.len()))
                .unwrap_or("")
                .to_string()
        };
        panic!("{what} differs: {:?} vs {:?}", around(a), around(b));
    }

    #[test]
    fn a_long_runs_end_read_as_it_streams_writes_what_the_whole_read_writes() {
        for (name, model) in [
            ("all-faults", "cas-register"),
            ("serializable-isolate", "cas-register"),
        ] {
            let (whole, streamed) = (fixture(name, model), fixture(name, model));
            let mut w = end(whole.path(), u64::MAX);
            let mut s = end(streamed.path(), 0);
            assert_eq!(w["history"]["streamed"], false, "{name}");
            assert_eq!(s["history"]["streamed"], true, "{name}: streamed");
            for v in [&mut w, &mut s] {
                v["history"]["streamed"] = Value::Null;
                timeless(v);
            }
            if let Some(at) = first_difference(&w, &s, String::new()) {
                panic!("{name}: results.json differs at {at}");
            }
            let read = |d: &Path, f: &str| ms_blind(&std::fs::read_to_string(d.join(f)).unwrap());
            for f in [
                "index.html",
                "latency-raw.svg",
                "latency-quantiles.svg",
                "throughput.svg",
            ] {
                let (a, b) = (read(whole.path(), f), read(streamed.path(), f));
                same_text(&a, &b, &format!("{name}: {f}"));
            }
            // The witness page: drawn from the invalid keys' ops alone, the same page.
            let witness = crate::store::LINEAR_WITNESS_FILE;
            assert_eq!(
                whole.path().join(witness).is_file(),
                streamed.path().join(witness).is_file(),
                "{name}: {witness}"
            );
            if whole.path().join(witness).is_file() {
                // Up to the parts table, whose last column is each part's search time; without
                // the summary under the title, cut to a length that counts the times' digits
                // (the explanation below it says the same, whole).
                let drawn = |d: &Path| {
                    let page = read(d, witness);
                    let head = page.split("<h2>Parts</h2>").next().unwrap_or("");
                    head.lines()
                        .filter(|l| !(l.starts_with("<p>") && l.contains("N ms")))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let (a, b) = (drawn(whole.path()), drawn(streamed.path()));
                assert!(a.contains("<svg"), "{name}: the witness drawn");
                same_text(&a, &b, &format!("{name}: {witness}"));
            }
            // The optional charts: the same ones drawn, alike.
            for (stem, _) in crate::report::PLOT_FILES.iter().skip(3) {
                let f = format!("{stem}.svg");
                let (a, b) = (whole.path().join(&f), streamed.path().join(&f));
                assert_eq!(a.is_file(), b.is_file(), "{name}: {f}");
                if a.is_file() {
                    assert!(
                        read(whole.path(), &f) == read(streamed.path(), &f),
                        "{name}: {f}"
                    );
                }
            }
        }
    }
}
