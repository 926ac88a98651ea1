//! Simulated-time tests of every generator, driven by the test-only [`super::sim::Sim`].
//!
//! Owns behavioural assertions (counts, timing bounds, determinism, thread and key discipline).
//! Does not test the interpreter itself.

use super::sim::{End, Sim};
use super::*;
use crate::history::{Op, OpType, Process};
use rand::SeedableRng;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn spec(f: &str) -> OpSpec {
    OpSpec::new(f, Some("k".to_string()), Value::Null)
}

fn ops(f: &'static str) -> Repeat<impl FnMut(&Context, &mut ChaCha8Rng) -> Option<OpSpec> + Send> {
    repeat(move |_, _| Some(spec(f)))
}

fn fs(sim: &Sim) -> Vec<String> {
    sim.dispatched.iter().map(|i| i.f.clone()).collect()
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn ctx_with_free(client_threads: usize, free: &[ThreadId]) -> Context {
    let mut ctx = Context::new(client_threads, vec!["n1".to_string()]);
    ctx.free = free.iter().copied().collect();
    ctx
}

// ---------------------------------------------------------------------------------------------
// Leaves

#[test]
fn once_emits_exactly_one_op_on_a_client_thread() {
    let mut sim = Sim::new(3, 1);
    assert_eq!(sim.run(&mut once(spec("read")), 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 1);
    assert!(sim.dispatched[0].thread < 3);
    assert_eq!(sim.completions().count(), 1);
}

#[test]
fn once_is_pending_while_every_client_is_busy() {
    let mut g = once(spec("read"));
    let mut r = rng(1);
    assert_eq!(
        g.next(&ctx_with_free(2, &[NEMESIS_THREAD]), &mut r),
        Next::Pending
    );
    match g.next(&ctx_with_free(2, &[1, NEMESIS_THREAD]), &mut r) {
        Next::Op(op) => assert_eq!(op.thread, 1),
        other => panic!("expected an op, got {other:?}"),
    }
    assert_eq!(g.next(&ctx_with_free(2, &[0, 1]), &mut r), Next::Done);
}

#[test]
fn once_on_waits_for_its_thread() {
    let mut g = once_on(NEMESIS_THREAD, spec("kill"));
    let mut r = rng(1);
    assert_eq!(g.next(&ctx_with_free(2, &[0, 1]), &mut r), Next::Pending);
    let mut ctx = ctx_with_free(2, &[NEMESIS_THREAD]);
    ctx.time_ns = 7;
    assert_eq!(
        g.next(&ctx, &mut r),
        Next::Op(spec("kill").at(NEMESIS_THREAD, 7))
    );
    assert_eq!(g.next(&ctx, &mut r), Next::Done);
}

#[test]
fn repeat_runs_until_none_and_only_calls_f_when_a_thread_is_free() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let mut g = repeat(move |_, _| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        (n < 7).then(|| spec("write"))
    });
    let mut r = rng(3);
    assert_eq!(g.next(&ctx_with_free(2, &[]), &mut r), Next::Pending);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let mut sim = Sim::new(2, 3);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 7);
    assert_eq!(calls.load(Ordering::SeqCst), 8);
    assert_eq!(g.next(&sim.ctx, &mut r), Next::Done);
}

#[test]
fn from_fn_hands_control_to_the_closure() {
    let mut left = 3;
    let mut g = from_fn(move |ctx: &Context, _r: &mut ChaCha8Rng| {
        if left == 0 {
            return Next::Done;
        }
        if !ctx.is_free(1) {
            return Next::Pending;
        }
        left -= 1;
        Next::Op(spec("read").at(1, ctx.time_ns))
    });
    let mut sim = Sim::new(4, 1);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 3);
    assert!(sim.dispatched.iter().all(|i| i.thread == 1));
    // one at a time on thread 1: each invoke after the previous 1 ms completion
    for w in sim.dispatched.windows(2) {
        assert!(w[1].time_ns >= w[0].time_ns + MS);
    }
}

// ---------------------------------------------------------------------------------------------
// Choice and bounds

#[test]
fn mix_chooses_uniformly() {
    let mut g = limit(
        3000,
        mix(vec![boxed(ops("a")), boxed(ops("b")), boxed(ops("c"))]),
    );
    let mut sim = Sim::new(4, 11);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for f in fs(&sim) {
        *counts.entry(f).or_default() += 1;
    }
    assert_eq!(counts.len(), 3);
    for (f, n) in counts {
        assert!((850..=1150).contains(&n), "{f}: {n}");
    }
}

#[test]
fn mix_drops_done_children_and_skips_pending_ones() {
    let mut g = limit(
        100,
        mix(vec![
            boxed(limit(10, ops("a"))),
            boxed(ops("b")),
            // never free in this sim's nemesis-less use: the nemesis is busy below
            boxed(once_on(NEMESIS_THREAD, spec("never"))),
        ]),
    );
    let mut sim = Sim::new(2, 5);
    sim.ctx.free.remove(&NEMESIS_THREAD);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let f = fs(&sim);
    assert_eq!(f.len(), 100);
    assert_eq!(f.iter().filter(|f| *f == "a").count(), 10);
    assert_eq!(f.iter().filter(|f| *f == "b").count(), 90);
    assert_eq!(mix(vec![]).next(&sim.ctx, &mut rng(1)), Next::Done);
    let mut all_done = mix(vec![boxed(limit(0, ops("a"))), boxed(limit(0, ops("b")))]);
    assert_eq!(all_done.next(&sim.ctx, &mut rng(1)), Next::Done);
}

