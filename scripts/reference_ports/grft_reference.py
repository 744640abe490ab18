#!/usr/bin/env python3
"""The GRFT reference code (the RegionFT repository's Baselines/Grft/GRFT/GRFT.py: generate_seeds,
global_generation with GeneticAlgorithm.Population, local_generation_random; driven as
Baselines/Grft/grft.py drives it: rounds of seeds -> global -> local until the budget), ported
line by line to numpy, to measure the reference's own IDI count and speed over many runs on
fairpipe's bundled data and reference models at a fixed budget of model rows (or, through
grid_reference.py, on a cell of the benchmark grid: its skl2onnx export under onnxruntime).

The model is the bundled ONNX network run in numpy float32 (eidig_reference.Model), its outputs
P(class 1) as the harness's predict_proba adapter returns them. Randomness: Python's `random` and
numpy's global generator, both seeded with SEED (the reference uses both; scikit-learn's KMeans
draws from numpy's).

The budget counts model rows as the reference asks for them (every individual and all its
protected variants, the variant equal to the individual included; the local phase asks for the
variants only). A model call that would pass the budget ends the run, as fairpipe's host refuses
it; everything found until then counts.

    python3 scripts/reference_ports/grft_reference.py census-gender MAX_ROWS SEED [NUM_SEEDS]

Prints one JSON line: ids (distinct full instances), ids_projection (distinct non-protected
projections), tests (inputs checked), model_rows, secs (wall), cpu_secs, rounds, global_ids. Needs numpy, onnx and scikit-learn.
"""
import itertools
import json
import os
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eidig_reference import BENCH, Model, clip, clustering, get_seed, load, random_pick  # noqa: E402


CHECKED = [0]   # inputs checked (each individual of a generation, each moved local input): the #Test


class Exhausted(Exception):
    """The next model call would pass the budget of model rows."""


class Budgeted:
    """The model, counting rows and refusing a call that would pass `max_rows`."""

    def __init__(self, model, max_rows):
        self.model, self.max_rows, self.rows = model, max_rows, 0

    def __call__(self, x):
        x = np.atleast_2d(np.asarray(x))
        if self.rows + len(x) > self.max_rows:
            raise Exhausted()
        self.rows += len(x)
        return self.model(x).reshape(-1, 1)          # Keras-like [N, 1]


# ---- GRFT.py ----
def similar_set_(X, num_attribs, protected_attribs, constraint):
    similar_X = np.empty(shape=(0, num_attribs))
    X = np.array(X)
    protected_domain = []
    for i in protected_attribs:
        protected_domain = protected_domain + [list(range(int(constraint[i][0]), int(constraint[i][1]) + 1))]
    all_combs = np.array(list(itertools.product(*protected_domain)))
    for comb in all_combs:
        X_new = X.copy()
        for a, c in zip(protected_attribs, comb):
            X_new[:, a] = c
        similar_X = np.append(similar_X, X_new, axis=0)
    return similar_X


def local_generation_random(num_attribs, l_num, g_id, protected_attribs, constraint, model, s_l, found):
    non_protected_attribs = [a for a in range(num_attribs) if a not in protected_attribs]
    direction = [-1, 1]
    gid = np.array(g_id)
    if len(gid) != 0:
        for _ in range(l_num):
            g0 = np.copy(gid)
            a = random.choice(non_protected_attribs)
            s = random_pick([0.5, 0.5])
            g0[:, a] = g0[:, a] + direction[s] * s_l
            g1 = clip(g0, constraint)
            similar_x1 = similar_set_(g1, num_attribs, protected_attribs, constraint)
            y_pred = (model(similar_x1) > 0.5).astype('int').flatten()
            y_pred = y_pred.reshape(-1, len(g1))
            index = np.where([len(np.unique(y_pred[:, col])) > 1 for col in range(y_pred.shape[1])])[0]
            CHECKED[0] += len(g1)
            found.update(tuple(r) for r in g1[index])
            gid[index] = g0[index]                   # the unclipped move, as the reference


