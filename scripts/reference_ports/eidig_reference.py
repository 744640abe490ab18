#!/usr/bin/env python3
"""The EIDIG reference code (github.com/LingfengZhang98/EIDIG: EIDIG.py, generation_utilities.py,
experiments.comparison's EIDIG-5; the same files are in wangzh1998/MAFT), ported line by line to
numpy, to measure the reference's own spread over many runs on fairpipe's bundled data and
reference models. With numpy seeds 1-6 on bank-age it reproduces, IDI for IDI, the six
runs of the TensorFlow code quoted in the README (15,762, 19,113, 16,535, 15,288, 16,555, 16,027).

The Keras MLP is the bundled ONNX model (MatMul/Add/Relu x5, MatMul/Add/Sigmoid) run in numpy
float32 (TensorFlow's dtype); the gradient of P(class 1) is back-propagated by hand (checked
against central finite differences: 2.9e-11; forward against onnxruntime: 1.2e-7). Randomness is
numpy's global generator, as in the reference (scikit-learn's KMeans included).

    python3 scripts/reference_ports/eidig_reference.py bank-age 50 1000 SEED [UPDATE_INTERVAL]

Needs numpy, onnx and scikit-learn (pip).
"""
import os
import sys, csv, itertools, time, tomllib, numpy as np, onnx
from onnx import numpy_helper
from sklearn import cluster

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')

BENCH = {  # name: (data/model file, protected attribute indices)  -- the reference's indices
    'census-gender': ('census', [7]), 'census-age': ('census', [0]), 'census-race': ('census', [6]),
    'bank-age': ('bank', [0]), 'credit-age': ('credit', [9]), 'credit-gender': ('credit', [6]),
}

def load(name):
    r = list(csv.reader(open(os.path.join(REPO, 'pipelines', 'data', '%s.csv' % name))))
    rows = r[1:]
    # census.csv names its categories; census.codes.toml gives the papers' integer code of each
    codes_file = os.path.join(REPO, 'pipelines', 'data', '%s.codes.toml' % name)
    codes = tomllib.loads(open(codes_file, encoding='utf-8').read()) if os.path.exists(codes_file) else {}
    code = [codes.get(c, {}) for c in r[0][1:-2]]
    X = np.array([[int(code[i].get(v, v)) for i, v in enumerate(row[1:-2])] for row in rows])  # the reference's X is integer
    split = np.array([row[-1] for row in rows])
    return X, split, r[0][1:-2]

class Model:
    """The ONNX graph MatMul/Add/Relu x5, MatMul/Add/Sigmoid; output P(class 1) = a5."""
    def __init__(self, name, dtype=np.float32):
        g = onnx.load(os.path.join(REPO, 'pipelines', 'models', '%s.onnx' % name)).graph
        init = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        ops = [n.op_type for n in g.node]
        assert ops == ['MatMul', 'Add', 'Relu'] * 5 + ['MatMul', 'Add', 'Sigmoid', 'Sub', 'Concat'], ops
        self.W = [init['W%d' % i].astype(dtype) for i in range(6)]
        self.B = [init['B%d' % i].astype(dtype) for i in range(6)]
        self.dtype = dtype
        self.rows = 0
    def forward(self, X, keep=False):
        a = np.asarray(X, dtype=self.dtype).reshape(-1, self.W[0].shape[0])
        self.rows += len(a)
        zs = []
        for i in range(5):
            z = a @ self.W[i] + self.B[i]
            zs.append(z)
            a = np.maximum(z, 0)
        p = 1 / (1 + np.exp(-(a @ self.W[5] + self.B[5])))
        p = p[:, 0].astype(self.dtype)
        return (p, zs) if keep else p
    __call__ = forward
    def grad(self, x):
        # d P(class 1) / d x for one row (TF: tape.gradient(model(x), x)); relu'(0) = 0 as in TF
        p, zs = self.forward([x], keep=True)
        d = (p * (1 - p))[:, None] * self.W[5].T          # dp/da4
        for i in range(4, -1, -1):
            d = (d * (zs[i] > 0)) @ self.W[i].T           # through relu then matmul
        return d[0], p[0]

# ---- generation_utilities.py ----
def clustering(data, c_num):
    kmeans = cluster.KMeans(n_clusters=c_num)
    y_pred = kmeans.fit_predict(data)
    return [data[y_pred == n] for n in range(c_num)]

def clip(instance, constraint):
    return np.minimum(constraint[:, 1], np.maximum(constraint[:, 0], instance))

