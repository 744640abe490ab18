#!/usr/bin/env python3
"""The AFT reference code (toda-lab/AFT, MIT: aft.py and utils/PathSearcher.py; the same files
under Baselines/Aft in the RegionFT repository), ported line by line to numpy, with the defaults of
its exp.py (no_train_data_sample 5000, max_leaf_nodes 1000, MaxTry 10000, MaxDiscPathPair 100,
10 failing data and 100 samples per path pair, random+flip, themis), to measure the reference's
own IDI count and speed over many runs on fairpipe's bundled data and reference models at a fixed
budget of model rows (or, through grid_reference.py, on a cell of the benchmark grid: its
skl2onnx export under onnxruntime). The surrogate is scikit-learn's DecisionTreeClassifier, as in the reference;
IntervalPool's memo tables are left out (they cache, they do not change a result).

The model is the bundled ONNX network run in numpy float32 (eidig_reference.Model); the reference's
CuT.predict is its label (P(class 1) > 0.5), one call per predict as the reference makes them.
Randomness: Python's `random` (the reference's) and numpy's (scikit-learn's trees), seeded with
SEED. A model call that would pass the budget ends the run; everything found until then counts.

    python3 scripts/reference_ports/aft_reference.py census-gender MAX_ROWS SEED

Prints one JSON line: ids (distinct full instances x1 of the discriminatory pairs, as fairpipe
emits them), pairs (distinct unordered pairs, as the RegionFT harness counts), ids_projection,
tests (input pairs, the reference's #Test), model_rows, model_calls, secs (wall), cpu_secs, loops, restarts.
Needs numpy, onnx and scikit-learn.
"""
import copy
import itertools
import json
import os
import random
import sys
import time

import numpy as np
from sklearn.tree import DecisionTreeClassifier

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eidig_reference import BENCH, Model, load  # noqa: E402

MAX = 2 ** 63 - 1
MIN = - MAX - 1


class Exhausted(Exception):
    """The next model call would pass the budget of model rows."""


class CuT:
    """The black box: integer rows in, labels out; counts rows and calls against `max_rows`."""

    def __init__(self, model, data_range, max_rows):
        self.model, self.data_range, self.max_rows = model, data_range, max_rows
        self.no_attr = len(data_range)
        self.rows = self.calls = 0

    def predict(self, inputs):
        x = np.asarray([[int(v) for v in row] for row in inputs], dtype=float)
        if self.rows + len(x) > self.max_rows:
            raise Exhausted()
        self.rows += len(x)
        self.calls += 1
        return (self.model(x) > 0.5).astype(int)


# ---- PathSearcher.py ----
class Interval:
    def __init__(self, L_num, R_num, L_closed, R_closed):
        self.L_num, self.R_num = L_num, R_num
        self.L_closed, self.R_closed = bool(L_closed), bool(R_closed)
        self.have_value = not ((L_num > R_num) or (L_num == R_num and not (self.L_closed and self.R_closed)))

    def __add__(self, other):
        if self.L_num > other.L_num:
            L, L_closed = self.L_num, self.L_closed
        elif self.L_num == other.L_num:
            L, L_closed = self.L_num, self.L_closed and other.L_closed
        else:
            L, L_closed = other.L_num, other.L_closed
        if self.R_num < other.R_num:
            R, R_closed = self.R_num, self.R_closed
        elif self.R_num == other.R_num:
            R, R_closed = self.R_num, self.R_closed and other.R_closed
        else:
            R, R_closed = other.R_num, other.R_closed
        return Interval(L, R, L_closed, R_closed)

    def have_at_least_one_value(self):
        L = self.L_num if self.L_closed else self.L_num + 1
        R = self.R_num if self.R_closed else self.R_num - 1
        return 1 <= (R - L + 1)

    def uniform_sample(self):
        L = self.L_num if self.L_closed else self.L_num + 1
        R = self.R_num if self.R_closed else self.R_num - 1
        return int(random.randint(L, R))


class Path:
    def __init__(self, no_attr, data_range):
        self.path_list = [Interval(data_range[a][0], data_range[a][1], 1, 1) for a in range(no_attr)]
        self.predict_value = None
        self.flip_list_for_protected_attr = []

    def add_node(self, node_index, threshold, direction):
        new = Interval(MIN, threshold, 0, 1) if direction else Interval(threshold, MAX, 0, 0)
        self.path_list[node_index] = self.path_list[node_index] + new


