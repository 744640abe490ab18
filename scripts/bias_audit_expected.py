#!/usr/bin/env python3
"""The expected tables of an NYC Local Law 144 bias audit (6 RCNY §5-300, §5-301) of
tests/fixtures/bias_audit/applicants.csv, computed from the rules' definitions in plain Python
(no fairpipe, no third-party package), for tests/bias_audit.rs to hold the `bias_audit` stage to.

Definitions used (the rules' words in quotes):
- selection rate: "the number of individuals in the category moving forward or assigned a
  classification" / "the total number of individuals in the category";
- scoring rate: "the rate at which individuals in a category receive a score above the sample's
  median score": the share of the category with score > the median of every score in the file
  (unknown categories included; the median of an even count is the mean of the two middle ones);
- impact ratio: the category's rate / the rate of "the most selected category" (highest scoring);
- "the number of individuals the AEDT assessed that fall within an unknown category": counted per
  table (intersection: unknown sex or unknown race), in no ratio;
- "an independent auditor may exclude a category that represents less than 2% of the data being
  used for the bias audit from the required calculations for impact ratio": share = people in the
  category / every row of the file; excluded categories keep their count and rate, no ratio, and
  are not the most selected category.
Beside the rules: Wilson 95% interval (z = 1.96) of each rate; Fisher's exact two-sided test of
each category in the ratios against the most selected one (exact rational arithmetic: the tables
no more likely than the observed one, with R's and SciPy's 1e-7 relative tolerance), Holm's
step-down correction over each table. Ties for the highest rate go to the first category in order.

Writes expected_selection.csv, expected_score.csv (both mapped to the EEO-1 categories, rules'
row order, categories under 2% excluded) and expected_selection_unmapped.csv (the data's values in
sorted order, `Unknown` and `Declined` unknown, nothing excluded) beside the applicants.
    python3 scripts/bias_audit_expected.py
"""
import csv
import math
import pathlib
from fractions import Fraction

HERE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "bias_audit"

SEX = {"M": "Male", "F": "Female", "Unknown": None}
RACE = {
    "Hispanic": "Hispanic or Latino", "Latino": "Hispanic or Latino", "White": "White",
    "Black": "Black or African American", "NHPI": "Native Hawaiian or Pacific Islander",
    "Asian": "Asian", "AIAN": "Native American or Alaska Native", "Two or more": "Two or More Races",
    "Unknown": None, "Declined": None,
}
SEX_ORDER = ["Male", "Female"]
RACE_ORDER = ["Hispanic or Latino", "White", "Black or African American",
              "Native Hawaiian or Pacific Islander", "Asian", "Native American or Alaska Native",
              "Two or More Races"]


