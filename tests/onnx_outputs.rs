//! The ONNX output shapes besides the reference models' `[N,2]`: a single sigmoid `[N,1]`, and a
//! scikit-learn style export (skl2onnx, `zipmap=False`: an int64 label and `[N,2]` probabilities).
//! Fixtures: `tests/fixtures/onnx/make_fixtures.py` (z = 0.5·x0 − x1 + 0.25·x2 + 0.1).

use crate::common;

use fairpipe_core::models::Model;
use fairpipe_core::models::OnnxModel;

fn fixture(name: &str) -> std::path::PathBuf {
    common::root().join("tests/fixtures/onnx").join(name)
}

fn rows() -> Vec<f64> {
    (0..64).flat_map(|i| [f64::from(i % 7) - 3.0, f64::from(i % 5) - 2.0, f64::from(i % 3)]).collect()
}

fn expected(r: &[f64]) -> f64 {
    let z = 0.5 * r[0] - r[1] + 0.25 * r[2] + 0.1;
    1.0 / (1.0 + (-z).exp())
}

fn check(model: &OnnxModel) {
    let x = rows();
    let mut p = vec![0.0; 64];
    model.predict_into(&x, &mut p).unwrap();
    for (r, q) in x.chunks(3).zip(&p) {
        assert!((q - expected(r)).abs() < 1e-6, "{q} vs {} for {r:?}", expected(r));
    }
}

#[test]
fn a_single_sigmoid_output_is_p_of_class_1() {
    let mut model = OnnxModel::load(&fixture("sigmoid.onnx"), 3, None).unwrap();
    assert_eq!(model.output_name(), "p");
    check(&model);
    // A dense graph: the native executor reproduces tract and is then used.
    let check_native = model.verify_native(&rows()).unwrap().expect("a dense graph");
    assert!(check_native.used, "{check_native:?}");
    assert_eq!(model.executor(), "native dense 3-1");
    check(&model);
}

#[test]
fn a_sklearn_export_uses_its_probabilities_not_its_label() {
    let model = OnnxModel::load(&fixture("sklearn.onnx"), 3, None).unwrap();
    assert_eq!(model.output_name(), "probabilities");
    check(&model);
    let chosen = OnnxModel::load(&fixture("sklearn.onnx"), 3, Some("probabilities")).unwrap();
    check(&chosen);
    let err = OnnxModel::load(&fixture("sklearn.onnx"), 3, Some("label")).unwrap_err().to_string();
    assert!(err.contains("sklearn.onnx") && err.contains("output \"label\" is not a float tensor"), "{err}");
    let err = OnnxModel::load(&fixture("sklearn.onnx"), 3, Some("proba")).unwrap_err().to_string();
    assert!(err.contains("no output named \"proba\""), "{err}");
}

#[test]
fn a_model_with_another_input_width_is_refused_clearly() {
    let err = OnnxModel::load(&fixture("sigmoid.onnx"), 5, None).unwrap_err().to_string();
    assert!(err.contains("sigmoid.onnx") && err.contains("does the model take 5 inputs?"), "{err}");
}