#[test]
fn limit_stops_after_n_ops() {
    let mut sim = Sim::new(3, 2);
    assert_eq!(sim.run(&mut limit(5, ops("read")), 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 5);
    assert_eq!(sim.completions().count(), 5);
    let mut zero = limit(0, ops("read"));
    assert_eq!(zero.next(&sim.ctx, &mut rng(1)), Next::Done);
}

#[test]
fn time_limit_counts_from_first_ask_and_stops_at_the_deadline() {
    let mut g = seq(vec![
        boxed(sleep(S)),
        boxed(time_limit(2 * S, stagger(10 * MS, ops("read")))),
    ]);
    let mut sim = Sim::new(4, 9);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let first = sim.dispatched.first().map(|i| i.time_ns).unwrap_or(0);
    let last = sim.dispatched.last().map(|i| i.time_ns).unwrap_or(0);
    // sleep ends within one 1 ms tick of 1 s; ops run until just before 3 s
    assert!((S..=S + MS).contains(&first), "first op at {first}");
    assert!(last < 3 * S + MS, "last op at {last}");
    assert!(last > 3 * S - 100 * MS, "last op at {last}");
    assert!(
        sim.ctx.time_ns < 3 * S + 2 * MS,
        "ended at {}",
        sim.ctx.time_ns
    );
    // ~200 ops at 10 ms mean
    assert!(
        (170..=230).contains(&sim.dispatched.len()),
        "{}",
        sim.dispatched.len()
    );
}

#[test]
fn time_limit_drops_an_op_scheduled_past_the_deadline() {
    let mut g = time_limit(S, delay(2 * S, ops("read")));
    let mut sim = Sim::new(2, 1);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    assert_eq!(
        sim.dispatched.len(),
        1,
        "the second op (at 2 s) is past the 1 s limit"
    );
}

// ---------------------------------------------------------------------------------------------
// Pacing

#[test]
fn stagger_mean_rate_is_within_ten_percent_over_10000_ops() {
    let mut g = limit(10_000, stagger(MS, ops("read")));
    let mut sim = Sim::new(8, 21).with_uniform_latency(100_000, 500_000);
    assert_eq!(sim.run(&mut g, 1000 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 10_000);
    let gaps: Vec<u64> = sim
        .dispatched
        .windows(2)
        .map(|w| w[1].time_ns - w[0].time_ns)
        .collect();
    let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
    assert!(
        (0.9 * MS as f64..=1.1 * MS as f64).contains(&mean),
        "mean gap {mean}"
    );
    assert!(gaps.iter().all(|&g| g <= 2 * MS), "a gap exceeded 2 * mean");
    assert!(gaps.iter().any(|&g| g < MS / 4) && gaps.iter().any(|&g| g > 7 * MS / 4));
}

#[test]
fn delay_spaces_ops_at_least_the_interval_apart() {
    let mut g = limit(20, delay(10 * MS, ops("read")));
    let mut sim = Sim::new(4, 1);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 20);
    for w in sim.dispatched.windows(2) {
        assert_eq!(w[1].time_ns - w[0].time_ns, 10 * MS);
    }
}

#[test]
fn sleep_is_pending_until_its_duration_has_passed() {
    let mut g = sleep(10 * MS);
    let mut r = rng(1);
    let mut ctx = Context::new(1, vec![]);
    ctx.time_ns = 5 * MS;
    assert_eq!(g.next(&ctx, &mut r), Next::Pending);
    ctx.time_ns = 14 * MS;
    assert_eq!(g.next(&ctx, &mut r), Next::Pending);
    ctx.time_ns = 15 * MS;
    assert_eq!(g.next(&ctx, &mut r), Next::Done);
}

// ---------------------------------------------------------------------------------------------
// Sequencing

fn last_completion_of(sim: &Sim, f: &str) -> usize {
    sim.history
        .iter()
        .rposition(|o| o.op_type != OpType::Invoke && o.f == f)
        .unwrap_or(0)
}

fn first_invoke_of(sim: &Sim, f: &str) -> usize {
    sim.history
        .iter()
        .position(|o| o.op_type == OpType::Invoke && o.f == f)
        .unwrap_or(usize::MAX)
}

#[test]
fn phases_waits_for_every_op_of_a_phase_to_complete() {
    let mut g = phases(vec![
        boxed(limit(20, ops("a"))),
        boxed(limit(20, ops("b"))),
        boxed(limit(20, ops("c"))),
    ]);
    let mut sim = Sim::new(5, 4).with_uniform_latency(MS, 50 * MS);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 60);
    assert!(last_completion_of(&sim, "a") < first_invoke_of(&sim, "b"));
    assert!(last_completion_of(&sim, "b") < first_invoke_of(&sim, "c"));
    let f = fs(&sim);
    assert!(f[..20].iter().all(|f| f == "a") && f[20..40].iter().all(|f| f == "b"));
}

