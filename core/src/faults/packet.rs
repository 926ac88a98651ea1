//! The packet faults' parameters (packages `loss`, `bandwidth`, `delay`): the op values of
//! `start-loss`, `start-bandwidth` and `start-delay`, parsed and checked once for the spec
//! (`spec`), the nemesis and the delayer, and which mechanism serves a delay
//! ([`DelayBackend`]: the kernel's netem qdisc, or the tool's own NFQUEUE delayer where the
//! kernel has no netem).
//!
//! Pure: no IO. Does not own the node commands (`nemesis::packet`) or the delayer program
//! (`netdelay`).

use super::Verb;
use super::def::{FaultDef, Ops};
use serde_json::Value;

/// The `loss` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const LOSS_KIND: super::FaultKind = super::FaultKind {
    name: "loss",
    start_verbs: &[super::verb::START_LOSS],
    stop_verbs: &[super::verb::STOP_LOSS],
    label: "packet loss",
    color_rgb: (200, 60, 140),
};

/// The `bandwidth` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const BANDWIDTH_KIND: super::FaultKind = super::FaultKind {
    name: "bandwidth",
    start_verbs: &[super::verb::START_BANDWIDTH],
    stop_verbs: &[super::verb::STOP_BANDWIDTH],
    label: "bandwidth limit",
    color_rgb: (90, 140, 30),
};

/// The `delay` kind: its package name, verbs, plot label and colour (a row of `faults::KINDS`).
pub const DELAY_KIND: super::FaultKind = super::FaultKind {
    name: "delay",
    start_verbs: &[super::verb::START_DELAY],
    stop_verbs: &[super::verb::STOP_DELAY],
    label: "packet delay",
    color_rgb: (150, 100, 40),
};

/// Parameters of `start-loss`: `{"targets": "one", "probability": 0.2}`.
#[derive(Debug, Clone, PartialEq)]
pub struct LossParams {
    /// Which nodes.
    pub targets: super::Targets,
    /// Probability in (0, 1] that a packet from another node is dropped.
    pub probability: f64,
}

/// Parameters of `start-bandwidth`: `{"targets": "one", "rate_kbit": 1000}`.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthParams {
    /// Which nodes.
    pub targets: super::Targets,
    /// Egress rate limit in kbit/s (1000 bit).
    pub rate_kbit: u64,
}

fn targets_of(v: &Value) -> Result<super::Targets, String> {
    super::Targets::of_value(&v.get("targets").cloned().unwrap_or(Value::Null))
}

fn u64_of(v: &Value, key: &str, default: Option<u64>) -> Result<u64, String> {
    match (v.get(key), default) {
        (None | Some(Value::Null), Some(d)) => Ok(d),
        (None | Some(Value::Null), None) => Err(format!("missing {key}")),
        (Some(x), _) => x
            .as_u64()
            .ok_or_else(|| format!("{key} {x}: expected a non-negative integer")),
    }
}

impl LossParams {
    /// Parse and validate an op value.
    pub fn from_value(v: &Value) -> Result<LossParams, String> {
        let probability = v
            .get("probability")
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("start-loss value {v}: expected a number \"probability\""))?;
        if !(probability > 0.0 && probability <= 1.0) {
            return Err(format!("probability {probability}: expected 0 < p <= 1"));
        }
        Ok(LossParams {
            targets: targets_of(v)?,
            probability,
        })
    }
}

impl BandwidthParams {
    /// Parse and validate an op value.
    pub fn from_value(v: &Value) -> Result<BandwidthParams, String> {
        let rate_kbit =
            u64_of(v, "rate_kbit", None).map_err(|e| format!("start-bandwidth: {e}"))?;
        if rate_kbit == 0 {
            return Err("rate_kbit 0: expected at least 1".into());
        }
        Ok(BandwidthParams {
            targets: targets_of(v)?,
            rate_kbit,
        })
    }
}

/// What delays the packets of a `delay` fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelayBackend {
    /// netem where the node's kernel has it, else the NFQUEUE delayer.
    Auto,
    /// The kernel's netem qdisc on the node's interface (egress).
    Netem,
    /// The tool's delayer (`shakedown netdelay`) holding the node's outgoing packets, queued to
    /// it by an iptables `NFQUEUE` rule.
    Nfqueue,
}

impl DelayBackend {
    /// Every backend name, for messages.
    pub const NAMES: [&'static str; 3] = ["auto", "netem", "nfqueue"];

    /// The backend named `s`.
    pub fn parse(s: &str) -> Option<DelayBackend> {
        match s {
            "auto" => Some(DelayBackend::Auto),
            "netem" => Some(DelayBackend::Netem),
            "nfqueue" => Some(DelayBackend::Nfqueue),
            _ => None,
        }
    }

    /// Its name in specs, op values and completions.
    pub fn name(self) -> &'static str {
        match self {
            DelayBackend::Auto => "auto",
            DelayBackend::Netem => "netem",
            DelayBackend::Nfqueue => "nfqueue",
        }
    }
}

