#!/bin/sh
# Put a generated table into a documentation file between `<!-- NAME:start -->` and
# `<!-- NAME:end -->` (the benchmark scripts' tables: docs/benchmarks.md, docs/text-audits.md).
#
#   scripts/readme-table.sh NAME TABLE DOC      (DOC relative to the repository root)
set -eu
[ $# -eq 3 ] || { echo "usage: scripts/readme-table.sh NAME TABLE DOC" >&2; exit 2; }
name=$1
table=$2
doc=$3
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -s "$table" ] || { echo "no table at $table" >&2; exit 1; }
grep -q "^<!-- $name:start -->\$" "$doc" && grep -q "^<!-- $name:end -->\$" "$doc" \
    || { echo "$doc lacks the $name markers" >&2; exit 1; }
awk -v table="$table" -v start="<!-- $name:start -->" -v end="<!-- $name:end -->" '
    $0 == start { print; while ((getline line < table) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
' "$doc" > "$doc.new"
mv "$doc.new" "$doc"
echo "$doc: $name replaced from $table"
