//! Client ops as recovery sees them: invokes paired with their completions per process, each
//! an [`Attempt`] (served or failed, its kind and node as small indices), made one op at a time
//! ([`AttemptsBuilder`]: from a history in memory or from its file as it streams; a long run's
//! completed attempts can be drained as bytes, [`ATTEMPT_BYTES`] each, for the caller to keep
//! out of memory until the end). Pure. Does not decide outages (`recovery::outages`) nor
//! recovery (`recovery`, `recovery::fault`), nor where drained attempts wait (`report::digest`).

use crate::history::{History, Name, Op, OpType, Process};
use crate::model::CAS_MISMATCH;
use rustc_hash::FxHashMap;

/// One client op as recovery sees it (24 bytes: a long run holds one per op).
pub(super) struct Attempt {
    pub(super) invoke_ns: u64,
    /// `u64::MAX` when it never completed.
    pub(super) complete_ns: u64,
    /// Index into the kinds' names.
    pub(super) f: u16,
    /// Index into the nodes' names, [`NO_NODE`] for an op without a node.
    node: u16,
    pub(super) served: bool,
}

/// [`Attempt`]'s node when the op named none.
const NO_NODE: u16 = u16::MAX;
/// Past this many distinct names (kinds or nodes), the rest share the last id, named
/// [`OTHERS`]: recovery's groups stay bounded whatever a history names.
const MAX_IDS: usize = NO_NODE as usize - 1;
/// The name of the shared id past [`MAX_IDS`].
const OTHERS: &str = "(other names)";

/// The bytes of one drained [`Attempt`] ([`AttemptsBuilder::drain`]).
pub const ATTEMPT_BYTES: usize = 21;

impl Attempt {
    /// The index of its node's name, when it named one.
    pub(super) fn node(&self) -> Option<usize> {
        (self.node != NO_NODE).then_some(self.node as usize)
    }

    /// Appended to `out` as [`ATTEMPT_BYTES`] bytes (little-endian).
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.invoke_ns.to_le_bytes());
        out.extend_from_slice(&self.complete_ns.to_le_bytes());
        out.extend_from_slice(&self.f.to_le_bytes());
        out.extend_from_slice(&self.node.to_le_bytes());
        out.push(u8::from(self.served));
    }

    /// What [`Attempt::encode`] wrote (`b`: [`ATTEMPT_BYTES`] bytes).
    fn decode(b: &[u8]) -> Attempt {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let u16_at = |i: usize| u16::from_le_bytes(b[i..i + 2].try_into().unwrap_or_default());
        Attempt {
            invoke_ns: u64_at(0),
            complete_ns: u64_at(8),
            f: u16_at(16),
            node: u16_at(18),
            served: b[20] != 0,
        }
    }
}

/// Attempts of a history with the names their indices point at.
pub struct Attempts {
    pub(super) attempts: Vec<Attempt>,
    pub(super) f_names: Vec<String>,
    pub(super) node_names: Vec<String>,
}

/// An invoke waiting for its completion.
struct Open {
    /// The invoke's position among the client invokes (unfinished ones come out in this order).
    seq: u64,
    invoke_ns: u64,
    f: Name,
    node: Option<Name>,
}

/// Pairs client invokes with completions (per process), one op at a time: completed ops in
/// history order, then invokes never completed (failed), in the order they were invoked. Names
/// get their indices in that order too.
#[derive(Default)]
pub struct AttemptsBuilder {
    open: FxHashMap<u64, Open>,
    out: Vec<Attempt>,
    fs: Ids,
    nodes: Ids,
    invokes: u64,
}

impl AttemptsBuilder {
    /// Take the history's next op (nemesis ops are ignored).
    pub fn push(&mut self, op: &Op) {
        let Process::Client(p) = op.process else {
            return;
        };
        if op.op_type == OpType::Invoke {
            self.invokes += 1;
            self.open.insert(
                p,
                Open {
                    seq: self.invokes,
                    invoke_ns: op.time_ns,
                    f: op.f.clone(),
                    node: op.node.clone(),
                },
            );
            return;
        }
        let Some(inv) = self.open.remove(&p) else {
            return;
        };
        let served = op.op_type == OpType::Ok
            || (op.op_type == OpType::Fail && op.error.as_deref() == Some(CAS_MISMATCH));
        self.emit(inv, op.time_ns, served);
    }

    fn emit(&mut self, inv: Open, complete_ns: u64, served: bool) {
        let f = self.fs.id(&inv.f);
        let node = inv.node.as_ref().map_or(NO_NODE, |n| self.nodes.id(n));
        self.out.push(Attempt {
            invoke_ns: inv.invoke_ns,
            complete_ns,
            f,
            node,
            served,
        });
    }

    /// How many completed attempts it holds (not drained).
    pub fn held(&self) -> usize {
        self.out.len()
    }