#[test]
fn seq_does_not_wait_so_phases_overlap() {
    let mut g = seq(vec![boxed(limit(20, ops("a"))), boxed(limit(20, ops("b")))]);
    let mut sim = Sim::new(5, 4).with_uniform_latency(MS, 50 * MS);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let f = fs(&sim);
    assert!(f[..20].iter().all(|f| f == "a") && f[20..].iter().all(|f| f == "b"));
    assert!(first_invoke_of(&sim, "b") < last_completion_of(&sim, "a"));
}

#[test]
fn cycle_restarts_its_generator_and_stops_on_an_empty_one() {
    let made = Arc::new(AtomicUsize::new(0));
    let m = made.clone();
    let mut g = limit(
        10,
        cycle(move || {
            m.fetch_add(1, Ordering::SeqCst);
            limit(3, ops("a"))
        }),
    );
    let mut sim = Sim::new(2, 1);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 10);
    assert_eq!(made.load(Ordering::SeqCst), 4);
    let mut empty = cycle(|| limit(0, ops("a")));
    assert_eq!(empty.next(&sim.ctx, &mut rng(1)), Next::Done);
}

#[test]
fn flip_flop_alternates_and_ends_when_either_side_ends() {
    let mut sim = Sim::new(2, 1);
    assert_eq!(
        sim.run(&mut limit(6, flip_flop(ops("a"), ops("b"))), 10 * S),
        End::Done
    );
    assert_eq!(fs(&sim), ["a", "b", "a", "b", "a", "b"]);
    let mut sim = Sim::new(2, 1);
    assert_eq!(
        sim.run(&mut flip_flop(limit(2, ops("a")), ops("b")), 10 * S),
        End::Done
    );
    assert_eq!(fs(&sim), ["a", "b", "a", "b"]);
}

// ---------------------------------------------------------------------------------------------
// Thread scoping

#[test]
fn each_thread_gives_every_client_thread_its_own_generator() {
    let mut g = each_thread(|t| {
        limit(
            2,
            repeat(move |_, _| Some(OpSpec::new("read", Some(t.to_string()), Value::Null))),
        )
    });
    let mut sim = Sim::new(4, 1).with_uniform_latency(MS, 10 * MS);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 8);
    let mut per_thread: BTreeMap<ThreadId, usize> = BTreeMap::new();
    for inv in &sim.dispatched {
        assert_eq!(inv.key.as_deref(), Some(inv.thread.to_string().as_str()));
        *per_thread.entry(inv.thread).or_default() += 1;
    }
    assert_eq!(per_thread, BTreeMap::from([(0, 2), (1, 2), (2, 2), (3, 2)]));
}

#[test]
fn each_thread_returns_the_earliest_op_and_loses_none() {
    let mut g = each_thread(|t| {
        let mut sent = false;
        from_fn(move |ctx: &Context, _r: &mut ChaCha8Rng| {
            if sent {
                return Next::Done;
            }
            let Some(thread) = ctx.free_clients().next() else {
                return Next::Pending;
            };
            sent = true;
            let at = if t == 0 { 5 * S } else { ctx.time_ns };
            Next::Op(spec("read").at(thread, at))
        })
    });
    let mut sim = Sim::new(2, 1);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    let got: Vec<(ThreadId, u64)> = sim
        .dispatched
        .iter()
        .map(|i| (i.thread, i.time_ns))
        .collect();
    assert_eq!(got, [(1, 0), (0, 5 * S)]);
}

#[test]
fn on_threads_restricts_the_threads_used() {
    let mut g = on_threads(|t: ThreadId| t.is_multiple_of(2), limit(50, ops("read")));
    let mut sim = Sim::new(6, 3).with_uniform_latency(MS, 5 * MS);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 50);
    let threads: BTreeSet<ThreadId> = sim.dispatched.iter().map(|i| i.thread).collect();
    assert_eq!(threads, BTreeSet::from([0, 2, 4]));
}

// ---------------------------------------------------------------------------------------------
// Retry

#[test]
fn until_ok_retries_one_at_a_time_until_an_ok() {
    let mut g = until_ok(ops("read"));
    let mut sim = Sim::new(3, 1);
    let mut n = 0;
    sim.outcome = Box::new(move |_, _| {
        n += 1;
        match n {
            1 => OpType::Fail,
            2 => OpType::Info,
            _ => OpType::Ok,
        }
    });
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 3);
    let types: Vec<OpType> = sim.history.iter().map(|o| o.op_type).collect();
    use OpType::*;
    assert_eq!(types, [Invoke, Fail, Invoke, Info, Invoke, Ok]);
}

#[test]
fn until_ok_of_a_limit_gives_up_after_the_limit() {
    let mut g = until_ok(limit(4, ops("read")));
    let mut sim = Sim::new(3, 1);
    sim.outcome = Box::new(|_, _| OpType::Info);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 4);
    // each info gave its thread a new process
    let procs: BTreeSet<Process> = sim.invokes().map(|o| o.process).collect();
    assert_eq!(procs.len(), 4);
}

// ---------------------------------------------------------------------------------------------
// Register workload

