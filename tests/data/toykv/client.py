#!/usr/bin/python3
"""Client of the toy register server (server.py on the first node) for shakedown's tests.

With option misbehave=yes, thread 0 crashes, thread 1 hangs, thread 2 writes garbage and thread 3
answers with a wrong id on the 5th op of each of its processes (after doing the op, so the
controller must not trust any outcome of it). Other threads, and misbehave=no, follow the protocol.
"""
import json
import os
import socket
import sys
import time


def send(d):
    sys.stdout.write(json.dumps(d) + "\n")
    sys.stdout.flush()


init = json.loads(sys.stdin.readline())
server = init["nodes"][0]["host"]
misbehave = init["options"].get("misbehave") == "yes"
thread = init["thread"]
timeout_s = init["timeout_ms"] / 1000.0 * 0.8
conn = None
send({"type": "init_ok"})


def call(req):
    global conn
    if conn is None:
        conn = socket.create_connection((server, 7070), timeout=timeout_s).makefile("rwb")
    conn.write((json.dumps(req) + "\n").encode())
    conn.flush()
    line = conn.readline()
    if not line:
        raise ConnectionError("server closed the connection")
    return json.loads(line)


n = 0
for line in sys.stdin:
    req = json.loads(line)
    n += 1
    try:
        r = call({"f": req["f"], "key": req["key"], "value": req["value"]})
        if r["ok"]:
            reply = {"type": "ok", "version": r.get("version")}
            if req["f"] == "read":
                reply["value"] = r["value"]
        else:
            reply = {"type": "fail", "error": "cas-mismatch"}
    except Exception as e:
        conn = None
        kind = "fail" if req["f"] == "read" else "info"
        reply = {"type": kind, "error": f"{type(e).__name__}: {e}"}
    reply["id"] = req["id"]
    if misbehave and n == 5:
        if thread == 0:
            sys.stderr.write("toy client: crashing on purpose\n")
            os._exit(7)
        if thread == 1:
            time.sleep(3600)
        if thread == 2:
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            continue
        if thread == 3:
            reply["id"] = req["id"] + 1000
    send(reply)