def get_rand_num():
    return random.randint(-5, 5)


def create_image_indvs(seed, num, num_attribs, protected_attribs, constraint):
    non_protected_attribs = [a for a in range(num_attribs) if a not in protected_attribs]
    indivs = [seed]
    index = np.random.choice(non_protected_attribs, 2, replace=False)
    for _ in range(num - 1):
        temp = seed.copy()
        temp[index[0]] = temp[index[0]] + get_rand_num()
        temp[index[1]] = temp[index[1]] + get_rand_num()
        indivs.append(temp)
    return np.array(clip(np.array(indivs), constraint))


def untarget_object_func(model, num_attribs, protected_attribs, constraint):
    def func(indvs):
        x_array = np.array(indvs)
        similar_x = similar_set_(x_array, num_attribs, protected_attribs, constraint)
        y_pred = model(x_array)
        pred_similar_x = model(similar_x)
        labels = (pred_similar_x > 0.5).astype("int").flatten().reshape(-1, len(indvs))
        new_index_result = np.where([len(np.unique(labels[:, col])) > 1 for col in range(labels.shape[1])])[0]
        y_pred = np.repeat(y_pred, labels.shape[0], axis=0)
        fitness = np.sum(abs(y_pred - pred_similar_x).reshape(-1, len(indvs)), axis=0)
        CHECKED[0] += len(indvs)
        return x_array[new_index_result], new_index_result, fitness
    return func


def build_mutate_func(num_attribs, protected_attribs, constraint):
    def func(indv):
        non_protected_attribs = [a for a in range(num_attribs) if a not in protected_attribs]
        index = np.random.choice(non_protected_attribs, 4, replace=False)
        mutate_indv = indv.copy()
        mutate_indv[index[0]] = mutate_indv[index[0]] + random.randint(-3, 3)
        mutate_indv[index[1]] = mutate_indv[index[1]] + random.randint(-3, 3)
        mutate_indv[index[2]] = mutate_indv[index[2]] + random.randint(-3, 3)
        return clip(mutate_indv, constraint)
    return func


# ---- GeneticAlgorithm.py (Population with first_attack = 1, subtotal = 10) ----
class Population:
    def __init__(self, individuals, mutation_function, fitness_compute_function, num_attribs, subtotal,
                 max_iteration, found, tour_size=3, cross_rate=0.5, mutate_rate=0.5):
        self.cross_rate, self.mutate_rate = cross_rate, mutate_rate
        self.individuals = individuals
        self.tournament_size = tour_size
        self.pop_size = len(self.individuals)
        self.subtotal = subtotal
        self.mutation_func = mutation_function
        self.fitness_fuc = fitness_compute_function
        self.discriminatory = np.empty(shape=(0, num_attribs))
        self.round = 0
        i = 0
        while True:
            if i >= max_iteration:
                self.round = i
                break
            i += 1
            results = self.evolvePopulation()
            if results is not None:
                self.discriminatory = np.append(self.discriminatory, results[-2], axis=0)
                found.update(tuple(r) for r in results[-2])
                self.round = i
                break                                    # first_attack == 1

    def crossover(self, ind1, ind2):
        shape = ind1.shape
        ind1, ind2 = ind1.flatten(), ind2.flatten()
        new_ind = np.copy(ind1)
        for i in range(len(ind1)):
            if random.uniform(0, 1) < self.cross_rate:
                new_ind[i] = ind1[i]
            else:
                new_ind[i] = ind2[i]
        return np.reshape(new_ind, shape)

    def evolvePopulation(self):
        results = self.fitness_fuc(self.individuals)
        objects = results[-2]
        self.fitness = results[-1]
        if len(objects) > 0:
            return results[:-1]
        sorted_fitness_indexes = sorted(range(0, len(self.fitness)), key=lambda k: self.fitness[k], reverse=True)
        new_indvs = []
        best_index = sorted_fitness_indexes[0]
        tour_start, tour_end = 0, self.subtotal
        for i in range(0, self.pop_size):
            item = self.individuals[i]
            if i == best_index:
                new_indvs.append(item)
            else:
                order_seq1 = np.sort(np.random.choice(np.arange(tour_start, tour_end), self.tournament_size, replace=False))
                order_seq2 = np.sort(np.random.choice(np.arange(tour_start, tour_end), self.tournament_size, replace=False))
                first_individual = self.individuals[sorted_fitness_indexes[order_seq1[0]]]
                second_individual = self.individuals[
                    sorted_fitness_indexes[order_seq2[0] if order_seq2[0] != order_seq1[0] else order_seq2[1]]]
                ind = self.crossover(first_individual, second_individual)
                if random.uniform(0, 1) < self.mutate_rate:
                    ind = self.mutation_func(ind)
                new_indvs.append(ind)
        self.individuals = new_indvs
        return None