def random_pick(probability):
    random_number = np.random.rand()
    current_proba = 0
    for i in range(len(probability)):
        current_proba += probability[i]
        if current_proba > random_number:
            return i

def get_seed(clustered_data, X_len, c_num, cluster_i, fashion='RoundRobin'):
    if fashion == 'RoundRobin':
        index = np.random.randint(0, len(clustered_data[cluster_i]))
        return clustered_data[cluster_i][index]
    elif fashion == 'Distribution':
        pick_probability = [len(clustered_data[i]) / X_len for i in range(c_num)]
        x = clustered_data[random_pick(pick_probability)]
        index = np.random.randint(0, len(x))
        return x[index]

def similar_set(x, num_attribs, protected_attribs, constraint):
    protected_domain = []
    for i in protected_attribs:
        protected_domain = protected_domain + [list(range(constraint[i][0], constraint[i][1] + 1))]
    all_combs = np.array(list(itertools.product(*protected_domain)))
    similar_x = np.repeat([x], len(all_combs), axis=0).astype(float)
    for k, a in enumerate(protected_attribs):
        similar_x[:, a] = all_combs[:, k]
    return similar_x

def is_discriminatory(x, similar_x, model):
    y = model(np.vstack([[x], similar_x]))          # same float32 outputs as one call per row
    return bool(((y[1:] > 0.5) != (y[0] > 0.5)).any())

def max_diff(x, similar_x, model):
    y = model(np.vstack([[x], similar_x]))
    max_dist = 0.0
    x_potential_pair = x.copy()
    for i, x_new in enumerate(similar_x):
        d = np.float32(np.square(y[0] - y[1 + i]))     # np.sum(np.square(...)) of float32 tensors
        if d > max_dist:
            max_dist = d
            x_potential_pair = x_new.copy()
    return x_potential_pair

def find_pair(x, similar_x, model):
    y = model(np.vstack([[x], similar_x]))
    pairs = similar_x[(y[1:] > 0.5) != (y[0] > 0.5)]
    selected_p = random_pick([1.0 / pairs.shape[0]] * pairs.shape[0])
    return pairs[selected_p]

def normalization(grad1, grad2, protected_attribs, epsilon):
    gradient = np.zeros_like(grad1)                    # float32 like the TF gradient
    grad1 = np.abs(grad1)
    grad2 = np.abs(grad2)
    for i in range(len(gradient)):
        saliency = grad1[i] + grad2[i]
        gradient[i] = 1.0 / (saliency + epsilon)
        if i in protected_attribs:
            gradient[i] = 0.0
    gradient_sum = np.sum(gradient)
    probability = gradient / gradient_sum
    return probability

# ---- EIDIG.py ----
def compute_grad(x, model):
    g, p = model.grad(x)
    return g if p > 0.5 else -g

def global_generation(X, seeds, num_attribs, protected_attribs, constraint, model, decay, max_iter, s_g):
    g_id = np.empty(shape=(0, num_attribs))
    all_gen_g = np.empty(shape=(0, num_attribs))
    try_times = 0
    g_num = len(seeds)
    for i in range(g_num):
        x1 = seeds[i].copy()
        grad1 = np.zeros_like(X[0]).astype(float)
        grad2 = np.zeros_like(X[0]).astype(float)
        for _ in range(max_iter):
            try_times += 1
            similar_x1 = similar_set(x1, num_attribs, protected_attribs, constraint)
            if is_discriminatory(x1, similar_x1, model):
                g_id = np.append(g_id, [x1], axis=0)
                break
            x2 = max_diff(x1, similar_x1, model)
            grad1 = decay * grad1 + compute_grad(x1, model)
            grad2 = decay * grad2 + compute_grad(x2, model)
            direction = np.zeros_like(X[0])
            sign_grad1 = np.sign(grad1)
            sign_grad2 = np.sign(grad2)
            for attrib in range(num_attribs):
                if attrib not in protected_attribs and sign_grad1[attrib] == sign_grad2[attrib]:
                    direction[attrib] = (-1) * sign_grad1[attrib]
            x1 = x1 + s_g * direction
            x1 = clip(x1, constraint)
            all_gen_g = np.append(all_gen_g, [x1], axis=0)
    g_id = np.array(list(set([tuple(id) for id in g_id])))
    return g_id, all_gen_g, try_times