def fisher(a, b, c, d):
    row1, col1, n = a + b, a + c, a + b + c + d
    den = math.comb(n, col1)

    def p(x):
        return Fraction(math.comb(row1, x) * math.comb(n - row1, col1 - x), den)

    observed = p(a)
    limit = observed * (1 + Fraction(1, 10**7))
    lo, hi = max(0, col1 - (n - row1)), min(row1, col1)
    return float(min(Fraction(1), sum(q for q in (p(x) for x in range(lo, hi + 1)) if q <= limit)))


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running, m = [None] * len(ps), 0.0, len(ps)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def wilson(k, n, z=1.96):
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def table(name, keys, order, hits, total, exclude_below):
    """keys: category per row (None unknown); order: categories in order; hits: 0/1 per row."""
    count = {c: 0 for c in order}
    chosen = {c: 0 for c in order}
    unknown = [0, 0]
    for k, h in zip(keys, hits):
        if k is None:
            unknown[0] += 1
            unknown[1] += h
        else:
            count[k] += 1
            chosen[k] += h
    present = [c for c in order if count[c] > 0]
    rate = {c: chosen[c] / count[c] for c in present}
    excluded = {c: exclude_below is not None and count[c] / total < exclude_below for c in present}
    in_ratio = [c for c in present if not excluded[c]]
    top = None
    for c in in_ratio:
        if top is None or rate[c] > rate[top]:
            top = c
    rows = []
    for c in present:
        ratio = rate[c] / rate[top] if not excluded[c] and rate[top] > 0 else None
        lo, hi = wilson(chosen[c], count[c])
        rows.append({"table": name, "category": " × ".join(c) if isinstance(c, tuple) else c,
                     "unknown": "", "count": count[c], "selected": chosen[c], "rate": rate[c],
                     "share": count[c] / total, "excluded": "yes" if excluded[c] else "",
                     "impact_ratio": ratio, "highest": "yes" if c == top else "",
                     "ci95_low": lo, "ci95_high": hi, "p_value": None, "p_adjusted": None})
    tested = [r for r, c in zip(rows, present) if not excluded[c] and c != top]
    ps = [fisher(r["selected"], r["count"] - r["selected"], chosen[top], count[top] - chosen[top]) for r in tested]
    for r, p, adj in zip(tested, ps, holm(ps)):
        r["p_value"], r["p_adjusted"] = p, adj
    lo, hi = wilson(unknown[1], unknown[0]) if unknown[0] else (None, None)
    rows.append({"table": name, "category": "Unknown", "unknown": "yes", "count": unknown[0],
                 "selected": unknown[1], "rate": unknown[1] / unknown[0] if unknown[0] else None,
                 "share": unknown[0] / total, "excluded": "", "impact_ratio": None, "highest": "",
                 "ci95_low": lo, "ci95_high": hi, "p_value": None, "p_adjusted": None})
    return rows


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def audit(people, hits, mapped, exclude_below):
    total = len(people)
    if mapped:
        sex = [SEX[p["sex"]] for p in people]
        race = [RACE[p["race"]] for p in people]
        sex_order, race_order = SEX_ORDER, RACE_ORDER
        # The rules' intersection order: Hispanic or Latino by sex, then each sex by the other races.
        both = [(s, RACE_ORDER[0]) for s in SEX_ORDER] + [(s, r) for s in SEX_ORDER for r in RACE_ORDER[1:]]
    else:
        unknown = {"Unknown", "Declined"}
        sex = [None if p["sex"] in unknown else p["sex"] for p in people]
        race = [None if p["race"] in unknown else p["race"] for p in people]
        sex_order = sorted({s for s in sex if s is not None})
        race_order = sorted({r for r in race if r is not None})
        both = [(s, r) for s in sex_order for r in race_order]
    inter = [(s, r) if s is not None and r is not None else None for s, r in zip(sex, race)]
    return (table("sex", sex, sex_order, hits, total, exclude_below)
            + table("race", race, race_order, hits, total, exclude_below)
            + table("intersection", inter, both, hits, total, exclude_below))


def write(name, rows):
    cols = ["table", "category", "unknown", "count", "selected", "rate", "share", "excluded",
            "impact_ratio", "highest", "ci95_low", "ci95_high", "p_value", "p_adjusted"]
    with (HERE / name).open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if r[c] is None else repr(r[c]) if isinstance(r[c], float) else r[c] for c in cols])
    print(f"wrote {HERE / name}: {len(rows)} rows")


def main():
    with (HERE / "applicants.csv").open(newline="") as f:
        people = list(csv.DictReader(f))
    selected = [int(p["selected"]) for p in people]
    scores = [float(p["score"]) for p in people]
    m = median(scores)
    ties = sum(1 for s in scores if s == m)
    assert ties > 0, "the fixture must have scores tied at the median"
    print(f"median score {m}, {ties} scores tied at it")
    above = [1 if s > m else 0 for s in scores]
    write("expected_selection.csv", audit(people, selected, True, 0.02))
    write("expected_score.csv", audit(people, above, True, 0.02))
    write("expected_selection_unmapped.csv", audit(people, selected, False, None))


if __name__ == "__main__":
    main()
