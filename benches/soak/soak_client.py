#!/usr/bin/python3
"""The soak bench's client (benches/soak/soak.toml): each request goes to the register server
on the first node over one TCP connection; a lost connection makes the op unknown (`info`;
a read `fail`) and the next op reconnects."""
import json
import socket
import sys

init = json.loads(sys.stdin.readline())
server = init["nodes"][0]["host"]
timeout_s = init["timeout_ms"] / 1000.0 * 0.8
conn = None
out = sys.stdout
out.write('{"type": "init_ok"}\n')
out.flush()

for line in sys.stdin:
    req = json.loads(line)
    try:
        if conn is None:
            conn = socket.create_connection((server, 7071), timeout=timeout_s).makefile("rwb")
        conn.write((json.dumps({"f": req["f"], "key": req["key"], "value": req["value"]}) + "\n").encode())
        conn.flush()
        got = conn.readline()
        if not got:
            raise ConnectionError("server closed the connection")
        r = json.loads(got)
        if r["ok"]:
            reply = {"type": "ok", "version": r.get("version")}
            if req["f"] == "read":
                reply["value"] = r["value"]
        else:
            reply = {"type": "fail", "error": "cas-mismatch"}
    except Exception as e:
        conn = None
        reply = {"type": "fail" if req["f"] == "read" else "info", "error": f"{type(e).__name__}: {e}"}
    reply["id"] = req["id"]
    out.write(json.dumps(reply) + "\n")
    out.flush()
