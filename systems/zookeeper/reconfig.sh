#!/bin/sh
# Ask the ZooKeeper server at $1:2181 for a reconfiguration (`zkCli.sh reconfig $2…`, e.g.
# `-remove 3` or `-add server.3=…`) and say what came of it in shakedown's terms: exit 0 when
# ZooKeeper committed it, 3 when it turned it down and nothing changed (no quorum for the new
# configuration, another reconfiguration in progress, a bad request), 1 otherwise (connection
# lost, timed out: it may still commit).
host="$1"; shift
out=$(timeout 20 /usr/share/zookeeper/bin/zkCli.sh -timeout 4000 -server "$host:2181" reconfig "$@" 2>&1)
status=$?
if printf '%s\n' "$out" | grep -q '^Committed new configuration'; then
  exit 0
fi
said=$(printf '%s\n' "$out" | grep -E 'KeeperErrorCode|Exception|rror' | grep -v '^\s*at ' | tail -2)
echo "zkCli reconfig $* through $host (exit $status): ${said:-no answer}" >&2
case "$said" in
  *NewConfigNoQuorum*|*ReconfigInProgress*|*BadArguments*|*ReconfigDisabled*) exit 3 ;;
esac
exit 1
