//! What of the tool's is on a node before `shakedown heal` undoes it: the survey script (the
//! chain's partition and loss rules, the delay's queue rules and delayer, the tool's root
//! qdisc) and its parsed result ([`Found`]), which the faults' journal heals word their lines
//! with. Does not own healing (`heal`, the faults).

use super::packet;

/// Reads, per node, what of the tool's is there before healing: the chain's rules (loss rules
/// counted apart), the delay's queue rules and delayer, and the tool's root qdisc. `$1` chain,
/// `$2` loss comment, `$3` node address, `$4` tc handle, `$5` delay rule comment, `$6` the
/// delayer's files prefix. Prints `chain absent` or `chain <rules> <loss rules>`, `delay <queue
/// rules> <delayer running: 0|1>`, then `qdisc <kind>`.
pub const SURVEY: &str = concat!(
    packet::iface_sh!(),
    r#"c="$1"; k="$2"; a="$3"; h="$4"; dk="$5"; f="$6"
if r=$(iptables -w -S "$c" 2>/dev/null); then
  all=$(printf '%s\n' "$r" | grep -c '^-A ')
  loss=$(printf '%s\n' "$r" | grep -c -- "--comment $k")
  echo "chain $all $loss"
else
  echo "chain absent"
fi
q=$(iptables -w -S OUTPUT 2>/dev/null | grep -c -F -- "--comment $dk")
pid=$(cat "$f.pid" 2>/dev/null || true)
run=0
if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q netdelay; then run=1; fi
echo "delay $q $run"
i=$(iface_of "$a")
[ -n "$i" ] || exit 0
tc qdisc show dev "$i" | while read -r q kind handle where _; do
  [ "$q" = qdisc ] && [ "$handle" = "$h" ] && [ "$where" = root ] && echo "qdisc $kind"
done
exit 0
"#
);

/// What the survey found on one node.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// `Some((partition rules, loss rules))` when the chain exists.
    pub chain: Option<(usize, usize)>,
    /// Kind of the tool's root qdisc, if any.
    pub qdisc: Option<String>,
    /// The delay's queue rules, and whether its delayer runs.
    pub delay: (usize, bool),
}

pub fn parse_survey(out: &str) -> Found {
    let mut found = Found::default();
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["chain", all, loss] => {
                let all: usize = all.parse().unwrap_or(0);
                let loss: usize = loss.parse().unwrap_or(0);
                found.chain = Some((all.saturating_sub(loss), loss));
            }
            ["qdisc", kind] => found.qdisc = Some((*kind).to_string()),
            ["delay", rules, running] => {
                found.delay = (rules.parse().unwrap_or(0), *running == "1");
            }
            _ => {}
        }
    }
    found
}