/// Parameters of `start-delay`: `{"targets": "one", "delay_ms": 50, "jitter_ms": 10,
/// "reorder": 0.25, "backend": "auto"}`. As netem: each packet waits `delay_ms` ± a uniform
/// `jitter_ms` (so jitter reorders packets), except a `reorder` fraction sent at once.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayParams {
    /// Which nodes.
    pub targets: super::Targets,
    /// Added egress delay in ms.
    pub delay_ms: u64,
    /// Jitter (uniform ±) around the delay in ms.
    pub jitter_ms: u64,
    /// Fraction of packets in [0, 1) sent without delay, ahead of those held before them.
    pub reorder: f64,
    /// Fraction of packets in [0, 1) sent twice (netem only: see [`DelayParams::duplicate`]'s
    /// refusal on the NFQUEUE backend).
    pub duplicate: f64,
    /// What delays the packets.
    pub backend: DelayBackend,
}

/// Why the NFQUEUE backend refuses `duplicate`, for every message that says so.
pub const NFQUEUE_CANNOT_DUPLICATE: &str = "the nfqueue backend cannot duplicate packets (NFQUEUE hands each packet to the delayer, which can only let it go, later, or drop it: never send it twice); netem can";

impl DelayParams {
    /// Parse and validate an op value.
    pub fn from_value(v: &Value) -> Result<DelayParams, String> {
        let delay_ms = u64_of(v, "delay_ms", None).map_err(|e| format!("start-delay: {e}"))?;
        let jitter_ms = u64_of(v, "jitter_ms", Some(0)).map_err(|e| format!("start-delay: {e}"))?;
        if delay_ms == 0 || delay_ms > 60_000 || jitter_ms > delay_ms {
            return Err(format!(
                "delay_ms {delay_ms}, jitter_ms {jitter_ms}: expected 1..=60000 and jitter <= delay"
            ));
        }
        let reorder = match v.get("reorder") {
            None | Some(Value::Null) => 0.0,
            Some(x) => x
                .as_f64()
                .ok_or_else(|| format!("reorder {x}: expected a number"))?,
        };
        if !(0.0..1.0).contains(&reorder) {
            return Err(format!(
                "reorder {reorder}: expected the fraction of packets sent at once, 0 <= r < 1"
            ));
        }
        let duplicate = match v.get("duplicate") {
            None | Some(Value::Null) => 0.0,
            Some(x) => x
                .as_f64()
                .ok_or_else(|| format!("duplicate {x}: expected a number"))?,
        };
        if !(0.0..1.0).contains(&duplicate) {
            return Err(format!(
                "duplicate {duplicate}: expected the fraction of packets sent twice, 0 <= d < 1"
            ));
        }
        let backend = match v.get("backend") {
            None | Some(Value::Null) => DelayBackend::Auto,
            Some(Value::String(s)) => DelayBackend::parse(s).ok_or_else(|| {
                format!(
                    "backend {s:?}: expected one of {}",
                    DelayBackend::NAMES.join(", ")
                )
            })?,
            Some(x) => return Err(format!("backend {x}: expected a string")),
        };
        if duplicate > 0.0 && backend == DelayBackend::Nfqueue {
            return Err(format!(
                "duplicate {duplicate} with backend = \"nfqueue\": {NFQUEUE_CANNOT_DUPLICATE}; use backend = \"netem\", or \"auto\" on nodes whose kernel has netem"
            ));
        }
        Ok(DelayParams {
            targets: targets_of(v)?,
            delay_ms,
            jitter_ms,
            reorder,
            duplicate,
            backend,
        })
    }

    /// Whether the NFQUEUE delayer can serve these parameters (it cannot duplicate).
    pub fn nfqueue_can_serve(&self) -> bool {
        self.duplicate == 0.0
    }

    /// The netem qdisc and its options: `netem delay 50ms [10ms] [reorder 25%] [duplicate 1%]`.
    pub fn netem_args(&self) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "netem".into(),
            "delay".into(),
            format!("{}ms", self.delay_ms),
        ];
        if self.jitter_ms > 0 {
            args.push(format!("{}ms", self.jitter_ms));
        }
        if self.reorder > 0.0 {
            args.push("reorder".into());
            args.push(format!("{}%", (self.reorder * 1e4).round() / 100.0));
        }
        if self.duplicate > 0.0 {
            args.push("duplicate".into());
            args.push(format!("{}%", (self.duplicate * 1e4).round() / 100.0));
        }
        args
    }
}

