//! The one list of the faults the nemesis performs ([`registry`]), in the order a heal undoes
//! them. Adding a fault is one line here (and its module beside this one). Does not own what a
//! fault is (`fault::Fault`) nor dispatching to one (`Nemesis::invoke`).

use super::fault::Fault;

/// Every fault the nemesis performs, in the order a heal undoes them: network faults first (so
/// the nodes can talk again), then processes, disks and files, clocks, SSH.
pub fn registry() -> Vec<Box<dyn Fault>> {
    vec![
        Box::new(super::loss::Loss::default()),
        Box::new(super::bandwidth::Bandwidth::default()),
        Box::new(super::delay::Delay::default()),
        Box::new(super::partition::Partition::default()),
        Box::new(super::pause::Pause::default()),
        Box::new(super::membership::MembershipFault::default()),
        Box::new(super::kill::Kill::default()),
        Box::new(super::power::Power::default()),
        Box::new(super::disk::Disk::default()),
        Box::new(super::corrupt::Corrupt::default()),
        Box::new(super::promote::Promote),
        Box::new(super::clock::Clock::default()),
        Box::new(super::ssh_drop::SshDrop::default()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::{KINDS, Verb, verb};

    #[test]
    fn every_fault_verb_is_served_by_exactly_one_registered_fault() {
        let faults = registry();
        let mut served: Vec<Verb> = faults.iter().flat_map(|f| f.verbs().to_vec()).collect();
        let n = served.len();
        served.sort_by_key(|v| v.as_str());
        served.dedup();
        assert_eq!(served.len(), n, "a verb is served twice");
        for k in KINDS.iter().filter(|k| k.name != "stall") {
            for f in k.start_verbs.iter().chain(k.stop_verbs) {
                let v = Verb::parse(f).unwrap();
                assert!(served.contains(&v), "{f} ({}) has no fault", k.name);
            }
        }
        // Measurements and journal-only verbs are no kind's, but the clock measures offsets.
        assert!(served.contains(&Verb::ClockOffsets));
        for v in [verb::START_STALL, verb::STOP_STALL, verb::DB_STATUS] {
            assert!(!served.contains(&Verb::parse(v).unwrap()), "{v}");
        }
        let names: Vec<&str> = faults.iter().map(|f| f.name()).collect();
        for name in &names {
            assert!(
                crate::faults::kind(name).is_some(),
                "{name} is no kind of faults::KINDS"
            );
        }
    }
}
