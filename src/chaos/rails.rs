//! The blast-radius rail: before anything runs, refuse a nemesis schedule whose faults can hit
//! so many nodes that the untouched ones no longer form a majority (or that hit every node),
//! unless `--allow-majority`; and refuse faults chaos cannot serve (client stalls: there are no
//! clients of ours; kill, pause, promote and `primaries` targets without a system that can).
//!
//! "Hit" per fault: a targeted fault (clock, loss, bandwidth, delay, ssh-drop, pause) hits as
//! many nodes as its target chooses (`one` 1, `minority` (n−1)/2 at least 1, `majority` n/2+1,
//! `all` n, `primaries` / `primaries-or-one` counted as one leader); a partition hits every node
//! outside the largest group of nodes that still hear each other both ways (the partition is
//! built from its shape as the nemesis would; shapes are symmetric, so one draw tells the size).
//! A fault is allowed when n − hit ≥ n/2 + 1. Pure: no IO.

use crate::faults::Targets;
use crate::spec::{FaultSpec, NemesisSpec};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What the system named with `--db` lets chaos do (all false without one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Abilities {
    /// SIGSTOP/SIGCONT its process (`pause`).
    pub pause: bool,
    /// Name its current leaders (`primaries` targets and partition shape).
    pub primaries: bool,
}

/// Why a fault of the schedule was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The fault as written: `partition (shape halves)`, `clock (targets majority)`.
    pub fault: String,
    /// Why, in words, with what to do instead.
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fault {}: {}", self.fault, self.why)
    }
}

/// The fault as a user wrote it: its kind and the key that says whom it hits.
pub fn describe(fault: &FaultSpec) -> String {
    fault.def().describe()
}

/// Nodes a fault can hit out of `n` (see the module doc); `None` for faults that hit no node.
pub fn hit(fault: &FaultSpec, n: usize) -> Option<usize> {
    let targeted = |t: Targets| match t {
        Targets::One | Targets::Primaries | Targets::PrimariesOrOne => 1.min(n),
        Targets::Minority => (n.saturating_sub(1) / 2).max(1).min(n),
        Targets::Majority => (n / 2 + 1).min(n),
        Targets::All => n,
    };
    let needs = fault.needs();
    match fault {
        FaultSpec::Partition(p) => Some(partition_hit(&p.shape, n)),
        _ if needs.promote || needs.membership => Some(1.min(n)),
        other => other.targets().map(targeted),
    }
}

/// Nodes outside the largest group that still hears itself both ways under `shape` on `n` nodes.
fn partition_hit(shape: &str, n: usize) -> usize {
    let names: Vec<String> = (1..=n).map(|i| format!("n{i}")).collect();
    let leader = names.first().cloned().into_iter().collect::<Vec<_>>();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let Some(g) = crate::nemesis::grudge_for_with(shape, &names, &leader, &mut rng) else {
        return n;
    };
    let drops = |a: usize, b: usize| g.get(&names[a]).is_some_and(|s| s.contains(&names[b]));
    let adjacent: Vec<Vec<bool>> = (0..n)
        .map(|a| {
            (0..n)
                .map(|b| a != b && !drops(a, b) && !drops(b, a))
                .collect()
        })
        .collect();
    n - largest_clique(&adjacent)
}

/// Size of the largest set of pairwise adjacent vertices (Bron–Kerbosch with pivoting; the
/// graphs here have one vertex per node).
fn largest_clique(adjacent: &[Vec<bool>]) -> usize {
    fn grow(adj: &[Vec<bool>], size: usize, p: Vec<usize>, x: Vec<usize>, best: &mut usize) {
        if p.is_empty() && x.is_empty() {
            *best = (*best).max(size);
            return;
        }
        if size + p.len() <= *best {
            return;
        }
        let pivot = p
            .iter()
            .chain(&x)
            .copied()
            .max_by_key(|&u| p.iter().filter(|&&v| adj[u][v]).count());
        let candidates: Vec<usize> = p
            .iter()
            .copied()
            .filter(|&v| pivot.is_none_or(|u| !adj[u][v]))
            .collect();
        let (mut p, mut x) = (p, x);
        for v in candidates {
            let np = p.iter().copied().filter(|&w| adj[v][w]).collect();
            let nx = x.iter().copied().filter(|&w| adj[v][w]).collect();
            grow(adj, size + 1, np, nx, best);
            p.retain(|&w| w != v);
            x.push(v);
        }
    }
    let mut best = 0;
    grow(
        adjacent,
        0,
        (0..adjacent.len()).collect(),
        Vec::new(),
        &mut best,
    );
    best
}