class PathSearcher:
    def __init__(self, DT, CuT, protected_list_no, data_range, protected_value_comb):
        self.disc_data, self.test_data, self.train_data = [], [], []
        self.CuT = CuT
        self.protected_list_no = protected_list_no
        self.no_prot = len(protected_list_no)
        self.protected_value_comb = protected_value_comb
        self.no_attr = DT.tree_.n_features
        self.paths = []
        self.get_DT_paths(DT, data_range)

    def get_DT_paths(self, DT, data_range):
        tree_ = DT.tree_
        feature = tree_.feature

        def recurse(node, path):
            if feature[node] != -2:
                index = feature[node]
                threshold = int(tree_.threshold[node])
                path.append([index, threshold, True])
                left = recurse(tree_.children_left[node], path) if tree_.children_left[node] != -1 else []
                path.append([index, threshold, False])
                right = recurse(tree_.children_right[node], path) if tree_.children_right[node] != -1 else []
                if len(path) != 0:
                    path.pop()
                if feature[node] in self.protected_list_no:
                    for path1, path2 in itertools.product(left, right):
                        path1.flip_list_for_protected_attr.append(path2)
                return left + right
            pre_res = np.argmax(tree_.value[node][0])
            new_path = Path(self.no_attr, data_range)
            for p in path:
                new_path.add_node(node_index=p[0], threshold=p[1], direction=p[2])
            new_path.predict_value = pre_res
            self.paths.append(new_path)
            if len(path) != 0:
                path.pop()
            return [new_path]

        recurse(0, [])

    def sample_from_path_pair(self, pair):
        space, p1, p2 = pair["space"], pair["path1"], pair["path2"]
        sample1, sample2 = [], []
        for attr in range(self.no_attr):
            if attr in self.protected_list_no:
                sample1.append(space[attr][0].uniform_sample())
                sample2.append(space[attr][1].uniform_sample())
            else:
                value = space[attr][0].uniform_sample()
                sample1.append(value)
                sample2.append(value)
        return [sample1 + [p1.predict_value], sample2 + [p2.predict_value]]

    def check_if_path_pair_includes_disc(self, p1, p2):
        space = [[] for _ in range(self.no_attr)]
        if p1.predict_value == p2.predict_value:
            return False, space
        have_p_attr_meets_condition = False
        for p_attr in self.protected_list_no:
            interval1, interval2 = p1.path_list[p_attr], p2.path_list[p_attr]
            space[p_attr].append(interval1)
            space[p_attr].append(interval2)
            if not (interval1 + interval2).have_at_least_one_value():
                have_p_attr_meets_condition = True
            if not have_p_attr_meets_condition:
                return False, space
        for attr in range(self.no_attr):
            if attr not in self.protected_list_no:
                interval_new = p1.path_list[attr] + p2.path_list[attr]
                space[attr].append(interval_new)
                if not interval_new.have_at_least_one_value():
                    return False, space
        return True, space

    def detect_disc_from_path_pair(self, pair, max_train_data_each_path, max_sample_each_path):
        num_train_data = num_sample = 0
        while num_train_data < max_train_data_each_path and num_sample < max_sample_each_path:  # check_type "themis"
            num_sample += 1
            samples = self.sample_from_path_pair(pair)
            X = [item[:-1] for item in samples]
            Y = [item[-1] for item in samples]
            real_Y = self.CuT.predict(X)
            i = 0
            self.test_data.append(X[i] + [Y[i]])
            self.test_data.append(X[i + 1] + [Y[i + 1]])
            if Y[i] != real_Y[i]:
                self.train_data.append(X[i] + [real_Y[i]])
                num_train_data += 1
            if Y[i + 1] != real_Y[i + 1]:
                self.train_data.append(X[i + 1] + [real_Y[i + 1]])
                num_train_data += 1
            found_disc = False
            if real_Y[i] != real_Y[i + 1]:
                self.disc_data.append(X[i] + [Y[i]])
                self.disc_data.append(X[i + 1] + [Y[i + 1]])
                found_disc = True
            if (not found_disc) and (len(self.protected_value_comb) > 2):
                X2 = copy.deepcopy(X[0])
                removed = [tuple(X[0][k] for k in self.protected_list_no), tuple(X[1][k] for k in self.protected_list_no)]
                rest = [item for item in self.protected_value_comb if item not in removed]
                random.shuffle(rest)
                for combination in rest:
                    for k in range(self.no_prot):
                        X2[self.protected_list_no[k]] = combination[k]
                    real_Y2 = self.CuT.predict([X2])[0]
                    if real_Y2 != real_Y[0]:
                        self.disc_data.append(X[0] + [real_Y[0]])
                        self.disc_data.append(list(X2) + [real_Y2])
                        break

    def sample(self, MaxTry=10000, MaxDiscPathPair=100, max_train_data_each_path=10, max_sample_each_path=100):
        disc_path_pair = []
        num_found_path_pair = 0
        for path1 in random.sample(self.paths, min(len(self.paths), MaxTry)):     # random+flip
            if (MaxDiscPathPair is not None) and (num_found_path_pair >= MaxDiscPathPair):
                break
            for path2 in path1.flip_list_for_protected_attr:
                include_disc, space = self.check_if_path_pair_includes_disc(path1, path2)
                if include_disc:
                    num_found_path_pair += 1
                    disc_path_pair.append({"path1": path1, "path2": path2, "space": space})
        for pair in disc_path_pair:
            self.detect_disc_from_path_pair(pair, max_train_data_each_path, max_sample_each_path)
        return len(self.test_data) != 0


