//! Checking a recorded run: the checks a run's history gets (`check`, `check_with`: the
//! composition for its model, the session checker's version source, the transactional ask the
//! run recorded), its verdict judged against how the run ended, and everything written from it
//! (results.json, the linearizability witness page, plots, the run page, the reports index).
//! Used at the end of a run, by `report` and by `heal`.
//!
//! Does not own driving the run (`runner`), the checkers (`checker`) or the pages (`report`).

use super::{RunError, recorded_ask};
use crate::checker::{CheckResult, Verdict};
use crate::completion::Completion;
use crate::history::History;
use crate::progress::{Phase, Progress};
use crate::store::{LINEAR_WITNESS_FILE, RESULTS_FILE, RunDir, TEST_FILE};
use serde_json::{Value, json};
use std::time::Duration;

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
    pub completion: Completion,
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
    write_results_with(run_dir, check_time_limit_s, witness, None)
}

pub(super) fn write_results_with(
    run_dir: &RunDir,
    check_time_limit_s: f64,
    witness: crate::checker::linear::WitnessMode,
    progress: Option<&Progress>,
) -> Result<Checked, RunError> {
    crate::store::ensure_writable(&run_dir.path)?;
    let history = History::read_file(&run_dir.history_path())?;
    let (txn_ask, claimed_by) = recorded_ask(run_dir)?;
    let (checked, mut results, linear) = check_with(
        &history,
        check_time_limit_s,
        declared_version_source(run_dir),
        witness,
        txn_ask,
    );
    if let Some(by) = claimed_by {
        for r in results
            .iter_mut()
            .filter(|r| r.checker == crate::checker::txn::CHECKER)
        {
            r.details["claimed-by"] = by.clone().into();
        }
    }
    let completion = run_dir.read_completion();
    let client_ops = history
        .ops
        .iter()
        .filter(|o| o.is_client() && o.op_type != crate::history::OpType::Invoke)
        .count() as u64;
    let judged = crate::completion::judge(checked, &completion, client_ops);
    let mut json = results_json(judged.verdict, &results);
    json["checked"] = serde_json::to_value(checked).unwrap_or_default();
    if let Some(r) = &judged.reason {
        json["reason"] = r.clone().into();
    }
    json["completion"] = serde_json::to_value(&completion).unwrap_or_default();
    json[crate::report::recovery::RESULTS_KEY] = crate::report::recovery::to_json(&history);
    crate::systems::external::record_protocol_errors(
        &mut json,
        &history,
        &run_dir.path.join(TEST_FILE),
    );
    run_dir.write_json(RESULTS_FILE, &json)?;
    if let Some(p) = progress {
        p.phase(
            Phase::Report,
            "writing plots, the run page and the reports index",
        );
    }
    if let Some(r) = linear.filter(|r| r.verdict == Verdict::Invalid) {
        let page = crate::checker::witness_html::render_witness_html(&r, &history);
        run_dir.write_text(LINEAR_WITNESS_FILE, &page)?;
    }
    render_pages(run_dir);
    Ok(Checked {
        verdict: judged.verdict,
        reason: judged.reason,
        results,
        completion,
    })
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
        None,
        Default::default(),
        Default::default(),
    )
}

/// [`check`] with the session checker's version source fixed (`None` = chosen from the history).
/// The linearizability model follows the history: `list-append` when it has append ops, else
/// `cas-register`.
pub fn check_with(
    history: &History,
    time_limit_s: f64,
    version_source: Option<crate::checker::session::VersionSource>,
    witness: crate::checker::linear::WitnessMode,
    txn_ask: crate::checker::txn::judge::Ask,
) -> (
    Verdict,
    Vec<CheckResult>,
    Option<crate::checker::linear::LinearResult>,
) {
    use crate::checker::compose::{self, Plan};
    let model = crate::import::default_model_for(crate::import::InputFormat::Jsonl, history);
    let plan = Plan {
        model: model.to_string(),
        // Our clients record etcd semantics (see ARCHITECTURE.md).
        options: crate::model::ModelOptions::preset(crate::model::SemanticsPreset::Etcd),
        // A set history's reads have no versions to order: the set checker covers it.
        session: (!compose::has_own_checker(model)).then(|| {
            crate::checker::session::SessionConfig {
                source: version_source,
                ..Default::default()
            }
        }),
        time_limit: Duration::from_secs_f64(time_limit_s),
        witness,
        all_keys: false,
        // The machine's memory sets the check's budget (the checker core reads no files).
        memory_bytes: Some(crate::meminfo::default_budget()),
        txn_assume: Default::default(),
        txn_ask,
    };
    match compose::check(history, &plan) {
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
