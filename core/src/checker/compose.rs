//! The checker composition a history gets, written once: linearizability with a named model,
//! plus (when asked) the session guarantees, merged invalid > unknown > valid. `runner` (a run's
//! own history) and `app::check` (`shakedown check`) both call [`check`].
//!
//! The `set` model is the exception: a set history is checked by the set checker
//! (`checker::set`: lost / unexpected / recovered elements), not by a linearizability search,
//! which explodes on sets of hundreds of elements with indeterminate adds and cannot say which
//! acknowledged add was lost; the `set-full` model gets Jepsen's set-full checker
//! (`checker::set_full`: per-element stable / lost / never-read, stale, duplicated), told by
//! [`Plan::set_full`] whether reads are claimed linearizable. Likewise the `txn` model
//! (list-append transactions) gets the transactional checker (`checker::txn`: dependency cycles,
//! Elle-style), and the `log` model the log checker (`checker::log`: lost sends, inconsistent
//! offsets).
//!
//! Owns the plan (model, semantics, session settings, time budget), running the model registry's
//! model through the search ([`crate::model::registry`]), and the generic `CheckResult` of a
//! linearizability result. Does not own choosing the model for an input (`import`), judging a
//! run's completeness (`completion`) or output. Pure: no IO.

use super::linear::{Decide, LinearConfig, LinearResult, WitnessMode, check_history};
use super::session::{SessionChecker, SessionConfig};
use super::set::SetChecker;
use super::set_full::{SetFullChecker, SetFullConfig};
use super::{CheckResult, Checker, Verdict};
use crate::history::History;
use crate::model::registry::{self, ModelVisitor};
use crate::model::{Model, ModelOptions};
use std::time::Duration;

/// What to check a history with.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The linearizability model, by registry name (`cas-register`, `list-append`, …).
    pub model: String,
    /// Its semantics.
    pub options: ModelOptions,
    /// The session checker's settings; `None` = linearizability only.
    pub session: Option<SessionConfig>,
    /// Time budget of the linearizability search; past it the verdict is unknown.
    pub time_limit: Duration,
    /// How much work goes into the witness of an invalid key (`--witness`).
    pub witness: WitnessMode,
    /// Decide every key even once one is invalid (`--all-keys`); otherwise the verdict first
    /// (`linear::Decide`).
    pub all_keys: bool,
    /// The linearizability check's one memory budget in bytes (`--memory`; the shell passes the
    /// machine's default); `None` = the checker's own default.
    pub memory_bytes: Option<usize>,
    /// rw-register transactions: the assumptions that order versions (`--txn-assume`).
    pub txn_assume: super::txn::register::Assume,
    /// Transactions: the models and anomalies checked against (`--consistency-models`,
    /// `--anomalies`).
    pub txn_ask: super::txn::judge::Ask,
    /// The `set-full` model: whether reads are claimed linearizable (`--linearizable`).
    pub set_full: SetFullConfig,
}

/// What the composition found.
#[derive(Debug, Clone)]
pub struct Composed {
    /// The linearizability result; `None` for a model with its own checker ([`uses_set_checker`]).
    pub linear: Option<LinearResult>,
    /// The set checker's result, for the `set` model, or the set-full checker's, for `set-full`.
    pub set: Option<CheckResult>,
    /// The transactional checker's result, for the `txn` model.
    pub txn: Option<super::txn::TxnResult>,
    /// The lock checkers' results (mutual exclusion, fencing), for the `lock` model.
    pub lock: Vec<CheckResult>,
    /// The log checker's result, for the `log` model.
    pub log: Option<CheckResult>,
    /// The session checker's result, when the plan asked for it.
    pub session: Option<CheckResult>,
    /// The linearizability verdict merged with the session verdict.
    pub verdict: Verdict,
}

struct Search<'a> {
    history: &'a History,
    config: LinearConfig,
}

impl ModelVisitor for Search<'_> {
    type Output = LinearResult;
    fn visit<M: Model>(self, model: M) -> LinearResult {
        check_history(&model, self.history, &self.config)
    }
}

struct Readable<'a> {
    history: &'a History,
}

