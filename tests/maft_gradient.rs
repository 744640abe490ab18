//! MAFT's RQ3 on a model whose gradient is known: the zero-order estimate against the exact input
//! gradient of a native MLP trained on the bundled census data.

use std::path::PathBuf;

use fairpipe_core::data::{load, LoadSpec, Split, SplitSpec};
use fairpipe_core::models::native::mlp::{Mlp, MlpConfig};
use fairpipe_search::gradient::{cosine, sign, Perturbation};
use ndarray::{Array2, ArrayView2};

fn census() -> fairpipe_core::data::Dataset {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pipelines");
    let mut spec = LoadSpec::new(root.join("data/census.csv"), "income");
    spec.codes = Some(fairpipe_core::codes::read(&root.join("data/census.codes.toml")).expect("the census codes"));
    spec.favourable = Some(">50K".into());
    spec.protected = vec!["gender".into()];
    spec.drop = vec!["row".into()];
    spec.split = SplitSpec::Column("split".into());
    load(&spec).unwrap()
}

/// Estimated and exact gradients of the predicted class's probability at `rows`, over the free
/// attributes.
fn gradients(net: &Mlp, rows: &Array2<f64>, pert: &Perturbation) -> Vec<(Vec<f64>, Vec<f64>)> {
    let width = rows.ncols();
    let p = net.predict(rows.view());
    let exact = net.input_gradient(rows.view());
    let mut perturbed = Vec::new();
    for row in rows.outer_iter() {
        pert.push_rows(row.as_slice().unwrap(), &mut perturbed);
    }
    let per = pert.rows_per_gradient();
    let scores = net.predict(ArrayView2::from_shape((perturbed.len() / width, width), &perturbed).unwrap());
    (0..rows.nrows())
        .map(|i| {
            let est = pert.gradient(p[i], &scores.as_slice().unwrap()[i * per..(i + 1) * per], width);
            let flip = if p[i] > 0.5 { 1.0 } else { -1.0 };
            let est: Vec<f64> = pert.attrs.iter().map(|&a| est[a]).collect();
            let ex: Vec<f64> = pert.attrs.iter().map(|&a| flip * exact[[i, a]]).collect();
            (est, ex)
        })
        .collect()
}

#[test]
fn zero_order_gradient_agrees_with_the_exact_gradient_of_a_native_mlp() {
    let data = census();
    let (x, y) = data.subset(Split::Train);
    let config = MlpConfig { epochs: 3, seed: 7, ..MlpConfig::default() };
    let net = Mlp::train(&x, &y, &config).unwrap();
    let (test, _) = data.subset(Split::Test);
    let rows = test.slice(ndarray::s![..300, ..]).to_owned();
    let steps: Vec<f64> = data.domain.attributes.iter().map(|a| a.step).collect();
    let free = data.domain.free_indices();

    // A tiny h recovers the exact gradient (up to ReLU kinks).
    let tiny = gradients(&net, &rows, &Perturbation::new(free.clone(), &steps, 1e-6));
    let mut cos_tiny: Vec<f64> = tiny.iter().map(|(e, x)| cosine(e, x)).collect();
    cos_tiny.sort_by(f64::total_cmp);
    assert!(cos_tiny[cos_tiny.len() / 2] > 0.999, "median cosine at h=1e-6: {}", cos_tiny[cos_tiny.len() / 2]);

    // The paper's h = 1 (one grid step) still points the same way: the search only uses signs
    // and relative magnitudes.
    let coarse = gradients(&net, &rows, &Perturbation::new(free, &steps, 1.0));
    let cos: Vec<f64> = coarse.iter().map(|(e, x)| cosine(e, x)).collect();
    let mean = cos.iter().sum::<f64>() / cos.len() as f64;
    let signs_agree = coarse.iter().flat_map(|(e, x)| e.iter().zip(x).map(|(a, b)| sign(*a) == sign(*b))).filter(|&s| s).count();
    let total = coarse.iter().map(|(e, _)| e.len()).sum::<usize>();
    eprintln!("h=1: mean cosine {mean:.3}, sign agreement {:.3}", signs_agree as f64 / total as f64);
    // Measured: mean cosine 0.71, signs agree on 89% of partial derivatives (random directions
    // would give 0 and 50%).
    assert!(mean > 0.6, "mean cosine at h=1: {mean}");
    assert!(signs_agree as f64 / total as f64 > 0.8, "sign agreement {signs_agree}/{total}");
}
