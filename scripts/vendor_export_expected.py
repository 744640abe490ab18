#!/usr/bin/env python3
"""The expected NYC Local Law 144 tables (6 RCNY §5-300, §5-301) of the vendor export
tests/fixtures/vendor_export/export.csv (scripts/make_vendor_export.py, issue 60), computed from
the rules' definitions without fairpipe. The rates, ratios, intervals, tests, median and the CSV
layout are scripts/bias_audit_expected.py's (`table`, `median`, `write`, imported, not copied);
its docstring gives the definitions. This script adds the vendor's categories:

- sex (`gender`): "M" -> Male, "F" -> Female; "X", "Decline" and a blank -> unknown.
- race/ethnicity, from two columns as EEO-1 reports it:
    hispanic_latino "Y" -> Hispanic or Latino, whatever race_cd says;
    hispanic_latino "N" -> race_cd's category: "W" White, "B" Black or African American,
        "A" Asian, "NHPI" Native Hawaiian or Pacific Islander, "AIAN" Native American or Alaska
        Native, "2+" Two or More Races; a blank race_cd -> unknown;
    hispanic_latino blank -> unknown, whatever race_cd says (we cannot tell whether Hispanic or
        Latino wins).
- intersection: sex x race/ethnicity, unknown when either is.
- selection: advanced == "Yes" (the clean export); scoring: score > the median of all 4,000
  scores (unknown categories included).
- exclude_below 0.02 of all rows (Native Hawaiian or Pacific Islander is out of the ratios),
  categories in the rules' order (SEX_ORDER, RACE_ORDER, and the intersection order of
  bias_audit_expected.py's mapped audit), unknowns counted in each table. No row is dropped:
  every table's counts + unknown = 4,000.

Writes expected_selection.csv, expected_score.csv and expected_summary.json (overall selection
rate, male rate, the sex impact ratio, the median and its ties, the NHPI share, and the counts of
each value of export_messy.csv's `advanced`) beside the export. Run from the repository root,
after python3 scripts/make_vendor_export.py:
    python3 scripts/vendor_export_expected.py
"""
import collections
import csv
import importlib.util
import json
import pathlib

SCRIPTS = pathlib.Path(__file__).resolve().parent
OUT = SCRIPTS.parent / "tests" / "fixtures" / "vendor_export"

_spec = importlib.util.spec_from_file_location("bias_audit_expected", SCRIPTS / "bias_audit_expected.py")
bae = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bae)
bae.HERE = OUT  # bae.write writes beside its module's HERE: point it at the vendor export

SEX = {"M": "Male", "F": "Female"}  # anything else ("X", "Decline", "") is unknown
RACE_CD = {"W": "White", "B": "Black or African American", "A": "Asian",
           "NHPI": "Native Hawaiian or Pacific Islander", "AIAN": "Native American or Alaska Native",
           "2+": "Two or More Races"}  # "" is unknown
assert set(SEX.values()) == set(bae.SEX_ORDER)
assert set(RACE_CD.values()) | {"Hispanic or Latino"} == set(bae.RACE_ORDER)


def sex_of(p):
    return SEX.get(p["gender"])


def race_of(p):
    if p["hispanic_latino"] == "Y":
        return "Hispanic or Latino"
    if p["hispanic_latino"] == "N":
        return RACE_CD.get(p["race_cd"])
    return None


def audit(sex, race, hits, exclude_below=0.02):
    total = len(hits)
    both = ([(s, bae.RACE_ORDER[0]) for s in bae.SEX_ORDER]
            + [(s, r) for s in bae.SEX_ORDER for r in bae.RACE_ORDER[1:]])
    inter = [(s, r) if s is not None and r is not None else None for s, r in zip(sex, race)]
    return (bae.table("sex", sex, bae.SEX_ORDER, hits, total, exclude_below)
            + bae.table("race", race, bae.RACE_ORDER, hits, total, exclude_below)
            + bae.table("intersection", inter, both, hits, total, exclude_below))


def main():
    with (OUT / "export.csv").open(newline="") as f:
        people = list(csv.DictReader(f))
    total = len(people)
    sex = [sex_of(p) for p in people]
    race = [race_of(p) for p in people]
    values = collections.Counter(p["advanced"] for p in people)
    assert set(values) == {"Yes", "No"}, values
    selected = [1 if p["advanced"] == "Yes" else 0 for p in people]
    scores = [int(p["score"]) for p in people]
    m = bae.median(scores)
    ties = sum(1 for s in scores if s == m)
    assert ties > 0, "the export must have scores tied at the median"
    above = [1 if s > m else 0 for s in scores]

    # bias_audit_expected.py's own mapped audit over the same categories, spelt in its values,
    # must give the same rows (the same order, above all the intersection's).
    back_sex = {v: k for k, v in bae.SEX.items()}
    back_race = {}
    for k, v in bae.RACE.items():
        back_race.setdefault(v, k)
    as_bae = [{"sex": back_sex[s], "race": back_race[r]} for s, r in zip(sex, race)]

    tables = {}
    for name, hits in (("expected_selection.csv", selected), ("expected_score.csv", above)):
        rows = audit(sex, race, hits)
        assert rows == bae.audit(as_bae, hits, True, 0.02)
        for t in ("sex", "race", "intersection"):
            assert sum(r["count"] for r in rows if r["table"] == t) == total, (name, t)
        bae.write(name, rows)
        tables[name] = rows

    sel = tables["expected_selection.csv"]
    row = {(r["table"], r["category"]): r for r in sel}
    male, female = row[("sex", "Male")], row[("sex", "Female")]
    nhpi = row[("race", "Native Hawaiian or Pacific Islander")]
    with (OUT / "export_messy.csv").open(newline="") as f:
        messy = collections.Counter(p["advanced"] for p in csv.DictReader(f))
    summary = {
        "applicants": total,
        "selected": sum(selected),
        "overall_selection_rate": sum(selected) / total,
        "male_selected": male["selected"],
        "male_count": male["count"],
        "male_rate": male["rate"],
        "female_rate": female["rate"],
        "highest_sex": "Male" if male["highest"] else "Female",
        "sex_impact_ratio": min(male["impact_ratio"], female["impact_ratio"]),
        "unknown": {t: row[(t, "Unknown")]["count"] for t in ("sex", "race", "intersection")},
        "race_cd_nhpi_share": sum(p["race_cd"] == "NHPI" for p in people) / total,
        "nhpi_category_share": nhpi["share"],
        "nhpi_excluded": nhpi["excluded"] == "yes",
        "median_score": m,
        "median_ties": ties,
        "scored_above_median": sum(above),
        "messy_advanced": dict(sorted(messy.items())),
    }
    with (OUT / "expected_summary.json").open("w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(f"wrote {OUT / 'expected_summary.json'}")
    for k, v in summary.items():
        print(f"  {k}: {v}")


if __name__ == "__main__":
    main()