impl ModelVisitor for Readable<'_> {
    type Output = Result<(), String>;
    fn visit<M: Model>(self, model: M) -> Result<(), String> {
        super::linear::prepare(&model, self.history).map(|_| ())
    }
}

/// Whether the model named `model_name` reads every client op of `history`: the pairing and
/// conversion its linearizability check starts with, no search. `Err` is the reason that check
/// would give (an unknown model name too).
pub fn readable(model_name: &str, history: &History, opts: &ModelOptions) -> Result<(), String> {
    registry::visit(model_name, opts, Readable { history })?
}

/// Linearizability of `history` with the model named `model_name` and semantics `opts`, within
/// `time_limit`, with witnesses as `witness` says, other budgets the checker's defaults. An
/// unknown model name is an error.
pub fn check_linear(
    model_name: &str,
    history: &History,
    opts: &ModelOptions,
    time_limit: Duration,
    witness: WitnessMode,
) -> Result<LinearResult, String> {
    let config = LinearConfig {
        time_limit: Some(time_limit),
        witness,
        ..LinearConfig::default()
    };
    check_linear_with(model_name, history, opts, config)
}

/// [`check_linear`] with every budget and option given.
pub fn check_linear_with(
    model_name: &str,
    history: &History,
    opts: &ModelOptions,
    config: LinearConfig,
) -> Result<LinearResult, String> {
    registry::visit(model_name, opts, Search { history, config })
}

/// The linearizability checker's configuration for `plan`.
pub fn linear_config(plan: &Plan) -> LinearConfig {
    let default = LinearConfig::default();
    LinearConfig {
        time_limit: Some(plan.time_limit),
        witness: plan.witness,
        decide: if plan.all_keys {
            Decide::AllKeys
        } else {
            Decide::default()
        },
        memory_bytes: plan.memory_bytes.or(default.memory_bytes),
        ..default
    }
}

/// The model a history of our own workload `kind` (`kind` in a workload spec) is checked with:
/// what a run records when it starts, so the check is told what ran instead of guessing it from
/// op names. `None` for a kind this table does not know (the caller then falls back to
/// [`crate::import::default_model_for`]).
pub fn model_for_workload(kind: &str) -> Option<&'static str> {
    crate::generator::WorkloadKind::parse(kind).map(model_for_kind)
}

/// [`model_for_workload`] of a known kind: every kind has one (the match is exhaustive, so a new
/// kind cannot be added without saying how it is checked).
pub fn model_for_kind(kind: crate::generator::WorkloadKind) -> &'static str {
    use crate::generator::WorkloadKind as K;
    match kind {
        // A last-write-wins register is checked for linearizability like any register.
        K::Register | K::Lww => "cas-register",
        K::ListAppend => "list-append",
        K::Txn => super::txn::NAME,
        K::Set => super::set::NAME,
        K::Log => super::log::NAME,
        K::Lock | K::FencedLock => super::lock::MODEL,
    }
}

/// Whether the model named `model_name` is checked by the set checker instead of a
/// linearizability search (see the module doc).
pub fn uses_set_checker(model_name: &str) -> bool {
    model_name == super::set::NAME
}

/// Whether the model named `model_name` has its own checker (set, set-full, txn, lock, log)
/// rather than a linearizability search; such histories get no session checker either.
pub fn has_own_checker(model_name: &str) -> bool {
    uses_set_checker(model_name)
        || model_name == super::set_full::NAME
        || model_name == super::txn::NAME
        || model_name == super::lock::MODEL
        || model_name == super::log::NAME
}