fn key_stats(sim: &Sim) -> BTreeMap<String, (usize, BTreeSet<ThreadId>)> {
    let mut stats: BTreeMap<String, (usize, BTreeSet<ThreadId>)> = BTreeMap::new();
    for inv in &sim.dispatched {
        let e = stats
            .entry(inv.key.clone().unwrap_or_default())
            .or_default();
        e.0 += 1;
        e.1.insert(inv.thread);
    }
    stats
}

#[test]
fn register_keys_rotate_after_ops_per_key_and_stay_within_one_group() {
    let cfg = RegisterConfig {
        threads_per_key: 2,
        ops_per_key: 10,
        ..RegisterConfig::default()
    };
    let w = register_workload(cfg).unwrap();
    let keys = w.keys_used();
    let mut g = limit(600, w);
    let mut sim = Sim::new(6, 7).with_uniform_latency(MS, 20 * MS);
    sim.outcome = Box::new(|_, r| {
        use rand::RngExt;
        if r.random_ratio(1, 10) {
            OpType::Info
        } else {
            OpType::Ok
        }
    });
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let stats = key_stats(&sim);
    let mut last_key_of_group: BTreeMap<u64, u64> = BTreeMap::new();
    for (key, (count, threads)) in &stats {
        let index: u64 = key.parse().unwrap();
        let group = index % 3;
        assert!(*count <= 10, "key {key}: {count} ops");
        assert!(threads.len() <= 2, "key {key}: threads {threads:?}");
        for t in threads {
            assert_eq!((*t / 2) as u64, group, "key {key} used by thread {t}");
        }
        let last = last_key_of_group.entry(group).or_default();
        *last = (*last).max(index);
    }
    for (key, (count, _)) in &stats {
        let index: u64 = key.parse().unwrap();
        if index != last_key_of_group[&(index % 3)] {
            assert_eq!(*count, 10, "key {key} was left before ops_per_key ops");
        }
    }
    // each group moves through its keys in order, with no gaps
    for (group, last) in &last_key_of_group {
        for index in (*group..=*last).step_by(3) {
            assert!(
                stats.contains_key(&index.to_string()),
                "key {index} skipped"
            );
        }
    }
    assert!(stats.len() >= 600 / 10);
    let used: BTreeSet<String> = stats.keys().cloned().collect();
    assert_eq!(keys.snapshot(), used);
}

#[test]
fn register_ops_follow_weights_and_value_bounds() {
    let cfg = RegisterConfig {
        read_weight: 1,
        write_weight: 2,
        cas_weight: 1,
        max_value: 3,
        threads_per_key: 3,
        ops_per_key: 50,
        key_prefix: Some("r".to_string()),
    };
    let mut g = limit(4000, register_workload(cfg).unwrap());
    let mut sim = Sim::new(5, 8);
    assert_eq!(sim.run(&mut g, 1000 * S), End::Done);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut values = BTreeSet::new();
    for inv in &sim.dispatched {
        assert!(inv.key.as_deref().is_some_and(|k| k.starts_with('r')));
        *counts.entry(inv.f.clone()).or_default() += 1;
        match inv.f.as_str() {
            "read" => assert_eq!(inv.value, Value::Null),
            "write" => {
                values.insert(inv.value.as_u64().unwrap());
            }
            "cas" => {
                let pair = inv.value.as_array().unwrap();
                assert_eq!(pair.len(), 2);
                values.insert(pair[0].as_u64().unwrap());
                values.insert(pair[1].as_u64().unwrap());
            }
            other => panic!("unexpected f {other}"),
        }
    }
    assert_eq!(values, BTreeSet::from([0, 1, 2, 3]));
    assert!((850..=1150).contains(&counts["read"]), "{counts:?}");
    assert!((1800..=2200).contains(&counts["write"]), "{counts:?}");
    assert!((850..=1150).contains(&counts["cas"]), "{counts:?}");
    // 5 threads, 3 per key: groups {0,1,2} and {3,4}
    for (key, (_, threads)) in key_stats(&sim) {
        let index: u64 = key[1..].parse().unwrap();
        let expected: BTreeSet<ThreadId> = if index.is_multiple_of(2) {
            BTreeSet::from([0, 1, 2])
        } else {
            BTreeSet::from([3, 4])
        };
        assert!(threads.is_subset(&expected), "key {key}: {threads:?}");
    }
}

#[test]
fn register_config_errors_name_the_field() {
    let bad = |cfg: RegisterConfig| register_workload(cfg).err().unwrap().to_string();
    let zero_weights = RegisterConfig {
        read_weight: 0,
        write_weight: 0,
        cas_weight: 0,
        ..RegisterConfig::default()
    };
    assert!(bad(zero_weights).contains("must not all be 0"));
    let e = bad(RegisterConfig {
        threads_per_key: 0,
        ..RegisterConfig::default()
    });
    assert_eq!(
        e,
        "register workload: threads_per_key must be at least 1, got 0"
    );
    assert!(
        bad(RegisterConfig {
            ops_per_key: 0,
            ..RegisterConfig::default()
        })
        .contains("ops_per_key")
    );
    assert!(register_workload(RegisterConfig::default()).is_ok());
}

fn composite(keys_out: &mut Option<KeyLog>) -> impl Generator {
    let w = register_workload(RegisterConfig::default()).unwrap();
    *keys_out = Some(w.keys_used());
    time_limit(2 * S, stagger(5 * MS, w))
}

