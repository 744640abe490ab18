#!/usr/bin/env python3
"""Write tests/fixtures/bias_audit/applicants.csv: a file of past decisions of a hiring tool with
known counts per sex x race/ethnicity cell, unknown categories (`Unknown`, `Declined`), two data
values of one category (`Hispanic`, `Latino`), a category under 2% of the sample (`NHPI`, 15 of
1080) and scores on a 0.1 grid, so that many tie at the whole sample's median.

Plain Python, no fairpipe; deterministic (random.Random(47)). Run from the repository root:
    python3 scripts/make_bias_audit_fixture.py
"""
import csv
import pathlib
import random

# (sex, race) -> (people, selected): the planted truth.
CELLS = {
    ("M", "Hispanic"): (80, 30), ("M", "Latino"): (20, 8), ("M", "White"): (200, 90),
    ("M", "Black"): (90, 27), ("M", "NHPI"): (8, 5), ("M", "Asian"): (70, 35),
    ("M", "AIAN"): (12, 4), ("M", "Two or more"): (30, 10), ("M", "Unknown"): (15, 5),
    ("M", "Declined"): (10, 3),
    ("F", "Hispanic"): (90, 28), ("F", "Latino"): (10, 3), ("F", "White"): (190, 70),
    ("F", "Black"): (100, 25), ("F", "NHPI"): (7, 1), ("F", "Asian"): (60, 22),
    ("F", "AIAN"): (13, 3), ("F", "Two or more"): (25, 7), ("F", "Unknown"): (12, 4),
    ("F", "Declined"): (8, 2),
    ("Unknown", "Hispanic"): (6, 2), ("Unknown", "White"): (10, 4), ("Unknown", "Black"): (5, 1),
    ("Unknown", "Asian"): (4, 2), ("Unknown", "Unknown"): (5, 1),
}

# A score's mean per race (selected people score higher), so scoring rates differ by group.
SCORE_SHIFT = {"White": 0.1, "Asian": 0.1, "Black": -0.1, "Hispanic": -0.05, "Latino": -0.05}


def main():
    rng = random.Random(47)
    rows = []
    for (sex, race), (n, k) in CELLS.items():
        for i in range(n):
            selected = 1 if i < k else 0
            base = 0.6 if selected else 0.4
            score = base + SCORE_SHIFT.get(race, 0.0) + rng.choice([-0.2, -0.1, 0.0, 0.0, 0.1, 0.2])
            # On a 0.1 grid in [0, 1]: many ties, at the median too.
            score = min(1.0, max(0.0, round(score * 10) / 10))
            rows.append([sex, race, selected, f"{score:.1f}"])
    rng.shuffle(rows)
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "bias_audit" / "applicants.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "sex", "race", "selected", "score", "qualified"])
        for i, (sex, race, selected, score) in enumerate(rows):
            w.writerow([i + 1, sex, race, selected, score, (i * 7) % 3 % 2])
    print(f"wrote {out}: {len(rows)} applicants")


if __name__ == "__main__":
    main()
