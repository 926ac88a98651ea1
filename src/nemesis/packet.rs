//! Packet faults on one node: random loss (iptables `statistic` match in the tool's chain),
//! bandwidth limits (`tc tbf`) and delay/jitter (`tc netem`, only where the kernel has it).
//!
//! Owns the remote commands for these faults, the parsing of their op values, and the
//! recognition of what the tool created, so undoing touches nothing else: loss rules carry the
//! iptables comment [`LOSS_COMMENT`]; qdiscs are the root qdisc of the node's interface with the
//! handle [`TC_HANDLE`] (added with `tc qdisc add`, which refuses to replace a root qdisc someone
//! configured). Loss drops packets *from the other nodes' addresses* only, so the controller's SSH
//! and client traffic are never dropped; tbf and netem shape the node's egress (all of it).
//! Does not own which nodes are hit, the journal, or the op verbs' dispatch (`nemesis`).

use crate::control::{Cmd, ExecError, Remote};
use serde_json::Value;

/// iptables comment on every loss rule the tool adds.
pub const LOSS_COMMENT: &str = "shakedown-loss";
/// Handle of the root qdisc the tool adds (tbf or netem); only a root qdisc with this handle is
/// ever removed.
pub const TC_HANDLE: &str = "5d5d:";
/// The error text of a failed op when the kernel lacks netem.
pub const NETEM_UNAVAILABLE: &str = "netem not available in this kernel";

/// Why a packet fault step failed on a node.
#[derive(Debug, thiserror::Error)]
pub enum PacketError {
    /// The remote command could not run or exited non-zero.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The kernel has no `sch_netem` (tc says "Specified qdisc kind is unknown").
    #[error("{NETEM_UNAVAILABLE} on {node} (tc: {detail})")]
    NetemUnavailable {
        /// Node name.
        node: String,
        /// tc's message.
        detail: String,
    },
    /// No interface on the node carries the node's address.
    #[error("{node}: no network interface has address {host}")]
    NoInterface {
        /// Node name.
        node: String,
        /// The node's address.
        host: String,
    },
}

/// Parameters of `start-loss`: `{"targets": "one", "probability": 0.2}`.
#[derive(Debug, Clone, PartialEq)]
pub struct LossParams {
    /// Target selection name (`one`, `minority`, `majority`, `primaries`, `all`).
    pub targets: String,
    /// Probability in (0, 1] that a packet from another node is dropped.
    pub probability: f64,
}

/// Parameters of `start-bandwidth`: `{"targets": "one", "rate_kbit": 1000}`.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthParams {
    /// Target selection name.
    pub targets: String,
    /// Egress rate limit in kbit/s (1000 bit).
    pub rate_kbit: u64,
}

/// Parameters of `start-delay`: `{"targets": "one", "delay_ms": 50, "jitter_ms": 10}`.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayParams {
    /// Target selection name.
    pub targets: String,
    /// Added egress delay in ms.
    pub delay_ms: u64,
    /// Jitter (uniform ±) around the delay in ms.
    pub jitter_ms: u64,
}

fn targets_of(v: &Value) -> Result<String, String> {
    match v.get("targets") {
        None | Some(Value::Null) => Ok("one".into()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("targets {other}: expected a string")),
    }
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
        Ok(DelayParams {
            targets: targets_of(v)?,
            delay_ms,
            jitter_ms,
        })
    }
}

/// tbf bucket size in bytes for a rate: a tenth of a second of traffic, at least 4 KiB (tbf
/// needs a bucket larger than one MTU-sized packet, and rate/HZ).
pub fn tbf_burst_bytes(rate_kbit: u64) -> u64 {
    (rate_kbit.saturating_mul(1000) / 8 / 10).max(4096)
}

/// True when tc's error says the qdisc kind is not in the kernel.
pub fn is_unknown_qdisc(stderr: &str) -> bool {
    stderr.contains("Specified qdisc kind is unknown")
        || stderr.contains("Unknown qdisc")
        || (stderr.contains("qdisc") && stderr.contains("No such file or directory"))
}

/// The kind (`tbf`, `netem`, …) of the tool's root qdisc in a `tc qdisc show [dev IF]` listing
/// (lines `qdisc KIND HANDLE [dev IF] root …`).
pub fn tool_qdisc_kind(listing: &str) -> Option<String> {
    listing.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        let root_at = if w.get(3) == Some(&"dev") { 5 } else { 3 };
        match (w.first(), w.get(1), w.get(2), w.get(root_at)) {
            (Some(&"qdisc"), Some(kind), Some(&TC_HANDLE), Some(&"root")) => Some(kind.to_string()),
            _ => None,
        }
    })
}

