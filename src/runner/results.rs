//! Checking a recorded run: the checks a run's history gets (`check`, `check_with`: the
//! composition for its model, the session checker's version source, the transactional ask the
//! run recorded), its verdict judged against how the run ended, and everything written from it
//! (results.json, the linearizability witness page, plots, the run page, the reports index).
//! Used at the end of a run, by `report` and by `heal`.
//!
//! Does not own driving the run (`runner`), the checkers (`checker`) or the pages (`report`).

use super::{RECORDED_SEMANTICS, RunError, recorded_check};
use crate::checker::{CheckResult, Verdict};
use crate::completion::CompletionRecord;
use crate::history::History;
use crate::progress::{Phase, Progress};
use crate::store::{LINEAR_WITNESS_FILE, RESULTS_FILE, RunDir, TEST_FILE};

pub use crate::store::{LIVE_KEY, STOPPED_EARLY_KEY};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// What ran, as far as the check needs it: the run's own record in test.json
/// ([`crate::store::CheckRecord`]). A run directory from before the record falls back to the
/// workload spec copied into test.json for the version source, and to the model inferred from
/// the history.
#[derive(Debug, Clone, Default)]
pub struct WhatRan {
    /// The model the history is checked with; `None` = inferred from the history.
    pub model: Option<String>,
    /// The register semantics the clients recorded; `None` = [`RECORDED_SEMANTICS`].
    pub semantics: Option<crate::model::SemanticsPreset>,
    /// The session checker's version source; `None` = chosen from the history.
    pub version_source: Option<crate::checker::session::VersionSource>,
}

impl WhatRan {
    /// What `record` says ran; `run_dir` for the older run directories' spec copy. A recorded
    /// value this build does not know is an error naming test.json, never silently replaced.
    pub fn read(run_dir: &RunDir, record: &crate::store::CheckRecord) -> Result<WhatRan, RunError> {
        let bad = |m: String| {
            RunError::Config(crate::options::ConfigError::new(
                run_dir.path.join(TEST_FILE).display().to_string(),
                m,
            ))
        };
        let key = crate::store::CHECK_KEY;
        let model = match &record.model {
            Some(m)
                if crate::model::registry::is_known(m)
                    || crate::checker::compose::has_own_checker(m) =>
            {
                Some(m.clone())
            }
            Some(m) => {
                return Err(bad(format!(
                    "\"{key}\": model {m:?} is not one this build checks"
                )));
            }
            None => None,
        };
        let semantics =
            match &record.semantics {
                Some(s) => Some(crate::model::SemanticsPreset::from_name(s).ok_or_else(|| {
                    bad(format!("\"{key}\": semantics {s:?} is not a known preset"))
                })?),
                None => None,
            };
        let version_source = match &record.version_source {
            Some(v) => Some(v.parse().map_err(|e| bad(format!("\"{key}\": {e}")))?),
            None => declared_version_source(run_dir),
        };
        Ok(WhatRan {
            model,
            semantics,
            version_source,
        })
    }
}

