#!/usr/bin/env python3
# benches/late_keys.py OPS OUT.jsonl [versions]: a register history for the streamed check's
# late keys (docs/guide/benchmarks.md, "Late keys").
# A register history whose keys rotate (groups of 3 processes, 200 ops per key), then a final
# read of every key: every key is "late" for the streamed check. With `versions`, every ok op
# carries the key's version as etcd gives it (one revision counter for all keys), so that the
# session guarantees have versions to judge.
import sys, random
ops = int(sys.argv[1]); out = open(sys.argv[2], "w")
versions = len(sys.argv) > 3 and sys.argv[3] == "versions"
rev = 0; ver = {}
def vf(key):
    return ',"version":%d' % ver[key] if versions and key in ver else ""
groups, per_key = 10, 200
rnd = random.Random(1)
t = 0; idx = 0; nextkey = 0
state = {}
cur = []
for g in range(groups):
    cur.append([nextkey, 0]); nextkey += 1
w = out.write
done = 0
while done < ops:
    for g in range(groups):
        k, n = cur[g]
        p = g * 3 + (n % 3)
        key = str(k)
        if rnd.random() < 0.5:
            v = rnd.randrange(1000)
            t += 1000
            w('{"index":%d,"time":%d,"type":"invoke","process":%d,"f":"write","key":"%s","value":%d}\n' % (idx, t, p, key, v)); idx += 1
            t += 1000
            state[key] = v
            rev += 1; ver[key] = rev
            w('{"index":%d,"time":%d,"type":"ok","process":%d,"f":"write","key":"%s","value":%d%s}\n' % (idx, t, p, key, v, vf(key))); idx += 1
        else:
            v = state.get(key)
            vs = "null" if v is None else str(v)
            t += 1000
            w('{"index":%d,"time":%d,"type":"invoke","process":%d,"f":"read","key":"%s","value":null}\n' % (idx, t, p, key)); idx += 1
            t += 1000
            w('{"index":%d,"time":%d,"type":"ok","process":%d,"f":"read","key":"%s","value":%s%s}\n' % (idx, t, p, key, vs, vf(key))); idx += 1
        done += 1
        n += 1
        if n >= per_key:
            cur[g] = [nextkey, 0]; nextkey += 1
        else:
            cur[g][1] = n
for k in range(nextkey):
    key = str(k); v = state.get(key); vs = "null" if v is None else str(v)
    t += 1000
    w('{"index":%d,"time":%d,"type":"invoke","process":%d,"f":"read","key":"%s","value":null}\n' % (idx, t, 100000, key)); idx += 1
    t += 1000
    w('{"index":%d,"time":%d,"type":"ok","process":%d,"f":"read","key":"%s","value":%s%s}\n' % (idx, t, 100000, key, vs, vf(key))); idx += 1
