#!/bin/sh
# The worked example of docs/bias-audit.md: run pipelines/adult-bias-audit.toml and copy its two
# audits' tables, page and figures into docs/bias-audit/ (checked in), then print the page to PDF
# with headless Chromium when it is installed. Run from the repository root after a build:
#   sh scripts/bias_audit_example.sh [path/to/fairpipe]
set -eu
FAIRPIPE=${1:-target/debug/fairpipe}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$FAIRPIPE" run pipelines/adult-bias-audit.toml --out "$OUT/run" --quiet
mkdir -p docs/bias-audit
for stage in decisions tool; do
    cp "$OUT/run/$stage.csv" "docs/bias-audit/$stage.csv"
    cp "$OUT/run/$stage.html" "docs/bias-audit/$stage.html"
done
python3 - "$OUT/run/summary.json" > docs/bias-audit/figures.txt <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for stage in ("decisions", "tool"):
    f = s["stages"][stage]
    print(f"{stage}: source = {f['source']}")
    print(f"  rows {f['rows']}, left out at load {f['left_out_at_load']}, rate {f['rate']:.4f}, min impact ratio {f['min_impact_ratio']:.4f} "
          f"(sex {f['min_impact_ratio_sex']:.4f}, race {f['min_impact_ratio_race']:.4f}, "
          f"intersection {f['min_impact_ratio_intersection']:.4f}); under four-fifths: {f['below_four_fifths']}, "
          f"significant: {f['significant']}")
    for t in f["tables"]:
        excluded = [r["category"] for r in t["rows"] if r["excluded"]]
        print(f"  {t['table']}: {len(t['rows'])} categories, unknown {t['unknown']['count']}, excluded: {', '.join(excluded) or 'none'}")
print("trail inputs:")
for i in s["trail"]["inputs"]:
    print(f"  {i['stage'] or '(pipeline)'}.{i['key']}: {i['path'].split('/')[-1]} {i['bytes']} bytes sha256 {i['sha256']}")
PY
cat docs/bias-audit/figures.txt
if command -v chromium >/dev/null 2>&1; then
    chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf="$OUT/decisions.pdf" "file://$OUT/run/decisions.html" 2>/dev/null
    echo "printed decisions.html: $(grep -c '/Type /Page$\|/Type /Page[^s]' "$OUT/decisions.pdf" || true) page(s), $(wc -c < "$OUT/decisions.pdf") bytes"
fi
