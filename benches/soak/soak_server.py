#!/usr/bin/python3
"""The soak bench's in-memory register: one JSON line per request on TCP port 7071
({"f": "read"|"write"|"cas", "key", "value"}), one JSON line back with the key's version. One
event loop applies every request in turn, so it is linearizable; nothing is kept on disk.
"""
import asyncio
import json

STATE = {}


def apply(req):
    k = req["key"]
    cur = STATE.get(k)
    f = req["f"]
    if f == "read":
        return {"ok": True, "value": cur[0] if cur else None, "version": cur[1] if cur else None}
    if f == "write":
        STATE[k] = [req["value"], (cur[1] if cur else 0) + 1]
        return {"ok": True, "version": STATE[k][1]}
    old, new = req["value"]
    if cur is None or cur[0] != old:
        return {"ok": False}
    STATE[k] = [new, cur[1] + 1]
    return {"ok": True, "version": STATE[k][1]}


async def serve(reader, writer):
    while line := await reader.readline():
        writer.write((json.dumps(apply(json.loads(line))) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(serve, "0.0.0.0", 7071)
    async with server:
        await server.serve_forever()


asyncio.run(main())