/// Every fault of `spec` chaos refuses on `n` nodes, in schedule order: what it cannot serve
/// (with `abilities`), and — unless `allow_majority` — what can leave fewer than a majority of
/// the nodes untouched.
pub fn check(
    spec: &NemesisSpec,
    n: usize,
    abilities: Abilities,
    allow_majority: bool,
) -> Vec<Refusal> {
    let mut out = Vec::new();
    for fault in &spec.faults {
        let refuse = |why: String| Refusal {
            fault: describe(fault),
            why,
        };
        let needs_pause = fault.needs().pause;
        let why = if let Some(why) = fault.def().chaos_refusal() {
            Some(why)
        } else if needs_pause && !abilities.pause {
            Some("pause needs --db naming the system whose processes to stop and continue")
        } else if fault.aims_at_primaries() && !abilities.primaries {
            Some("`primaries` needs --db naming a system that can tell its leaders")
        } else {
            None
        };
        if let Some(why) = why {
            out.push(refuse(why.into()));
            continue;
        }
        if allow_majority {
            continue;
        }
        let Some(hits) = hit(fault, n) else { continue };
        let majority = n / 2 + 1;
        if n - hits < majority {
            let which = if hits >= n {
                format!("every node ({n} of {n})")
            } else {
                format!("{hits} of {n} nodes")
            };
            out.push(refuse(format!(
                "can hit {which}, leaving {} untouched, fewer than a majority ({majority}); \
                 pass --allow-majority to allow it",
                n - hits
            )));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(faults: Vec<FaultSpec>) -> NemesisSpec {
        let mut s = crate::spec::load_nemesis("none").unwrap();
        s.faults = faults;
        s
    }

    use crate::faults::packet::LossSpec;

    fn partition(shape: &str) -> FaultSpec {
        FaultSpec::Partition(crate::faults::partition::PartitionSpec::new(shape))
    }

    #[test]
    fn partition_shapes_hit_the_nodes_outside_the_largest_connected_group() {
        assert_eq!(partition_hit("one", 5), 1);
        assert_eq!(partition_hit("halves", 5), 2);
        assert_eq!(partition_hit("halves", 4), 2);
        // Every node sees a majority, but no majority sees itself whole.
        assert!(partition_hit("majorities-ring", 5) >= 3);
        assert_eq!(partition_hit("bridge", 5), 2);
        assert_eq!(partition_hit("primaries", 5), 1);
        for shape in crate::faults::PARTITION_SHAPES {
            let h = partition_hit(shape, 5);
            assert!(h <= 5, "{shape}: {h}");
        }
    }

    #[test]
    fn minority_faults_pass_and_majority_faults_are_refused_naming_fault_and_target() {
        let ok = spec(vec![
            partition("one"),
            partition("halves"),
            FaultSpec::clock("bump", Targets::Minority),
            FaultSpec::Loss(LossSpec {
                targets: Targets::One,
                probability: 0.5,
            }),
        ]);
        assert_eq!(check(&ok, 5, Abilities::default(), false), vec![]);
        let bad = spec(vec![
            FaultSpec::clock("bump", Targets::Majority),
            FaultSpec::Loss(LossSpec {
                targets: Targets::All,
                probability: 0.5,
            }),
            partition("majorities-ring"),
        ]);
        let refused = check(&bad, 5, Abilities::default(), false);
        let text: Vec<String> = refused.iter().map(|r| r.to_string()).collect();
        assert_eq!(refused.len(), 3, "{text:?}");
        assert!(
            text[0].contains("clock bump (targets majority)"),
            "{}",
            text[0]
        );
        assert!(text[0].contains("3 of 5 nodes") && text[0].contains("--allow-majority"));
        assert!(text[1].contains("loss (targets all)") && text[1].contains("every node"));
        assert!(text[2].contains("partition (shape majorities-ring)"));
        assert!(check(&bad, 5, Abilities::default(), true).is_empty());
    }

    #[test]
    fn small_clusters_have_no_fault_to_spare() {
        // Two nodes: losing one loses the majority; halves of four likewise.
        let one = spec(vec![FaultSpec::clock("bump", Targets::One)]);
        assert_eq!(check(&one, 2, Abilities::default(), false).len(), 1);
        assert_eq!(check(&one, 3, Abilities::default(), false).len(), 0);
        let halves = spec(vec![partition("halves")]);
        assert_eq!(check(&halves, 4, Abilities::default(), false).len(), 1);
        assert_eq!(check(&halves, 5, Abilities::default(), false).len(), 0);
    }

    #[test]
    fn faults_chaos_cannot_serve_are_refused_even_with_allow_majority() {
        let s = spec(vec![
            FaultSpec::Kill(Default::default()),
            FaultSpec::Pause(Default::default()),
            FaultSpec::Promote(Default::default()),
            FaultSpec::Stall(crate::faults::stall::StallSpec {
                min_ms: 1,
                max_ms: 2,
            }),
            partition("primaries"),
        ]);
        let refused = check(&s, 5, Abilities::default(), true);
        assert_eq!(refused.len(), 5, "{refused:?}");
        assert!(refused[1].why.contains("--db"));
        let with_db = Abilities {
            pause: true,
            primaries: true,
        };
        let left: Vec<String> = check(&s, 5, with_db, true)
            .iter()
            .map(|r| r.fault.clone())
            .collect();
        assert_eq!(left, vec!["kill (targets one)", "promote", "stall"]);
    }

    #[test]
    fn largest_clique_of_small_graphs() {
        let full = vec![
            vec![false, true, true],
            vec![true, false, true],
            vec![true, true, false],
        ];
        assert_eq!(largest_clique(&full), 3);
        let none = vec![vec![false; 3]; 3];
        assert_eq!(largest_clique(&none), 1);
        assert_eq!(largest_clique(&[]), 0);
    }
}
