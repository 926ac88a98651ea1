//! What a clock fault asks for: the Jepsen-like draws of a step (the exponent of two is uniform,
//! so steps from milliseconds to minutes are equally likely per octave, with a random sign) and
//! of a strobe period, their defaults and bounds, and parsing a `bump-clock` / `strobe-clock` op
//! value into a [`ClockRequest`]. Pure. Does not touch a node (`nemesis::clock`).

use super::super::{Targets, select_targets};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

pub use crate::faults::clock::{
    DEFAULT_MAX_DELTA_MS, DEFAULT_MAX_PERIOD_MS, DEFAULT_MIN_DELTA_MS, DEFAULT_STROBE_DURATION_MS,
    MAX_STROBE_DURATION_MS, MIN_OFFSETS_EVERY_MS,
};

/// Draw a step in ms: magnitude `2^x` with `x` uniform in `[log2 min, log2 max]` (clamped to
/// `[min, max]`, at least 1), sign `+` or `-` with equal odds.
pub fn draw_delta_ms(min_ms: u64, max_ms: u64, rng: &mut ChaCha8Rng) -> i64 {
    let magnitude = draw_exponential(min_ms, max_ms, rng);
    let magnitude = i64::try_from(magnitude).unwrap_or(i64::MAX);
    if rng.random_bool(0.5) {
        magnitude
    } else {
        -magnitude
    }
}

/// Draw a strobe period in ms: `2^x` with `x` uniform in `[0, log2 max]`, at least 1.
pub fn draw_period_ms(max_ms: u64, rng: &mut ChaCha8Rng) -> u64 {
    draw_exponential(1, max_ms, rng)
}

fn draw_exponential(min: u64, max: u64, rng: &mut ChaCha8Rng) -> u64 {
    let (lo, hi) = (min.max(1), max.max(min).max(1));
    if lo == hi {
        return lo;
    }
    let (a, b) = ((lo as f64).log2(), (hi as f64).log2());
    let x = a + (b - a) * rng.random::<f64>();
    (2f64.powf(x).round() as u64).clamp(lo, hi)
}

/// A parsed clock fault request (the value of a `bump-clock` or `strobe-clock` op).
#[derive(Debug, Clone, PartialEq)]
pub struct ClockRequest {
    /// Nodes to step.
    pub nodes: Vec<String>,
    /// Step in ms (signed).
    pub delta_ms: i64,
    /// Strobe only: time between flips, in ms.
    pub period_ms: u64,
    /// Strobe only: how long to flip, in ms.
    pub duration_ms: u64,
}

fn u64_field(value: &Value, key: &str, default: u64) -> Result<u64, String> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("{key} {v}: expected a non-negative integer")),
    }
}

