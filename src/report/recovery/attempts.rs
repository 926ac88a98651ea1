//! Client ops as recovery sees them: invokes paired with their completions per process, each
//! an [`Attempt`] (served or failed, its kind and node as small indices). Pure. Does not decide
//! outages (`recovery::outages`) nor recovery (`recovery`, `recovery::fault`).

use crate::history::{History, OpType, Process};
use crate::model::CAS_MISMATCH;
use rustc_hash::FxHashMap;

/// One client op as recovery sees it.
pub(super) struct Attempt {
    pub(super) invoke_ns: u64,
    /// `u64::MAX` when it never completed.
    pub(super) complete_ns: u64,
    pub(super) served: bool,
    pub(super) f: usize,
    pub(super) node: Option<usize>,
}

/// Pair client invokes with completions (per process): completed ops in history order, then
/// invokes never completed (failed). Also returns the `f` and node names (indices of
/// [`Attempt::f`] and [`Attempt::node`]).
pub(super) fn attempts(history: &History) -> (Vec<Attempt>, Vec<String>, Vec<String>) {
    let ops = &history.ops;
    let mut open: FxHashMap<u64, usize> = FxHashMap::default();
    let mut paired: Vec<(usize, u64, bool)> = Vec::with_capacity(ops.len() / 2);
    for (i, op) in ops.iter().enumerate() {
        let Process::Client(p) = op.process else {
            continue;
        };
        if op.op_type == OpType::Invoke {
            open.insert(p, i);
            continue;
        }
        let Some(j) = open.remove(&p) else {
            continue;
        };
        let served = op.op_type == OpType::Ok
            || (op.op_type == OpType::Fail && op.error.as_deref() == Some(CAS_MISMATCH));
        paired.push((j, op.time_ns, served));
    }
    let mut unfinished: Vec<usize> = open.into_values().collect();
    unfinished.sort_unstable();
    paired.extend(unfinished.into_iter().map(|j| (j, u64::MAX, false)));
    let (mut fs, mut nodes) = (Interner::default(), Interner::default());
    let out = paired
        .into_iter()
        .map(|(j, complete_ns, served)| {
            let inv = &ops[j];
            let f = fs.id(&inv.f);
            let node = inv.node.as_deref().map(|n| nodes.id(n));
            Attempt {
                invoke_ns: inv.time_ns,
                complete_ns,
                served,
                f,
                node,
            }
        })
        .collect();
    (out, fs.into_names(), nodes.into_names())
}

/// Small ids for names (kinds of op, nodes): a linear scan while there are few (the usual
/// case, faster than hashing every op's name), a hash map beyond.
#[derive(Default)]
pub(super) struct Interner<'a> {
    pub(super) names: Vec<&'a str>,
    pub(super) ids: FxHashMap<&'a str, usize>,
}

impl<'a> Interner<'a> {
    const LINEAR_MAX: usize = 16;

    pub(super) fn id(&mut self, name: &'a str) -> usize {
        if self.names.len() <= Self::LINEAR_MAX {
            if let Some(i) = self.names.iter().position(|n| *n == name) {
                return i;
            }
        } else if let Some(&i) = self.ids.get(name) {
            return i;
        }
        self.names.push(name);
        if self.names.len() > Self::LINEAR_MAX {
            if self.ids.is_empty() {
                self.ids = self
                    .names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (*n, i))
                    .collect();
            } else {
                self.ids.insert(name, self.names.len() - 1);
            }
        }
        self.names.len() - 1
    }

    pub(super) fn into_names(self) -> Vec<String> {
        self.names.into_iter().map(str::to_string).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interner_ids_are_stable_past_the_linear_limit() {
        let names: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
        let mut it = Interner::default();
        for round in 0..2 {
            for (i, n) in names.iter().enumerate() {
                assert_eq!(it.id(n), i, "round {round}");
            }
        }
        assert_eq!(it.into_names(), names);
    }
}
