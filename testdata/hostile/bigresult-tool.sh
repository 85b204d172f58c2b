#!/usr/bin/env bash
# bigresult-tool.sh: an exec-runtime tool (agentgw-exec/0) for the wire size
# tests. big.emit {"pairs": integer} completes with a text result of that
# many '"<' pairs: each pair is 3 bytes of JSON (\"<) but 10 or more bytes
# once XML-escaped (\&#34;&lt;).
set -u
IFS= read -r invoke || exit 1
pairs=$(printf '%s' "$invoke" | sed -n 's/.*"pairs":\([0-9][0-9]*\).*/\1/p')
pairs=${pairs:-0}
text=$(head -c "$pairs" /dev/zero | tr '\0' '#')
text=${text//#/'\"<'}
printf '{"type":"result","result":{"content":[{"type":"text","text":"%s"}],"isError":false}}\n' "$text"