/// Check `history` as `plan` says. An unknown model name is an error, and so is a `txn` history
/// whose transactions cannot be read, and a history of completions only (invokes synthesized)
/// for any model but `txn`: without invokes real-time order is unknown, and every other checker
/// here (linearizability, the set's final read, locks, sessions) depends on it.
pub fn check(history: &History, plan: &Plan) -> Result<Composed, String> {
    if history.invokes_synthesized && plan.model != super::txn::NAME {
        return Err(format!(
            "the history has completions only, no invokes: only the transactional checker (list-append, rw-register transactions) reads such a history; model {} needs each op's invoke, since real-time order decides its verdict",
            plan.model
        ));
    }
    if plan.model == super::txn::NAME {
        let cfg = super::txn::TxnConfig {
            time_limit: plan.time_limit,
            assume: plan.txn_assume,
            ask: plan.txn_ask.clone(),
        };
        let r = super::txn::check(history, &cfg)?;
        return Ok(Composed {
            linear: None,
            set: None,
            verdict: r.verdict,
            txn: Some(r),
            lock: Vec::new(),
            log: None,
            session: None,
        });
    }
    if plan.model == super::log::NAME {
        let log = super::log::LogChecker.check(history);
        return Ok(Composed {
            linear: None,
            set: None,
            txn: None,
            lock: Vec::new(),
            session: None,
            verdict: log.verdict,
            log: Some(log),
        });
    }
    if plan.model == super::lock::MODEL {
        let lock = super::lock::check(history);
        let verdict = lock.iter().fold(Verdict::Valid, |v, r| v.merge(r.verdict));
        return Ok(Composed {
            linear: None,
            set: None,
            txn: None,
            lock,
            log: None,
            session: None,
            verdict,
        });
    }
    let (linear, set) = if uses_set_checker(&plan.model) {
        (None, Some(SetChecker.check(history)))
    } else if plan.model == super::set_full::NAME {
        (
            None,
            Some(SetFullChecker::new(plan.set_full).check(history)),
        )
    } else {
        let linear = check_linear_with(&plan.model, history, &plan.options, linear_config(plan))?;
        (Some(linear), None)
    };
    let session = plan
        .session
        .clone()
        .map(|cfg| SessionChecker::new(cfg).check(history));
    let main = match (&linear, &set) {
        (Some(l), _) => l.verdict,
        (None, Some(s)) => s.verdict,
        (None, None) => Verdict::Unknown,
    };
    let verdict = match &session {
        Some(s) => main.merge(s.verdict),
        None => main,
    };
    Ok(Composed {
        linear,
        set,
        txn: None,
        lock: Vec::new(),
        log: None,
        session,
        verdict,
    })
}

