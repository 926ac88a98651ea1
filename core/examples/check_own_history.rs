//! A Rust project checking a history it recorded in its own test, the way Go projects use
//! Porcupine as a library: record each operation's invocation and completion, then ask the
//! linearizability checker about the whole history. Run it with
//! `cargo run -p shakedown-core --example check_own_history`.
//!
//! Owns only this demonstration; the recording here is a toy register guarded by a mutex, and
//! one deliberately stale read is injected so the checker has something to find.

use serde_json::{Value, json};
use shakedown_core::checker::Verdict;
use shakedown_core::checker::compose::check_linear;
use shakedown_core::checker::linear::WitnessMode;
use shakedown_core::history::{History, Op, OpType, Process};
use shakedown_core::model::{ModelOptions, SemanticsPreset};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The recorder a test would share between its client threads.
#[derive(Clone)]
struct Recorder {
    start: Instant,
    ops: Arc<Mutex<Vec<Op>>>,
}

impl Recorder {
    fn record(&self, t: OpType, process: u64, f: &str, key: &str, value: Value) {
        let mut op = Op::new(t, Process::Client(process), f, value);
        op.key = Some(key.into());
        op.time_ns = self.start.elapsed().as_nanos() as u64;
        self.ops.lock().expect("recorder lock").push(op);
    }
}

fn main() {
    let rec = Recorder {
        start: Instant::now(),
        ops: Arc::new(Mutex::new(Vec::new())),
    };
    let register = Arc::new(Mutex::new(None::<i64>));
    let threads: Vec<_> = (0..4u64)
        .map(|p| {
            let (rec, register) = (rec.clone(), register.clone());
            std::thread::spawn(move || {
                for i in 0..50i64 {
                    if (i + p as i64) % 2 == 0 {
                        let v = i * 10 + p as i64;
                        rec.record(OpType::Invoke, p, "write", "x", json!(v));
                        *register.lock().expect("register") = Some(v);
                        rec.record(OpType::Ok, p, "write", "x", json!(v));
                    } else {
                        rec.record(OpType::Invoke, p, "read", "x", Value::Null);
                        let v = *register.lock().expect("register");
                        rec.record(OpType::Ok, p, "read", "x", json!(v));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client thread");
    }
    let check = |ops: Vec<Op>| {
        let history = History::from_ops(ops);
        check_linear(
            "register",
            &history,
            &ModelOptions::preset(SemanticsPreset::Etcd),
            Duration::from_secs(10),
            WitnessMode::default(),
        )
        .expect("a known model")
    };
    let ops = rec.ops.lock().expect("recorder lock").clone();
    let honest = check(ops.clone());
    println!(
        "the mutex register: {:?} ({} ops)",
        honest.verdict, honest.op_count
    );
    assert_eq!(honest.verdict, Verdict::Valid);

    // A stale read: after every write has completed, a read returns nothing.
    let mut stale = ops;
    rec.record(OpType::Invoke, 9, "read", "x", Value::Null);
    rec.record(OpType::Ok, 9, "read", "x", json!(null));
    stale.extend(rec.ops.lock().expect("recorder lock").split_off(200 * 2));
    let broken = check(stale);
    println!("with a stale read: {:?}", broken.verdict);
    assert_eq!(broken.verdict, Verdict::Invalid);
}
