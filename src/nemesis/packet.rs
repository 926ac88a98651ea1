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
use crate::faults::packet::{DelayBackend, DelayParams};
use serde_json::Value;

/// iptables comment on every loss rule the tool adds.
pub const LOSS_COMMENT: &str = "shakedown-loss";
/// Handle of the root qdisc the tool adds (tbf or netem); only a root qdisc with this handle is
/// ever removed.
pub const TC_HANDLE: &str = "5d5d:";
/// iptables comment on the rule that queues a node's egress to the delayer (NFQUEUE backend).
pub const DELAY_COMMENT: &str = "shakedown-delay";
/// The delayer's NFQUEUE queue number (queues are per network namespace: one per node).
pub const DELAY_QUEUE: u16 = 0x5d5d;
/// Where the delayer keeps its pidfile and log on a node (`.pid`, `.log`; a node's `/tmp`).
pub const DELAYER_FILES: &str = "/tmp/shakedown-netdelay";
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
    /// The delay needs the NFQUEUE delayer and no binary to run it was given.
    #[error(
        "{node}: the delay needs the NFQUEUE delayer here (no netem, or backend = \"nfqueue\"), which runs the shakedown binary on the node, and this nemesis was given none"
    )]
    NoDelayer {
        /// Node name.
        node: String,
    },
    /// The delay duplicates packets, which only netem can do, and the node's kernel has none.
    #[error(
        "{node}: the delay duplicates packets, which needs netem, and this kernel has none ({})",
        crate::faults::packet::NFQUEUE_CANNOT_DUPLICATE
    )]
    CannotDuplicate {
        /// Node name.
        node: String,
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

/// Expands to a shell function `iface_of ADDR` (a string literal, for `concat!` in front of a
/// script): prints the interface carrying IPv4 address ADDR, nothing when none does.
macro_rules! iface_sh {
    () => {
        r#"iface_of() {
  ip -o -4 addr show | while read -r _ ifc _ cidr _; do
    [ "${cidr%/*}" = "$1" ] && echo "${ifc%@*}" && break
  done
}
"#
    };
}
pub(crate) use iface_sh;

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
const QDISC_ADD: &str = concat!(
    iface_sh!(),
    r#"a="$1"; h="$2"; shift 2
i=$(iface_of "$a")
[ -n "$i" ] || exit 3
exec tc qdisc add dev "$i" root handle "$h" "$@"
"#
);

/// Remove the tool's root qdisc of kind `$3` (any kind when empty), handle `$2`, on the
/// interface carrying address `$1`; prints the kinds removed.
const QDISC_DEL: &str = concat!(
    iface_sh!(),
    r#"a="$1"; h="$2"; k="$3"
i=$(iface_of "$a")
[ -n "$i" ] || exit 3
tc qdisc show dev "$i" | while read -r q kind handle where _; do
  [ "$q" = qdisc ] && [ "$handle" = "$h" ] && [ "$where" = root ] || continue
  [ -z "$k" ] || [ "$kind" = "$k" ] || continue
  tc qdisc del dev "$i" root && echo "$kind"
done
"#
);

/// Start the delayer and queue the node's egress to it: `$1` binary, `$2` node address, `$3`
/// queue, `$4` rule comment, `$5` files prefix, then the delayer's flags. Waits (≤ 5 s) for the
/// delayer to bind its queue before adding the rule, so no packet is queued to nobody.
const NFQ_START: &str = concat!(
    iface_sh!(),
    r#"exe="$1"; a="$2"; q="$3"; k="$4"; f="$5"; shift 5
i=$(iface_of "$a")
[ -n "$i" ] || exit 3
[ -x "$exe" ] || { echo "the shakedown binary is not at $exe on this node (the NFQUEUE delay runs it there)" >&2; exit 1; }
pid=$(cat "$f.pid" 2>/dev/null || true)
if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q netdelay; then
  echo "a delayer is already running here (pid $pid): stop the delay first" >&2; exit 1
fi
: > "$f.log"
setsid "$exe" netdelay --queue "$q" "$@" >> "$f.log" 2>&1 < /dev/null &
p=$!
echo "$p" > "$f.pid"
n=0
until grep -q '^ready' "$f.log"; do
  if grep -q '^error' "$f.log"; then
    rm -f "$f.pid"; echo "the delayer did not start: $(grep '^error' "$f.log" | head -n 1)" >&2; exit 1
  fi
  n=$((n+1))
  if [ $n -gt 100 ]; then
    kill -9 "$p" 2>/dev/null; rm -f "$f.pid"
    echo "the delayer did not bind queue $q within 5 s: $(tail -n 3 "$f.log")" >&2; exit 1
  fi
  sleep 0.05
done
iptables -w -I OUTPUT 1 -o "$i" -m comment --comment "$k" -j NFQUEUE --queue-num "$q" --queue-bypass
"#
);

/// Undo a delay of either backend: the queue rules (first, so nothing new is queued), then the
/// delayer (SIGTERM: it releases what it holds; SIGKILL after 5 s), then the tool's netem qdisc.
/// `$1` node address, `$2` tc handle, `$3` rule comment, `$4` files prefix. Prints `rules N`,
/// `delayer <its summary line>` and `qdisc netem` for what it removed.
const DELAY_STOP: &str = concat!(
    iface_sh!(),
    r#"a="$1"; h="$2"; k="$3"; f="$4"
r=$(iptables -w -S OUTPUT 2>/dev/null | grep -F -- "--comment $k" | sed 's/^-A /-D /')
if [ -n "$r" ]; then
  printf '*filter\n%s\nCOMMIT\n' "$r" | iptables-restore -w -n || exit 1
  echo "rules $(printf '%s\n' "$r" | wc -l)"
fi
pid=$(cat "$f.pid" 2>/dev/null || true)
if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q netdelay; then
  kill -TERM "$pid" 2>/dev/null
  n=0
  while [ -d "/proc/$pid" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n+1)); done
  [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
  echo "delayer $(grep '^summary' "$f.log" 2>/dev/null | tail -n 1)"
fi
rm -f "$f.pid"
i=$(iface_of "$a")
[ -n "$i" ] || exit 0
tc qdisc show dev "$i" | while read -r q kind handle where _; do
  [ "$q" = qdisc ] && [ "$handle" = "$h" ] && [ "$where" = root ] && [ "$kind" = netem ] || continue
  tc qdisc del dev "$i" root && echo "qdisc netem"
done
exit 0
"#
);

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

