//! The model-input contract: how encoded rows reach a model, from the inputs the model declares.
//!
//! - A model with one `[N, k]` numeric input gets the encoded feature vector: the features in file
//!   order, categories as level codes (see `columns.X = { levels = [...] }` for stable codes).
//! - A model with several named inputs gets each from the feature column of the same name (matched
//!   ignoring case and treating `-`, `_`, `.` and spaces alike): string inputs receive the original
//!   category text, numeric inputs the value in the input's own type (float32, float64, int64,
//!   int32), each as `[N, 1]` (or `[N]` when the model declares one dimension).
//!
//! A fixed batch dimension is honoured by running the rows in chunks of that size. The contract
//! knows nothing of ONNX Runtime: a served model (KServe V2) is fed from the same plan.

use std::path::Path;

use fairpipe_abi::domain::{AttributeKind, Domain};

use crate::error::ModelError;
use crate::suggest::hint;

/// Element type of a model input or output tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElementType {
    /// 32-bit float.
    Float32,
    /// 64-bit float.
    Float64,
    /// 64-bit integer.
    Int64,
    /// 32-bit integer.
    Int32,
    /// Text.
    String,
    /// Anything else, by name.
    Other(String),
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElementType::Float32 => f.write_str("float32"),
            ElementType::Float64 => f.write_str("float64"),
            ElementType::Int64 => f.write_str("int64"),
            ElementType::Int32 => f.write_str("int32"),
            ElementType::String => f.write_str("string"),
            ElementType::Other(name) => f.write_str(name),
        }
    }
}

/// One input as the model declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredInput {
    /// Input name.
    pub name: String,
    /// Element type.
    pub ty: ElementType,
    /// Declared shape; `-1` for a dynamic dimension.
    pub shape: Vec<i64>,
}

impl std::fmt::Display for DeclaredInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(|d| if *d < 0 { "N".to_string() } else { d.to_string() }).collect();
        write!(f, "{} {}[{}]", self.name, self.ty, dims.join(","))
    }
}

/// How the rows of one feature column reach one named input.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedFeed {
    /// The model's input name.
    pub input: String,
    /// Index of the feature (domain attribute) feeding it.
    pub attribute: usize,
    /// The input's element type.
    pub ty: ElementType,
    /// Whether the input is `[N]` rather than `[N, 1]`.
    pub flat: bool,
}

/// How encoded rows are fed to a model.
#[derive(Debug, Clone, PartialEq)]
pub enum InputPlan {
    /// One `[N, width]` numeric input taking the encoded vector.
    Vector {
        /// The input's name.
        input: String,
        /// Float32 or float64.
        ty: ElementType,
        /// Number of features.
        width: usize,
    },
    /// One input per feature column, by name.
    Named(Vec<NamedFeed>),
}

/// The values of one input for a batch of rows.
#[derive(Debug, Clone, PartialEq)]
pub enum InputValues {
    /// float32 values.
    Float32(Vec<f32>),
    /// float64 values.
    Float64(Vec<f64>),
    /// int64 values.
    Int64(Vec<i64>),
    /// int32 values.
    Int32(Vec<i32>),
    /// Text values.
    String(Vec<String>),
}

/// One input's name, shape and values for a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct InputBatch {
    /// The input's name.
    pub name: String,
    /// Shape: `[rows, width]`, `[rows, 1]` or `[rows]`.
    pub shape: Vec<usize>,
    /// Values, row-major.
    pub values: InputValues,
}

/// Names compared the way the contract matches them: lower case, `-`, `.` and spaces read as `_`.
pub fn normalised(name: &str) -> String {
    name.trim().to_lowercase().chars().map(|c| if c == '-' || c == '.' || c == ' ' { '_' } else { c }).collect()
}

/// The fixed batch size a model declares (its inputs' first dimension), if any.
pub fn fixed_batch(inputs: &[DeclaredInput]) -> Option<usize> {
    inputs.iter().find_map(|i| i.shape.first().copied().filter(|d| *d > 0).map(|d| d as usize))
}

