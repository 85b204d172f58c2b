#!/usr/bin/env bash
# ledger-tool.sh: an example exec-runtime tool with an external side
# effect (protocol agentgw-exec/0, see docs/exec-runtime.md). It needs only
# bash.
#
# It serves one tool, ledger.append {"key": string, "delay_ms": integer}:
# after delay_ms milliseconds it appends one line "HANDLE KEY" to the ledger
# file named by its first argument, then completes with structuredContent
# {"key": KEY}. The integration and crash tests count these lines to check
# that no admitted task ever runs twice.
#
# The side effect comes before the result: a gateway killed in between
# settles the task as failed (unavailable), and the line stays. That is the
# at-most-once the protocol promises; exactly-once is not.
set -u

say() { printf '%s\n' "$1"; }
log() { printf 'ledger-tool: %s\n' "$1" >&2; }

ledger=${1:?usage: ledger-tool.sh LEDGER-FILE}

IFS= read -r invoke || exit 1
case "$invoke" in
  *'"protocol":"agentgw-exec/0"'*) ;;
  *) log "unsupported protocol"; exit 1 ;;
esac
tool=$(printf '%s' "$invoke" | sed -n 's/.*"tool":{"name":"\([^"]*\)".*/\1/p')
handle=$(printf '%s' "$invoke" | sed -n 's/.*"handle":"\([A-Za-z0-9._~-]*\)".*/\1/p')
args=$(printf '%s' "$invoke" | sed -n 's/.*"arguments":\({[^}]*}\).*/\1/p')
if [ "$tool" != "ledger.append" ]; then
  say '{"type":"error","code":"com.example.ledger:unknown-tool","message":"This command serves ledger.append only.","retryable":false}'
  exit 0
fi
# The input schema restricts the key to [A-Za-z0-9._~-], so it needs no
# escaping, and delay_ms to an integer.
key=$(printf '%s' "$args" | sed -n 's/.*"key":"\([A-Za-z0-9._~-]*\)".*/\1/p')
delay=$(printf '%s' "$args" | sed -n 's/.*"delay_ms":\([0-9][0-9]*\).*/\1/p')
delay=${delay:-0}
if [ "$delay" -gt 0 ]; then
  sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
fi

# One write with O_APPEND: lines from concurrent tasks never interleave.
printf '%s %s\n' "$handle" "$key" >>"$ledger"
say "{\"type\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"appended $key\"}],\"structuredContent\":{\"key\":\"$key\"},\"isError\":false}}"