def local_generation(num_attribs, l_num, g_id, protected_attribs, constraint, model, update_interval, s_l, epsilon, stats):
    direction = [-1, 1]
    l_id = []                                          # np.append row by row in the reference
    all_gen_l = []
    try_times = 0
    for x1 in g_id:                                    # x1 is a VIEW of g_id's row, as in the reference
        x0 = x1.copy()
        similar_x1 = similar_set(x1, num_attribs, protected_attribs, constraint)
        x2 = max_diff(x1, similar_x1, model)
        grad1 = compute_grad(x1, model)
        grad2 = compute_grad(x2, model)
        p = normalization(grad1, grad2, protected_attribs, epsilon)
        p0 = p.copy()
        suc_iter = 0
        for _ in range(l_num):
            try_times += 1
            if suc_iter >= update_interval:
                similar_x1 = similar_set(x1, num_attribs, protected_attribs, constraint)
                x2 = find_pair(x1, similar_x1, model)
                grad1 = compute_grad(x1, model)
                grad2 = compute_grad(x2, model)
                p = normalization(grad1, grad2, protected_attribs, epsilon)
                suc_iter = 0
                stats['updates'] += 1
            suc_iter += 1
            a = random_pick(p)
            s = random_pick([0.5, 0.5])
            x1[a] = x1[a] + direction[s] * s_l          # mutates g_id's row until x1 is rebound by clip
            x1 = clip(x1, constraint)
            all_gen_l.append(tuple(x1))          # np.append copies the row
            similar_x1 = similar_set(x1, num_attribs, protected_attribs, constraint)
            if is_discriminatory(x1, similar_x1, model):
                l_id.append(tuple(x1))
            else:
                x1 = x0.copy()
                p = p0.copy()
                suc_iter = 0
    l_id = np.array(list(set([tuple(id) for id in l_id]))).reshape(-1, num_attribs)
    return l_id, all_gen_l, try_times

def individual_discrimination_generation(X, seeds, protected_attribs, constraint, model, decay, l_num, update_interval, max_iter=10, s_g=1.0, s_l=1.0, epsilon_l=1e-6):
    num_attribs = len(X[0])
    stats = {'updates': 0}
    g_id, gen_g, g_gen_num = global_generation(X, seeds, num_attribs, protected_attribs, constraint, model, decay, max_iter, s_g)
    g_id_before = set(tuple(r) for r in g_id)
    l_id, gen_l, l_gen_num = local_generation(num_attribs, l_num, g_id, protected_attribs, constraint, model, update_interval, s_l, epsilon_l, stats)
    all_id = np.append(g_id.reshape(-1, num_attribs), l_id, axis=0)
    all_id_nondup = set([tuple(id) for id in all_id])
    stats.update(n_global=len(g_id_before), n_local=len(l_id),
                 total_if_global_unmutated=len(g_id_before | set(tuple(r) for r in l_id)),
                 mutated_g_rows_outside_domain=int(sum(((r < constraint[:, 0]) | (r > constraint[:, 1])).any() for r in g_id)),
                 n_gen=len(set(tuple(r) for r in gen_g) | set(gen_l)),
                 iters=g_gen_num + l_gen_num)
    return all_id_nondup, stats

# ---- experiments.comparison (the EIDIG-5 part) ----
def comparison(bench, g_num, l_num, seed, update_interval=5, decay=0.5, c_num=4, max_iter=10, s_g=1.0, s_l=1.0, epsilon_l=1e-6, fashion='RoundRobin'):
    fname, protected_attribs = BENCH[bench]
    Xall, split, _ = load(fname)
    X = Xall[split == 'train']                          # the reference's X_train
    constraint = np.vstack((Xall.min(axis=0), Xall.max(axis=0))).T  # from the whole data set
    model = Model(fname)
    np.random.seed(seed)
    if g_num >= len(X):
        seeds = X.copy()
    else:
        clustered_data = clustering(X, c_num)
        seeds = np.empty(shape=(0, len(X[0])))
        for i in range(g_num):
            new_seed = get_seed(clustered_data, len(X), c_num, i % c_num, fashion=fashion)
            seeds = np.append(seeds, [new_seed], axis=0)
    t1 = time.time()
    ids, stats = individual_discrimination_generation(X, seeds, protected_attribs, constraint, model, decay, l_num, update_interval, max_iter, s_g, s_l, epsilon_l)
    stats.update(ids=len(ids), secs=round(time.time() - t1, 1), model_rows=model.rows,
                 distinct_seeds=len(set(tuple(r) for r in seeds)))
    return stats

if __name__ == '__main__':
    bench, g_num, l_num, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ui = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    print(bench, 'g_num', g_num, 'l_num', l_num, 'seed', seed, 'update_interval', ui, comparison(bench, g_num, l_num, seed, ui), flush=True)
