//! Heal at the start of the next run: faults that earlier runs against the same nodes left
//! behind (a controller killed with SIGKILL never ran its cleanup) are undone before a new run
//! sets up.
//!
//! Which runs: every run directory `<reports>/<test>/<timestamp>/` (any test name) whose
//! `test.json` lists the same set of node addresses as the new run, and whose `faults.jsonl`
//! shows faults not undone (`outstanding_faults`). Not only `latest`: another test may have run
//! against other nodes since. Each such fault's `undo_with` verb is performed through a `Nemesis`
//! whose journal is *that run's* `faults.jsonl`, so the undo is recorded where the fault was and
//! the next run does not heal it again. Undo verbs act on every node and only on what the tool
//! creates (its chain's rules, its qdisc handle, the DB's pidfile process). Does not own the
//! verbs themselves (`Nemesis::invoke`) nor the run sequence (`runner`).

use super::{Nemesis, NemesisConfig, PartitionConfig, outstanding_faults};
use crate::client::Completion;
use crate::control::Remote;
use crate::db::Abilities;
use crate::node::Node;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to undo for a list of outstanding inject records: the distinct `undo_with` verbs in
/// journal order. The nemesis performing them adopts the records first (`Nemesis::adopt`), so
/// each undo is recorded with the nodes it owes.
pub fn undo_plan(open: &[Value]) -> Vec<String> {
    let mut verbs: Vec<String> = Vec::new();
    for r in open {
        if let Some(v) = r["undo_with"].as_str()
            && !verbs.iter().any(|x| x == v)
        {
            verbs.push(v.to_string());
        }
    }
    verbs
}

fn host_set(nodes: &[Node]) -> BTreeSet<String> {
    nodes.iter().map(|n| n.host.clone()).collect()
}

/// Journals of earlier runs under `reports` against the same node addresses as `nodes`, with
/// their outstanding inject records; `exclude` (the new run's directory) is skipped. Runs whose
/// `test.json` or `faults.jsonl` cannot be read are skipped (they have nothing we can act on).
pub fn leftover_journals(
    reports: &Path,
    nodes: &[Node],
    exclude: &Path,
) -> Vec<(PathBuf, Vec<Value>)> {
    let want = host_set(nodes);
    let mut found = Vec::new();
    let Ok(tests) = std::fs::read_dir(reports) else {
        return found;
    };
    let exclude = exclude.canonicalize().unwrap_or(exclude.to_path_buf());
    let mut runs: Vec<PathBuf> = tests
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .flat_map(|t| std::fs::read_dir(t.path()).into_iter().flatten().flatten())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) // not the `latest` links
        .map(|e| e.path())
        .collect();
    runs.sort();
    for run in runs {
        if run.canonicalize().unwrap_or(run.clone()) == exclude {
            continue;
        }
        let journal = run.join(crate::store::FAULTS_FILE);
        let Ok(text) = std::fs::read_to_string(&journal) else {
            continue;
        };
        let Some(run_nodes) = std::fs::read_to_string(run.join(crate::store::TEST_FILE))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|t| serde_json::from_value::<Vec<Node>>(t["nodes"].clone()).ok())
        else {
            continue;
        };
        if host_set(&run_nodes) != want {
            continue;
        }
        let records: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let open = outstanding_faults(&records);
        if !open.is_empty() {
            found.push((journal, open));
        }
    }
    found
}

