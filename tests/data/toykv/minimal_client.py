import json, socket, sys

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

init = json.loads(sys.stdin.readline())
host = init["nodes"][0]["host"]
timeout_s = init["timeout_ms"] / 1000 * 0.8
conn = None
send({"type": "init_ok"})

def call(req):
    global conn
    if conn is None:
        conn = socket.create_connection((host, 7070), timeout=timeout_s).makefile("rwb")
    conn.write((json.dumps(req) + "\n").encode()); conn.flush()
    return json.loads(conn.readline())

for line in sys.stdin:
    req = json.loads(line)
    try:
        r = call({"f": req["f"], "key": req["key"], "value": req["value"]})
        reply = {"type": "ok", "value": r.get("value"), "version": r.get("version")} if r["ok"] \
            else {"type": "fail", "error": "cas-mismatch"}
    except Exception as e:  # unknown outcome, except for reads, which change nothing
        conn = None
        reply = {"type": "fail" if req["f"] == "read" else "info", "error": repr(e)}
    reply["id"] = req["id"]
    send(reply)