/// Work out how `domain`'s encoded rows feed `inputs` (the model at `path`), or say clearly why
/// they cannot.
pub fn plan(path: &Path, inputs: &[DeclaredInput], domain: &Domain) -> Result<InputPlan, ModelError> {
    let listing = || {
        let model: Vec<String> = inputs.iter().map(ToString::to_string).collect();
        let data: Vec<String> = domain.attributes.iter().map(|a| format!("{} ({})", a.name, a.kind_name())).collect();
        format!("the model's inputs are [{}]; the data's {} feature columns are [{}]", model.join(", "), data.len(), data.join(", "))
    };
    let refuse = |message: String| ModelError::Onnx { path: path.to_path_buf(), message };
    if inputs.is_empty() {
        return Err(refuse("the model declares no input".into()));
    }
    let names: Vec<String> = domain.attributes.iter().map(|a| normalised(&a.name)).collect();
    let single = inputs.len() == 1 && !names.contains(&normalised(&inputs[0].name));
    if single {
        let input = &inputs[0];
        if !matches!(input.ty, ElementType::Float32 | ElementType::Float64) {
            return Err(refuse(format!(
                "its one input {input} is {}, not a float tensor of encoded features, and no feature column is called {:?}; {}",
                input.ty,
                input.name,
                listing()
            )));
        }
        let width = domain.width();
        match input.shape.as_slice() {
            [_, k] if *k < 0 || *k as usize == width => {}
            [_, k] => {
                return Err(refuse(format!(
                    "its input {input} takes {k} features but the data has {width}; {}. Keep or drop columns so the two agree (`features = [...]`, `drop = [...]`)",
                    listing()
                )))
            }
            _ => return Err(refuse(format!("its input {input} is not a [N, k] matrix; {}", listing()))),
        }
        return Ok(InputPlan::Vector { input: input.name.clone(), ty: input.ty.clone(), width });
    }
    let mut feeds = Vec::with_capacity(inputs.len());
    for input in inputs {
        let wanted = normalised(&input.name);
        let Some(attribute) = names.iter().position(|n| *n == wanted) else {
            let candidates: Vec<&str> = domain.attributes.iter().map(|a| a.name.as_str()).collect();
            return Err(refuse(format!(
                "model input {input} has no feature column of that name{}; {}",
                hint(&input.name, &candidates),
                listing()
            )));
        };
        let attr = &domain.attributes[attribute];
        let numeric_levels =
            matches!(&attr.kind, AttributeKind::Categorical { levels } if levels.iter().all(|l| l.trim().parse::<f64>().is_ok()));
        match (&input.ty, &attr.kind) {
            (ElementType::String, _) => {}
            (ElementType::Float32 | ElementType::Float64 | ElementType::Int64 | ElementType::Int32, AttributeKind::Categorical { .. })
                if !numeric_levels =>
            {
                return Err(refuse(format!(
                    "model input {input} takes numbers but column {:?} holds text categories; declare the column numeric in the data or export the model with a string input",
                    attr.name
                )))
            }
            (ElementType::Float32 | ElementType::Float64 | ElementType::Int64 | ElementType::Int32, _) => {}
            (ElementType::Other(t), _) => {
                return Err(refuse(format!("model input {input} has element type {t}, which fairpipe cannot fill from column {:?}", attr.name)))
            }
        }
        let flat = match input.shape.as_slice() {
            [_] => true,
            [_, w] if *w == 1 || *w < 0 => false,
            _ => return Err(refuse(format!("model input {input} should be one column ([N, 1] or [N]) to take column {:?}", attr.name))),
        };
        feeds.push(NamedFeed { input: input.name.clone(), attribute, ty: input.ty.clone(), flat });
    }
    Ok(InputPlan::Named(feeds))
}

impl InputPlan {
    /// Indices of the features the model reads.
    pub fn attributes_read(&self, width: usize) -> Vec<usize> {
        match self {
            InputPlan::Vector { .. } => (0..width).collect(),
            InputPlan::Named(feeds) => feeds.iter().map(|f| f.attribute).collect(),
        }
    }

    /// "one float32 input [N,12]" or "13 named inputs".
    pub fn describe(&self) -> String {
        match self {
            InputPlan::Vector { input, ty, width } => format!("one {ty} input {input}[N,{width}] (encoded features)"),
            InputPlan::Named(feeds) => format!("{} named inputs (raw columns)", feeds.len()),
        }
    }

    /// As [`InputPlan::batch`], taking the rows: a model whose one input is the encoded vector in
    /// float64 gets `x` itself, not a copy; otherwise the inputs are built from the rows, which come
    /// back with them.
    pub fn batch_owned(&self, domain: &Domain, x: Vec<f64>, rows: usize) -> (Vec<InputBatch>, Option<Vec<f64>>) {
        match self {
            InputPlan::Vector { input, ty: ElementType::Float64, width } => {
                (vec![InputBatch { name: input.clone(), shape: vec![rows, *width], values: InputValues::Float64(x) }], None)
            }
            _ => (self.batch(domain, &x, rows), Some(x)),
        }
    }

