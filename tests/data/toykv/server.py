#!/usr/bin/python3
"""A tiny durable register server for shakedown's external-system tests: one JSON line per
request on TCP port 7070 ({"f": "read"|"write"|"cas", "key", "value"}), one JSON line back.
Every change is written to state.json (write + rename) before it is acknowledged, so a kill -9
loses nothing acknowledged. One lock serialises every request: linearizable by construction.
"""
import json
import os
import socketserver
import threading

LOCK = threading.Lock()
STATE = json.load(open("state.json")) if os.path.exists("state.json") else {}


def save():
    with open("state.json.tmp", "w") as f:
        json.dump(STATE, f)
    os.replace("state.json.tmp", "state.json")


def apply(req):
    k = str(req["key"])
    with LOCK:
        cur = STATE.get(k)
        if req["f"] == "read":
            return {"ok": True, "value": cur[0] if cur else None, "version": cur[1] if cur else None}
        if req["f"] == "write":
            STATE[k] = [req["value"], (cur[1] if cur else 0) + 1]
            save()
            return {"ok": True, "version": STATE[k][1]}
        old, new = req["value"]
        if cur is None or cur[0] != old:
            return {"ok": False}
        STATE[k] = [new, cur[1] + 1]
        save()
        return {"ok": True, "version": STATE[k][1]}


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write((json.dumps(apply(json.loads(line))) + "\n").encode())
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


Server(("0.0.0.0", 7070), Handler).serve_forever()
