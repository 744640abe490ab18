#!/usr/bin/env python3
"""Write tests/fixtures/vendor_export/export.csv and export_messy.csv: a hiring tool's decisions
as a vendor exports them to an NYC Local Law 144 auditor (issue 60), for the `bias_audit` stage.

export.csv has 4,000 applicants and the columns
    applicant_id      A00001 .. A04000, unique
    gender            "M", "F", "X", "Decline", "" (blank: 200 rows, 5%)
    hispanic_latino   "Y", "N", "" (blank: 160 rows, 4%)
    race_cd           EEO-1 codes "W", "B", "A", "NHPI", "AIAN", "2+", "" (blank: 120 rows, 3%);
                      NHPI is 64 rows (1.6%, under the rules' 2%)
    score             an integer 0-100, many ties (the median of all 4,000 scores too)
    advanced          "Yes" / "No": the tool's decision
    years_experience  integer; education "HS", "BA", "MA", "PhD": qualification columns
    notes             free text unique to each row ("Interviewed by panel 3 on day 17; ref 48213"),
                      for checking that a column unique per row draws no proxy warning

What is planted:
- every one of the 5 x 3 x 7 = 105 combinations of gender, hispanic_latino and race_cd has at
  least one row (one row each is placed first; the rest of each column's exact counts is shuffled
  independently);
- exactly 1,080 of the 4,000 advance (overall rate 0.27): M 570 of 1,900 (0.30), F 400 of 1,720,
  X 30 of 120, Decline 15 of 60, blank 65 of 200. Within a gender the number advanced of each
  group (Hispanic or Latino for "Y", the race_cd for "N", and one "unknown" group for a blank in
  either column) is the gender's total apportioned (largest remainder) in proportion to
  people x GROUP_FACTOR, so rates differ by race too; which rows of a cell advance is random;
- scores: 62 if advanced else 42, + SCORE_SHIFT of the group, + a Gaussian (sd 10), rounded and
  clipped to 0-100, so scoring rates differ by sex (through advancing) and race.

export_messy.csv holds the same rows, but the second half's (rows 2,001-4,000) `advanced` is
written "yes"/"no" in lower case and 80 rows chosen at random over the whole file are
"Withdrawn"; the counts of each value are printed.

Plain Python 3, no fairpipe; deterministic (random.Random(60)). Run from the repository root:
    python3 scripts/make_vendor_export.py
then python3 scripts/vendor_export_expected.py for the expected tables.
"""
import collections
import csv
import itertools
import pathlib
import random

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "vendor_export"
N = 4000

# Exact counts of each column's values (each sums to N).
GENDER = {"M": 1900, "F": 1720, "X": 120, "Decline": 60, "": 200}
HISPANIC = {"Y": 680, "N": 3160, "": 160}
RACE_CD = {"W": 1640, "B": 880, "A": 640, "NHPI": 64, "AIAN": 160, "2+": 496, "": 120}
# Applicants advanced per gender: 1,080 in all (0.27); men 570 / 1,900 = 0.30.
ADVANCED = {"M": 570, "F": 400, "X": 30, "Decline": 15, "": 65}
# Relative chance of advancing of each group within a gender ("?": a blank in either column).
GROUP_FACTOR = {"Hispanic": 0.85, "W": 1.15, "B": 0.75, "A": 1.2, "NHPI": 1.1, "AIAN": 0.8,
                "2+": 0.95, "?": 1.0}
SCORE_SHIFT = {"Hispanic": -3, "W": 4, "B": -5, "A": 4}
EDUCATION = ["HS", "BA", "MA", "PhD"]


def group(hispanic, race_cd):
    """The planting's group of a row (the generator's own, not the truth script's mapping)."""
    if hispanic == "Y":
        return "Hispanic"
    if hispanic == "N" and race_cd:
        return race_cd
    return "?"


def apportion(total, weights):
    """Split the integer total in proportion to weights, by largest remainder (ties: first)."""
    s = sum(weights)
    quotas = [total * w / s for w in weights]
    out = [int(q) for q in quotas]
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def main():
    rng = random.Random(60)

    # Demographics: one row of every combination, then the rest of each column shuffled.
    combos = list(itertools.product(GENDER, HISPANIC, RACE_CD))
    rest = []
    for counts, pos in ((GENDER, 0), (HISPANIC, 1), (RACE_CD, 2)):
        left = collections.Counter(counts)
        for c in combos:
            left[c[pos]] -= 1
        assert min(left.values()) >= 0
        col = [v for v in counts for _ in range(left[v])]
        rng.shuffle(col)
        rest.append(col)
    people = combos + list(zip(*rest))
    assert len(people) == N
    rng.shuffle(people)

    # Decisions: each gender's total apportioned over its groups, random rows within a cell.
    advanced = [False] * N
    for g, k in ADVANCED.items():
        cells = collections.defaultdict(list)
        for i, (gender, hisp, race) in enumerate(people):
            if gender == g:
                cells[group(hisp, race)].append(i)
        keys = [c for c in GROUP_FACTOR if c in cells]
        ks = apportion(k, [len(cells[c]) * GROUP_FACTOR[c] for c in keys])
        for c, kc in zip(keys, ks):
            assert kc <= len(cells[c])
            for i in rng.sample(cells[c], kc):
                advanced[i] = True
    assert sum(advanced) == 1080

    refs = rng.sample(range(10000, 100000), N)
    rows = []
    for i, ((gender, hisp, race), adv) in enumerate(zip(people, advanced)):
        g = group(hisp, race)
        score = round((62 if adv else 42) + SCORE_SHIFT.get(g, 0) + rng.gauss(0, 10))
        score = min(100, max(0, score))
        years = min(35, max(0, round(rng.gauss(7 if adv else 5, 4))))
        edu = rng.choices(EDUCATION, weights=[20, 45, 25, 10] if adv else [30, 45, 19, 6])[0]
        notes = f"Interviewed by panel {rng.randint(1, 9)} on day {rng.randint(1, 28)}; ref {refs[i]}"
        rows.append([f"A{i + 1:05d}", gender, hisp, race, score, "Yes" if adv else "No", years, edu, notes])

    header = ["applicant_id", "gender", "hispanic_latino", "race_cd", "score", "advanced",
              "years_experience", "education", "notes"]
    OUT.mkdir(parents=True, exist_ok=True)

    def write(name, data):
        with (OUT / name).open("w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            w.writerows(data)
        print(f"wrote {OUT / name}: {len(data)} rows")

    write("export.csv", rows)

    withdrawn = set(rng.sample(range(N), 80))
    messy = []
    for i, r in enumerate(rows):
        r = list(r)
        if i in withdrawn:
            r[5] = "Withdrawn"
        elif i >= N // 2:
            r[5] = r[5].lower()
        messy.append(r)
    write("export_messy.csv", messy)
    counts = collections.Counter(r[5] for r in messy)
    print("export_messy.csv advanced: " + ", ".join(f'"{v}" {counts[v]}' for v in sorted(counts)))


if __name__ == "__main__":
    main()