/// Add loss rules: `$1` chain, `$2` probability, the rest source addresses. Creates the chain
/// (and its jump from INPUT) if a previous step did not.
const LOSS_SCRIPT: &str = r#"set -e
c="$1"; p="$2"; k="$3"; shift 3
if ! iptables -w -C INPUT -j "$c" 2>/dev/null; then
  iptables -w -N "$c" 2>/dev/null || true
  iptables -w -I INPUT 1 -j "$c"
fi
[ $# -gt 0 ] || exit 0
{
  echo '*filter'
  for src in "$@"; do
    echo "-A $c -s $src -m statistic --mode random --probability $p -m comment --comment $k -j DROP"
  done
  echo COMMIT
} | iptables-restore -w -n
"#;

/// Delete the tool's loss rules (by comment `$2`) from chain `$1` with one `iptables-restore`
/// of their `-D` forms; prints how many. No chain or no rule: nothing to do.
const UNLOSS_SCRIPT: &str = r#"c="$1"; k="$2"
r=$(iptables -w -S "$c" 2>/dev/null | grep -F -- "--comment $k" | sed 's/^-A /-D /')
[ -n "$r" ] || { echo 0; exit 0; }
printf '*filter\n%s\nCOMMIT\n' "$r" | iptables-restore -w -n
printf '%s\n' "$r" | wc -l
"#;

/// Exit status of the qdisc scripts when no interface carries the node's address.
const NO_INTERFACE: i32 = 3;

/// Add the tool's root qdisc on the interface carrying address `$1`: `$2` handle, the rest the
/// qdisc and its options.
const QDISC_ADD: &str = r#"a="$1"; h="$2"; shift 2
i=$(ip -o -4 addr show | while read -r _ ifc _ cidr _; do
  [ "${cidr%/*}" = "$a" ] && echo "${ifc%@*}" && break
done)
[ -n "$i" ] || exit 3
exec tc qdisc add dev "$i" root handle "$h" "$@"
"#;

/// Remove the tool's root qdisc of kind `$3` (any kind when empty), handle `$2`, on the
/// interface carrying address `$1`; prints the kinds removed.
const QDISC_DEL: &str = r#"a="$1"; h="$2"; k="$3"
i=$(ip -o -4 addr show | while read -r _ ifc _ cidr _; do
  [ "${cidr%/*}" = "$a" ] && echo "${ifc%@*}" && break
done)
[ -n "$i" ] || exit 3
tc qdisc show dev "$i" | while read -r q kind handle where _; do
  [ "$q" = qdisc ] && [ "$handle" = "$h" ] && [ "$where" = root ] || continue
  [ -z "$k" ] || [ "$kind" = "$k" ] || continue
  tc qdisc del dev "$i" root && echo "$kind"
done
"#;

/// Drop packets arriving from `peers` (addresses) with the given probability.
pub fn start_loss(
    remote: &dyn Remote,
    chain: &str,
    peers: &[String],
    probability: f64,
) -> Result<(), PacketError> {
    let mut args = vec![
        chain.to_string(),
        format!("{probability}"),
        LOSS_COMMENT.to_string(),
    ];
    args.extend(peers.iter().cloned());
    remote.exec_ok(&Cmd::script(LOSS_SCRIPT, args).sudo(true))?;
    Ok(())
}

/// Remove the tool's loss rules from `chain` (one remote command); returns how many were
/// removed (0 if the chain is absent).
pub fn stop_loss(remote: &dyn Remote, chain: &str) -> Result<usize, PacketError> {
    let out = remote.exec_ok(&Cmd::script(UNLOSS_SCRIPT, [chain, LOSS_COMMENT]).sudo(true))?;
    Ok(out.trim().parse().unwrap_or(0))
}

fn no_interface(remote: &dyn Remote, host: &str) -> PacketError {
    PacketError::NoInterface {
        node: remote.node().to_string(),
        host: host.to_string(),
    }
}

/// One remote command: find the interface of `host`, add the tool's root qdisc there.
fn add_qdisc(remote: &dyn Remote, host: &str, qdisc: &[String]) -> Result<(), PacketError> {
    let mut args = vec![host.to_string(), TC_HANDLE.to_string()];
    args.extend(qdisc.iter().cloned());
    let cmd = Cmd::script(QDISC_ADD, args).sudo(true);
    let out = remote.exec(&cmd)?;
    if out.success() {
        return Ok(());
    }
    if out.status == NO_INTERFACE {
        return Err(no_interface(remote, host));
    }
    if is_unknown_qdisc(&out.stderr) {
        return Err(PacketError::NetemUnavailable {
            node: remote.node().to_string(),
            detail: out.stderr.trim().to_string(),
        });
    }
    Err(PacketError::Exec(ExecError::Failed {
        node: remote.node().to_string(),
        cmd: cmd.to_string(),
        status: out.status,
        stderr: out.stderr.trim().to_string(),
    }))
}

/// Limit the node's egress to `rate_kbit` with a tbf root qdisc.
pub fn start_bandwidth(remote: &dyn Remote, host: &str, rate_kbit: u64) -> Result<(), PacketError> {
    let args: Vec<String> = vec![
        "tbf".into(),
        "rate".into(),
        format!("{rate_kbit}kbit"),
        "burst".into(),
        tbf_burst_bytes(rate_kbit).to_string(),
        "latency".into(),
        "400ms".into(),
    ];
    add_qdisc(remote, host, &args)
}

/// Delay the node's egress by `delay_ms` ± `jitter_ms` with a netem root qdisc. Fails with
/// [`PacketError::NetemUnavailable`] when the kernel lacks netem.
pub fn start_delay(
    remote: &dyn Remote,
    host: &str,
    delay_ms: u64,
    jitter_ms: u64,
) -> Result<(), PacketError> {
    let mut args: Vec<String> = vec!["netem".into(), "delay".into(), format!("{delay_ms}ms")];
    if jitter_ms > 0 {
        args.push(format!("{jitter_ms}ms"));
    }
    add_qdisc(remote, host, &args)
}

/// Remove the tool's root qdisc of `kind` (`Some("tbf")`, `Some("netem")`, or any with `None`)
/// from the node's interface. Returns the kinds removed (empty when there was none).
pub fn clear_qdisc(
    remote: &dyn Remote,
    host: &str,
    kind: Option<&str>,
) -> Result<Vec<String>, PacketError> {
    let cmd = Cmd::script(QDISC_DEL, [host, TC_HANDLE, kind.unwrap_or_default()]).sudo(true);
    let out = remote.exec(&cmd)?;
    if out.status == NO_INTERFACE {
        return Err(no_interface(remote, host));
    }
    if !out.success() {
        return Err(PacketError::Exec(ExecError::Failed {
            node: remote.node().to_string(),
            cmd: cmd.to_string(),
            status: out.status,
            stderr: out.stderr.trim().to_string(),
        }));
    }
    Ok(out.stdout.lines().map(|l| l.trim().to_string()).collect())
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
        assert_eq!((d.delay_ms, d.jitter_ms), (50, 0));
        assert!(DelayParams::from_value(&json!({"delay_ms": 5, "jitter_ms": 6})).is_err());
        assert!(DelayParams::from_value(&json!({"targets": 3, "delay_ms": 5})).is_err());
    }

    #[test]
    fn only_the_tools_root_qdisc_is_recognized() {
        assert_eq!(
            tool_qdisc_kind("qdisc tbf 5d5d: root refcnt 2 rate 1Mbit burst 16Kb lat 400ms\n"),
            Some("tbf".into())
        );
        assert_eq!(tool_qdisc_kind("qdisc noqueue 0: root refcnt 2\n"), None);
        assert_eq!(
            tool_qdisc_kind("qdisc tbf 5d5d: dev eth0 root refcnt 3 rate 2Mbit\n"),
            Some("tbf".into())
        );
        assert_eq!(
            tool_qdisc_kind("qdisc tbf 5d5d: parent 1:1 limit 3\n"),
            None
        );
        assert_eq!(
            tool_qdisc_kind("qdisc tbf 1: root refcnt 2 rate 1Mbit\n"),
            None
        );
        assert_eq!(
            tool_qdisc_kind(
                "qdisc fq_codel 0: root\nqdisc netem 5d5d: root refcnt 2 limit 1000 delay 50ms\n"
            ),
            Some("netem".into())
        );
    }

    #[test]
    fn unknown_qdisc_and_burst() {
        assert!(is_unknown_qdisc(
            "Error: Specified qdisc kind is unknown.\n"
        ));
        assert!(!is_unknown_qdisc("RTNETLINK answers: File exists"));
        assert_eq!(tbf_burst_bytes(1), 4096);
        assert_eq!(tbf_burst_bytes(10_000), 125_000);
    }
}