/// A command that ran and exited non-zero, as `Remote::exec_ok` reports it.
fn failed(remote: &dyn Remote, cmd: String, out: &crate::control::ExecOutput) -> PacketError {
    PacketError::Exec(ExecError::Failed {
        node: remote.node().to_string(),
        cmd,
        status: out.status,
        stderr: out.stderr.trim().to_string(),
    })
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
    Err(failed(remote, cmd.to_string(), &out))
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

/// Delay the node's egress with a netem root qdisc (`p`'s delay, jitter and reorder). Fails
/// with [`PacketError::NetemUnavailable`] when the kernel lacks netem.
pub fn start_netem_delay(
    remote: &dyn Remote,
    host: &str,
    p: &DelayParams,
) -> Result<(), PacketError> {
    add_qdisc(remote, host, &p.netem_args())
}

/// Delay the node's egress as `p` says, with the backend it names (`auto`: netem, else the
/// NFQUEUE delayer run from `exe` with schedule seed `seed`). Returns the backend that serves it.
pub fn start_delay(
    remote: &dyn Remote,
    host: &str,
    p: &DelayParams,
    exe: Option<&str>,
    seed: u64,
) -> Result<DelayBackend, PacketError> {
    if p.backend != DelayBackend::Nfqueue {
        match start_netem_delay(remote, host, p) {
            Ok(()) => return Ok(DelayBackend::Netem),
            Err(PacketError::NetemUnavailable { .. })
                if p.backend == DelayBackend::Auto && !p.nfqueue_can_serve() =>
            {
                return Err(PacketError::CannotDuplicate {
                    node: remote.node().to_string(),
                });
            }
            Err(PacketError::NetemUnavailable { .. }) if p.backend == DelayBackend::Auto => {}
            Err(e) => return Err(e),
        }
    }
    let Some(exe) = exe else {
        return Err(PacketError::NoDelayer {
            node: remote.node().to_string(),
        });
    };
    let args: Vec<String> = vec![
        exe.to_string(),
        host.to_string(),
        DELAY_QUEUE.to_string(),
        DELAY_COMMENT.to_string(),
        DELAYER_FILES.to_string(),
        "--delay-ms".into(),
        p.delay_ms.to_string(),
        "--jitter-ms".into(),
        p.jitter_ms.to_string(),
        "--reorder".into(),
        p.reorder.to_string(),
        "--seed".into(),
        seed.to_string(),
    ];
    let cmd = Cmd::script(NFQ_START, args).sudo(true);
    let out = remote.exec(&cmd)?;
    if out.status == NO_INTERFACE {
        return Err(no_interface(remote, host));
    }
    if !out.success() {
        return Err(failed(remote, "start the NFQUEUE delayer".into(), &out));
    }
    Ok(DelayBackend::Nfqueue)
}

/// What undoing a delay removed on one node.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DelayRemoved {
    /// The tool's netem qdisc was there.
    pub netem: bool,
    /// Queue rules removed.
    pub rules: usize,
    /// The delayer was running; its summary (packets delayed, lateness) when it printed one.
    pub delayer: Option<Value>,
}

impl DelayRemoved {
    /// Parse the output of the stop script.
    pub fn parse(out: &str) -> DelayRemoved {
        let mut r = DelayRemoved::default();
        for line in out.lines() {
            if line.trim() == "qdisc netem" {
                r.netem = true;
            } else if let Some(n) = line.strip_prefix("rules ") {
                r.rules += n.trim().parse::<usize>().unwrap_or(0);
            } else if let Some(rest) = line.strip_prefix("delayer") {
                let summary = rest.trim().strip_prefix(crate::netdelay::SUMMARY);
                r.delayer = Some(
                    summary
                        .and_then(|j| serde_json::from_str(j.trim()).ok())
                        .unwrap_or(Value::Null),
                );
            }
        }
        r
    }
}

/// Undo a delay of either backend on the node (nothing there: nothing to do).
pub fn stop_delay(remote: &dyn Remote, host: &str) -> Result<DelayRemoved, PacketError> {
    let out = remote.exec_ok(
        &Cmd::script(DELAY_STOP, [host, TC_HANDLE, DELAY_COMMENT, DELAYER_FILES]).sudo(true),
    )?;
    Ok(DelayRemoved::parse(&out))
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
        return Err(failed(remote, cmd.to_string(), &out));
    }
    Ok(out.stdout.lines().map(|l| l.trim().to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn what_a_delay_stop_removed() {
        let r = DelayRemoved::parse(
            "rules 1\ndelayer summary {\"delayed\": 12, \"late_p99_us\": 80}\nqdisc netem\n",
        );
        assert_eq!((r.netem, r.rules), (true, 1));
        assert_eq!(r.delayer.unwrap()["delayed"], 12);
        let killed = DelayRemoved::parse("delayer \n");
        assert_eq!(killed.delayer, Some(Value::Null));
        assert_eq!(DelayRemoved::parse(""), DelayRemoved::default());
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
