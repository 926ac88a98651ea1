#!/usr/bin/python3
"""Print the membership the ZooKeeper server at argv[1]:2181 holds, with the `conf` four-letter
word: one member per line, its address, and `learner` after an observer (shakedown's `members`
output). Exits 1 when the server does not serve (it then lists no membership), 2 when it cannot
be reached in 2 s.
"""
import socket
import sys

try:
    s = socket.create_connection((sys.argv[1], 2181), timeout=2)
    s.settimeout(2)
    s.sendall(b"conf")
    out = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        out += chunk
except OSError as e:
    print(f"cannot ask {sys.argv[1]}:2181: {e}", file=sys.stderr)
    sys.exit(2)
text = out.decode(errors="replace")
lines = text.splitlines()
at = next((i for i, l in enumerate(lines) if l.startswith("membership:")), None)
if at is None:
    print(text.strip() or "no answer", file=sys.stderr)
    sys.exit(1)
listed = False
for line in lines[at + 1 :]:
    # server.3=10.0.0.3:2888:3888:participant;0.0.0.0:2181
    if not line.startswith("server."):
        continue
    addr = line.split("=", 1)[1]
    host = addr.split(":", 1)[0]
    observer = ":observer" in addr.split(";", 1)[0]
    print(host + (" learner" if observer else ""))
    listed = True
sys.exit(0 if listed else 1)