/// Drop packets from the other nodes at random on the targets (iptables `statistic`): the
/// `loss` schedule entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossSpec {
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: super::Targets,
    /// Probability in (0, 1] that a packet is dropped.
    #[serde(default = "d_probability")]
    pub probability: f64,
}

/// Default drop probability of `loss`.
pub const DEFAULT_PROBABILITY: f64 = 0.2;
/// Default rate of `bandwidth`, in kbit/s.
pub const DEFAULT_RATE_KBIT: u64 = 1000;
/// Default added delay of `delay`, in ms.
pub const DEFAULT_DELAY_MS: u64 = 50;

fn d_probability() -> f64 {
    DEFAULT_PROBABILITY
}
fn d_rate_kbit() -> u64 {
    DEFAULT_RATE_KBIT
}
fn d_delay_ms() -> u64 {
    DEFAULT_DELAY_MS
}
fn d_backend() -> String {
    DelayBackend::Auto.name().into()
}

impl Default for LossSpec {
    fn default() -> Self {
        LossSpec {
            targets: super::Targets::One,
            probability: DEFAULT_PROBABILITY,
        }
    }
}

impl FaultDef for LossSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &LOSS_KIND
    }
    fn ops(&self) -> Ops {
        Ops::new(
            Verb::StartLoss,
            serde_json::json!({ "targets": self.targets, "probability": self.probability }),
            Some(Verb::StopLoss),
        )
    }
    fn keys(&self) -> &'static [&'static str] {
        &["probability", "targets"]
    }
    fn check(&self) -> Result<(), String> {
        LossParams::from_value(&self.ops().value).map(|_| ())
    }
    fn targets(&self) -> Option<super::Targets> {
        Some(self.targets)
    }
    fn needs(&self) -> super::def::Needs {
        super::def::Needs {
            network: true,
            ..super::def::Needs::default()
        }
    }
}

/// Limit the targets' egress bandwidth (tc tbf): the `bandwidth` schedule entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandwidthSpec {
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: super::Targets,
    /// Rate limit in kbit/s.
    #[serde(default = "d_rate_kbit")]
    pub rate_kbit: u64,
}

impl Default for BandwidthSpec {
    fn default() -> Self {
        BandwidthSpec {
            targets: super::Targets::One,
            rate_kbit: DEFAULT_RATE_KBIT,
        }
    }
}

impl FaultDef for BandwidthSpec {
    fn kind(&self) -> &'static super::FaultKind {
        &BANDWIDTH_KIND
    }
    fn ops(&self) -> Ops {
        Ops::new(
            Verb::StartBandwidth,
            serde_json::json!({ "targets": self.targets, "rate_kbit": self.rate_kbit }),
            Some(Verb::StopBandwidth),
        )
    }
    fn keys(&self) -> &'static [&'static str] {
        &["rate_kbit", "targets"]
    }
    fn check(&self) -> Result<(), String> {
        BandwidthParams::from_value(&self.ops().value).map(|_| ())
    }
    fn targets(&self) -> Option<super::Targets> {
        Some(self.targets)
    }
}

/// Delay the targets' egress packets (tc netem where the kernel has it, else the tool's
/// NFQUEUE delayer; `backend` chooses): the `delay` schedule entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelaySpec {
    /// Which nodes it hits (`one` by default).
    #[serde(default)]
    pub targets: super::Targets,
    /// Added delay in ms.
    #[serde(default = "d_delay_ms")]
    pub delay_ms: u64,
    /// Jitter around the delay in ms.
    #[serde(default)]
    pub jitter_ms: u64,
    /// Fraction of packets sent at once, overtaking the held ones (0 <= r < 1).
    #[serde(default)]
    pub reorder: f64,
    /// Fraction of packets sent twice (0 <= d < 1; netem only: the `nfqueue` backend
    /// refuses it).
    #[serde(default)]
    pub duplicate: f64,
    /// `auto` (netem, else NFQUEUE), `netem` or `nfqueue`.
    #[serde(default = "d_backend")]
    pub backend: String,
}

