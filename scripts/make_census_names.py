#!/usr/bin/env python3
"""Write the bundled census data with Adult's own category names, and the papers' codes for them.

    python3 scripts/make_census_names.py PROCESSED.csv ADULT.csv

PROCESSED.csv is the census data as the MAFT / EIDIG papers' code encodes it (48,842 rows: every
category an integer, age, capital gain and loss and hours per week in buckets, a `row` and a
`split` column); ADULT.csv is the same rows in the same order as UCI Adult writes them (the raw
`adult.data` and `adult.test` rows joined, as the papers' repository ships them). Both come from
the papers' repository; no third-party package is needed.

It writes, beside the bundled pipelines:

- ``pipelines/data/census.csv``          the papers' rows with each code replaced by its name
  ("Female", "Black", "26–45"), the split kept;
- ``pipelines/data/census.codes.toml``   each name's code, which a `load` stage's `codes` key reads
  so that models trained on the papers' encoding (``pipelines/models/census.onnx``) get exactly the
  numbers they were trained on.

A code's name is read from the raw rows: the one raw value behind the code (for the papers'
buckets, the range of raw values it holds). Where the raw row has "?" (unknown workclass,
occupation or native country) the papers imputed the column's most frequent value; the named file
carries that imputed value, exactly as the encoded one did. The script refuses a code that stands
for two known raw values.
"""
import csv
import pathlib
import sys
from collections import Counter, defaultdict

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "pipelines" / "data"
# Columns whose codes stand for ranges of a number (the papers' buckets).
BUCKETED = {"age", "capital-gain", "capital-loss", "hours-per-week"}
# Columns kept as the numbers they are.
NUMERIC = {"row", "educational-num", "split"}


def main(processed: str, adult: str) -> None:
    coded = list(csv.DictReader(open(processed, newline="")))
    raw = list(csv.DictReader(open(adult, newline="")))
    assert len(coded) == len(raw), f"{len(coded)} coded rows, {len(raw)} raw rows"
    columns = list(coded[0].keys())
    names = {}
    for col in columns:
        if col in NUMERIC:
            continue
        seen = defaultdict(Counter)
        for c, r in zip(coded, raw):
            seen[int(c[col])][r[col].strip().rstrip(".")] += 1
        names[col] = {}
        for code, values in sorted(seen.items()):
            if col in BUCKETED:
                numbers = [float(v) for v in values]
                lo, hi = int(min(numbers)), int(max(numbers))
                # "none" rather than "0": a column of mostly numbers would read as a broken
                # numeric column to a load stage without the codes.
                names[col][code] = "none" if lo == hi == 0 else f"{lo}" if lo == hi else f"{lo}–{hi}"
            else:
                known = [v for v in values if v != "?"]
                assert len(known) == 1, f"{col} code {code} stands for {dict(values)}"
                names[col][code] = known[0]
        assert len(set(names[col].values())) == len(names[col]), f"{col}: two codes share a name"
    with open(OUT / "census.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for c in coded:
            w.writerow([c[col] if col in NUMERIC else names[col][int(c[col])] for col in columns])
    lines = [
        "# The integer codes the MAFT and EIDIG papers give the census (UCI Adult) data, for each of",
        "# Adult's own category names in census.csv. A `load` stage with `codes = \"data/census.codes.toml\"`",
        "# encodes the data exactly as the papers did, so models trained on their encoding",
        "# (models/census.onnx) read the numbers they were trained on, while tables and reports show the",
        "# names. Written by scripts/make_census_names.py; age, capital gain and loss and hours per week",
        "# are the papers' buckets, named by the range of raw values each holds.",
    ]
    for col, codes in names.items():
        lines.append("")
        lines.append(f'["{col}"]')
        for code, name in codes.items():
            lines.append(f'"{name}" = {code}')
    (OUT / "census.codes.toml").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(coded)} rows to {OUT / 'census.csv'} and the codes of {len(names)} columns")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