# ---- aft.py ----
class AFT:
    def __init__(self, cut, protected_list, no_train_data_sample):
        self.cut = cut
        self.protected_list_no = protected_list
        self.no_train_data_sample = no_train_data_sample
        self.train_data, self.disc_data = [], []
        self.no_test = 0
        self.loops = self.restarts = 0
        res = [list(range(cut.data_range[i][0], cut.data_range[i][1] + 1)) for i in protected_list]
        self.protected_value_comb = list(itertools.product(*res))

    def create_train_data(self, num):
        self.train_data = []
        for _ in range(num):
            temp = [random.randint(self.cut.data_range[i][0], self.cut.data_range[i][1]) for i in range(self.cut.no_attr)]
            temp.append(int(self.cut.predict([temp])[0]))  # int() of the 1-row array, as under older numpy
            self.train_data.append(temp)

    def test(self, max_leaf_nodes=1000, MaxTry=10000, MaxDiscPathPair=100, max_train_data_each_path=10, max_sample_each_path=100):
        restart_flag = True
        no_new_train_count = 0
        while True:
            self.loops += 1
            if restart_flag:
                self.restarts += 1
                self.create_train_data(self.no_train_data_sample)
                restart_flag = False
            DT = DecisionTreeClassifier(criterion="entropy", max_leaf_nodes=max_leaf_nodes).fit(
                [item[:-1] for item in self.train_data], [item[-1] for item in self.train_data])
            sampler = PathSearcher(DT, self.cut, self.protected_list_no, self.cut.data_range, self.protected_value_comb)
            try:
                satFlag = sampler.sample(MaxTry, MaxDiscPathPair, max_train_data_each_path, max_sample_each_path)
            finally:                                     # what was found before the budget ended counts
                self.no_test += len(sampler.test_data) // 2
                self.disc_data += sampler.disc_data
            if satFlag:
                if len(sampler.disc_data) == 0:
                    restart_flag = True
                    continue
                new_train_data = sampler.train_data
                self.train_data += new_train_data
                if len(new_train_data) == 0:
                    no_new_train_count += 1
                    if no_new_train_count >= 5:
                        restart_flag = True
                        no_new_train_count = 0
                else:
                    no_new_train_count = 0
            else:
                restart_flag = True


def run(bench, max_rows, seed, cell=None):
    # cell: a benchmark grid cell (grid_reference.cell) instead of the bundled network
    fname, protected_attribs = BENCH[bench] if cell is None else (None, cell['protected'])
    Xall, _, _ = load(fname) if cell is None else cell['data']
    data_range = [[int(a), int(b)] for a, b in zip(Xall.min(axis=0), Xall.max(axis=0))]
    cut = CuT(Model(fname) if cell is None else cell['model'], data_range, max_rows)
    random.seed(seed)
    np.random.seed(seed)
    tester = AFT(cut, protected_attribs, no_train_data_sample=5000)
    t1, c1 = time.time(), time.process_time()
    try:
        tester.test()
    except Exhausted:
        pass
    secs, cpu = time.time() - t1, time.process_time() - c1
    rows = [tuple(r[:-1]) for r in tester.disc_data]
    anchors = rows[0::2]
    pairs = {tuple(sorted((a, b))) for a, b in zip(rows[0::2], rows[1::2])}
    keep = [a for a in range(len(data_range)) if a not in protected_attribs]
    return dict(bench=bench, seed=seed, max_rows=max_rows, ids=len(set(anchors)), pairs=len(pairs),
                ids_projection=len({tuple(r[a] for a in keep) for r in anchors}), tests=tester.no_test,
                model_rows=cut.rows, model_calls=cut.calls, secs=round(secs, 2), cpu_secs=round(cpu, 2), loops=tester.loops,
                restarts=tester.restarts)


if __name__ == '__main__':
    print(json.dumps(run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))), flush=True)
