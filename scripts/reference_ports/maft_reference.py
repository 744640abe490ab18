#!/usr/bin/env python3
"""The MAFT reference code (github.com/wangzh1998/MAFT: MAFT.py, generation_utilities.py,
experiments.py), ported line by line to numpy + onnxruntime, to measure the reference's own spread
over many runs on fairpipe's bundled data and reference models.

What is kept from the reference, on purpose: seeds drawn with replacement from 4 k-means clusters
of the train rows (`replace=1`), the global IDIs deduplicated before the local phase, the local
walk's first step written into the stored global IDI (`mutate=1`: `for x1 in g_id` aliases the row,
MAFT.py:75/96), float32 model outputs, h = 1 (the README's "default optimal"), update_interval 5.
What differs: k-means++ in numpy instead of scikit-learn's KMeans (no fixed seed there either),
and P(class 1) read from the bundled ONNX conversions of the reference's Keras models.

    python3 scripts/reference_ports/maft_reference.py census 7 100 1000 SEED 1 1
    # dataset, protected column indices (comma-separated, in the CSV's feature order),
    # global seeds, local iterations, random seed, mutate (0/1), replace (0/1)

Needs numpy and onnxruntime (pip). Prints the distinct global IDIs, all distinct IDIs (the
reference's count: global ∪ local, full rows) and the model calls.
"""
import os
import tomllib
import sys, csv, itertools, numpy as np, onnxruntime as ort

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')

def load(name):
    r = list(csv.reader(open(os.path.join(REPO, 'pipelines', 'data', '%s.csv' % name))))
    h = r[0]
    rows = r[1:]
    # census.csv names its categories (since 43035f8); census.codes.toml gives each the papers' code
    codes_file = os.path.join(REPO, 'pipelines', 'data', '%s.codes.toml' % name)
    codes = tomllib.loads(open(codes_file, encoding='utf-8').read()) if os.path.exists(codes_file) else {}
    code = [codes.get(c, {}) for c in h[1:-2]]
    X = np.array([[float(code[i].get(v, v)) for i, v in enumerate(row[1:-2])] for row in rows])
    split = np.array([row[-1] for row in rows])
    return X, split, h[1:-2]

class Model:
    def __init__(self, name):
        so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
        self.s = ort.InferenceSession(os.path.join(REPO, 'pipelines', 'models', '%s.onnx' % name), so, providers=['CPUExecutionProvider'])
        self.calls = 0
    def __call__(self, X):
        self.calls += 1
        return self.s.run(None, {'input': np.asarray(X, dtype=np.float32)})[0][:, 1]  # float32

def kmeans(data, k, rng, n_iter=300, tol=1e-4):
    # k-means++ (sklearn-style, greedy 2+log k trials) + Lloyd; one init (sklearn n_init='auto' for k-means++)
    n = len(data)
    trials = 2 + int(np.log(k))
    centers = [data[rng.randint(n)]]
    d2 = ((data - centers[0]) ** 2).sum(1)
    for _ in range(1, k):
        cand = np.searchsorted(np.cumsum(d2), rng.rand(trials) * d2.sum())
        cand = np.clip(cand, 0, n - 1)
        best = None
        for c in cand:
            nd = np.minimum(d2, ((data - data[c]) ** 2).sum(1))
            if best is None or nd.sum() < best[1]:
                best = (c, nd.sum(), nd)
        centers.append(data[best[0]]); d2 = best[2]
    C = np.array(centers)
    var = data.var(0).mean() * tol
    for _ in range(n_iter):
        lab = ((data[:, None, :] - C[None]) ** 2).sum(2).argmin(1)
        newC = np.array([data[lab == j].mean(0) if (lab == j).any() else C[j] for j in range(k)])
        shift = ((newC - C) ** 2).sum()
        C = newC
        if shift <= var:
            break
    lab = ((data[:, None, :] - C[None]) ** 2).sum(2).argmin(1)
    return [data[lab == j] for j in range(k)]

