//! Outage detection: per group of ops (a kind of op or all, on one node or all), the spans
//! without a served op while some failed (see `report::recovery`'s module doc).
//!
//! Owns one pass over the client ops in time order that finds them, ending an outage still
//! going where the main workload stopped when the history shows a final heal (the final heal
//! and settle attempt nothing). Pure. Does not own pairing ops (`recovery::attempts`), the
//! final phase (`report::phases`) or what outages mean for a fault (`recovery`).

use super::{Attempt, Outage, RecoveryConfig, secs};

/// What ended an outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutageEnd {
    /// A served op of its group.
    Served,
    /// The end of the history.
    History,
    /// The main workload stopped (the final heal began).
    WorkloadStopped,
}

/// Per-group outage detection state.
#[derive(Default, Clone, Copy)]
struct GroupState {
    last_served_ns: Option<u64>,
    first_failed_ns: Option<u64>,
    failed: u64,
}

/// The outages of `attempts` (at most `config.max_outages`, the longest, by start time), how
/// many there were, and the completion times of served ops in time order. `cut` = (first time
/// of the final heal, where the workload stopped): outages still going at the first then end
/// at the second, and the final reads start every group afresh.
pub(super) fn find(
    attempts: &[Attempt],
    f_names: &[String],
    node_names: &[String],
    config: &RecoveryConfig,
    end_ns: u64,
    cut: Option<(u64, u64)>,
) -> (Vec<Outage>, u64, Vec<u64>) {
    let (nf, nn) = (f_names.len(), node_names.len());
    // Events: served ops at their completion, failed ones at their invocation.
    let mut events: Vec<(u64, u32)> = attempts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let t = if a.served { a.complete_ns } else { a.invoke_ns };
            (t, i as u32)
        })
        .collect();
    events.sort_unstable();

    // Outages per group: scope (0 = all nodes, 1 + node) × kind (0 = all kinds, 1 + f).
    let group = |scope: usize, fk: usize| scope * (nf + 1) + fk;
    let mut state = vec![GroupState::default(); (nn + 1) * (nf + 1)];
    let min_outage_ns = config.min_outage_ms * 1_000_000;
    let mut found: Vec<(usize, u64, u64, OutageEnd, u64)> = Vec::new();
    // Outages still going at `end` end there (`how`); every group starts afresh.
    let close_all = |state: &mut [GroupState], found: &mut Vec<_>, end: u64, how: OutageEnd| {
        for (g, st) in state.iter_mut().enumerate() {
            if st.failed > 0 {
                let start = st.last_served_ns.or(st.first_failed_ns).unwrap_or(end);
                if end.saturating_sub(start) >= min_outage_ns {
                    found.push((g, start, end, how, st.failed));
                }
            }
            *st = GroupState::default();
        }
    };
    let mut cut = cut;
    let mut served_ns: Vec<u64> = Vec::new();
    for &(t, i) in &events {
        if let Some((from, end)) = cut
            && t >= from
        {
            close_all(&mut state, &mut found, end, OutageEnd::WorkloadStopped);
            cut = None;
        }
        let a = &attempts[i as usize];
        let scopes = [Some(0), a.node().map(|n| n + 1)];
        for g in scopes
            .into_iter()
            .flatten()
            .flat_map(|s| [group(s, 0), group(s, usize::from(a.f) + 1)])
        {
            let st = &mut state[g];
            if a.served {
                if st.failed > 0 {
                    let start = st.last_served_ns.or(st.first_failed_ns).unwrap_or(t);
                    if t.saturating_sub(start) >= min_outage_ns {
                        found.push((g, start, t, OutageEnd::Served, st.failed));
                    }
                }
                *st = GroupState {
                    last_served_ns: Some(t),
                    ..GroupState::default()
                };
            } else {
                st.first_failed_ns.get_or_insert(t);
                st.failed += 1;
            }
        }
        if a.served {
            served_ns.push(t);
        }
    }
    match cut {
        Some((_, end)) => close_all(&mut state, &mut found, end, OutageEnd::WorkloadStopped),
        None => close_all(&mut state, &mut found, end_ns, OutageEnd::History),
    }
    let total = found.len() as u64;
    if found.len() > config.max_outages {
        found.sort_by_key(|o| std::cmp::Reverse(o.2 - o.1));
        found.truncate(config.max_outages);
    }
    let mut outages: Vec<Outage> = found
        .into_iter()
        .map(|(g, start, end, how, failed_ops)| {
            let (scope, fk) = (g / (nf + 1), g % (nf + 1));
            Outage {
                node: (scope > 0).then(|| node_names[scope - 1].clone()),
                f: (fk > 0).then(|| f_names[fk - 1].clone()),
                start_s: secs(start),
                end_s: secs(end),
                open: how == OutageEnd::History,
                workload_stopped: how == OutageEnd::WorkloadStopped,
                failed_ops,
            }
        })
        .collect();
    outages.sort_by(|a, b| {
        a.start_s
            .total_cmp(&b.start_s)
            .then_with(|| a.node.cmp(&b.node))
            .then_with(|| a.f.cmp(&b.f))
    });
    (outages, total, served_ns)
}