/// Undo the outstanding faults of earlier runs against `nodes` (see the module doc). Returns one
/// line per fault found and per undo performed (with its outcome); never fails the caller: an undo
/// that fails is reported as such and left outstanding in its journal.
pub fn heal_leftovers(
    reports: &Path,
    current_run: &Path,
    nodes: &[Node],
    remotes: &[Arc<dyn Remote>],
    db: Arc<dyn Abilities>,
) -> Vec<String> {
    let mut lines = Vec::new();
    for (journal, open) in leftover_journals(reports, nodes, current_run) {
        let run = journal.parent().unwrap_or(Path::new("."));
        for r in &open {
            lines.push(format!(
                "{}: {} {} was still in effect when that run stopped",
                journal.display(),
                r["f"].as_str().unwrap_or("?"),
                r["detail"]
            ));
        }
        let sink = match crate::store::RunDir::open(run).jsonl_sink(crate::store::FAULTS_FILE) {
            Ok(s) => s,
            Err(e) => {
                lines.push(format!("cannot append to {}: {e}", journal.display()));
                continue;
            }
        };
        let mut nemesis = Nemesis::new(NemesisConfig {
            helper_exe: None,
            nodes: nodes.to_vec(),
            remotes: remotes.to_vec(),
            db: db.clone(),
            partition: PartitionConfig::default(),
            rng: ChaCha8Rng::seed_from_u64(0),
            journal: Some(sink),
        });
        nemesis.adopt(&open);
        let verbs = undo_plan(&open);
        for verb in verbs {
            let outcome = match nemesis.invoke(&verb, &Value::Null) {
                Completion::Ok { value, .. } => format!("ok {value}"),
                // Partly done: say where (the journal keeps the fault outstanding).
                Completion::Fail { error, value } if crate::faults::applied_somewhere(&value) => {
                    let o = super::NodeOutcomes::from_json(&value);
                    format!(
                        "done on {}, FAILED on the others: {error}",
                        o.applied.into_iter().collect::<Vec<_>>().join(", ")
                    )
                }
                Completion::Fail { error, .. } | Completion::Info { error } => {
                    format!("FAILED: {error}")
                }
            };
            lines.push(format!("healed with {verb}: {outcome}"));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(i: usize) -> Node {
        Node {
            name: format!("n{i}"),
            host: format!("10.93.0.{i}"),
        }
    }

    #[test]
    fn plan_dedups_verbs() {
        let open = vec![
            json!({"f": "kill", "undo_with": "start", "detail": {"nodes": ["n2"]}}),
            json!({"f": "start-loss", "undo_with": "stop-loss", "detail": {"nodes": ["n1"]}}),
            json!({"f": "kill", "undo_with": "start", "detail": {"nodes": ["n4", "n2"]}}),
        ];
        assert_eq!(undo_plan(&open), ["start", "stop-loss"]);
        assert!(undo_plan(&[]).is_empty());
    }

    #[test]
    fn only_runs_against_the_same_nodes_with_open_faults_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let reports = dir.path();
        let mk = |test: &str, stamp: &str, nodes: Vec<Node>, journal: &str| {
            let run = reports.join(test).join(stamp);
            std::fs::create_dir_all(&run).unwrap();
            std::fs::write(run.join("test.json"), json!({ "nodes": nodes }).to_string()).unwrap();
            std::fs::write(run.join("faults.jsonl"), journal).unwrap();
            run
        };
        let open = "{\"action\":\"inject\",\"event\":\"begin\",\"f\":\"start-loss\",\"undo_with\":\"stop-loss\"}\n";
        let closed = format!(
            "{open}{}\n",
            json!({"action":"undo","event":"done","f":"stop-loss"})
        );
        let same = vec![node(1), node(2), node(3)];
        let reordered = vec![node(3), node(1), node(2)];
        let a = mk("etcd-register", "20260101T000000.000Z", same.clone(), open);
        mk(
            "etcd-register",
            "20260101T000001.000Z",
            same.clone(),
            &closed,
        );
        let b = mk("other", "20260101T000002.000Z", reordered, open);
        mk(
            "other",
            "20260101T000003.000Z",
            vec![node(1), node(2)],
            open,
        );
        let current = mk("etcd-register", "20260101T000004.000Z", same.clone(), open);
        let found = leftover_journals(reports, &same, &current);
        let paths: Vec<PathBuf> = found.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(paths, [a.join("faults.jsonl"), b.join("faults.jsonl")]);
        assert_eq!(found[0].1[0]["f"], "start-loss");
        assert!(leftover_journals(&reports.join("missing"), &same, &current).is_empty());
    }
}