fn run_composite(seed: u64) -> Vec<Op> {
    let mut keys = None;
    let mut g = composite(&mut keys);
    let mut sim = Sim::new(5, seed).with_uniform_latency(MS, 30 * MS);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    sim.history
}

#[test]
fn same_seed_same_ops_different_seed_different_ops() {
    let a = run_composite(42);
    let b = run_composite(42);
    let c = run_composite(43);
    assert!(a.len() > 100);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

// ---------------------------------------------------------------------------------------------
// Final reads

#[test]
fn final_reads_read_every_key_and_retry_on_another_thread() {
    let keys = KeyLog::from_keys(["a", "b", "c"].map(String::from));
    let mut g = final_reads_with(
        keys,
        FinalReadsConfig {
            max_attempts: 3,
            retry_delay_ns: 50 * MS,
        },
    );
    let mut sim = Sim::new(3, 1).with_uniform_latency(MS, 5 * MS);
    let mut b_reads = 0;
    sim.outcome = Box::new(move |inv, _| {
        if inv.key.as_deref() == Some("b") {
            b_reads += 1;
            if b_reads == 1 {
                return OpType::Info;
            }
        }
        OpType::Ok
    });
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    let reads: Vec<(&str, ThreadId, u64)> = sim
        .dispatched
        .iter()
        .map(|i| (i.key.as_deref().unwrap_or(""), i.thread, i.time_ns))
        .collect();
    assert!(
        sim.dispatched
            .iter()
            .all(|i| i.f == "read" && i.value == Value::Null)
    );
    assert_eq!(reads.iter().filter(|r| r.0 == "a").count(), 1);
    assert_eq!(reads.iter().filter(|r| r.0 == "c").count(), 1);
    let b: Vec<_> = reads.iter().filter(|r| r.0 == "b").collect();
    assert_eq!(b.len(), 2);
    assert_ne!(b[0].1, b[1].1, "retry should use another thread");
    let b_fail_at = sim
        .completions()
        .find(|o| o.key.as_deref() == Some("b"))
        .map(|o| o.time_ns)
        .unwrap_or(0);
    assert!(b[1].2 >= b_fail_at + 50 * MS);
    assert_eq!(
        sim.completions()
            .filter(|o| o.op_type == OpType::Ok)
            .count(),
        3
    );
}

#[test]
fn final_reads_give_up_after_max_attempts_and_never_overlap_a_key() {
    let keys = KeyLog::from_keys((0..10).map(|i| i.to_string()));
    let mut g = final_reads_with(
        keys,
        FinalReadsConfig {
            max_attempts: 3,
            retry_delay_ns: 0,
        },
    );
    let mut sim = Sim::new(4, 2).with_uniform_latency(MS, 20 * MS);
    sim.outcome = Box::new(|_, _| OpType::Fail);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 30);
    let mut open: BTreeSet<String> = BTreeSet::new();
    for op in &sim.history {
        let key = op.key.clone().map(String::from).unwrap_or_default();
        if op.op_type == OpType::Invoke {
            assert!(open.insert(key), "two reads of one key in flight");
        } else {
            open.remove(&key);
        }
    }
}

#[test]
fn final_reads_after_the_workload_cover_exactly_its_keys() {
    let w = register_workload(RegisterConfig {
        ops_per_key: 5,
        ..RegisterConfig::default()
    })
    .unwrap();
    let keys = w.keys_used();
    let mut g = phases(vec![boxed(limit(100, w)), boxed(final_reads(keys.clone()))]);
    let mut sim = Sim::new(4, 3).with_uniform_latency(MS, 10 * MS);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let main: BTreeSet<String> = sim.dispatched[..100]
        .iter()
        .filter_map(|i| i.key.clone())
        .collect();
    let finals: Vec<String> = sim.dispatched[100..]
        .iter()
        .filter_map(|i| i.key.clone())
        .collect();
    assert_eq!(finals.len(), main.len());
    assert_eq!(finals.iter().cloned().collect::<BTreeSet<_>>(), main);
    assert_eq!(keys.snapshot(), main);
}

// ---------------------------------------------------------------------------------------------
// Nemesis

fn schedule() -> NemesisSchedule {
    NemesisSchedule {
        faults: vec![
            FaultOps {
                start_f: "start-partition".to_string(),
                start_value: json!("one"),
                stop_f: Some("stop-partition".to_string()),
                stop_value: Value::Null,
            },
            FaultOps {
                start_f: "kill".to_string(),
                start_value: json!("one"),
                stop_f: Some("start".to_string()),
                stop_value: json!("all"),
            },
            FaultOps {
                start_f: "kill".to_string(),
                start_value: json!("majority"),
                stop_f: Some("start".to_string()),
                stop_value: json!("all"),
            },
        ],
        interval_ns: 5 * S,
        sequential: false,
    }
}

#[test]
fn sequential_nemesis_cycle_starts_faults_round_robin() {
    let sched = NemesisSchedule {
        sequential: true,
        ..schedule()
    };
    let mut g = time_limit(60 * S, nemesis_cycle(sched.clone()));
    let mut sim = Sim::new(1, 5);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let starts: Vec<Value> = sim
        .dispatched
        .iter()
        .step_by(2)
        .map(|i| i.value.clone())
        .collect();
    let expected: Vec<Value> = sched
        .faults
        .iter()
        .cycle()
        .take(starts.len())
        .map(|f| f.start_value.clone())
        .collect();
    assert_eq!(starts, expected);
}