/// The version source an older run directory's workload spec declared (test.json's copy).
fn declared_version_source(run_dir: &RunDir) -> Option<crate::checker::session::VersionSource> {
    let text = std::fs::read_to_string(run_dir.path.join(TEST_FILE)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.pointer("/workload/spec/version_source")?
        .as_str()?
        .parse()
        .ok()
}

/// What checking a run directory produced.
#[derive(Debug)]
pub struct Checked {
    /// The verdict the run earned ([`crate::completion::judge`]).
    pub verdict: Verdict,
    /// Why the verdict is not the checkers' merged verdict, when it is not.
    pub reason: Option<String>,
    /// Per-checker results.
    pub results: Vec<CheckResult>,
    /// How the run ended (from its completion record).
    pub completion: CompletionRecord,
    /// The summary table of the history's ops, when the check already read them all as they
    /// streamed (`None`: fold it from the file, `summary::Summarizer`).
    pub summary: Option<BTreeMap<String, crate::summary::FnSummary>>,
}

/// Check a run directory's history, judge it against its completion record and write
/// results.json, the witness page (when linearizability is violated), the plots, the run page
/// and (for a run inside a reports directory) the reports index. Used at the end of a run, and
/// by `report` and `heal` for the runs the runner recorded (`app::write_run_results` hands a
/// chaos run to chaos's writer instead: the runner knows nothing of chaos).
pub fn write_results(
    run_dir: &RunDir,
    check_time_limit_s: f64,
    witness: crate::checker::linear::WitnessMode,
) -> Result<Checked, RunError> {
    write_results_with(
        run_dir,
        check_time_limit_s,
        witness,
        None,
        AsItWent::default(),
    )
}

/// What checking during the workload leaves the end of a run.
#[derive(Default)]
pub(super) struct AsItWent {
    /// What live checking decided.
    pub(super) live: Option<super::live::LiveRecord>,
    /// The streamed check made as the history was written (used when the history is big
    /// enough to stream at the end).
    pub(super) following: Option<super::streamed::Following>,
}

pub(super) fn write_results_with(
    run_dir: &RunDir,
    check_time_limit_s: f64,
    witness: crate::checker::linear::WitnessMode,
    progress: Option<&Progress>,
    went: AsItWent,
) -> Result<Checked, RunError> {
    let ask = Ask {
        check_time_limit_s,
        witness,
        stream_above: crate::import::STREAM_ABOVE,
    };
    write_results_asked(run_dir, &ask, progress, went)
}

/// How a recorded run is checked.
pub(super) struct Ask {
    pub(super) check_time_limit_s: f64,
    pub(super) witness: crate::checker::linear::WitnessMode,
    /// A history file bigger than this is checked and reported as it streams
    /// (`runner::streamed`), when its model streams.
    pub(super) stream_above: u64,
}

/// What the history was read into: the whole of it, or (a long run) a digest of one pass.
enum Read {
    Whole(History),
    Digest(Box<super::streamed::Digested>),
}

pub(super) fn write_results_asked(
    run_dir: &RunDir,
    ask: &Ask,
    progress: Option<&Progress>,
    went: AsItWent,
) -> Result<Checked, RunError> {
    let AsItWent { live, following } = went;
    let live = live.as_ref();
    crate::store::ensure_writable(&run_dir.path)?;
    let (txn_ask, record) = recorded_check(run_dir)?;
    let what = WhatRan::read(run_dir, &record)?;
    let CheckedHistory {
        verdict: checked,
        mut results,
        linear,
        mut read,
        reuse,
    } = check_history(run_dir, ask, (live, following), &what, txn_ask)?;
    if let Some(by) = record.claimed_by {
        for r in results
            .iter_mut()
            .filter(|r| r.checker == crate::checker::txn::CHECKER)
        {
            r.details["claimed-by"] = by.clone().into();
        }
    }
    let completion = run_dir.read_completion();
    let (client_ops, invokes, end_ns, faults) = read.totals();
    let judged = crate::completion::judge(checked, &completion, client_ops);
    let mut json = results_json(judged.verdict, &results);
    json["checked"] = serde_json::to_value(checked).unwrap_or_default();
    if let Some(r) = &judged.reason {
        json["reason"] = r.clone().into();
    }
    json["completion"] = serde_json::to_value(&completion).unwrap_or_default();
    json[crate::store::HISTORY_SIZE_KEY] = json!({
        "client_invokes": invokes,
        "end_s": end_ns as f64 / 1e9,
        // Checked and reported as it streamed (`runner::streamed`), not held whole.
        "streamed": matches!(read, Read::Digest(_)),
    });
    if let Some(l) = live_record(run_dir, live, &reuse)? {
        json[LIVE_KEY] = l;
    }
    if completion.status == crate::completion::RunStatus::StoppedOnAnomaly {
        json[STOPPED_EARLY_KEY] = completion.reason.clone().into();
    }
    let recovery = match &read {
        Read::Whole(h) => crate::report::recovery::analyse(h, &Default::default()),
        Read::Digest(d) => d.recovery.clone(),
    };
    json[crate::report::recovery::RESULTS_KEY] =
        serde_json::to_value(&recovery).unwrap_or(Value::Null);
    let membership = crate::faults::membership::timeline::timeline(faults);
    if !membership.is_empty() {
        json[crate::store::MEMBERSHIP_KEY] = json!({ "changes": membership.counts() });
    }
    if let Ok(test) = run_dir.read_object(TEST_FILE) {
        let never = super::requested::never_ran(&test, faults);
        json[crate::store::NEVER_RAN_KEY] = serde_json::to_value(never).unwrap_or_default();
    }
    let test_json = run_dir.path.join(TEST_FILE);
    match &read {
        Read::Whole(h) => {
            crate::systems::external::record_protocol_errors(&mut json, h, &test_json)
        }
        Read::Digest(d) => crate::systems::external::record_protocol_counts(
            &mut json,
            &d.protocol_errors,
            &test_json,
        ),
    }
    run_dir.write_json(RESULTS_FILE, &json)?;
    if let Some(p) = progress {
        p.phase(
            Phase::Report,
            "writing plots, the run page and the reports index",
        );
    }
    let summary = match &mut read {
        Read::Whole(_) => None,
        Read::Digest(d) => Some(std::mem::take(&mut d.summary)),
    };
    write_pages(run_dir, read, linear, &recovery)?;
    Ok(Checked {
        verdict: judged.verdict,
        reason: judged.reason,
        results,
        completion,
        summary,
    })
}

/// What [`check_history`] found and read.
struct CheckedHistory {
    /// The checkers' verdict.
    verdict: Verdict,
    /// Each checker's result.
    results: Vec<CheckResult>,
    /// The linearizability result, for the witness page.
    linear: Option<crate::checker::linear::LinearResult>,
    /// The history read whole, or its digest.
    read: Read,
    /// What live checking's decisions spared the check.
    reuse: super::live::Reuse,
}

/// The run's check: streamed when the history is larger than `ask.stream_above` and its model
/// streams (taking the check made as the history was written, when there is one), else the
/// whole history read (reusing what live checking decided). The verdict, the checkers'
/// results, the linearizability result, what was read and what was reused.
fn check_history(
    run_dir: &RunDir,
    ask: &Ask,
    (live, following): (
        Option<&super::live::LiveRecord>,
        Option<super::streamed::Following>,
    ),
    what: &WhatRan,
    txn_ask: crate::checker::txn::judge::Ask,
) -> Result<CheckedHistory, RunError> {
    let size = std::fs::metadata(run_dir.history_path()).map_or(0, |m| m.len());
    let plan = (size > ask.stream_above)
        .then(|| streaming_plan(what, ask.check_time_limit_s, ask.witness, txn_ask.clone()))
        .flatten();
    let streamed = match plan {
        // A short history: the check made as it was written is not needed (dropped now: it
        // stops at its next read, instead of finishing beside the whole check).
        None => {
            drop(following);
            None
        }
        Some(plan) => match following.and_then(super::streamed::Following::join) {
            Some(followed) => followed?,
            None => super::streamed::check(run_dir, &plan)?,
        },
    };
    let mut reuse = super::live::Reuse::default();
    if let Some(s) = streamed {
        let s = *s;
        let read = Read::Digest(Box::new(s.digested));
        return Ok(CheckedHistory {
            verdict: s.verdict,
            results: s.results,
            linear: Some(s.linear),
            read,
            reuse,
        });
    }
    let history = History::read_file(&run_dir.history_path())?;
    if let Some(l) = live {
        reuse = super::live::Reuse::of(l, &history);
    }
    let (checked, results, linear) = check_reusing(
        &history,
        ask.check_time_limit_s,
        what,
        ask.witness,
        txn_ask,
        &mut reuse,
    );
    Ok(CheckedHistory {
        verdict: checked,
        results,
        linear,
        read: Read::Whole(history),
        reuse,
    })
}

impl Read {
    /// Client completions, client invokes, the last op's time and the history holding the
    /// nemesis ops (the whole one, or the digest's sparse one).
    fn totals(&self) -> (u64, u64, u64, &History) {
        match self {
            Read::Whole(h) => {
                let (mut completions, mut invokes, mut end_ns) = (0u64, 0u64, 0u64);
                for o in &h.ops {
                    end_ns = end_ns.max(o.time_ns);
                    if o.is_client() {
                        if o.op_type == crate::history::OpType::Invoke {
                            invokes += 1;
                        } else {
                            completions += 1;
                        }
                    }
                }
                (completions, invokes, end_ns, h)
            }
            Read::Digest(d) => (d.completions, d.invokes, d.end_ns, &d.sparse),
        }
    }
}

/// At the end of a run: what live checking decided, written to live.json with what the final
/// check reused; later (`report`, `heal`): what it left in live.json.
fn live_record(
    run_dir: &RunDir,
    live: Option<&super::live::LiveRecord>,
    reuse: &super::live::Reuse,
) -> Result<Option<Value>, RunError> {
    let live_json = live.map(|l| {
        let mut v = l.to_json();
        // How many keys found valid live the final check did not search again.
        v["reused_valid"] = reuse.valid.into();
        // How many keys found valid live got later ops (final reads) that fitted the
        // linearization live checking found, so their live ops were not searched again.
        v["reused_with_later_ops"] = reuse.confirmed.into();
        v
    });
    if let Some(v) = &live_json {
        // The final record (with whether it stopped the run) for `report` and `heal` later.
        run_dir.write_json(crate::store::LIVE_FILE, v)?;
    }
    Ok(live_json.or_else(|| run_dir.read_object(crate::store::LIVE_FILE).ok()))
}

/// The witness page (when linearizability found the history invalid), the plots, the run page
/// and the reports index.
fn write_pages(
    run_dir: &RunDir,
    read: Read,
    linear: Option<crate::checker::linear::LinearResult>,
    recovery: &crate::report::recovery::Recovery,
) -> Result<(), RunError> {
    match read {
        Read::Whole(history) => {
            if let Some(r) = linear.filter(|r| r.verdict == Verdict::Invalid) {
                let page = crate::report::witness_html::render_witness_html(&r, &history);
                run_dir.write_text(LINEAR_WITNESS_FILE, &page)?;
            }
            drop(history);
            render_pages(run_dir);
        }
        Read::Digest(d) => {
            if let Some(r) = linear.filter(|r| r.verdict == Verdict::Invalid) {
                super::streamed::write_witness_page(run_dir, &r)?;
            }
            super::streamed::render_pages(run_dir, *d, recovery.shading());
            write_index(run_dir);
        }
    }
    Ok(())
}

/// Plots, the run page and (inside a reports directory) the reports index, from what the run
/// directory holds; failures are warnings (runs and `shakedown chaos`).
pub(crate) fn render_pages(run_dir: &RunDir) {
    if let Err(e) = crate::report::render_run(&run_dir.path) {
        tracing::warn!("plots: {e}");
    }
    if let Err(e) = crate::report::page::write_run_page(&run_dir.path) {
        tracing::warn!("run page: {e}");
    }
    write_index(run_dir);
}

/// The reports index, when `run_dir` is inside a reports directory; a failure is a warning.
pub(super) fn write_index(run_dir: &RunDir) {
    if let Some(root) = crate::store::reports_root_of(&run_dir.path)
        && let Err(e) = crate::report::page::write_reports_index(&root)
    {
        tracing::warn!("reports index: {e}");
    }
}

/// Results file contents.
pub fn results_json(verdict: Verdict, results: &[CheckResult]) -> Value {
    json!({ "valid": verdict, "checkers": results })
}

/// The checks a register run gets (linearizability, session guarantees), plus the typed
/// linearizability result for the witness page.
pub fn check(
    history: &History,
    time_limit_s: f64,
) -> (
    Verdict,
    Vec<CheckResult>,
    Option<crate::checker::linear::LinearResult>,
) {
    check_with(
        history,
        time_limit_s,
        &WhatRan::default(),
        Default::default(),
        Default::default(),
    )
}

/// [`check`] as `what` says ran: its model (else inferred from the history: `list-append` when
/// it has append ops, else `cas-register`, …), semantics and version source.
pub fn check_with(
    history: &History,
    time_limit_s: f64,
    what: &WhatRan,
    witness: crate::checker::linear::WitnessMode,
    txn_ask: crate::checker::txn::judge::Ask,
) -> (
    Verdict,
    Vec<CheckResult>,
    Option<crate::checker::linear::LinearResult>,
) {
    let mut reuse = super::live::Reuse::default();
    check_reusing(history, time_limit_s, what, witness, txn_ask, &mut reuse)
}

/// The composition a run's history is checked with: `model`, what ran, the budgets.
/// The plan a run directory's history is checked with as it streams, when the run recorded
/// a model the stream checks (`crate::stream::streams`): what [`write_results_with`] checks a
/// long history with. `None`: it is checked whole.
pub(super) fn stream_plan(
    run_dir: &RunDir,
    check_time_limit_s: f64,
    witness: crate::checker::linear::WitnessMode,
) -> Result<Option<crate::checker::compose::Plan>, RunError> {
    let (txn_ask, record) = recorded_check(run_dir)?;
    let what = WhatRan::read(run_dir, &record)?;
    Ok(streaming_plan(&what, check_time_limit_s, witness, txn_ask))
}

/// The plan `what` ran is checked with as it streams, when its model streams.
fn streaming_plan(
    what: &WhatRan,
    check_time_limit_s: f64,
    witness: crate::checker::linear::WitnessMode,
    txn_ask: crate::checker::txn::judge::Ask,
) -> Option<crate::checker::compose::Plan> {
    let model = what.model.clone().filter(|m| crate::stream::streams(m))?;
    Some(plan_of(model, what, check_time_limit_s, witness, txn_ask))
}

pub(super) fn plan_of(
    model: String,
    what: &WhatRan,
    time_limit_s: f64,
    witness: crate::checker::linear::WitnessMode,
    txn_ask: crate::checker::txn::judge::Ask,
) -> crate::checker::compose::Plan {
    use crate::checker::compose;
    compose::Plan {
        // A set history's reads have no versions to order: the set checker covers it.
        session: (!compose::has_own_checker(&model)).then(|| {
            crate::checker::session::SessionConfig {
                source: what.version_source,
                ..Default::default()
            }
        }),
        model,
        options: crate::model::ModelOptions::preset(what.semantics.unwrap_or(RECORDED_SEMANTICS)),
        time_limit: Duration::from_secs_f64(time_limit_s),
        witness,
        all_keys: false,
        // The machine's memory sets the check's budget (the checker core reads no files).
        memory_bytes: Some(crate::meminfo::default_budget()),
        txn_assume: Default::default(),
        txn_ask,
        set_full: Default::default(),
    }
}

/// [`check_with`], keeping the keys live checking decided (`reuse`): they are not searched
/// again, their parts are put back into the linearizability result, and the session checker
/// still reads the whole history.
fn check_reusing(
    history: &History,
    time_limit_s: f64,
    what: &WhatRan,
    witness: crate::checker::linear::WitnessMode,
    txn_ask: crate::checker::txn::judge::Ask,
    reuse: &mut super::live::Reuse,
) -> (
    Verdict,
    Vec<CheckResult>,
    Option<crate::checker::linear::LinearResult>,
) {
    use crate::checker::compose;
    let model = what.model.clone().unwrap_or_else(|| {
        crate::import::default_model_for(crate::import::InputFormat::Jsonl, history).to_string()
    });
    let plan = plan_of(model, what, time_limit_s, witness, txn_ask);
    let nothing_reused = reuse.parts.is_empty() && reuse.extended.is_empty();
    let composed = if nothing_reused || compose::has_own_checker(&plan.model) {
        compose::check(history, &plan)
    } else {
        check_rest(history, &plan, reuse)
    };
    match composed {
        Ok(c) => {
            let mut results: Vec<CheckResult> = c
                .linear
                .iter()
                .map(|l| compose::linear_check_result(l, &plan.model, &plan.options))
                .collect();
            results.extend(c.set);
            results.extend(c.txn.as_ref().map(|t| t.check_result()));
            results.extend(c.lock);
            results.extend(c.log);
            results.extend(c.session);
            (c.verdict, results, c.linear)
        }
        // The model could not be named: say so, never call it valid.
        Err(e) => (
            Verdict::Unknown,
            vec![CheckResult {
                checker: "linearizable".into(),
                verdict: Verdict::Unknown,
                summary: format!("history not checkable: {e}"),
                details: json!({ "error": e }),
            }],
            None,
        ),
    }
}

/// The composition of `history` when live checking decided some keys: the linearizability search
/// on the rest, merged with the live parts, and the session guarantees on the whole history.
fn check_rest(
    history: &History,
    plan: &crate::checker::compose::Plan,
    reuse: &mut super::live::Reuse,
) -> Result<crate::checker::compose::Composed, String> {
    use crate::checker::{Checker, compose};
    let rest_plan = compose::Plan {
        session: None,
        ..plan.clone()
    };
    let search = |reuse: &super::live::Reuse| {
        let (rest, orig) = reuse.remaining(history);
        let mut c = compose::check(&rest, &rest_plan)?;
        let rest_has_client_ops = rest.ops.iter().any(crate::history::Op::is_client);
        c.linear = c
            .linear
            .map(|l| reuse.merge(l, &orig, history, rest_has_client_ops));
        Ok::<_, String>(c)
    };
    let mut c = search(reuse)?;
    // Keys whose later ops did not fit their live linearization: searched whole.
    if let Some(again) = c.linear.as_mut().and_then(|l| reuse.settle(l)) {
        c = search(&again)?;
    }
    c.session = plan
        .session
        .clone()
        .map(|cfg| crate::checker::session::SessionChecker::new(cfg).check(history));
    let main = c.linear.as_ref().map_or(Verdict::Unknown, |l| l.verdict);
    c.verdict = c.session.as_ref().map_or(main, |s| main.merge(s.verdict));
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SemanticsPreset;

    fn run_dir_with(test_json: Value) -> (tempfile::TempDir, RunDir) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(TEST_FILE), test_json.to_string()).unwrap();
        let run = RunDir::open(dir.path());
        (dir, run)
    }

    #[test]
    fn the_check_is_told_what_ran_from_the_runs_record() {
        let (_d, run) = run_dir_with(json!({ "check": {
            "workload": "list-append", "model": "list-append", "semantics": "knossos",
            "version_source": "list-append"
        }}));
        let what = WhatRan::read(&run, &run.read_check_record().unwrap()).unwrap();
        assert_eq!(what.model.as_deref(), Some("list-append"));
        assert_eq!(what.semantics, Some(SemanticsPreset::Knossos));
        assert_eq!(
            what.version_source,
            Some("list-append".parse().unwrap()),
            "{what:?}"
        );
    }

    #[test]
    fn an_older_run_directory_falls_back_to_its_spec_copy_and_the_history() {
        let (_d, run) =
            run_dir_with(json!({ "workload": { "spec": { "version_source": "list-append" } } }));
        let what = WhatRan::read(&run, &run.read_check_record().unwrap()).unwrap();
        assert_eq!(what.model, None);
        assert_eq!(what.semantics, None);
        assert_eq!(what.version_source, Some("list-append".parse().unwrap()));
    }

    #[test]
    fn a_recorded_model_or_semantics_this_build_does_not_know_is_an_error_naming_test_json() {
        for bad in [
            json!({ "check": { "model": "quantum-register" } }),
            json!({ "check": { "semantics": "vibes" } }),
            json!({ "check": { "version_source": "tea-leaves" } }),
        ] {
            let (_d, run) = run_dir_with(bad.clone());
            let err = WhatRan::read(&run, &run.read_check_record().unwrap())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("test.json") && err.contains("\"check\""),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_recorded_model_decides_over_the_op_names() {
        // An add/read history with a set-shaped read would be inferred as `set`; the record
        // says the run was a counter-like register, and the check obeys the record.
        let h = History::read_jsonl(
            concat!(
                "{\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"key\":\"k\",\"value\":1}\n",
                "{\"type\":\"ok\",\"process\":0,\"f\":\"write\",\"key\":\"k\",\"value\":1}\n",
            )
            .as_bytes(),
            "t",
        )
        .unwrap();
        let what = WhatRan {
            model: Some("set".into()),
            ..Default::default()
        };
        let (_, results, linear) =
            check_with(&h, 5.0, &what, Default::default(), Default::default());
        assert!(
            linear.is_none(),
            "the set model gets no linearizability search"
        );
        assert!(
            results.iter().any(|r| r.checker.contains("set")),
            "{results:?}"
        );
    }
}