    /// The model's inputs for `rows` encoded rows `x` (row-major), decoded through `domain`.
    pub fn batch(&self, domain: &Domain, x: &[f64], rows: usize) -> Vec<InputBatch> {
        match self {
            InputPlan::Vector { input, ty, width } => {
                let values = match ty {
                    ElementType::Float64 => InputValues::Float64(x.to_vec()),
                    _ => InputValues::Float32(x.iter().map(|&v| v as f32).collect()),
                };
                vec![InputBatch { name: input.clone(), shape: vec![rows, *width], values }]
            }
            InputPlan::Named(feeds) => {
                let width = domain.width();
                feeds
                    .iter()
                    .map(|feed| {
                        let attr = &domain.attributes[feed.attribute];
                        let column = (0..rows).map(|r| x[r * width + feed.attribute]);
                        let number = |v: f64| match &attr.kind {
                            AttributeKind::Categorical { .. } => attr.decode(v).trim().parse::<f64>().unwrap_or(f64::NAN),
                            _ => v,
                        };
                        let values = match feed.ty {
                            ElementType::String => InputValues::String(column.map(|v| attr.decode(v)).collect()),
                            ElementType::Float64 => InputValues::Float64(column.map(number).collect()),
                            ElementType::Int64 => InputValues::Int64(column.map(|v| number(v).round() as i64).collect()),
                            ElementType::Int32 => InputValues::Int32(column.map(|v| number(v).round() as i32).collect()),
                            _ => InputValues::Float32(column.map(|v| number(v) as f32).collect()),
                        };
                        let shape = if feed.flat { vec![rows] } else { vec![rows, 1] };
                        InputBatch { name: feed.input.clone(), shape, values }
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairpipe_abi::domain::Attribute;

    fn domain() -> Domain {
        let cat = |name: &str, levels: &[&str]| Attribute {
            name: name.into(),
            kind: AttributeKind::Categorical { levels: levels.iter().map(|l| l.to_string()).collect() },
            lower: 0.0,
            upper: (levels.len() - 1) as f64,
            step: 1.0,
            protected: false,
        };
        let int = |name: &str| Attribute {
            name: name.into(),
            kind: AttributeKind::Integer,
            lower: 0.0,
            upper: 99.0,
            step: 1.0,
            protected: false,
        };
        Domain { attributes: vec![int("age"), cat("sex", &["Female", "Male"]), int("education-num")] }
    }

    fn input(name: &str, ty: ElementType, shape: &[i64]) -> DeclaredInput {
        DeclaredInput { name: name.into(), ty, shape: shape.to_vec() }
    }

    #[test]
    fn named_inputs_take_their_columns_decoded() {
        let inputs = vec![
            input("sex", ElementType::String, &[-1, 1]),
            input("Education_Num", ElementType::Int64, &[-1, 1]),
            input("age", ElementType::Float64, &[-1]),
        ];
        let plan = plan(Path::new("m.onnx"), &inputs, &domain()).unwrap();
        let x = [30.0, 1.0, 9.0, 41.0, 0.0, 13.0];
        let batch = plan.batch(&domain(), &x, 2);
        assert_eq!(batch[0].values, InputValues::String(vec!["Male".into(), "Female".into()]));
        assert_eq!(batch[0].shape, vec![2, 1]);
        assert_eq!(batch[1].values, InputValues::Int64(vec![9, 13]));
        assert_eq!(batch[2].values, InputValues::Float64(vec![30.0, 41.0]));
        assert_eq!(batch[2].shape, vec![2]);
    }

    #[test]
    fn a_vector_input_of_the_wrong_width_lists_both_sides() {
        let err = plan(Path::new("m.onnx"), &[input("x", ElementType::Float32, &[-1, 5])], &domain()).unwrap_err().to_string();
        assert!(err.contains("takes 5 features but the data has 3"), "{err}");
        assert!(err.contains("x float32[N,5]") && err.contains("education-num (integer)"), "{err}");
    }

    #[test]
    fn a_named_input_without_a_column_suggests_one() {
        let inputs = vec![input("sexx", ElementType::String, &[-1, 1]), input("age", ElementType::Float32, &[-1, 1])];
        let err = plan(Path::new("m.onnx"), &inputs, &domain()).unwrap_err().to_string();
        assert!(err.contains("sexx") && err.contains("did you mean"), "{err}");
    }

    #[test]
    fn a_numeric_input_for_text_categories_is_refused() {
        let inputs = vec![input("sex", ElementType::Float32, &[-1, 1]), input("age", ElementType::Float32, &[-1, 1])];
        let err = plan(Path::new("m.onnx"), &inputs, &domain()).unwrap_err().to_string();
        assert!(err.contains("holds text categories"), "{err}");
    }
}
