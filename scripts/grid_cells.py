"""The benchmark grid's cells, shared by scripts/make_grid_models.py and scripts/bench_grid.py
(standard library only, so the bench runs on any python3)."""

# dataset: (label column, protected attributes of the grid, the label's favourable value or None)
DATASETS = {
    "census": ("income", ["gender", "race", "age"], ">50K"),
    "credit": ("label_CREDITRATING_eq_1", ["PersonStatusSex", "AgeInYears"], None),
    "bank": ("y", ["age"], None),
    "compas": ("two_year_recid", ["sex", "race", "age"], None),
}
# The RegionFT harness's model families (its TrainClassifierUnderTest.py names).
MODELS = ["LogReg", "DecTree", "RanForest", "GBDT", "MLP"]
