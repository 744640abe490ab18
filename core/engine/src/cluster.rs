//! Seed selection: k-means (linfa-clustering) over the encoded rows, then seeds taken round robin
//! across clusters, each cluster's rows in a seeded random order (SG §3.2, MAFT Algorithm 3).

use linfa::prelude::*;
use linfa_clustering::KMeans;
use ndarray::Array2;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::ModelError;

/// Seeds chosen from a dataset.
#[derive(Debug, Clone)]
pub struct Seeds {
    /// Seed rows (encoded), in round-robin order.
    pub rows: Array2<f64>,
    /// The cluster of each seed.
    pub cluster: Vec<usize>,
    /// Size of each cluster.
    pub cluster_sizes: Vec<usize>,
}

/// Cluster `x` into `k` groups and return at most `n` seeds in round-robin order.
pub fn cluster_seeds(x: &Array2<f64>, k: usize, n: usize, max_iterations: u64, seed: u64) -> Result<Seeds, ModelError> {
    if x.nrows() == 0 {
        return Err(ModelError::Train("no rows to cluster".into()));
    }
    let k = k.clamp(1, x.nrows());
    let rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let data = DatasetBase::from(x.clone());
    let model = KMeans::params_with_rng(k, rng.clone())
        .max_n_iterations(max_iterations)
        .tolerance(1e-4)
        .fit(&data)
        .map_err(|e| ModelError::Train(format!("k-means: {e}")))?;
    let assignment = model.predict(x);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (row, &c) in assignment.iter().enumerate() {
        members[c].push(row);
    }
    let mut shuffle_rng = Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_add(1));
    for m in &mut members {
        m.shuffle(&mut shuffle_rng);
    }
    let cluster_sizes = members.iter().map(Vec::len).collect();
    let mut order = Vec::new();
    let mut cluster = Vec::new();
    let mut depth = 0;
    while order.len() < n.min(x.nrows()) {
        let mut any = false;
        for (c, m) in members.iter().enumerate() {
            if let Some(&row) = m.get(depth) {
                if order.len() < n {
                    order.push(row);
                    cluster.push(c);
                }
                any = true;
            }
        }
        if !any {
            break;
        }
        depth += 1;
    }
    Ok(Seeds { rows: x.select(ndarray::Axis(0), &order), cluster, cluster_sizes })
}