/// Parse a `bump-clock` / `strobe-clock` op value. Either explicit,
/// `{"nodes":[..],"delta_ms":i64[,"period_ms":u64,"duration_ms":u64]}`, or drawn:
/// `{"targets":"one|minority|majority|all","min_delta_ms","max_delta_ms"[,"max_period_ms",
/// "duration_ms"]}` (every field optional, Jepsen-like defaults). Unknown node names and bad
/// numbers are errors naming the field.
pub fn parse_request(
    value: &Value,
    strobe: bool,
    names: &[String],
    rng: &mut ChaCha8Rng,
) -> Result<ClockRequest, String> {
    let empty = json!({});
    let value = if value.is_null() { &empty } else { value };
    if !value.is_object() {
        return Err(format!("clock op value {value}: expected an object"));
    }
    let nodes = match value.get("nodes") {
        Some(Value::Array(list)) => {
            let mut out = Vec::new();
            for n in list {
                let name = n
                    .as_str()
                    .ok_or_else(|| format!("nodes: {n} is not a node name"))?;
                if !names.iter().any(|x| x == name) {
                    return Err(format!(
                        "nodes: unknown node {name:?} (known: {})",
                        names.join(", ")
                    ));
                }
                out.push(name.to_string());
            }
            out
        }
        Some(other) => return Err(format!("nodes {other}: expected a list of node names")),
        None => {
            let t = Targets::of_value(value.get("targets").unwrap_or(&Value::Null))?;
            select_targets(t, names, rng)
        }
    };
    let delta_ms = match value.get("delta_ms") {
        Some(v) => v
            .as_i64()
            .ok_or_else(|| format!("delta_ms {v}: expected an integer"))?,
        None => {
            let min = u64_field(value, "min_delta_ms", DEFAULT_MIN_DELTA_MS)?;
            let max = u64_field(value, "max_delta_ms", DEFAULT_MAX_DELTA_MS)?;
            if min > max {
                return Err(format!("min_delta_ms {min} is above max_delta_ms {max}"));
            }
            draw_delta_ms(min, max, rng)
        }
    };
    let (period_ms, duration_ms) = if strobe {
        let period = match value.get("period_ms") {
            Some(_) => u64_field(value, "period_ms", 0)?,
            None => draw_period_ms(
                u64_field(value, "max_period_ms", DEFAULT_MAX_PERIOD_MS)?,
                rng,
            ),
        };
        let duration = u64_field(value, "duration_ms", DEFAULT_STROBE_DURATION_MS)?;
        if period == 0 {
            return Err("period_ms 0: expected at least 1".into());
        }
        if duration > MAX_STROBE_DURATION_MS {
            return Err(format!(
                "duration_ms {duration}: at most {MAX_STROBE_DURATION_MS}"
            ));
        }
        (period, duration)
    } else {
        (0, 0)
    };
    Ok(ClockRequest {
        nodes,
        delta_ms,
        period_ms,
        duration_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::names;
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn deltas_span_the_range_in_every_octave_with_both_signs() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let draws: Vec<i64> = (0..4000)
            .map(|_| draw_delta_ms(4, 262_144, &mut rng))
            .collect();
        assert!(draws.iter().all(|d| (4..=262_144).contains(&d.abs())));
        let negative = draws.iter().filter(|d| **d < 0).count();
        assert!((1700..2300).contains(&negative), "{negative} negative");
        // Exponent uniform over 16 octaves: each octave gets roughly 1/16 of the draws.
        for octave in 2..18 {
            let lo = 1i64 << octave;
            let n = draws
                .iter()
                .filter(|d| (lo..lo * 2).contains(&d.abs()))
                .count();
            assert!((150..360).contains(&n), "octave 2^{octave}: {n} draws");
        }
        // Degenerate ranges.
        assert_eq!(draw_delta_ms(7, 7, &mut rng).abs(), 7);
        assert_eq!(draw_delta_ms(0, 0, &mut rng).abs(), 1);
        let p = draw_period_ms(1024, &mut rng);
        assert!((1..=1024).contains(&p));
        // Same seed, same draws.
        let a = draw_delta_ms(4, 1000, &mut ChaCha8Rng::seed_from_u64(9));
        let b = draw_delta_ms(4, 1000, &mut ChaCha8Rng::seed_from_u64(9));
        assert_eq!(a, b);
    }

    #[test]
    fn requests_explicit_and_drawn() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let n = names(5);
        let r = parse_request(
            &json!({"nodes": ["n2"], "delta_ms": -1500}),
            false,
            &n,
            &mut rng,
        )
        .unwrap();
        assert_eq!(r.nodes, vec!["n2"]);
        assert_eq!(r.delta_ms, -1500);
        let r = parse_request(
            &json!({"targets": "majority", "min_delta_ms": 100, "max_delta_ms": 200}),
            false,
            &n,
            &mut rng,
        )
        .unwrap();
        assert_eq!(r.nodes.len(), 3);
        assert!((100..=200).contains(&r.delta_ms.abs()));
        let r = parse_request(&Value::Null, true, &n, &mut rng).unwrap();
        assert_eq!(r.nodes.len(), 1);
        assert!((1..=DEFAULT_MAX_PERIOD_MS).contains(&r.period_ms));
        assert_eq!(r.duration_ms, DEFAULT_STROBE_DURATION_MS);
        let r = parse_request(
            &json!({"nodes": ["n1"], "delta_ms": 50, "period_ms": 10, "duration_ms": 100}),
            true,
            &n,
            &mut rng,
        )
        .unwrap();
        assert_eq!((r.period_ms, r.duration_ms), (10, 100));

        let err = |v: Value, strobe: bool| {
            parse_request(&v, strobe, &n, &mut ChaCha8Rng::seed_from_u64(1)).unwrap_err()
        };
        assert!(err(json!({"nodes": ["n9"]}), false).contains("unknown node \"n9\""));
        assert!(err(json!({"nodes": "n1"}), false).contains("expected a list"));
        assert!(err(json!({"targets": "most"}), false).contains("targets \"most\""));
        assert!(err(json!({"delta_ms": "big"}), false).contains("delta_ms"));
        assert!(err(json!({"min_delta_ms": 9, "max_delta_ms": 3}), false).contains("above"));
        assert!(err(json!({"period_ms": 0}), true).contains("period_ms 0"));
        assert!(err(json!({"duration_ms": 600_000}), true).contains("at most"));
        assert!(err(json!([1]), false).contains("expected an object"));
    }
}