#[test]
fn nemesis_cycle_alternates_start_and_stop_at_the_interval() {
    let sched = schedule();
    let mut g = time_limit(60 * S, nemesis_cycle(sched.clone()));
    let mut sim = Sim::new(3, 5);
    sim.latency = Box::new(|_, _| 100 * MS);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let inv = &sim.dispatched;
    assert!(
        inv.iter()
            .all(|i| i.thread == NEMESIS_THREAD && i.key.is_none())
    );
    assert!(sim.invokes().all(|o| o.process == Process::Nemesis));
    // first op after one interval; each later one an interval after the previous completion
    assert_eq!(inv[0].time_ns, 5 * S);
    for w in inv.windows(2) {
        assert_eq!(w[1].time_ns, w[0].time_ns + 100 * MS + 5 * S);
    }
    // 60 s allow ops at 5, 10.1, ..., 55.5 s: 11 ops
    assert_eq!(inv.len(), 11);
    let mut started = BTreeSet::new();
    for pair in inv.chunks(2) {
        let fault = sched
            .faults
            .iter()
            .find(|f| f.start_f == pair[0].f && f.start_value == pair[0].value)
            .unwrap_or_else(|| panic!("{:?} is not a start op", pair[0]));
        started.insert(pair[0].value.to_string() + &pair[0].f);
        if let Some(stop) = pair.get(1) {
            assert_eq!(
                (Some(&stop.f), &stop.value),
                (fault.stop_f.as_ref(), &fault.stop_value)
            );
        }
    }
    assert!(started.len() >= 2, "only {started:?} were chosen");
}

#[test]
fn a_random_schedule_gives_every_kind_a_turn_before_repeating_one() {
    // Three kinds (partition with two shapes, kill with two targets, pause): every round of
    // three starts draws each kind once, and every two turns of a kind its two faults, whatever
    // the seed.
    let kind_of = |f: &str| {
        crate::faults::classify_verb(f)
            .map(|(k, _)| k.name)
            .unwrap_or("?")
    };
    let mut sched = schedule();
    sched.faults.push(FaultOps {
        start_f: "pause".to_string(),
        start_value: json!("one"),
        stop_f: Some("resume".to_string()),
        stop_value: Value::Null,
    });
    sched.faults.push(FaultOps {
        start_f: "start-partition".to_string(),
        start_value: json!("halves"),
        stop_f: Some("stop-partition".to_string()),
        stop_value: Value::Null,
    });
    for seed in 0..50 {
        let mut g = time_limit(600 * S, nemesis_cycle(sched.clone()));
        let mut sim = Sim::new(1, seed);
        assert_eq!(sim.run(&mut g, 1000 * S), End::Done);
        let starts: Vec<&str> = sim
            .dispatched
            .iter()
            .step_by(2)
            .map(|i| kind_of(&i.f))
            .collect();
        assert!(starts.len() >= 9, "{starts:?}");
        for round in starts.chunks_exact(3) {
            let mut kinds = round.to_vec();
            kinds.sort();
            assert_eq!(
                kinds,
                ["kill", "partition", "pause"],
                "seed {seed}: {starts:?}"
            );
        }
        // Within a kind too: each two partitions started are the two shapes, each two kills
        // the two targets.
        for (f, n) in [("start-partition", 2), ("kill", 2)] {
            let values: Vec<&Value> = sim
                .dispatched
                .iter()
                .step_by(2)
                .filter(|i| i.f == f)
                .map(|i| &i.value)
                .collect();
            assert!(values.len() >= 2 * n, "seed {seed}: {values:?}");
            for pair in values.chunks_exact(n) {
                assert_ne!(pair[0], pair[1], "seed {seed}: {f} {values:?}");
            }
        }
    }
}

#[test]
fn nemesis_cycle_waits_for_the_nemesis_thread_and_handles_no_faults() {
    let mut g = nemesis_cycle(schedule());
    let mut r = rng(1);
    assert_eq!(g.next(&ctx_with_free(2, &[0, 1]), &mut r), Next::Pending);
    assert!(matches!(
        g.next(&ctx_with_free(2, &[NEMESIS_THREAD]), &mut r),
        Next::Op(_)
    ));
    let mut empty = nemesis_cycle(NemesisSchedule {
        faults: vec![],
        interval_ns: S,
        sequential: false,
    });
    assert_eq!(empty.next(&Context::new(2, vec![]), &mut r), Next::Done);
}

#[test]
fn nemesis_heal_emits_every_distinct_stop_once() {
    let mut g = nemesis_heal(&schedule());
    let mut sim = Sim::new(2, 1);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    let stops: Vec<(String, Value)> = sim
        .dispatched
        .iter()
        .map(|i| (i.f.clone(), i.value.clone()))
        .collect();
    assert_eq!(
        stops,
        [
            ("stop-partition".to_string(), Value::Null),
            ("start".to_string(), json!("all"))
        ]
    );
    assert!(sim.dispatched.iter().all(|i| i.thread == NEMESIS_THREAD));
}

