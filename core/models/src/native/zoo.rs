//! The trained-model zoo: a random forest of bagged linfa trees, the [`Fitted`] model of every
//! algorithm, and the model file that saves one with its recipe and feature names (train once,
//! audit many times; a loaded file can still be retrained).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use fairpipe_abi::domain::{AttributeKind, Domain};

use ndarray::{Array2, Axis};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::Model;
use crate::{Logistic, Mlp, Recipe, Svm, Tree};

/// A random forest: each tree is grown on a bootstrap sample of the rows and a random subset of
/// the features ([`Forest::default_features`] unless set);
/// P(class 1) is the mean of the trees' leaf frequencies.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forest {
    trees: Vec<(Vec<usize>, Tree)>,
    n_features: usize,
}

impl Forest {
    /// Grow `n_trees` trees of depth at most `max_depth`, in parallel, reproducibly from `seed`.
    pub fn train(
        x: &Array2<f64>,
        y: &[u8],
        n_trees: usize,
        max_depth: usize,
        max_features: Option<usize>,
        seed: u64,
    ) -> Result<Self, ModelError> {
        if x.nrows() == 0 || n_trees == 0 {
            return Err(ModelError::Train("a forest needs rows and at least one tree".into()));
        }
        let n = x.ncols();
        let subset = max_features.unwrap_or_else(|| Self::default_features(n)).clamp(1, n);
        let trees = (0..n_trees)
            .into_par_iter()
            .map(|t| {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_add(t as u64));
                let rows: Vec<usize> = (0..x.nrows()).map(|_| rng.gen_range(0..x.nrows())).collect();
                let mut features: Vec<usize> = (0..n).collect();
                features.shuffle(&mut rng);
                features.truncate(subset);
                features.sort_unstable();
                let xs = x.select(Axis(0), &rows).select(Axis(1), &features);
                let ys: Vec<u8> = rows.iter().map(|&r| y[r]).collect();
                Tree::train(&xs, &ys, Some(max_depth)).map(|tree| (features, tree))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Forest { trees, n_features: n })
    }

    /// Features per tree when not set: ⌈2n/3⌉. Subspaces are drawn per tree, not per split
    /// (linfa's trees, like linfa-ensemble's forest, choose among all the features they are given),
    /// and per-tree subspaces of the usual ⌈√n⌉ starve most trees of the informative features:
    /// on census (13 features, 100 trees of depth 10) test accuracy is 78.4% with 4 features,
    /// 81.7% with 6, 82.8% with 8, 83.0% with 10 and 83.1% with all 13 (a single tree: 82.7%).
    pub fn default_features(n: usize) -> usize {
        (2 * n).div_ceil(3)
    }
}

impl Model for Forest {
    /// The encoded vector, read as numbers: any real input is scored.
    fn takes_any_real_input(&self) -> bool {
        true
    }

    fn n_features(&self) -> usize {
        self.n_features
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        out.iter_mut().for_each(|o| *o = 0.0);
        let mut sub = Vec::new();
        let mut p = Vec::new();
        for (features, tree) in &self.trees {
            sub.clear();
            for row in x.chunks_exact(self.n_features) {
                sub.extend(features.iter().map(|&f| row[f]));
            }
            p.resize(out.len(), 0.0);
            tree.predict_into(&sub, &mut p)?;
            out.iter_mut().zip(&p).for_each(|(o, q)| *o += q);
        }
        let k = self.trees.len() as f64;
        out.iter_mut().for_each(|o| *o /= k);
        Ok(())
    }

    fn describe(&self) -> String {
        format!("random forest ({} trees)", self.trees.len())
    }
}

/// A trained model of any algorithm.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", content = "parameters", rename_all = "lowercase")]
pub enum Fitted {
    /// The papers' MLP.
    Mlp(Mlp),
    /// Logistic regression.
    Logistic(Logistic),
    /// Decision tree.
    Tree(Tree),
    /// Random forest.
    Forest(Forest),
    /// Support vector classifier.
    Svm(Svm),
}

