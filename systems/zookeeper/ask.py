#!/usr/bin/python3
"""Ask the ZooKeeper server at argv[1]:2181 with a four-letter word, and print the answer in
shakedown's terms.

ask.py HOST srvr     prints the server's mode (leader, follower, standalone); exit 0 when it
                     serves clients, 1 when it answers that it does not.
ask.py HOST members  prints the ensemble the server holds (the `conf` word's membership), one
                     member per line: its address, and `learner` after an observer (the spec's
                     `members` output); exit 1 when it lists none (it does not serve).

Exits 2 when the server cannot be reached in 2 s.
"""
import socket
import sys


def ask(host, word):
    try:
        s = socket.create_connection((host, 2181), timeout=2)
        s.settimeout(2)
        s.sendall(word.encode())
        out = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
    except OSError as e:
        print(f"cannot ask {host}:2181: {e}", file=sys.stderr)
        sys.exit(2)
    return out.decode(errors="replace")


def refuse(text):
    print(text.strip() or "no answer", file=sys.stderr)
    sys.exit(1)


def mode(host):
    text = ask(host, "srvr")
    for line in text.splitlines():
        if line.startswith("Mode: "):
            print(line[len("Mode: "):].strip())
            sys.exit(0)
    refuse(text)


def members(host):
    text = ask(host, "conf")
    lines = text.splitlines()
    at = next((i for i, l in enumerate(lines) if l.startswith("membership:")), None)
    if at is None:
        refuse(text)
    listed = False
    for line in lines[at + 1 :]:
        # server.3=10.0.0.3:2888:3888:participant;0.0.0.0:2181
        if not line.startswith("server."):
            continue
        addr = line.split("=", 1)[1]
        observer = ":observer" in addr.split(";", 1)[0]
        print(addr.split(":", 1)[0] + (" learner" if observer else ""))
        listed = True
    if not listed:
        refuse(text)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in ("srvr", "members"):
        print("usage: ask.py HOST srvr|members", file=sys.stderr)
        sys.exit(64)
    (mode if sys.argv[2] == "srvr" else members)(sys.argv[1])
