"""Derive pipelines/data/compas.csv from ProPublica's compas-scores-two-years.csv.

Applies the filters of AIF360's CompasDataset (|days_b_screening_arrest| <= 30, is_recid != -1,
c_charge_degree != 'O', score_text != 'N/A') and keeps only non-identifying model features:
sex, age, race, juvenile and prior counts, charge degree, and the label two_year_recid
(1 = re-offended within two years; the favourable outcome is 0). Names, dates and case numbers
are dropped. Rows are split 70/30 into train/test with a fixed seed.

    python3 scripts/prepare_compas.py RAW.csv pipelines/data/compas.csv
"""
import csv
import random
import sys

KEEP = ["sex", "age", "race", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count", "c_charge_degree", "two_year_recid"]


def main(src, dst):
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    kept = [
        r for r in rows
        if r["days_b_screening_arrest"] != "" and abs(int(float(r["days_b_screening_arrest"]))) <= 30
        and r["is_recid"] != "-1" and r["c_charge_degree"] != "O" and r["score_text"] != "N/A"
    ]
    rng = random.Random(42)
    with open(dst, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(KEEP + ["split"])
        for r in kept:
            w.writerow([r[k] for k in KEEP] + ["train" if rng.random() < 0.7 else "test"])
    print(f"{len(rows)} rows read, {len(kept)} kept -> {dst}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
