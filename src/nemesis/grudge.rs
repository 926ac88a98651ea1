//! Grudges: who drops whose packets in a partition (node → nodes it must not hear from), built by
//! small pure functions from a seeded RNG — the named partition shapes of schedules and op
//! values. Pure: no IO. Does not own applying them (iptables rules, `Nemesis::partition`).

use crate::faults::PRIMARIES_SHAPE;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

/// Node name → names of nodes whose packets it drops.
pub type Grudge = BTreeMap<String, BTreeSet<String>>;

/// A grudge in which every node drops traffic from every node outside its own component.
pub fn complete_grudge(components: &[Vec<String>]) -> Grudge {
    let mut g = Grudge::new();
    for (i, comp) in components.iter().enumerate() {
        let others: BTreeSet<String> = components
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .flat_map(|(_, c)| c.iter().cloned())
            .collect();
        for n in comp {
            if !others.is_empty() {
                g.insert(n.clone(), others.clone());
            }
        }
    }
    g
}

/// Cut one random node off from all others.
pub fn isolate_one(nodes: &[String], rng: &mut ChaCha8Rng) -> Grudge {
    let mut shuffled = nodes.to_vec();
    shuffled.shuffle(rng);
    let Some((one, rest)) = shuffled.split_first() else {
        return Grudge::new();
    };
    complete_grudge(&[vec![one.clone()], rest.to_vec()])
}

/// Split the nodes into two random halves (the smaller half is the minority).
pub fn random_halves(nodes: &[String], rng: &mut ChaCha8Rng) -> Grudge {
    let mut shuffled = nodes.to_vec();
    shuffled.shuffle(rng);
    let (a, b) = shuffled.split_at(nodes.len() / 2);
    complete_grudge(&[a.to_vec(), b.to_vec()])
}

/// Every node sees a majority, but no two nodes see the same majority (Jepsen's
/// `majorities-ring`): nodes on a shuffled ring; each window of `n/2+1` consecutive nodes is the
/// view of its middle node, which drops everyone outside it.
pub fn majorities_ring(nodes: &[String], rng: &mut ChaCha8Rng) -> Grudge {
    let n = nodes.len();
    if n < 3 {
        return Grudge::new();
    }
    let mut ring = nodes.to_vec();
    ring.shuffle(rng);
    let m = n / 2 + 1;
    let mut g = Grudge::new();
    for start in 0..n {
        let window: BTreeSet<String> = (0..m).map(|k| ring[(start + k) % n].clone()).collect();
        let center = ring[(start + m / 2) % n].clone();
        let outside: BTreeSet<String> = nodes
            .iter()
            .filter(|x| !window.contains(*x))
            .cloned()
            .collect();
        if !outside.is_empty() {
            g.insert(center, outside);
        }
    }
    g
}

/// Two halves joined by one bridge node that sees both sides (Jepsen's `bridge`).
pub fn bridge(nodes: &[String], rng: &mut ChaCha8Rng) -> Grudge {
    let mut shuffled = nodes.to_vec();
    shuffled.shuffle(rng);
    if shuffled.len() < 3 {
        return Grudge::new();
    }
    let (a, b) = shuffled.split_at(nodes.len() / 2);
    let (bridge_node, b_rest) = b.split_first().expect("b has at least two nodes");
    let mut g = complete_grudge(&[a.to_vec(), b_rest.to_vec(), vec![bridge_node.clone()]]);
    // The bridge talks to everyone and everyone to the bridge.
    g.remove(bridge_node);
    for set in g.values_mut() {
        set.remove(bridge_node);
    }
    g.retain(|_, s| !s.is_empty());
    g
}

/// Cut a random third of the nodes (at least one) off from the rest.
pub fn minority_third(nodes: &[String], rng: &mut ChaCha8Rng) -> Grudge {
    let mut shuffled = nodes.to_vec();
    shuffled.shuffle(rng);
    let k = (nodes.len() / 3).max(1).min(nodes.len());
    let (a, b) = shuffled.split_at(k);
    complete_grudge(&[a.to_vec(), b.to_vec()])
}

/// Asymmetric, one-way partition: a random half drops packets from the other half, which still
/// receives everything.
pub fn one_way(nodes: &[String], rng: &mut ChaCha8Rng) -> Grudge {
    let mut shuffled = nodes.to_vec();
    shuffled.shuffle(rng);
    let (senders, receivers) = shuffled.split_at(nodes.len() / 2);
    let from: BTreeSet<String> = senders.iter().cloned().collect();
    if from.is_empty() {
        return Grudge::new();
    }
    receivers
        .iter()
        .map(|r| (r.clone(), from.clone()))
        .collect()
}

/// Cut the given nodes (e.g. the current leaders) off from all the others. Names not in `nodes`
/// are ignored; no chosen node, or all of them, gives the empty grudge.
pub fn isolate_nodes(chosen: &[String], nodes: &[String]) -> Grudge {
    let (inside, outside): (Vec<String>, Vec<String>) =
        nodes.iter().cloned().partition(|n| chosen.contains(n));
    if inside.is_empty() || outside.is_empty() {
        return Grudge::new();
    }
    complete_grudge(&[inside, outside])
}

