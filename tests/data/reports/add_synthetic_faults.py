#!/usr/bin/env python3
"""Insert hand-made nemesis ops for the fault kinds main cannot inject yet (clock, loss,
bandwidth, delay, promote) and clock-offsets measurements into a copy of a real history.

Usage: add_synthetic_faults.py REAL_HISTORY.jsonl > history.jsonl

The real ops keep their times and order; the new ops are merged in by time and every op is
renumbered (index = position). Deterministic: no randomness."""
import json
import sys

real = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
s = 1_000_000_000  # ns per second


def pair(t_s, f, value, invoke_value=None):
    """Invoke at t_s, completion 20 ms later, both typed info (as the interpreter records)."""
    t = int(t_s * s)
    return [
        {"time": t, "type": "info", "process": "nemesis", "f": f,
         "value": value if invoke_value is None else invoke_value},
        {"time": t + 20_000_000, "type": "info", "process": "nemesis", "f": f, "value": value},
    ]


new = []
new += pair(2.0, "bump-clock", {"nodes": ["n3"], "delta_ms": -250})
new += pair(3.0, "start-delay", {"nodes": ["n5"], "delay_ms": 40, "jitter_ms": 5})
new += pair(5.0, "reset-clock", {"nodes": ["n3"]})
new += pair(6.5, "stop-delay", {"nodes": ["n5"]})
new += pair(6.0, "start-loss", {"nodes": ["n4"], "probability": 0.1})
new += pair(8.0, "stop-loss", {"nodes": ["n4"]})
new += pair(8.5, "start-bandwidth", {"nodes": ["n1", "n2"], "rate_kbit": 200})
new += pair(10.0, "stop-bandwidth", {"nodes": ["n1", "n2"]})
new += pair(10.5, "promote", {"node": "n2"})
new += pair(11.0, "strobe-clock",
            {"nodes": ["n1"], "delta_ms": 100, "period_ms": 10, "duration_ms": 1000})
new += pair(12.2, "reset-clock", {"nodes": ["n1"]})


def busy_spans(ops):
    """(invoke, completion) time spans of nemesis op pairs: the nemesis is one sequential
    process, so inserted pairs must not interleave with these."""
    spans, pending = [], None
    for o in sorted(ops, key=lambda o: o["time"]):
        if o["process"] != "nemesis":
            continue
        if pending is None:
            pending = o["time"]
        else:
            spans.append((pending, o["time"]))
            pending = None
    return spans


# Offsets about every 0.5 s: small drift everywhere, n3 250 ms behind while bumped, n1 strobing.
for i in range(1, 33):
    t = i * 0.5 + 0.25
    spans = busy_spans(real + new)
    while any(a - 5_000_000 <= int(t * s) + 20_000_000 and int(t * s) <= b + 5_000_000
              for a, b in spans):
        t += 0.03
    offsets = {f"n{k}": round(0.1 * k - 0.3 + 0.05 * (i % 3), 3) for k in range(1, 6)}
    if 2.02 <= t < 5.02:
        offsets["n3"] -= 250.0
    if 11.02 <= t < 12.0:
        offsets["n1"] += 100.0 if i % 2 else 0.0
    new += pair(t, "clock-offsets", {"offsets_ms": offsets}, invoke_value=None)
    new[-2]["value"] = None  # the invocation carries no measurement

ops = sorted(real + new, key=lambda o: o["time"])  # stable: real ops keep their order
for i, o in enumerate(ops):
    o["index"] = i
    # Canonical key order: index first, as the interpreter writes.
    ordered = {"index": i}
    ordered.update({k: v for k, v in o.items() if k != "index"})
    print(json.dumps(ordered, separators=(",", ":"), ensure_ascii=False))