#[test]
fn client_leaves_are_done_without_client_threads() {
    let ctx = Context::new(0, vec![]);
    let mut r = rng(1);
    assert_eq!(once(spec("read")).next(&ctx, &mut r), Next::Done);
    assert_eq!(ops("read").next(&ctx, &mut r), Next::Done);
    assert_eq!(
        register_workload(RegisterConfig::default())
            .unwrap()
            .next(&ctx, &mut r),
        Next::Done
    );
    let keys = KeyLog::from_keys(["a".to_string()]);
    assert_eq!(final_reads(keys).next(&ctx, &mut r), Next::Done);
    assert_eq!(each_thread(|_| ops("read")).next(&ctx, &mut r), Next::Done);
}

#[test]
fn once_with_an_invocation_template_keeps_its_thread_and_earliest_time() {
    let mut g = once(Invocation {
        thread: 2,
        time_ns: 3 * S,
        f: "write".to_string(),
        key: Some("k".to_string()),
        value: json!(1),
    });
    let mut sim = Sim::new(3, 1);
    sim.ctx.free.remove(&2);
    let mut r = rng(1);
    assert_eq!(g.next(&sim.ctx, &mut r), Next::Pending);
    sim.ctx.free.insert(2);
    assert_eq!(sim.run(&mut g, 10 * S), End::Done);
    assert_eq!(sim.dispatched.len(), 1);
    assert_eq!(
        (sim.dispatched[0].thread, sim.dispatched[0].time_ns),
        (2, 3 * S)
    );
}

