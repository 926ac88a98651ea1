#!/usr/bin/python3
"""Ask the ZooKeeper server at argv[1]:2181 for its role with the `srvr` four-letter word.

Prints the mode (leader, follower, standalone) and exits 0 when the server serves clients;
exits 1 when it answers that it does not, 2 when it cannot be reached in 2 s.
"""
import socket
import sys

try:
    s = socket.create_connection((sys.argv[1], 2181), timeout=2)
    s.settimeout(2)
    s.sendall(b"srvr")
    out = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        out += chunk
except OSError as e:
    print(f"cannot ask {sys.argv[1]}:2181: {e}", file=sys.stderr)
    sys.exit(2)
for line in out.decode(errors="replace").splitlines():
    if line.startswith("Mode: "):
        print(line[len("Mode: "):].strip())
        sys.exit(0)
print(out.decode(errors="replace").strip() or "no answer", file=sys.stderr)
sys.exit(1)
