//! Which nodes are out of the cluster right now: retired by a membership change (removed,
//! stopped, wiped) and not added back yet. The membership fault writes it; the interpreter reads
//! it so a client thread bound to a retired node works through another member until its node
//! returns (and the history's `node` of each op says which node served it).
//!
//! Owns the shared set and [`MemberBoard::serving`], the choice of the node a thread uses. Does
//! not own deciding when a change is confirmed (the membership fault) nor building clients (the
//! runner hands the interpreter a factory).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The nodes out of the cluster, shared between the nemesis and the interpreter. Cheap to
/// clone; every clone is the same board.
#[derive(Debug, Clone, Default)]
pub struct MemberBoard {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    out: RwLock<BTreeSet<String>>,
    /// Bumped on every change, so a reader checks one number per op.
    generation: AtomicU64,
}

impl MemberBoard {
    /// A board with every node in the cluster.
    pub fn new() -> MemberBoard {
        MemberBoard::default()
    }

    /// `node` left the cluster (retired).
    pub fn retire(&self, node: &str) {
        let mut out = self.inner.out.write().unwrap_or_else(|p| p.into_inner());
        if out.insert(node.to_string()) {
            self.inner.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// `node` is a member again.
    pub fn restore(&self, node: &str) {
        let mut out = self.inner.out.write().unwrap_or_else(|p| p.into_inner());
        if out.remove(node) {
            self.inner.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// A number that changes whenever the board does.
    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    /// Whether `node` is out of the cluster.
    pub fn is_out(&self, node: &str) -> bool {
        self.inner
            .out
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(node)
    }

    /// The index in `nodes` of the node a thread whose own node is `nodes[home]` works
    /// through: its own while it is a member, else the next member after it in `nodes`' order
    /// (so the threads of a retired node spread as the nodes are listed, the same way every
    /// run); its own when every node is out.
    pub fn serving(&self, nodes: &[String], home: usize) -> usize {
        let out = self.inner.out.read().unwrap_or_else(|p| p.into_inner());
        let n = nodes.len();
        (0..n)
            .map(|k| (home + k) % n)
            .find(|&i| !out.contains(&nodes[i]))
            .unwrap_or(home)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retired_nodes_threads_go_to_the_next_member_and_come_back() {
        let nodes: Vec<String> = ["n1", "n2", "n3"].map(String::from).to_vec();
        let board = MemberBoard::new();
        let g0 = board.generation();
        assert_eq!(board.serving(&nodes, 1), 1);
        board.retire("n2");
        assert!(board.is_out("n2") && board.generation() > g0);
        assert_eq!(board.serving(&nodes, 1), 2);
        assert_eq!(board.serving(&nodes, 0), 0);
        board.retire("n3");
        assert_eq!(board.serving(&nodes, 1), 0, "wraps around to n1");
        let g = board.generation();
        board.retire("n3");
        assert_eq!(board.generation(), g, "no change, no new generation");
        board.restore("n2");
        assert_eq!(board.serving(&nodes, 1), 1);
        board.retire("n1");
        board.retire("n2");
        assert_eq!(board.serving(&nodes, 2), 2, "all out: its own");
        // Clones are the same board.
        let other = board.clone();
        other.restore("n1");
        assert!(!board.is_out("n1"));
    }
}
