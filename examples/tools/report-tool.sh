#!/usr/bin/env bash
# report-tool.sh: an example tool for agentgw's exec runtime (protocol
# agentgw-exec/0, see docs/exec-runtime.md). It needs only bash: no jq, no
# python.
#
# It serves one tool, report.build {"title": string, "sections": integer}:
# it "builds" one section at a time, reporting progress, then asks the caller
# whether to publish, and completes with a text item and structuredContent
# {"title", "sections", "published"}. A cancel message between sections or
# while waiting for the answer makes it report "cancelled" and exit.
#
# JSON handling without a parser works here because the gateway sends the
# arguments in RFC 8785 canonical form: compact, members sorted, strings
# escaped the standard way. The title is extracted in its escaped form and
# written back the same way, so it is never unescaped and never breaks the
# output. Anything fancier deserves a real JSON library.
set -u

say() { printf '%s\n' "$1"; }          # one protocol line on stdout
log() { printf 'report-tool: %s\n' "$1" >&2; }  # diagnostics on stderr

IFS= read -r invoke || exit 1
case "$invoke" in
  *'"protocol":"agentgw-exec/0"'*) ;;
  *) log "unsupported protocol"; exit 1 ;;
esac

tool=$(printf '%s' "$invoke" | sed -n 's/.*"tool":{"name":"\([^"]*\)".*/\1/p')
args=$(printf '%s' "$invoke" | sed -n 's/.*"arguments":\({[^}]*}\).*/\1/p')
if [ "$tool" != "report.build" ]; then
  say '{"type":"error","code":"com.example.report:unknown-tool","message":"This command serves report.build only.","retryable":false}'
  exit 0
fi
# The escaped body of the title string, and the section count.
title=$(printf '%s' "$args" | sed -n 's/.*"title":"\(\([^"\\]\|\\.\)*\)".*/\1/p')
sections=$(printf '%s' "$args" | sed -n 's/.*"sections":\([0-9][0-9]*\).*/\1/p')
sections=${sections:-1}

cancelled() {
  log "cancelled"
  say '{"type":"cancelled","reason":"Stopped at the caller'"'"'s request."}'
  exit 0
}

# Build the sections. Waiting for a line with a timeout doubles as the
# pause between sections and the check for a cancel message.
i=0
while [ "$i" -lt "$sections" ]; do
  if IFS= read -r -t 0.2 line; then
    case "$line" in *'"type":"cancel"'*) cancelled ;; esac
  elif [ $? -le 128 ]; then
    log "input closed"; exit 1         # end of input: the gateway gave up
  fi
  i=$((i + 1))
  log "built section $i of $sections"
  say "{\"type\":\"progress\",\"percent\":$((i * 100 / sections)),\"stage\":\"sections\",\"message\":\"Built section $i of $sections.\"}"
done

say '{"type":"input_required","question":"Publish the report now?","inputSchema":{"type":"object","properties":{"publish":{"type":"boolean"}},"required":["publish"],"additionalProperties":false},"timeoutSeconds":300}'
published=false
while IFS= read -r line; do
  case "$line" in
    *'"type":"cancel"'*) cancelled ;;
    *'"type":"input"'*)
      case "$line" in *'"publish":true'*) published=true ;; esac
      break ;;
  esac
done

text="Report \\\"$title\\\" with $sections sections"
if [ "$published" = true ]; then text="$text, published."; else text="$text, not published."; fi
say "{\"type\":\"result\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"$text\"}],\"structuredContent\":{\"title\":\"$title\",\"sections\":$sections,\"published\":$published},\"isError\":false},\"summary\":\"Report built.\"}"
