//! One key's acknowledged versions as a Fenwick tree ([`KeyAcks`]), for the session checker's
//! stale-read counts: how many acknowledged versions are newer than a read's, and the earliest
//! ack among them. Does not own when versions are acknowledged or read (`check`).

/// Fenwick tree over one key's sorted distinct acknowledged versions: count of inserted ranks and
/// minimum ack time over rank suffixes.
pub(super) struct KeyAcks {
    versions: Vec<i64>,
    inserted: Vec<bool>,
    count_tree: Vec<u32>,
    min_tree: Vec<u64>,
    total: u64,
}

impl KeyAcks {
    pub(super) fn new(mut versions: Vec<i64>) -> KeyAcks {
        versions.sort_unstable();
        versions.dedup();
        let n = versions.len();
        KeyAcks {
            versions,
            inserted: vec![false; n],
            count_tree: vec![0; n + 1],
            min_tree: vec![u64::MAX; n + 1],
            total: 0,
        }
    }

    pub(super) fn insert(&mut self, version: i64, ack_ns: u64) {
        let Ok(rank) = self.versions.binary_search(&version) else {
            return;
        };
        if self.inserted[rank] {
            return;
        }
        self.inserted[rank] = true;
        self.total += 1;
        let n = self.versions.len();
        let mut i = rank + 1;
        while i <= n {
            self.count_tree[i] += 1;
            i += i & i.wrapping_neg();
        }
        // Reversed index so that a prefix of the min tree is a suffix of ranks.
        let mut j = n - rank;
        while j <= n {
            if ack_ns < self.min_tree[j] {
                self.min_tree[j] = ack_ns;
            }
            j += j & j.wrapping_neg();
        }
    }

    /// The newest version inserted so far.
    pub(super) fn newest(&self) -> Option<i64> {
        let rank = self.inserted.iter().rposition(|&b| b)?;
        Some(self.versions[rank])
    }

    /// (acknowledged versions newer than `version`, earliest ack time among them).
    pub(super) fn newer_than(&self, version: i64) -> (u64, Option<u64>) {
        let r = self.versions.partition_point(|&v| v <= version);
        let mut at_or_below = 0u64;
        let mut i = r;
        while i > 0 {
            at_or_below += u64::from(self.count_tree[i]);
            i -= i & i.wrapping_neg();
        }
        let newer = self.total - at_or_below;
        if newer == 0 {
            return (0, None);
        }
        let mut min = u64::MAX;
        let mut j = self.versions.len() - r;
        while j > 0 {
            min = min.min(self.min_tree[j]);
            j -= j & j.wrapping_neg();
        }
        (newer, (min != u64::MAX).then_some(min))
    }
}
