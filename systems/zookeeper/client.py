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

Lock workloads (`lock`, `fenced-lock`; ops and values as in PROTOCOL.md), on two more sessions
opened at the first lock op: the *lock session* (timeout `session_timeout_ms`, default 2 s: its
expiry is ZooKeeper's lease on a lock) and the *resource session* (10 s, ZooKeeper's maximum with
tickTime=500), standing for the service the lock protects, which knows nothing of the lock:

  lock-acquire -> kazoo's Lock recipe on /locks/<lock>: an ephemeral sequential node, held when
                  it is the lowest; waits up to 25 % of the op budget for the holder before it.
                  Still unfinished when the op budget ends (slow quorum writes): the lock session
                  is closed, taking the node with it, and the answer is info.
                  ok {"token": the node's sequence number} (monotonic per lock: ZooKeeper's
                  sequence counter of the parent). Not acquired and no node of ours left behind:
                  fail "lock-held"; a node of ours may be left (the cleanup was not confirmed):
                  info. A lock session that expired (or was never made) holds nothing: fail.
  lock-write   -> set /resources/<lock> to {"value": v, "token": t} (create when missing), no check
  fenced-write -> the same, as a compare-and-set on the znode's version: read it; a stored token
                  greater than t is fail "stale-token"; else set with the version read (BadVersion:
                  someone wrote in between, read again). Atomic in ZooKeeper.
  lock-release -> delete this process's node(s) under /locks/<lock>; gone already (deleted, or
                  the session expired, which deletes ephemeral nodes) is ok. A release that cannot
                  be confirmed closes the lock session (its nodes go with it) and is info.

Nothing checks the lock session before a protected write (the resource trusts the lock, like
etcd's and Redis's clients here): a holder whose process froze past the session timeout (the stall
nemesis SIGSTOPs the client process) lost its node, another thread took the lock, and the frozen
holder writes when it wakes. Resource writes retry a lost connection within the op budget (a set
of a unique value is idempotent); an attempt with an unknown outcome makes a later refusal `info`.
"""
import json
import logging
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, CancelledError, ConnectionClosedError,
                              ConnectionLoss, LockTimeout, NodeExistsError, NoNodeError, SessionExpiredError)
from kazoo.recipe.lock import Lock
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
session_timeout_s = int(init["options"].get("session_timeout_ms", "2000")) / 1000.0


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


# ---- lock workloads -------------------------------------------------------------------------
ACQUIRE, WRITE, FENCED_WRITE, RELEASE = "lock-acquire", "lock-write", "fenced-write", "lock-release"
STALE_TOKEN = "stale-token"  # generator::lock::STALE_TOKEN
LOCK_HELD = "lock-held"
RESOURCE_TIMEOUT_S = 10.0
sessions = {}  # "lock" / "resource" -> KazooClient, opened at the first lock op
held = {}      # lock name -> the Lock of this process's last acquire


def session(role, wait_s=0.2):
    """The lock or resource session, started on first use."""
    c = sessions.get(role)
    if c is None:
        timeout = session_timeout_s if role == "lock" else RESOURCE_TIMEOUT_S
        c = KazooClient(hosts=f"{host}:2181", timeout=timeout,
                        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
                        command_retry=None)
        c.start_async().wait(wait_s)
        sessions[role] = c
    return c


if init.get("workload") in ("lock", "fenced-lock"):
    # Open both sessions now (their first ops would otherwise wait for them).
    session("lock", 0)
    session("resource", 0)
send({"type": "init_ok"})


def restart_lock_session():
    """Close the lock session in the background: the server deletes its ephemeral nodes (or
    expires them); the next lock op opens a new one."""
    c = sessions.pop("lock", None)
    held.clear()

    def close():
        try:
            c.stop()
            c.close()
        except Exception:
            pass
    if c is not None:
        threading.Thread(target=close, daemon=True).start()


def ours(lock, path, deadline):
    """This process's contender nodes under `path` (raises when they cannot be listed)."""
    children = wait(lock.client.get_children_async(path), deadline + 0.1)
    return [n for n in children if n.startswith(lock.prefix)]


