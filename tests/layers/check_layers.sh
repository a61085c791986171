#!/usr/bin/env bash
# The layer order of DESIGN.md ("Layers") in the include graph: a source or
# header of a layer includes none of a higher layer's headers, under src/ or
# include/cairn/. Prints each include that breaks the order and fails.
# Usage: check_layers.sh SOURCE_DIR
set -euo pipefail
source_dir=$(realpath "$1")
# Each folder's rank; folders of one rank may include each other.
declare -A rank=([util]=0 [log]=1 [store]=2 [llm]=3 [harness]=4 [trace]=4 [tools]=5 [mcp]=5 [agent]=6 [serve]=7 [apps]=8)
broken=0
for root in "$source_dir/src" "$source_dir/include/cairn"; do
  for dir in "$root"/*/; do
    layer=$(basename "$dir")
    [[ -n ${rank[$layer]+set} ]] || { echo "check_layers: $dir is in no layer of DESIGN.md" >&2; broken=1; continue; }
    while IFS=: read -r file line included; do
      target=$(sed -E 's/^#include "(\.\.\/)*(cairn\/)?([a-z_]+)\/.*/\3/' <<<"$included")
      [[ -n ${rank[$target]+set} ]] || continue
      if (( rank[$target] > rank[$layer] )); then
        echo "check_layers: ${file#"$source_dir"/}:$line: $layer includes $target, a higher layer: $included" >&2
        broken=1
      fi
    done < <(grep -rnoE '^#include "(\.\./)*(cairn/)?[a-z_]+/[^"]*"' "$dir" || true)
  done
done
(( broken == 0 )) || exit 1
echo "check_layers: every include keeps the layer order"