/// The generic checker result for a linearizability result, with its explanation in
/// `details.explanation` and the semantics it was checked with in `details.semantics`.
pub fn linear_check_result(r: &LinearResult, model_name: &str, opts: &ModelOptions) -> CheckResult {
    let mut details = serde_json::to_value(r).unwrap_or_else(
        |e| serde_json::json!({ "error": format!("could not serialize result: {e}") }),
    );
    if let serde_json::Value::Object(map) = &mut details {
        map.insert("explanation".into(), r.explain().into());
        map.insert("semantics".into(), opts.to_json(model_name));
    }
    CheckResult {
        checker: "linearizable".to_string(),
        verdict: r.verdict,
        summary: r.summary(),
        details,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_kind_names_the_model_its_history_gets() {
        for (kind, model) in [
            ("register", "cas-register"),
            ("lww", "cas-register"),
            ("list-append", "list-append"),
            ("txn", "txn"),
            ("set", "set"),
            ("log", "log"),
            ("lock", "lock"),
            ("fenced-lock", "lock"),
        ] {
            assert_eq!(model_for_workload(kind), Some(model), "{kind}");
            assert!(
                crate::model::registry::is_known(model) || has_own_checker(model),
                "{model} is not a model the check knows"
            );
        }
        assert_eq!(model_for_workload("no-such-kind"), None);
    }

    use crate::model::SemanticsPreset;

    fn history(lines: &str) -> History {
        History::read_jsonl(lines.as_bytes(), "test").unwrap()
    }

    #[test]
    fn session_and_linear_verdicts_merge_and_unknown_models_are_errors() {
        // A stale read: not linearizable; the session checker runs when asked.
        let h = history(concat!(
            r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"write","key":"k","value":1}"#,
            "\n",
            r#"{"index":1,"time":1,"type":"ok","process":0,"f":"write","key":"k","value":1,"version":1}"#,
            "\n",
            r#"{"index":2,"time":2,"type":"invoke","process":1,"f":"read","key":"k","value":null}"#,
            "\n",
            r#"{"index":3,"time":3,"type":"ok","process":1,"f":"read","key":"k","value":null}"#,
            "\n",
        ));
        let mut plan = Plan {
            model: "cas-register".into(),
            options: ModelOptions::preset(SemanticsPreset::Etcd),
            session: None,
            time_limit: Duration::from_secs(5),
            witness: WitnessMode::default(),
            all_keys: false,
            memory_bytes: None,
            txn_assume: Default::default(),
            txn_ask: Default::default(),
            set_full: Default::default(),
        };
        let c = check(&h, &plan).unwrap();
        assert_eq!((c.verdict, c.session.is_none()), (Verdict::Invalid, true));
        plan.session = Some(SessionConfig::default());
        let c = check(&h, &plan).unwrap();
        assert_eq!(c.verdict, Verdict::Invalid);
        assert!(c.session.is_some());
        let g = linear_check_result(c.linear.as_ref().unwrap(), &plan.model, &plan.options);
        assert_eq!(g.details["semantics"]["preset"], "etcd");
        assert!(g.details["explanation"].is_string());
        plan.model = "graph".into();
        assert!(check(&h, &plan).unwrap_err().contains("graph"));
    }

    #[test]
    fn the_set_model_is_checked_by_the_set_checker() {
        let h = history(concat!(
            r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"add","key":"k","value":1}"#,
            "\n",
            r#"{"index":1,"time":1,"type":"ok","process":0,"f":"add","key":"k","value":1}"#,
            "\n",
            r#"{"index":2,"time":2,"type":"invoke","process":1,"f":"read","key":"k","value":null}"#,
            "\n",
            r#"{"index":3,"time":3,"type":"ok","process":1,"f":"read","key":"k","value":[]}"#,
            "\n",
        ));
        let plan = Plan {
            model: "set".into(),
            options: ModelOptions::preset(SemanticsPreset::Etcd),
            session: None,
            time_limit: Duration::from_secs(5),
            witness: WitnessMode::default(),
            all_keys: false,
            memory_bytes: None,
            txn_assume: Default::default(),
            txn_ask: Default::default(),
            set_full: Default::default(),
        };
        let c = check(&h, &plan).unwrap();
        assert!(c.linear.is_none());
        let set = c.set.unwrap();
        assert_eq!(
            (set.checker.as_str(), set.verdict),
            ("set", Verdict::Invalid)
        );
        assert_eq!(c.verdict, Verdict::Invalid);
        assert_eq!(set.details["lost"], 1);
    }

    #[test]
    fn the_set_full_model_gets_the_set_full_checker_told_whether_reads_are_linearizable() {
        // 1 is acknowledged, then missing from a read that began after: stale, since a later
        // read shows it again.
        let h = history(concat!(
            r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"add","value":1}"#,
            "\n",
            r#"{"index":1,"time":1,"type":"ok","process":0,"f":"add","value":1}"#,
            "\n",
            r#"{"index":2,"time":2,"type":"invoke","process":1,"f":"read","value":null}"#,
            "\n",
            r#"{"index":3,"time":3,"type":"ok","process":1,"f":"read","value":[]}"#,
            "\n",
            r#"{"index":4,"time":4,"type":"invoke","process":1,"f":"read","value":null}"#,
            "\n",
            r#"{"index":5,"time":5,"type":"ok","process":1,"f":"read","value":[1]}"#,
            "\n",
        ));
        let mut plan = Plan {
            model: crate::checker::set_full::NAME.into(),
            options: ModelOptions::preset(SemanticsPreset::Knossos),
            session: None,
            time_limit: Duration::from_secs(5),
            witness: WitnessMode::default(),
            all_keys: false,
            memory_bytes: None,
            txn_assume: Default::default(),
            txn_ask: Default::default(),
            set_full: Default::default(),
        };
        assert!(has_own_checker(&plan.model));
        let c = check(&h, &plan).unwrap();
        assert!(c.linear.is_none());
        let set = c.set.unwrap();
        assert_eq!(
            (set.checker.as_str(), set.verdict),
            ("set-full", Verdict::Valid)
        );
        assert_eq!(set.details["stale_count"], 1);
        plan.set_full.linearizable = true;
        assert_eq!(check(&h, &plan).unwrap().verdict, Verdict::Invalid);
    }
}