impl FaultDef for DelaySpec {
    fn kind(&self) -> &'static super::FaultKind {
        &DELAY_KIND
    }
    fn ops(&self) -> Ops {
        // Defaults are left out, so the op value is the one runs always recorded.
        let mut v = serde_json::json!({
            "targets": self.targets,
            "delay_ms": self.delay_ms,
            "jitter_ms": self.jitter_ms,
        });
        if self.reorder != 0.0 {
            v["reorder"] = serde_json::json!(self.reorder);
        }
        if self.duplicate != 0.0 {
            v["duplicate"] = serde_json::json!(self.duplicate);
        }
        if self.backend != DelayBackend::Auto.name() {
            v["backend"] = serde_json::json!(self.backend);
        }
        Ops::new(Verb::StartDelay, v, Some(Verb::StopDelay))
    }
    fn keys(&self) -> &'static [&'static str] {
        &[
            "delay_ms",
            "targets",
            "jitter_ms",
            "reorder",
            "duplicate",
            "backend",
        ]
    }
    fn check(&self) -> Result<(), String> {
        DelayParams::from_value(&self.ops().value).map(|_| ())
    }
    fn targets(&self) -> Option<super::Targets> {
        Some(self.targets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_parse_and_reject_bad_values() {
        let l = LossParams::from_value(&json!({"probability": 0.25})).unwrap();
        assert_eq!((l.targets.as_str(), l.probability), ("one", 0.25));
        assert!(LossParams::from_value(&json!({"probability": 0})).is_err());
        assert!(LossParams::from_value(&json!({"probability": 1.5})).is_err());
        assert!(LossParams::from_value(&json!("one")).is_err());
        let b = BandwidthParams::from_value(&json!({"targets":"all","rate_kbit":500})).unwrap();
        assert_eq!((b.targets.as_str(), b.rate_kbit), ("all", 500));
        assert!(BandwidthParams::from_value(&json!({"rate_kbit": 0})).is_err());
        assert!(BandwidthParams::from_value(&json!({"rate_kbit": -3})).is_err());
        let d = DelayParams::from_value(&json!({"delay_ms": 50})).unwrap();
        assert_eq!((d.delay_ms, d.jitter_ms, d.reorder), (50, 0, 0.0));
        assert_eq!(d.backend, DelayBackend::Auto);
        assert!(DelayParams::from_value(&json!({"delay_ms": 5, "jitter_ms": 6})).is_err());
        assert!(DelayParams::from_value(&json!({"targets": 3, "delay_ms": 5})).is_err());
    }

    #[test]
    fn delay_reorder_and_backend() {
        let d = DelayParams::from_value(
            &json!({"delay_ms": 100, "jitter_ms": 50, "reorder": 0.25, "backend": "nfqueue"}),
        )
        .unwrap();
        assert_eq!(d.backend, DelayBackend::Nfqueue);
        assert_eq!(
            d.netem_args(),
            ["netem", "delay", "100ms", "50ms", "reorder", "25%"]
        );
        let plain = DelayParams::from_value(&json!({"delay_ms": 30})).unwrap();
        assert_eq!(plain.netem_args(), ["netem", "delay", "30ms"]);
        assert!(plain.nfqueue_can_serve());
        let e = DelayParams::from_value(&json!({"delay_ms": 30, "reorder": 1.0})).unwrap_err();
        assert!(e.starts_with("reorder 1"), "{e}");
        let e = DelayParams::from_value(&json!({"delay_ms": 30, "backend": "tc"})).unwrap_err();
        assert!(e.contains("auto, netem, nfqueue"), "{e}");
        for name in DelayBackend::NAMES {
            assert_eq!(
                DelayBackend::parse(name).map(DelayBackend::name),
                Some(name)
            );
        }
    }

    #[test]
    fn duplicate_is_netems_and_the_nfqueue_backend_refuses_it() {
        let d = DelayParams::from_value(
            &json!({"delay_ms": 100, "jitter_ms": 10, "reorder": 0.25, "duplicate": 0.015}),
        )
        .unwrap();
        assert_eq!(d.duplicate, 0.015);
        assert_eq!(
            d.netem_args(),
            [
                "netem",
                "delay",
                "100ms",
                "10ms",
                "reorder",
                "25%",
                "duplicate",
                "1.5%"
            ]
        );
        assert!(!d.nfqueue_can_serve());
        let netem =
            DelayParams::from_value(&json!({"delay_ms": 5, "duplicate": 0.5, "backend": "netem"}))
                .unwrap();
        assert_eq!(
            netem.netem_args(),
            ["netem", "delay", "5ms", "duplicate", "50%"]
        );
        let e = DelayParams::from_value(
            &json!({"delay_ms": 5, "duplicate": 0.1, "backend": "nfqueue"}),
        )
        .unwrap_err();
        assert!(
            e.starts_with("duplicate 0.1 with backend = \"nfqueue\"")
                && e.contains("cannot duplicate packets"),
            "{e}"
        );
        // Without duplicates the NFQUEUE backend is fine; out-of-range fractions are refused.
        assert!(DelayParams::from_value(&json!({"delay_ms": 5, "backend": "nfqueue"})).is_ok());
        for bad in [json!(1.0), json!(-0.1), json!("1%")] {
            let e = DelayParams::from_value(&json!({"delay_ms": 5, "duplicate": bad})).unwrap_err();
            assert!(e.starts_with("duplicate "), "{e}");
        }
    }
}