def global_generation(seeds, num_attribs, protected_attribs, constraint, model, max_iter, found, pop_num=100):
    g_id = np.empty(shape=(0, num_attribs))
    for i in range(len(seeds)):
        x1 = seeds[i].copy()
        inds = create_image_indvs(x1, pop_num, num_attribs, protected_attribs, constraint)
        mutation_function = build_mutate_func(num_attribs, protected_attribs, constraint)
        fitness_compute_function = untarget_object_func(model, num_attribs, protected_attribs, constraint)
        pop = Population(inds, mutation_function, fitness_compute_function, num_attribs, subtotal=10,
                         max_iteration=max_iter, found=found)
        for di in pop.discriminatory:
            g_id = np.append(g_id, [di], axis=0)
    return np.array(list(set([tuple(id) for id in g_id])))


def generate_seeds(X, c_num=4, num_seeds=100, fashion='Distribution'):
    clustered_data = clustering(X, c_num)
    id_seeds = np.empty(shape=(0, len(X[0])))
    for i in range(100000000):
        id_seeds = np.append(id_seeds, [get_seed(clustered_data, len(X), c_num, i % c_num, fashion=fashion)], axis=0)
        if len(id_seeds) >= num_seeds:
            break
    return id_seeds


def run(bench, max_rows, seed, num_seeds=1000, l_num=1000, max_iter=10, s_l=1.0, max_rounds=None, cell=None):
    # cell: a benchmark grid cell (grid_reference.cell) instead of the bundled network
    fname, protected_attribs = BENCH[bench] if cell is None else (None, cell['protected'])
    Xall, split, _ = load(fname) if cell is None else cell['data']
    X = Xall[split == 'train'].astype(float)
    constraint = np.vstack((Xall.min(axis=0), Xall.max(axis=0))).T
    model = Budgeted(Model(fname) if cell is None else cell['model'], max_rows)
    random.seed(seed)
    np.random.seed(seed)
    found, global_found = set(), set()
    rounds = 0
    t1, c1 = time.time(), time.process_time()
    try:
        while max_rounds is None or rounds < max_rounds:
            rounds += 1
            seeds = generate_seeds(X, c_num=4, num_seeds=num_seeds)
            before = set(found)
            g_id = global_generation(seeds, len(X[0]), protected_attribs, constraint, model, max_iter, found)
            global_found |= found - before
            local_generation_random(len(X[0]), l_num, g_id, protected_attribs, constraint, model, s_l, found)
    except Exhausted:
        pass
    secs, cpu = time.time() - t1, time.process_time() - c1
    keep = [a for a in range(len(X[0])) if a not in protected_attribs]
    return dict(bench=bench, seed=seed, max_rows=max_rows, num_seeds=num_seeds, ids=len(found),
                ids_projection=len({tuple(r[a] for a in keep) for r in found}), global_ids=len(global_found),
                tests=CHECKED[0], model_rows=model.rows, secs=round(secs, 2), cpu_secs=round(cpu, 2), rounds=rounds)


if __name__ == '__main__':
    bench, max_rows, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    num_seeds = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    print(json.dumps(run(bench, max_rows, seed, num_seeds)), flush=True)