impl Fitted {
    /// The model, ready to query.
    pub fn into_model(self) -> Arc<dyn Model> {
        match self {
            Fitted::Mlp(m) => Arc::new(m),
            Fitted::Logistic(m) => Arc::new(m),
            Fitted::Tree(m) => Arc::new(m),
            Fitted::Forest(m) => Arc::new(m),
            Fitted::Svm(m) => Arc::new(m),
        }
    }
}

/// Tag of a fairpipe model file.
const FORMAT: &str = "fairpipe-model";
/// Version of the model file layout.
const VERSION: u32 = 1;

/// A saved model: how it was trained, on which features, and its parameters (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelFile {
    /// Always "fairpipe-model".
    pub format: String,
    /// Layout version.
    pub version: u32,
    /// Feature names in input order.
    pub features: Vec<String>,
    /// The levels of each categorical feature, in code order, as the model was trained: data
    /// whose codes differ is refused (files written before this field have none, and are not
    /// checked).
    #[serde(default)]
    pub levels: BTreeMap<String, Vec<String>>,
    /// The first code of each categorical feature whose codes do not start at 0 (declared codes,
    /// the load stage's `codes`); checked like `levels`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_codes: BTreeMap<String, f64>,
    /// The training recipe (so the model can be retrained).
    pub recipe: Recipe,
    /// The fitted parameters.
    pub model: Fitted,
}

impl ModelFile {
    /// A file for `model` trained by `recipe` on rows of `domain`.
    pub fn new(domain: &Domain, recipe: Recipe, model: Fitted) -> Self {
        let features = domain.attributes.iter().map(|a| a.name.clone()).collect();
        ModelFile {
            format: FORMAT.into(),
            version: VERSION,
            features,
            levels: levels_of(domain),
            first_codes: first_codes_of(domain),
            recipe,
            model,
        }
    }

    /// The file as JSON text.
    pub fn to_json(&self) -> Result<String, ModelError> {
        serde_json::to_string(self).map_err(|e| ModelError::Train(format!("cannot serialise the model: {e}")))
    }

    /// Read `path` and check that it was trained on rows of `domain`: the same feature names in the
    /// same order, and each category coded as in training.
    pub fn load(path: &Path, domain: &Domain) -> Result<Self, ModelError> {
        let features: Vec<String> = domain.attributes.iter().map(|a| a.name.clone()).collect();
        let err = |message: String| ModelError::File { path: path.to_path_buf(), message };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| err(format!("not JSON: {e}")))?;
        if value["format"] != FORMAT {
            return Err(err(format!("not a fairpipe model file (expected \"format\": \"{FORMAT}\")")));
        }
        if value["version"] != VERSION {
            return Err(err(format!("model file version {} is not supported (this fairpipe reads {VERSION})", value["version"])));
        }
        let file: ModelFile = serde_json::from_value(value).map_err(|e| err(format!("malformed model file: {e}")))?;
        if file.features != features {
            return Err(err(format!("the model was trained on features {:?}, but the data has {:?}", file.features, features)));
        }
        let data_levels = levels_of(domain);
        for (column, trained) in &file.levels {
            let found = data_levels.get(column).cloned().unwrap_or_default();
            if &found != trained {
                return Err(err(format!(
                    "column {column:?} is coded differently than when the model was trained (trained on levels {trained:?}, the data has {found:?}), so its codes would mean other categories; declare the trained list in the load stage: `columns.\"{column}\" = {{ levels = {trained:?} }}`"
                )));
            }
        }
        let data_first = first_codes_of(domain);
        for column in file.levels.keys() {
            let (trained, found) = (file.first_codes.get(column).copied().unwrap_or(0.0), data_first.get(column).copied().unwrap_or(0.0));
            if trained != found {
                return Err(err(format!(
                    "column {column:?} is coded from {found} in the data but from {trained} when the model was trained, so its codes would mean other categories; load the data with the codes it was trained with (`codes` on the load stage)"
                )));
            }
        }
        Ok(file)
    }
}