def run(name, prot, g_num, l_num, seed, mutate=True, replace=True, h=1.0, decay=0.5, max_iter=10, s_g=1.0, s_l=1.0, eps=1e-6, update_interval=5):
    X, split, cols = load(name)
    model = Model(name)
    rng = np.random.RandomState(seed)
    Xtr = X[split == 'train']
    constraint = np.vstack((X.min(0), X.max(0))).T.astype(np.int64)
    n = X.shape[1]
    clusters = kmeans(Xtr, 4, rng)
    seeds = []
    if replace:
        for j in range(g_num):
            c = clusters[j % 4]; seeds.append(c[rng.randint(0, len(c))])
    else:
        perms = [rng.permutation(len(c)) for c in clusters]
        for j in range(g_num):
            c = clusters[j % 4]; seeds.append(c[perms[j % 4][j // 4]])
    seeds = np.array(seeds, dtype=float)
    dom = [list(range(constraint[i][0], constraint[i][1] + 1)) for i in prot]
    combs = np.array(list(itertools.product(*dom)))
    def similar(x):
        S = np.repeat([x], len(combs), 0)
        for k, a in enumerate(prot): S[:, a] = combs[:, k]
        return S
    def disc(x, S):
        y = model(np.vstack([[x], S]))
        return ((y[1:] > 0.5) != (y[0] > 0.5)).any()
    def max_diff(x, S):
        y = model(np.vstack([[x], S]))
        best, bx = 0.0, x.copy()
        for i in range(len(S)):
            d = np.float32(np.square(y[0] - y[1 + i]))
            if d > best: best, bx = d, S[i].copy()
        return bx
    def find_pair(x, S):
        y = model(np.vstack([[x], S]))
        pairs = S[(y[1:] > 0.5) != (y[0] > 0.5)]
        return pairs[random_pick([1.0 / len(pairs)] * len(pairs))]
    def grad(x):
        Xp = np.repeat([x], n, 0) + np.diag(np.full(n, h))
        Y = model(np.vstack([Xp, [x]]))
        g = (Y[:-1] - Y[-1]) / np.float32(h)
        return g if Y[-1] > 0.5 else -g
    def random_pick(p):
        r = rng.rand(); cur = 0
        for i in range(len(p)):
            cur += p[i]
            if cur > r: return i
        return None
    def norm(g1, g2):
        g = np.zeros_like(g1); a1 = np.abs(g1); a2 = np.abs(g2)
        for i in range(len(g)):
            g[i] = 1.0 / (a1[i] + a2[i] + eps)
            if i in prot: g[i] = 0.0
        return g / g.sum()
    clip = lambda x: np.minimum(constraint[:, 1], np.maximum(constraint[:, 0], x))
    # global
    g_id = []
    for i in range(len(seeds)):
        x1 = seeds[i].copy(); gr1 = np.zeros(n); gr2 = np.zeros(n)
        for _ in range(max_iter):
            S = similar(x1)
            if disc(x1, S): g_id.append(x1); break
            x2 = max_diff(x1, S)
            gr1 = decay * gr1 + grad(x1); gr2 = decay * gr2 + grad(x2)
            s1, s2 = np.sign(gr1), np.sign(gr2)
            d = np.zeros(n)
            for a in range(n):
                if a not in prot and s1[a] == s2[a]: d[a] = -s1[a]
            x1 = clip(x1 + s_g * d)
    g_id = np.array(list(set(tuple(r) for r in g_id)))
    n_global = len(g_id)
    l_id = []
    direction = [-1, 1]
    for x1 in g_id:
        if not mutate: x1 = x1.copy()
        x0 = x1.copy()
        S = similar(x1); x2 = max_diff(x1, S)
        p = norm(grad(x1), grad(x2)); p0 = p.copy(); suc = 0
        for _ in range(l_num):
            if suc >= update_interval:
                S = similar(x1); x2 = find_pair(x1, S)
                p = norm(grad(x1), grad(x2)); suc = 0
            suc += 1
            a = random_pick(p); s = random_pick([0.5, 0.5])
            x1[a] = x1[a] + direction[s] * s_l
            x1 = clip(x1)
            if disc(x1, similar(x1)): l_id.append(tuple(x1))
            else:
                x1 = x0.copy(); p = p0.copy(); suc = 0
    all_id = set(tuple(r) for r in g_id) | set(l_id)
    return dict(n_global=n_global, total=len(all_id), local=len(set(l_id)), calls=model.calls)

if __name__ == '__main__':
    name, prot, g, l, seed, mut, rep = sys.argv[1], [int(v) for v in sys.argv[2].split(',')], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == '1', sys.argv[7] == '1'
    print(name, prot, g, l, seed, 'mutate', mut, 'replace', rep, run(name, prot, g, l, seed, mut, rep), flush=True)
