#!/usr/bin/python3
"""shakedown's ZooKeeper client (kazoo), speaking the JSON-lines protocol of PROTOCOL.md.

Versions: the znode's data version + 1, i.e. how many writes the znode has taken (its creation is
the first): 1, 2, 3, … in the order ZooKeeper applied them (the session checker wants them > 0).

One process per worker thread. It connects to its own node's server only, so every op goes
there; ZooKeeper forwards writes to the leader. Register ops on the znode /shakedown-<key>,
the value stored as JSON text:

  read   -> ok with the value (null when the znode does not exist) and its version;
            with option reads=sync, sync() on the znode first
  write  -> set (create when missing); ok with the new version
  cas    -> [old, new]: read (after sync() with reads=sync); a different value is
            fail "cas-mismatch" (the value seen is evidence); otherwise set with the version read,
            so a write in between is fail "bad-version" (definitely not applied)

A read that fails did nothing, so it is `fail`; so is any op kazoo refuses before sending it
(ConnectionClosedError: no session yet). A write or cas that times out or loses its connection
may have been applied: `info`. Each op gets 80 % of the controller's op timeout.
"""
import json
import logging
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, ConnectionClosedError, NodeExistsError,
                              NoNodeError)
from kazoo.retry import KazooRetry

logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def send(reply):
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


def describe(e):
    return f"{type(e).__name__}: {e}".rstrip(": ")


init = json.loads(sys.stdin.readline())
host = next(n["host"] for n in init["nodes"] if n["name"] == init["node"])
sync_reads = init["options"].get("reads", "plain") == "sync"
budget_s = init["timeout_ms"] / 1000.0 * 0.8
# No retries inside kazoo: an op is one attempt, classified honestly.
zk = KazooClient(hosts=f"{host}:2181", timeout=5.0,
                 connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
                 command_retry=None)
# Wait briefly for the session (a partitioned server may never give one; ops then fail).
zk.start_async().wait(min(budget_s, 0.2))
send({"type": "init_ok"})


def wait(async_result, deadline):
    return async_result.get(timeout=max(0.001, deadline - time.monotonic()))


def decode(data):
    return json.loads(data) if data else None


def read(path, deadline):
    """(value, version) as seen by this thread's server (after sync() with reads=sync)."""
    if sync_reads:
        wait(zk.sync_async(path), deadline)
    try:
        data, stat = wait(zk.get_async(path), deadline)
    except NoNodeError:
        return None, None
    return decode(data), stat.version + 1


def write(path, value, deadline):
    data = json.dumps(value).encode()
    try:
        return wait(zk.set_async(path, data), deadline).version + 1
    except NoNodeError:
        pass
    try:
        wait(zk.create_async(path, data), deadline)
        return 1
    except NodeExistsError:
        return wait(zk.set_async(path, data), deadline).version + 1


def handle(req):
    deadline = time.monotonic() + budget_s
    path = "/shakedown-" + str(req["key"])
    f = req["f"]
    if f == "read":
        try:
            value, version = read(path, deadline)
            return {"type": "ok", "value": value, "version": version}
        except Exception as e:  # a read changes nothing: definitely no effect
            return {"type": "fail", "error": describe(e)}
    if f == "write":
        try:
            return {"type": "ok", "version": write(path, req["value"], deadline)}
        except ConnectionClosedError as e:  # refused before sending: not applied
            return {"type": "fail", "error": describe(e)}
        except Exception as e:
            return {"type": "info", "error": describe(e)}
    if f == "cas":
        old, new = req["value"]
        try:
            value, version = read(path, deadline)
        except Exception as e:
            return {"type": "fail", "error": describe(e)}
        if value != old or version is None:
            return {"type": "fail", "error": "cas-mismatch"}
        try:
            stat = wait(zk.set_async(path, json.dumps(new).encode(), version - 1), deadline)
            return {"type": "ok", "version": stat.version + 1}
        except (BadVersionError, NoNodeError):
            return {"type": "fail", "error": "bad-version"}
        except ConnectionClosedError as e:
            return {"type": "fail", "error": describe(e)}
        except Exception as e:
            return {"type": "info", "error": describe(e)}
    return {"type": "fail", "error": f"unsupported function {f!r}"}


for line in sys.stdin:
    req = json.loads(line)
    reply = handle(req)
    reply["id"] = req["id"]
    send(reply)
zk.stop()
