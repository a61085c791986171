#!/usr/bin/env bash
# Writes help2man's include file for cairn.1: a COMMANDS section with each
# subcommand's own --help (help2man itself reads only `cairn --help`).
# Usage: man_commands.sh CAIRN OUTPUT
set -euo pipefail
cairn=$1
out=$2
{
  echo "[COMMANDS]"
  "$cairn" --help | sed -n '/^Subcommands:/,$ s/^  \([a-z][a-z-]*\) .*/\1/p' | while read -r command; do
    echo ".SS cairn $command"
    echo ".nf"
    # roff: a leading dot or quote would be a request, a backslash an escape.
    "$cairn" "$command" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    echo ".fi"
  done
  cat <<'MORE'
[ENVIRONMENT]
.TP
.B CAIRN_STORE
The store when --store is not given.
.TP
.B CAIRN_TRACE, CAIRN_TRACE_CONTENT
A file the spans are appended to as JSON lines (as --trace FILE); 1 to put message text, tool arguments and results in them (as --trace-content).
.TP
.B OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
Spans and metrics go to this OTLP/HTTP collector (JSON encoding); the README lists every variable read.
.TP
.B XDG_DATA_HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME
Where the default store, models.json, settings.json, serve's tokens and the spill files live.
[SEE ALSO]
The README of cairn's source, and docs/embedding.md for the library.
MORE
} >"$out"
