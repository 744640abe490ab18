#!/bin/sh
# Put a generated table into README.md between `<!-- NAME:start -->` and `<!-- NAME:end -->`.
#
#   scripts/readme-table.sh NAME FILE
set -eu
name=$1
table=$2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -s "$table" ] || { echo "no table at $table" >&2; exit 1; }
grep -q "^<!-- $name:start -->\$" README.md && grep -q "^<!-- $name:end -->\$" README.md \
    || { echo "README.md lacks the $name markers" >&2; exit 1; }
awk -v table="$table" -v start="<!-- $name:start -->" -v end="<!-- $name:end -->" '
    $0 == start { print; while ((getline line < table) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
' README.md > README.md.new
mv README.md.new README.md
echo "README.md: $name replaced from $table"
