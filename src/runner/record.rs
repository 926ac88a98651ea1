//! What a run writes down about itself when it starts, and reads back when it is checked:
//! test.json's metadata and its `check` record (the workload, its model, the clients'
//! semantics, the version source and the transactional ask), so the end of the run, `report`,
//! `heal` and `check` are told what ran instead of guessing it.
//!
//! Does not own the file layout (`store`: `CheckRecord`, `CHECK_KEY`), the checks (`results`)
//! or the model table (`checker::compose::model_for_workload`).

use super::RunError;
use crate::config::TestConfig;
use crate::node::Node;
use crate::store::{RunDir, TEST_FILE};
use crate::systems::System;
use serde_json::{Value, json};

/// The register semantics every built-in client records: a read of a never-written key returns
/// nil (absent), a failed cas saw another value (see ARCHITECTURE.md).
pub const RECORDED_SEMANTICS: crate::model::SemanticsPreset = crate::model::SemanticsPreset::Etcd;

/// What a run's history is checked against: for a transactional workload the models asked
/// for (`--consistency-models`, `--anomalies`), else those the system claims for its settings,
/// else Elle's default; nothing for other workloads.
fn check_record(cfg: &TestConfig, system: &dyn System) -> crate::store::CheckRecord {
    use crate::checker::txn::judge::Ask;
    let what_ran = crate::store::CheckRecord {
        workload: Some(cfg.workload.kind.clone()),
        model: crate::checker::compose::model_for_workload(&cfg.workload.kind).map(str::to_string),
        semantics: Some(RECORDED_SEMANTICS.name().to_string()),
        version_source: cfg.workload.version_source.clone(),
        ..Default::default()
    };
    if cfg.workload.kind != crate::generator::txn::KIND {
        return what_ran;
    }
    let record = |ask: &Ask, by: String| crate::store::CheckRecord {
        consistency_models: ask.models.iter().map(|m| m.name().to_string()).collect(),
        anomalies: ask.anomalies.iter().map(|a| a.name().to_string()).collect(),
        claimed_by: Some(by),
        ..what_ran.clone()
    };
    if let Some(ask) = &cfg.consistency {
        let flags = match (ask.models.is_empty(), ask.anomalies.is_empty()) {
            (false, false) => "--consistency-models and --anomalies",
            (false, true) => "--consistency-models",
            _ => "--anomalies",
        };
        return record(ask, flags.to_string());
    }
    if let Some((models, by)) = system.claimed_consistency(&cfg.workload) {
        let ask = Ask {
            models,
            anomalies: Vec::new(),
        };
        return record(&ask, by);
    }
    record(
        &Ask::default(),
        format!(
            "Elle's default: {} claims no model; ask with --consistency-models",
            system.name()
        ),
    )
}

/// What a run directory recorded about its check ([`check_record`]): the transactional ask
/// (Elle's default when it recorded none) and the record itself.
pub(super) fn recorded_check(
    run_dir: &RunDir,
) -> Result<(crate::checker::txn::judge::Ask, crate::store::CheckRecord), RunError> {
    let bad = |m: String| RunError::Config(crate::options::ConfigError::new(TEST_FILE, m));
    let record = run_dir.read_check_record().map_err(bad)?;
    if record.consistency_models.is_empty() && record.anomalies.is_empty() {
        return Ok((Default::default(), record));
    }
    let anomalies = record.anomalies.join(",");
    let ask = crate::checker::txn::judge::Ask::parse(
        &record.consistency_models.join(","),
        (!anomalies.is_empty()).then_some(anomalies.as_str()),
    )
    .map_err(|e| bad(format!("\"{}\": {e}", crate::store::CHECK_KEY)))?;
    Ok((ask, record))
}

/// The test metadata written to test.json.
pub(super) fn test_json(
    cfg: &TestConfig,
    system: &dyn System,
    nodes: &[Node],
    db_version: Option<String>,
    wall_start: &str,
) -> Value {
    json!({
        "name": cfg.name,
        "seed": cfg.seed,
        "start_time": wall_start,
        "shakedown_version": env!("CARGO_PKG_VERSION"),
        "db": { "name": system.name(), "version": db_version, "config": system.config_json(nodes) },
        "nodes": nodes,
        "ssh": { "user": cfg.ssh.user, "port": cfg.ssh.port },
        "concurrency": cfg.concurrency,
        "rate": cfg.rate,
        "time_limit_s": cfg.time_limit_s,
        "op_timeout_ms": cfg.op_timeout_ms,
        "read_mode": cfg.read_mode,
        "read_from": cfg.read_from,
        "read_nodes": cfg.read_nodes,
        "workload": { "name": cfg.workload_name, "spec": cfg.workload, "knobs": cfg.workload.knobs() },
        "nemesis": { "name": cfg.nemesis_name, "spec": cfg.nemesis },
        crate::store::CHECK_KEY: check_record(cfg, system),
        "rerun": cfg.rerun_command(),
    })
}
