//! The machine's memory, for the default memory budget of a check (impure shell: reads
//! `/proc/meminfo`). Owns reading `MemAvailable` and the default budget drawn from it, which `check`,
//! `run` and `report` hand down to the checker as a number (the checker core reads no files). Does
//! not own enforcing the budget (`checker::linear`) or `--memory` parsing (`size`).

/// The default budget when the machine's memory cannot be read.
pub const FALLBACK_BUDGET: usize = 1 << 30;

/// The largest default budget, whatever the machine has: a search that needs more rarely finishes
/// in a check's time limit anyway, and the whole check (history, witnesses, allocator) should stay
/// under 2 GiB by default. `--memory` goes past it.
pub const MAX_DEFAULT_BUDGET: usize = 1 << 30;

/// The smallest default budget.
pub const MIN_DEFAULT_BUDGET: usize = 64 << 20;

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub fn mem_available(meminfo: &str) -> Option<usize> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line["MemAvailable:".len()..].split_whitespace();
    let n: usize = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// The default memory budget for `available` bytes of free memory: a quarter of it, between
/// [`MIN_DEFAULT_BUDGET`] and [`MAX_DEFAULT_BUDGET`]; [`FALLBACK_BUDGET`] when unknown.
pub fn default_budget_for(available: Option<usize>) -> usize {
    match available {
        Some(a) => (a / 4).clamp(MIN_DEFAULT_BUDGET, MAX_DEFAULT_BUDGET),
        None => FALLBACK_BUDGET,
    }
}

/// The default memory budget of a check on this machine (see [`default_budget_for`]).
pub fn default_budget() -> usize {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_available(&t));
    default_budget_for(available)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_and_bounds_the_default() {
        let text = "MemTotal:       24683664 kB\nMemFree:        17841936 kB\nMemAvailable:    2097152 kB\n";
        assert_eq!(mem_available(text), Some(2 << 30));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
        assert_eq!(default_budget_for(Some(2 << 30)), 512 << 20);
        assert_eq!(default_budget_for(Some(64 << 30)), MAX_DEFAULT_BUDGET);
        assert_eq!(default_budget_for(Some(1 << 20)), MIN_DEFAULT_BUDGET);
        assert_eq!(default_budget_for(None), FALLBACK_BUDGET);
    }
}