def acquire(name, deadline):
    """`attempt` on a worker thread, bounded by the op budget: an acquire still running then (slow
    quorum writes under load) may yet take the lock, so the lock session is closed (its nodes go
    with it) and the answer is info. Being killed by the controller instead would leave the node
    in place for a whole session timeout, blocking every other contender."""
    result = []
    worker = threading.Thread(target=lambda: result.append(attempt(name, deadline)), daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if result:
        return result[0]
    restart_lock_session()
    return {"type": "info", "error": "acquire unfinished within the op budget; lock session closed"}


def attempt(name, deadline):
    path = "/locks/" + name
    zl = session("lock")
    lock = Lock(zl, path, identifier=f"thread-{init['thread']}")
    held[name] = lock
    wait_s = max(0.01, (deadline - time.monotonic()) * 0.25)
    error = None
    # The recipe waits `timeout` per predecessor; cancel() bounds the whole wait.
    bound = threading.Timer(wait_s, lock.cancel)
    bound.start()
    try:
        if lock.acquire(blocking=True, timeout=wait_s):
            return {"type": "ok", "value": {"token": int(lock.node[-10:])}}
    except (LockTimeout, CancelledError):
        pass
    except (ConnectionClosedError, SessionExpiredError) as e:
        # No session: nothing sent, or the node (ephemeral) went with the session.
        held.pop(name, None)
        return {"type": "fail", "error": describe(e)}
    except Exception as e:
        error = describe(e)
    finally:
        bound.cancel()
    if not lock.create_tried:
        held.pop(name, None)
        return {"type": "fail", "error": error or LOCK_HELD}
    try:
        left = ours(lock, path, deadline)
    except SessionExpiredError as e:
        held.pop(name, None)
        return {"type": "fail", "error": describe(e)}
    except Exception as e:
        return {"type": "info", "error": f"{error or LOCK_HELD}; node cleanup unknown: {describe(e)}"}
    if left:
        return {"type": "info", "error": f"{error or LOCK_HELD}; node {left[0]} left behind"}
    held.pop(name, None)
    return {"type": "fail", "error": error or LOCK_HELD}


def release(name, deadline):
    lock = held.pop(name, None)
    if lock is None or not lock.create_tried:
        return {"type": "ok"}
    path = "/locks/" + name
    try:
        for node in ours(lock, path, deadline):
            try:
                wait(lock.client.delete_async(path + "/" + node), deadline)
            except NoNodeError:
                pass
        return {"type": "ok"}
    except (NoNodeError, SessionExpiredError):
        return {"type": "ok"}  # no such lock, or the session (and its nodes) is gone
    except Exception as e:
        restart_lock_session()
        return {"type": "info", "error": f"release unconfirmed, lock session closed: {describe(e)}"}


def resource_write(name, value, token, fenced, deadline):
    """A protected write of {"value", "token"} to /resources/<name>."""
    path = "/resources/" + name
    zr = session("resource")
    data = json.dumps({"value": value, "token": token}).encode()
    unknown = None  # an earlier attempt whose outcome is unknown
    while True:
        try:
            if not fenced:
                try:
                    wait(zr.set_async(path, data), deadline)
                except NoNodeError:
                    wait(zr.ensure_path_async("/resources"), deadline)
                    try:
                        wait(zr.create_async(path, data), deadline)
                    except NodeExistsError:
                        continue
                return {"type": "ok"}
            try:
                raw, stat = wait(zr.get_async(path), deadline)
            except NoNodeError:
                raw, stat = None, None
            stored = decode(raw) if raw else None
            if unknown is not None and stored and stored.get("value") == value:
                return {"type": "ok"}  # the unknown attempt was applied
            if stored and stored.get("token") is not None and token is not None \
                    and stored["token"] > token:
                if unknown is not None:
                    return {"type": "info", "error": f"{STALE_TOKEN} after an attempt with unknown outcome: {unknown}"}
                return {"type": "fail", "error": STALE_TOKEN}
            try:
                if stat is None:
                    wait(zr.ensure_path_async("/resources"), deadline)
                    wait(zr.create_async(path, data), deadline)
                else:
                    wait(zr.set_async(path, data, stat.version), deadline)
                return {"type": "ok"}
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # written in between: read again
        except (ConnectionClosedError, SessionExpiredError) as e:
            if unknown is None:
                return {"type": "fail", "error": describe(e)}
            time.sleep(0.02)
        except ConnectionLoss as e:
            unknown = describe(e)
            time.sleep(0.02)
        except Exception as e:
            return {"type": "info", "error": describe(e)}
        if time.monotonic() >= deadline:
            return {"type": "info", "error": f"no answer within the op budget: {unknown}"}


def handle_lock(req, deadline):
    f, name, v = req["f"], str(req["key"]), req.get("value") or {}
    if f == ACQUIRE:
        return acquire(name, deadline)
    if f == RELEASE:
        return release(name, deadline)
    if f in (WRITE, FENCED_WRITE):
        return resource_write(name, v.get("value"), v.get("token"), f == FENCED_WRITE, deadline)
    return {"type": "fail", "error": f"unsupported function {f!r}"}


def handle(req):
    deadline = time.monotonic() + budget_s
    if req["f"] in (ACQUIRE, WRITE, FENCED_WRITE, RELEASE):
        return handle_lock(req, deadline)
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
for c in [zk, *sessions.values()]:
    c.stop()