    /// The completed attempts it holds, as bytes ([`ATTEMPT_BYTES`] each, in order), no longer
    /// held: a long run's wait outside memory until [`AttemptsBuilder::finish_after`].
    pub fn drain(&mut self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.out.len() * ATTEMPT_BYTES);
        for a in self.out.drain(..) {
            a.encode(&mut bytes);
        }
        bytes
    }

    /// [`AttemptsBuilder::finish`], after the attempts drained earlier (`drained`: the bytes
    /// of every [`AttemptsBuilder::drain`], in order).
    pub fn finish_after(self, drained: &[u8]) -> Attempts {
        let mut rest = self.finish();
        let mut attempts = Vec::with_capacity(drained.len() / ATTEMPT_BYTES + rest.attempts.len());
        attempts.extend(drained.chunks_exact(ATTEMPT_BYTES).map(Attempt::decode));
        attempts.append(&mut rest.attempts);
        Attempts { attempts, ..rest }
    }

    /// The attempts, the invokes never completed last.
    pub fn finish(mut self) -> Attempts {
        let mut unfinished: Vec<Open> = std::mem::take(&mut self.open).into_values().collect();
        unfinished.sort_unstable_by_key(|o| o.seq);
        for inv in unfinished {
            self.emit(inv, u64::MAX, false);
        }
        Attempts {
            attempts: self.out,
            f_names: self.fs.names,
            node_names: self.nodes.names,
        }
    }
}

/// The attempts of a whole history.
pub(super) fn attempts(history: &History) -> Attempts {
    let mut b = AttemptsBuilder::default();
    for op in &history.ops {
        b.push(op);
    }
    b.finish()
}

/// Small ids for names (kinds of op, nodes), in order of first use, at most [`MAX_IDS`] + 1.
#[derive(Default)]
struct Ids {
    names: Vec<String>,
    ids: FxHashMap<Name, u16>,
}

impl Ids {
    fn id(&mut self, name: &Name) -> u16 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len().min(MAX_IDS) as u16;
        if self.names.len() < MAX_IDS {
            self.names.push(name.to_string());
        } else if self.names.len() == MAX_IDS {
            self.names.push(OTHERS.to_string());
        }
        self.ids.insert(name.clone(), i);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_bounded() {
        let names: Vec<Name> = (0..40).map(|i| Name::new(&format!("f{i}"))).collect();
        let mut it = Ids::default();
        for round in 0..2 {
            for (i, n) in names.iter().enumerate() {
                assert_eq!(it.id(n) as usize, i, "round {round}");
            }
        }
        let mut many = Ids::default();
        for i in 0..MAX_IDS + 10 {
            many.id(&Name::new(&format!("n{i}")));
        }
        assert_eq!(many.names.len(), MAX_IDS + 1);
        assert_eq!(many.names.last().map(String::as_str), Some(OTHERS));
        assert_eq!(many.id(&Name::new("n70000")) as usize, MAX_IDS);
    }

    #[test]
    fn an_op_is_paired_with_its_processs_next_completion_and_unfinished_ones_come_last() {
        let op = |t: u64, ty: OpType, p: u64, f: &str, node: Option<&str>| {
            let mut o = Op::new(ty, Process::Client(p), f, serde_json::Value::Null);
            o.time_ns = t;
            o.node = node.map(Name::new);
            o
        };
        let mut cas = op(4, OpType::Fail, 1, "cas", None);
        cas.error = Some(CAS_MISMATCH.into());
        let h = History::from_ops(vec![
            op(1, OpType::Invoke, 0, "read", Some("n1")),
            op(2, OpType::Invoke, 1, "cas", None),
            op(3, OpType::Invoke, 2, "write", Some("n2")),
            cas,
            op(5, OpType::Info, 0, "read", Some("n1")),
        ]);
        let a = attempts(&h);
        let got: Vec<_> = a
            .attempts
            .iter()
            .map(|x| (x.invoke_ns, x.complete_ns, x.served, x.f, x.node()))
            .collect();
        assert_eq!(
            got,
            vec![
                (2, 4, true, 0, None),
                (1, 5, false, 1, Some(0)),
                (3, u64::MAX, false, 2, Some(1)),
            ]
        );
        assert_eq!(a.f_names, ["cas", "read", "write"]);
        assert_eq!(a.node_names, ["n1", "n2"]);
        // Drained as bytes along the way and given back at the end: the same attempts.
        let mut b = AttemptsBuilder::default();
        let mut drained = Vec::new();
        for (i, o) in h.ops.iter().enumerate() {
            b.push(o);
            if i % 2 == 1 {
                drained.extend(b.drain());
                assert_eq!(b.held(), 0);
            }
        }
        assert_eq!(drained.len(), ATTEMPT_BYTES);
        let again = b.finish_after(&drained);
        let pick = |a: &Attempts| -> Vec<_> {
            a.attempts
                .iter()
                .map(|x| (x.invoke_ns, x.complete_ns, x.served, x.f, x.node()))
                .collect()
        };
        assert_eq!(pick(&again), got);
        assert_eq!((again.f_names, again.node_names), (a.f_names, a.node_names));
    }
}
