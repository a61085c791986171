#!/usr/bin/env bash
# The layer order of DESIGN.md ("Layers") in the include graph: a source or
# header of a layer includes none of a higher layer's headers, under src/ or
# include/cairn/. Prints each include that breaks the order and fails.
# Usage: check_layers.sh SOURCE_DIR
set -euo pipefail
source_dir=$(realpath "$1")
# Each folder's rank; folders of one rank may include each other. The
# sandbox is part of the tools layer (DESIGN.md: "the sandbox every tool
# process runs in").
ranks="util=0 log=1 store=2 llm=3 harness=4 trace=4 tools=5 mcp=5 sandbox=5 agent=6 serve=7 apps=8"
broken=0
for root in "$source_dir/src" "$source_dir/include/cairn"; do
  for dir in "$root"/*/; do
    [[ -d $dir ]] || continue
    layer=$(basename "$dir")
    [[ " $ranks " == *" $layer="* ]] || { echo "check_layers: $dir is in no layer of DESIGN.md" >&2; broken=1; continue; }
    # One awk over every include of the folder: FILE:LINE:#include "…/LAYER/…".
    grep -rnoE '^#include "(\.\./)*(cairn/)?[a-z_]+/[^"]*"' "$dir" |
      awk -v ranks="$ranks" -v layer="$layer" -v root="$source_dir/" '
        BEGIN { n = split(ranks, pairs, " "); for (i = 1; i <= n; i++) { split(pairs[i], kv, "="); rank[kv[1]] = kv[2] } }
        {
          split($0, field, ":"); included = substr($0, length(field[1]) + length(field[2]) + 3)
          target = included; sub(/^#include "(\.\.\/)*(cairn\/)?/, "", target); sub(/\/.*/, "", target)
          if (!(target in rank) || rank[target] <= rank[layer]) next
          file = field[1]; sub("^" root, "", file)
          printf "check_layers: %s:%s: %s includes %s, a higher layer: %s\n", file, field[2], layer, target, included
          bad = 1
        }
        END { exit bad }' >&2 || broken=1
  done
done
(( broken == 0 )) || exit 1
echo "check_layers: every include keeps the layer order"
