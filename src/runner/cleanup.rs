//! The end of every run that touched the cluster, whatever happened before it: heal every fault
//! and remove the tool's rules (each within `--nemesis-timeout`), download the system's logs,
//! stop the system. Failures are collected, never fatal: they go into the completion record.
//!
//! Does not own what healing does (`nemesis`), the run directory's layout (`store`) nor how the
//! run ended (`runner::run` judges that from the drive step's result).

use super::nemesis_client::lock_within;
use super::{Stage, first_err, on_nodes};
use crate::nemesis::Nemesis;
use crate::progress::Phase;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Heal, download logs and tear down on `stage`'s nodes; what failed, in words. `bound` is the
/// nemesis timeout; `setup_started` whether setup reached the system (else there are no logs
/// to fetch nor servers to stop). Blocking.
pub(super) fn clean_up(
    stage: &Stage,
    nemesis: &Mutex<Nemesis>,
    bound: Duration,
    setup_started: &AtomicBool,
) -> Vec<String> {
    let Stage {
        nodes,
        remotes,
        db,
        progress,
        ..
    } = stage;
    progress.phase(
        Phase::Cleanup,
        format!(
            "healing every fault and removing the tool's rules on {} nodes",
            nodes.len()
        ),
    );
    let mut errs = heal(nemesis, bound);
    if !setup_started.load(Ordering::SeqCst) {
        return errs;
    }
    progress.phase(
        Phase::Logs,
        format!("downloading DB logs from {} nodes", nodes.len()),
    );
    download_logs(stage, &mut errs);
    progress.phase(
        Phase::Teardown,
        format!("stopping the DB on {} nodes", nodes.len()),
    );
    if let Err(e) = first_err(on_nodes(remotes, nodes, |r, n| db.teardown(r, n))) {
        errs.push(format!("teardown: {e}"));
    }
    errs
}

/// Every fault healed and the iptables chain removed. A nemesis op the interpreter stopped
/// waiting for may still hold the nemesis until its bound cuts its commands off: wait for it
/// that long (the progress line names it), then go on without healing. The heal itself gets
/// the same bound.
fn heal(nemesis: &Mutex<Nemesis>, bound: Duration) -> Vec<String> {
    let mut errs = Vec::new();
    match lock_within(nemesis, bound) {
        Some(mut n) => {
            let until = std::time::Instant::now() + bound;
            crate::control::deadline::within(until, || {
                errs = n.heal_all();
                if let Err(e) = n.teardown() {
                    errs.push(format!("removing iptables chain: {e}"));
                }
            });
        }
        None => errs.push(format!(
            "a nemesis operation was still running after {} s more: its faults were not \
             healed; run `shakedown heal`",
            bound.as_secs()
        )),
    }
    errs
}

/// Every log file the system names for each node into the run's `logs/<node>/`, nodes in
/// parallel ([`crate::control::fanout::FAN_OUT`] at a time: one after the other took 18 s at
/// 100 nodes); a log the server never wrote is not a failure. Errors in node order.
fn download_logs(stage: &Stage, errs: &mut Vec<String>) {
    use crate::control::fanout;
    let pairs: Vec<_> = stage.remotes.iter().zip(&stage.nodes).collect();
    let per_node = fanout::each(&pairs, fanout::FAN_OUT, |(r, node)| {
        let mut errs = Vec::new();
        let Ok(dir) = stage.run_dir.node_log_dir(&node.name) else {
            return errs;
        };
        for f in stage.db.log_files(node) {
            let name = std::path::Path::new(&f)
                .file_name()
                .map(|s| s.to_owned())
                .unwrap_or_default();
            match r.download(&f, &dir.join(name)) {
                Ok(()) => {}
                Err(crate::control::ExecError::NoSuchFile { .. }) => {
                    tracing::debug!("{}: no {f} to download", node.name);
                }
                Err(e) => errs.push(format!("{}: downloading {f}: {e}", node.name)),
            }
        }
        errs
    });
    for (r, (_, node)) in per_node.into_iter().zip(&pairs) {
        match r {
            Ok(e) => errs.extend(e),
            Err(p) => errs.push(format!(
                "{}: downloading logs: {}",
                node.name,
                fanout::panic_words(p.as_ref())
            )),
        }
    }
}