#[test]
fn register_config_reads_partial_toml_and_rejects_unknown_fields() {
    let cfg: RegisterConfig = toml::from_str("ops_per_key = 7\nkey_prefix = \"r\"").unwrap();
    assert_eq!(cfg.ops_per_key, 7);
    assert_eq!(cfg.key_prefix.as_deref(), Some("r"));
    assert_eq!(cfg.read_weight, RegisterConfig::default().read_weight);
    let err = toml::from_str::<RegisterConfig>("ops_per_kee = 7").unwrap_err();
    assert!(err.to_string().contains("ops_per_kee"), "{err}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Any register configuration, thread count, latency and crash rate: only free threads are
    /// used (the sim asserts it), each key stays within one group of at most `threads_per_key`
    /// threads and gets at most `ops_per_key` ops, and the same seed replays the same history.
    #[test]
    fn register_workload_invariants_hold_for_any_config(
        threads in 1usize..9,
        tpk in 1usize..5,
        ops_per_key in 1u64..30,
        weights in (0u32..4, 0u32..4, 1u32..4),
        max_latency_ms in 1u64..40,
        info_pct in 0u32..40,
        seed in 0u64..1000,
    ) {
        let cfg = RegisterConfig {
            read_weight: weights.0,
            write_weight: weights.1,
            cas_weight: weights.2,
            max_value: 5,
            threads_per_key: tpk,
            ops_per_key,
            key_prefix: None,
        };
        let run = || {
            let mut g = limit(300, stagger(MS, register_workload(cfg.clone()).unwrap()));
            let mut sim = Sim::new(threads, seed).with_uniform_latency(0, max_latency_ms * MS);
            sim.outcome = Box::new(move |_, r| {
                use rand::RngExt;
                if r.random_ratio(info_pct, 100) { OpType::Info } else { OpType::Ok }
            });
            assert_eq!(sim.run(&mut g, 1000 * S), End::Done);
            sim
        };
        let sim = run();
        proptest::prop_assert_eq!(sim.dispatched.len(), 300);
        let groups = threads.div_ceil(tpk) as u64;
        for (key, (count, used)) in key_stats(&sim) {
            let index: u64 = key.parse().unwrap();
            proptest::prop_assert!(count as u64 <= ops_per_key);
            proptest::prop_assert!(used.len() <= tpk);
            for t in used {
                proptest::prop_assert_eq!((t / tpk) as u64, index % groups);
            }
        }
        proptest::prop_assert_eq!(&sim.history, &run().history);
    }
}

#[test]
fn list_append_elements_are_unique_per_key_and_keys_rotate() {
    let cfg = ListAppendConfig {
        read_weight: 1,
        append_weight: 3,
        threads_per_key: 2,
        ops_per_key: 20,
        key_prefix: Some("la".to_string()),
    };
    let w = list_append_workload(cfg).unwrap();
    let keys = w.keys_used();
    let mut g = limit(1000, w);
    let mut sim = Sim::new(6, 9).with_uniform_latency(MS, 5 * MS);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let mut elements: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let (mut reads, mut appends) = (0, 0);
    for inv in &sim.dispatched {
        let key = inv.key.clone().unwrap();
        assert!(key.starts_with("la"), "{key}");
        match inv.f.as_str() {
            "read" => {
                reads += 1;
                assert_eq!(inv.value, Value::Null);
            }
            "append" => {
                appends += 1;
                elements
                    .entry(key)
                    .or_default()
                    .push(inv.value.as_i64().unwrap());
            }
            other => panic!("unexpected op {other}"),
        }
    }
    // Each key's elements are 1, 2, 3, … in issue order: unique, never reused.
    for (key, es) in &elements {
        let want: Vec<i64> = (1..=es.len() as i64).collect();
        assert_eq!(es, &want, "key {key}");
    }
    assert!(appends > 2 * reads, "{appends} appends, {reads} reads");
    let stats = key_stats(&sim);
    assert!(stats.values().all(|(n, t)| *n <= 20 && t.len() <= 2));
    assert_eq!(keys.len(), stats.len());
    assert!(
        list_append_workload(ListAppendConfig {
            read_weight: 0,
            append_weight: 0,
            ..ListAppendConfig::default()
        })
        .is_err()
    );
}

#[test]
fn set_elements_are_unique_across_the_run_adds_dominate_and_final_reads_cover_keys() {
    let cfg = SetConfig {
        threads_per_key: 2,
        ops_per_key: 30,
        key_prefix: Some("s".to_string()),
        ..SetConfig::default()
    };
    let w = set_workload(cfg).unwrap();
    let keys = w.keys_used();
    let mut g = phases(vec![boxed(limit(600, w)), boxed(final_reads(keys.clone()))]);
    let mut sim = Sim::new(6, 11).with_uniform_latency(MS, 5 * MS);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let (main, finals) = sim.dispatched.split_at(600);
    let mut elements = Vec::new();
    let mut reads = 0;
    for inv in main {
        match inv.f.as_str() {
            set::ADD => elements.push(inv.value.as_i64().unwrap()),
            set::READ => {
                reads += 1;
                assert_eq!(inv.value, Value::Null);
            }
            other => panic!("unexpected op {other}"),
        }
    }
    // 0, 1, 2, … in issue order across every key: never reused.
    let want: Vec<i64> = (0..elements.len() as i64).collect();
    assert_eq!(elements, want);
    assert!(
        elements.len() > 5 * reads,
        "{} adds, {reads} reads",
        elements.len()
    );
    let mut threads: BTreeMap<String, BTreeSet<ThreadId>> = BTreeMap::new();
    for inv in main {
        threads
            .entry(inv.key.clone().unwrap())
            .or_default()
            .insert(inv.thread);
    }
    let main_keys: BTreeSet<String> = threads.keys().cloned().collect();
    assert!(main_keys.len() >= 600 / 30, "keys rotate: {main_keys:?}");
    assert!(threads.values().all(|t| t.len() <= 2), "{threads:?}");
    let final_keys: Vec<String> = finals.iter().filter_map(|i| i.key.clone()).collect();
    assert!(finals.iter().all(|i| i.f == set::READ));
    assert_eq!(final_keys.len(), main_keys.len());
    assert_eq!(final_keys.into_iter().collect::<BTreeSet<_>>(), main_keys);
    assert_eq!(keys.snapshot(), main_keys);
    for bad in [
        SetConfig {
            add_weight: 0,
            ..SetConfig::default()
        },
        SetConfig {
            ops_per_key: 0,
            ..SetConfig::default()
        },
        SetConfig {
            threads_per_key: 0,
            ..SetConfig::default()
        },
    ] {
        assert!(set_workload(bad).is_err());
    }
}

/// The default schedule plus a one-shot `promote` (no stop verb).
fn schedule_with_promote() -> NemesisSchedule {
    let mut s = schedule();
    s.faults.push(FaultOps {
        start_f: "promote".to_string(),
        start_value: json!({}),
        stop_f: None,
        stop_value: Value::Null,
    });
    s.sequential = true;
    s
}

#[test]
fn one_shot_faults_are_started_and_never_stopped() {
    let sched = schedule_with_promote();
    let mut g = time_limit(120 * S, nemesis_cycle(sched.clone()));
    let mut sim = Sim::new(1, 5);
    assert_eq!(sim.run(&mut g, 200 * S), End::Done);
    let fs: Vec<&str> = sim.dispatched.iter().map(|i| i.f.as_str()).collect();
    assert!(
        fs.iter().all(|f| !f.is_empty()),
        "an empty verb was sent: {fs:?}"
    );
    let p = fs
        .iter()
        .position(|f| *f == "promote")
        .expect("promote started");
    // Round robin: partition, kill, kill each start and stop; promote is followed by the next
    // start (the partition again), not by a stop.
    assert_eq!(
        &fs[..p + 2],
        [
            "start-partition",
            "stop-partition",
            "kill",
            "start",
            "kill",
            "start",
            "promote",
            "start-partition"
        ]
    );

    let mut heal = nemesis_heal(&sched);
    let mut sim = Sim::new(2, 1);
    assert_eq!(sim.run(&mut heal, 10 * S), End::Done);
    assert!(sim.dispatched.iter().all(|i| !i.f.is_empty()));
    assert_eq!(sim.dispatched.len(), 2);

    let mut g = time_limit(60 * S, nemesis_stack(sched));
    let mut sim = Sim::new(1, 5);
    assert_eq!(sim.run(&mut g, 100 * S), End::Done);
    let fs: Vec<&str> = sim.dispatched.iter().map(|i| i.f.as_str()).collect();
    assert!(fs.iter().all(|f| !f.is_empty()), "{fs:?}");
    // Stacked: every start, then the stops in reverse, skipping promote.
    assert_eq!(
        &fs[..7],
        [
            "start-partition",
            "kill",
            "kill",
            "promote",
            "start",
            "start",
            "stop-partition"
        ]
    );
}
