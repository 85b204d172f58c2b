#!/usr/bin/env bash
# echo-chat.sh: an example chat program for an endpoint with chat = "exec"
# (protocol agentgw-chat/0, see docs/messaging.md). It needs only bash and
# sed.
#
# The gateway runs it once per message. It reads one JSON line,
#   {"type":"message","protocol":"agentgw-chat/0","conversation":"c-…","text":"…","lang":"en"}
# and writes one line per reply, {"type":"reply","text":"…"}, then exits.
# The conversation is an opaque handle, stable per correspondent; the
# program never learns who wrote.
set -u
IFS= read -r msg || exit 1
case "$msg" in
  *'"protocol":"agentgw-chat/0"'*) ;;
  *) printf 'echo-chat: unsupported protocol\n' >&2; exit 1 ;;
esac
# The text stays JSON-escaped, so it can go back into a JSON string as is.
text=$(printf '%s' "$msg" | sed -n 's/.*"text":"\(\([^"\\]\|\\.\)*\)".*/\1/p')
conv=$(printf '%s' "$msg" | sed -n 's/.*"conversation":"\([A-Za-z0-9-]*\)".*/\1/p')
printf '{"type":"reply","text":"exec heard: %s"}\n' "$text"
printf '{"type":"reply","text":"conversation %s"}\n' "${conv:0:10}"