/// The levels of each categorical attribute of `domain`.
fn levels_of(domain: &Domain) -> BTreeMap<String, Vec<String>> {
    domain
        .attributes
        .iter()
        .filter_map(|a| match &a.kind {
            AttributeKind::Categorical { levels } => Some((a.name.clone(), levels.clone())),
            _ => None,
        })
        .collect()
}

/// The first code of each categorical attribute of `domain` whose codes do not start at 0.
fn first_codes_of(domain: &Domain) -> BTreeMap<String, f64> {
    domain
        .attributes
        .iter()
        .filter(|a| matches!(a.kind, AttributeKind::Categorical { .. }) && a.lower != 0.0)
        .map(|a| (a.name.clone(), a.lower))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> (Array2<f64>, Vec<u8>) {
        let x = Array2::from_shape_fn((400, 3), |(i, j)| ((i * (j + 3) * 7919) % 17) as f64);
        let y = x.outer_iter().map(|r| u8::from(r[0] + r[1] > 16.0)).collect();
        (x, y)
    }

    #[test]
    fn a_forest_learns_and_is_reproducible() {
        let (x, y) = data();
        let a = Forest::train(&x, &y, 30, 6, None, 1).unwrap();
        let b = Forest::train(&x, &y, 30, 6, None, 1).unwrap();
        let flat: Vec<f64> = x.iter().copied().collect();
        let (mut pa, mut pb) = (vec![0.0; 400], vec![0.0; 400]);
        a.predict_into(&flat, &mut pa).unwrap();
        b.predict_into(&flat, &mut pb).unwrap();
        assert_eq!(pa, pb, "same seed, same forest");
        let correct = pa.iter().zip(&y).filter(|(p, &l)| (**p > 0.5) == (l == 1)).count();
        assert!(correct > 320, "training accuracy {correct}/400");
    }

    #[test]
    fn a_saved_model_loads_with_the_same_predictions_and_checks_its_features() {
        let (x, y) = data();
        let recipe = Recipe::Logistic { max_iterations: 100, alpha: 1.0 };
        let fitted = recipe.fit(&x, &y).unwrap();
        let attribute = |name: &str, levels: Option<&[&str]>| fairpipe_abi::domain::Attribute {
            name: name.into(),
            kind: match levels {
                Some(l) => AttributeKind::Categorical { levels: l.iter().map(|s| s.to_string()).collect() },
                None => AttributeKind::Integer,
            },
            lower: 0.0,
            upper: 16.0,
            step: 1.0,
            protected: false,
        };
        let domain =
            |c_levels: &[&str]| Domain { attributes: vec![attribute("a", None), attribute("b", None), attribute("c", Some(c_levels))] };
        let trained = domain(&["x", "y", "z"]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        std::fs::write(&path, ModelFile::new(&trained, recipe.clone(), fitted.clone()).to_json().unwrap()).unwrap();
        let loaded = ModelFile::load(&path, &trained).unwrap();
        assert_eq!(loaded.recipe, recipe);
        let flat: Vec<f64> = x.iter().copied().collect();
        let (mut p, mut q) = (vec![0.0; 400], vec![0.0; 400]);
        fitted.into_model().predict_into(&flat, &mut p).unwrap();
        loaded.model.into_model().predict_into(&flat, &mut q).unwrap();
        assert_eq!(p, q);
        let mut other = trained.clone();
        other.attributes.swap(1, 2);
        let err = ModelFile::load(&path, &other).unwrap_err().to_string();
        assert!(err.contains("m.json") && err.contains("trained on features"), "{err}");
        // Data lacking a category the training data had: its codes would shift.
        let err = ModelFile::load(&path, &domain(&["x", "z"])).unwrap_err().to_string();
        assert!(err.contains("coded differently") && err.contains("levels = [\"x\", \"y\", \"z\"]"), "{err}");
        std::fs::write(&path, "{\"format\": \"something\"}").unwrap();
        assert!(ModelFile::load(&path, &trained).unwrap_err().to_string().contains("not a fairpipe model file"));
    }
}