/// Build the grudge of a named shape; `None` for an unknown name. `primaries` here knows no
/// leader and gives the empty grudge: use [`grudge_for_with`].
pub fn grudge_for(shape: &str, nodes: &[String], rng: &mut ChaCha8Rng) -> Option<Grudge> {
    grudge_for_with(shape, nodes, &[], rng)
}

/// Build the grudge of a named shape, given the system's current primaries (for the
/// `primaries` shape: isolate them from the rest); `None` for an unknown name.
pub fn grudge_for_with(
    shape: &str,
    nodes: &[String],
    primaries: &[String],
    rng: &mut ChaCha8Rng,
) -> Option<Grudge> {
    Some(match shape {
        PRIMARIES_SHAPE => isolate_nodes(primaries, nodes),
        "one" => isolate_one(nodes, rng),
        "halves" => random_halves(nodes, rng),
        "majorities-ring" => majorities_ring(nodes, rng),
        "bridge" => bridge(nodes, rng),
        "minority-third" => minority_third(nodes, rng),
        "one-way" => one_way(nodes, rng),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::PARTITION_SHAPES;
    use rand::SeedableRng;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn complete_grudge_is_symmetric_across_components() {
        let g = complete_grudge(&[vec!["n1".into()], vec!["n2".into(), "n3".into()]]);
        assert_eq!(
            g["n1"],
            BTreeSet::from(["n2".to_string(), "n3".to_string()])
        );
        assert_eq!(g["n2"], BTreeSet::from(["n1".to_string()]));
        assert_eq!(g["n3"], BTreeSet::from(["n1".to_string()]));
    }

    #[test]
    fn isolate_one_cuts_exactly_one_node_off() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..50 {
            let g = isolate_one(&nodes(5), &mut rng);
            let lonely: Vec<_> = g.iter().filter(|(_, s)| s.len() == 4).collect();
            assert_eq!(lonely.len(), 1);
            assert!(g.values().filter(|s| s.len() == 1).count() == 4);
        }
    }

    #[test]
    fn halves_split_into_minority_and_majority() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let g = random_halves(&nodes(5), &mut rng);
        assert_eq!(g.values().filter(|s| s.len() == 3).count(), 2);
        assert_eq!(g.values().filter(|s| s.len() == 2).count(), 3);
        // Same seed, same split.
        let g2 = random_halves(&nodes(5), &mut ChaCha8Rng::seed_from_u64(1));
        assert_eq!(g, g2);
    }

    /// Who can hear whom under a grudge: `hears(g, a, b)` = a accepts packets from b.
    fn hears(g: &Grudge, a: &str, b: &str) -> bool {
        g.get(a).is_none_or(|s| !s.contains(b))
    }

    #[test]
    fn majorities_ring_gives_every_node_a_distinct_majority() {
        for n in [3, 5, 7] {
            let nodes = nodes(n);
            let g = majorities_ring(&nodes, &mut ChaCha8Rng::seed_from_u64(n as u64));
            let views: BTreeSet<Vec<&String>> = nodes
                .iter()
                .map(|a| nodes.iter().filter(|b| hears(&g, a, b)).collect())
                .collect();
            assert_eq!(views.len(), n, "views must differ: {g:?}");
            for a in &nodes {
                let seen = nodes.iter().filter(|b| hears(&g, a, b)).count();
                assert_eq!(seen, n / 2 + 1, "{a} sees {seen} of {n}: {g:?}");
            }
        }
    }

    #[test]
    fn bridge_node_hears_everyone_and_the_sides_do_not_hear_each_other() {
        let nodes = nodes(5);
        let g = bridge(&nodes, &mut ChaCha8Rng::seed_from_u64(4));
        let bridged: Vec<&String> = nodes
            .iter()
            .filter(|b| nodes.iter().all(|a| hears(&g, a, b) && hears(&g, b, a)))
            .collect();
        assert_eq!(bridged.len(), 1, "{g:?}");
        let others: Vec<&String> = nodes.iter().filter(|n| !bridged.contains(n)).collect();
        let cut = others
            .iter()
            .flat_map(|a| others.iter().map(move |b| (a, b)))
            .filter(|(a, b)| !hears(&g, a, b))
            .count();
        assert_eq!(
            cut,
            2 * 2 * 2,
            "two sides of two nodes cut both ways: {g:?}"
        );
    }

    #[test]
    fn minority_third_and_one_way() {
        let nodes = nodes(6);
        let g = minority_third(&nodes, &mut ChaCha8Rng::seed_from_u64(2));
        assert_eq!(g.values().filter(|s| s.len() == 4).count(), 2, "{g:?}");
        let g = one_way(&nodes, &mut ChaCha8Rng::seed_from_u64(2));
        assert_eq!(g.len(), 3);
        for (receiver, senders) in &g {
            for s in senders {
                assert!(!hears(&g, receiver, s));
                assert!(
                    hears(&g, s, receiver),
                    "one-way must leave the reverse direction open"
                );
            }
        }
        assert!(grudge_for("triangle", &nodes, &mut ChaCha8Rng::seed_from_u64(1)).is_none());
        for shape in PARTITION_SHAPES {
            assert!(grudge_for(shape, &nodes, &mut ChaCha8Rng::seed_from_u64(1)).is_some());
        }
    }
}
