//! The model-input contract: how encoded rows reach a model, from the inputs the model declares.
//!
//! - A model with one `[N, k]` numeric input gets the encoded feature vector: the features in file
//!   order, categories as level codes (see `columns.X = { levels = [...] }` for stable codes).
//!   Its element type may be float32, float64, float16, int64 or int32: the encoded values are cast
//!   to it, after a check that the cast loses nothing of the features the model reads (a whole
//!   number, a code, within the type's exact range).
//! - A model with several named inputs gets each from the feature column of the same name (matched
//!   ignoring case and treating `-`, `_`, `.` and spaces alike), or from the column the pipeline
//!   maps it to (`inputs = { edu_num = "educational-num" }` on `load_model`): string inputs receive
//!   the original category text, numeric inputs the value in the input's own type (float32,
//!   float64, float16, int64, int32, checked the same way), each as `[N, 1]` (or `[N]` when the
//!   model declares one dimension). A category column with declared codes (`codes` on `load`)
//!   gives numeric inputs its codes; other category columns only when their names are numbers.
//!
//! A fixed batch dimension is honoured by running the rows in chunks of that size. The contract
//! knows nothing of ONNX Runtime: a served model (KServe V2) is fed from the same plan.

use std::collections::BTreeMap;
use std::path::Path;

use fairpipe_abi::domain::{Attribute, AttributeKind, Domain};

use crate::error::ModelError;
use fairpipe_data::suggest::hint;

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
    /// 16-bit float (IEEE half precision).
    Float16,
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
            ElementType::Float16 => f.write_str("float16"),
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
    /// Whether the column's categories have declared codes, which a numeric input receives.
    pub coded: bool,
}

/// How encoded rows are fed to a model.
#[derive(Debug, Clone, PartialEq)]
pub enum InputPlan {
    /// One `[N, width]` numeric input taking the encoded vector.
    Vector {
        /// The input's name.
        input: String,
        /// Its element type (float32, float64, float16, int64, int32).
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
    /// float16 values, as their IEEE half-precision bits.
    Float16(Vec<u16>),
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

/// What the pipeline adds to the domain for feeding a model: which column feeds which named input,
/// and which category columns have declared codes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Feeding {
    /// Model input name → data column (`inputs = { input = "column" }` on `load_model`); inputs not
    /// named here are matched to the column of their own name.
    pub inputs: BTreeMap<String, String>,
    /// Per attribute: whether its categories have declared codes (`codes` on `load`), so a numeric
    /// input receives the code.
    pub coded: Vec<bool>,
}

impl Feeding {
    /// Whether attribute `i` has declared codes.
    fn is_coded(&self, i: usize) -> bool {
        self.coded.get(i).copied().unwrap_or(false)
    }
}

/// Names compared the way the contract matches them: lower case, `-`, `.` and spaces read as `_`.
pub fn normalised(name: &str) -> String {
    name.trim().to_lowercase().chars().map(|c| if c == '-' || c == '.' || c == ' ' { '_' } else { c }).collect()
}

/// The fixed batch size a model declares (its inputs' first dimension), if any.
pub fn fixed_batch(inputs: &[DeclaredInput]) -> Option<usize> {
    inputs.iter().find_map(|i| i.shape.first().copied().filter(|d| *d > 0).map(|d| d as usize))
}

/// Work out how `domain`'s encoded rows feed `inputs` (the model at `path`) as `feeding` says, or
/// say clearly why they cannot.
pub fn plan(path: &Path, inputs: &[DeclaredInput], domain: &Domain, feeding: &Feeding) -> Result<InputPlan, ModelError> {
    let listing = || {
        let model: Vec<String> = inputs.iter().map(ToString::to_string).collect();
        let data: Vec<String> = domain.attributes.iter().map(|a| format!("{} ({})", a.name, a.kind_name())).collect();
        format!("the model's inputs are [{}]; the data's {} feature columns are [{}]", model.join(", "), data.len(), data.join(", "))
    };
    let refuse = |message: String| ModelError::Onnx { path: path.to_path_buf(), message };
    if inputs.is_empty() {
        return Err(refuse("the model declares no input".into()));
    }
    let input_names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    for (input, column) in &feeding.inputs {
        if !input_names.contains(&input.as_str()) {
            return Err(refuse(format!(
                "`inputs` maps {input:?} to column {column:?}, but the model has no input {input:?}{}; {}",
                hint(input, &input_names),
                listing()
            )));
        }
    }
    let names: Vec<String> = domain.attributes.iter().map(|a| normalised(&a.name)).collect();
    let single = inputs.len() == 1 && feeding.inputs.is_empty() && !names.contains(&normalised(&inputs[0].name));
    if single {
        let input = &inputs[0];
        if !is_numeric(&input.ty) {
            return Err(refuse(format!(
                "its one input {input} is {}, not a numeric tensor of encoded features, and no feature column is called {:?}; {}",
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
        for (i, attr) in domain.attributes.iter().enumerate() {
            if let Some(loss) = cast_loss(attr, feeding.is_coded(i), &input.ty) {
                return Err(refuse(format!(
                    "its input {input} takes {}, but {loss}; export the model with a float32 or float64 input",
                    input.ty
                )));
            }
        }
        return Ok(InputPlan::Vector { input: input.name.clone(), ty: input.ty.clone(), width });
    }
    let candidates: Vec<&str> = domain.attributes.iter().map(|a| a.name.as_str()).collect();
    let mut feeds = Vec::with_capacity(inputs.len());
    for input in inputs {
        let attribute = match feeding.inputs.get(&input.name) {
            Some(column) => domain.attributes.iter().position(|a| a.name == *column).ok_or_else(|| {
                refuse(format!(
                    "`inputs` maps model input {:?} to column {column:?}, which is not a feature column{}; {}",
                    input.name,
                    hint(column, &candidates),
                    listing()
                ))
            })?,
            None => {
                let wanted = normalised(&input.name);
                names.iter().position(|n| *n == wanted).ok_or_else(|| {
                    refuse(format!(
                        "model input {input} has no feature column of that name{}; map it to one with `inputs = {{ {:?} = \"column\" }}` on the load_model stage; {}",
                        hint(&input.name, &candidates),
                        input.name,
                        listing()
                    ))
                })?
            }
        };
        let attr = &domain.attributes[attribute];
        let coded = feeding.is_coded(attribute);
        let numeric_levels =
            matches!(&attr.kind, AttributeKind::Categorical { levels } if levels.iter().all(|l| l.trim().parse::<f64>().is_ok()));
        match (&input.ty, &attr.kind) {
            (ElementType::String, _) => {}
            (ElementType::Other(t), _) => {
                return Err(refuse(format!("model input {input} has element type {t}, which fairpipe cannot fill from column {:?}", attr.name)))
            }
            (_, AttributeKind::Categorical { .. }) if !numeric_levels && !coded => {
                return Err(refuse(format!(
                    "model input {input} takes numbers but column {:?} holds text categories; declare their codes (`codes` on the load stage), declare the column numeric in the data, or export the model with a string input",
                    attr.name
                )))
            }
            (ty, _) => {
                if let Some(loss) = cast_loss(attr, coded, ty) {
                    return Err(refuse(format!("model input {input} takes {ty}, but {loss}; export that input as float32 or float64")));
                }
            }
        }
        let flat = match input.shape.as_slice() {
            [_] => true,
            [_, w] if *w == 1 || *w < 0 => false,
            _ => return Err(refuse(format!("model input {input} should be one column ([N, 1] or [N]) to take column {:?}", attr.name))),
        };
        feeds.push(NamedFeed { input: input.name.clone(), attribute, ty: input.ty.clone(), flat, coded });
    }
    Ok(InputPlan::Named(feeds))
}

/// Whether `ty` is a numeric element type fairpipe can cast the encoded features to.
fn is_numeric(ty: &ElementType) -> bool {
    matches!(ty, ElementType::Float32 | ElementType::Float64 | ElementType::Float16 | ElementType::Int64 | ElementType::Int32)
}

/// What casting `attr`'s values (its codes when `coded`, its numeric level names for other
/// categories, else its grid) to `ty` would lose, if anything: a fraction cut off by an integer
/// type, a value beyond the type's exact range.
fn cast_loss(attr: &Attribute, coded: bool, ty: &ElementType) -> Option<String> {
    let (exact_limit, integer) = match ty {
        ElementType::Int64 => (fairpipe_data::data::MAX_EXACT_INTEGER, true),
        ElementType::Int32 => (f64::from(i32::MAX), true),
        ElementType::Float16 => (2048.0, false),
        _ => return None,
    };
    let name = &attr.name;
    let values: Vec<f64> = match &attr.kind {
        AttributeKind::Categorical { levels } if !coded => levels.iter().filter_map(|l| l.trim().parse::<f64>().ok()).collect(),
        AttributeKind::Continuous => {
            return Some(format!("column {name:?} is continuous (between {} and {}): its values would be rounded", attr.lower, attr.upper))
        }
        _ => vec![attr.lower, attr.upper, attr.lower + attr.step],
    };
    let whole = |v: &f64| v.fract() == 0.0;
    if let Some(v) = values.iter().find(|v| !whole(v)) {
        let what = if integer { "an integer" } else { "float16 (exact for whole numbers up to 2048)" };
        return Some(format!("column {name:?} takes {v}, which {what} cannot hold exactly"));
    }
    if let Some(v) = values.iter().find(|v| v.abs() > exact_limit) {
        return Some(format!("column {name:?} reaches {v}, beyond {ty}'s exact range (±{exact_limit})"));
    }
    None
}

impl InputPlan {
    /// Indices of the features the model reads.
    pub fn attributes_read(&self, width: usize) -> Vec<usize> {
        match self {
            InputPlan::Vector { .. } => (0..width).collect(),
            InputPlan::Named(feeds) => feeds.iter().map(|f| f.attribute).collect(),
        }
    }

    /// Whether every value of a row reaches the model as the real number it is (floating-point
    /// inputs, categories by their codes), so that a value between two levels is an input the
    /// model can score ([`crate::Model::takes_any_real_input`]). Integer inputs round, a category
    /// without declared codes is fed its name's number and a text input its name: those hold.
    pub fn takes_any_real_input(&self, domain: &Domain) -> bool {
        let real = |ty: &ElementType| matches!(ty, ElementType::Float32 | ElementType::Float64 | ElementType::Float16);
        match self {
            InputPlan::Vector { ty, .. } => real(ty),
            InputPlan::Named(feeds) => feeds.iter().all(|feed| {
                let category = matches!(domain.attributes.get(feed.attribute).map(|a| &a.kind), Some(AttributeKind::Categorical { .. }));
                real(&feed.ty) && (feed.coded || !category)
            }),
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
                vec![InputBatch { name: input.clone(), shape: vec![rows, *width], values: cast(ty, x.iter().copied()) }]
            }
            InputPlan::Named(feeds) => {
                let width = domain.width();
                feeds
                    .iter()
                    .map(|feed| {
                        let attr = &domain.attributes[feed.attribute];
                        let column = (0..rows).map(|r| x[r * width + feed.attribute]);
                        let number = |v: f64| match &attr.kind {
                            AttributeKind::Categorical { .. } if !feed.coded => attr.decode(v).trim().parse::<f64>().unwrap_or(f64::NAN),
                            _ => v,
                        };
                        let values = match feed.ty {
                            ElementType::String => InputValues::String(column.map(|v| attr.decode(v)).collect()),
                            ref ty => cast(ty, column.map(number)),
                        };
                        let shape = if feed.flat { vec![rows] } else { vec![rows, 1] };
                        InputBatch { name: feed.input.clone(), shape, values }
                    })
                    .collect()
            }
        }
    }
}

/// `values` cast to element type `ty` (float32 for any type that is not numeric).
fn cast(ty: &ElementType, values: impl Iterator<Item = f64>) -> InputValues {
    match ty {
        ElementType::Float64 => InputValues::Float64(values.collect()),
        ElementType::Int64 => InputValues::Int64(values.map(|v| v.round() as i64).collect()),
        ElementType::Int32 => InputValues::Int32(values.map(|v| v.round() as i32).collect()),
        ElementType::Float16 => InputValues::Float16(values.map(|v| half::f16::from_f64(v).to_bits()).collect()),
        _ => InputValues::Float32(values.map(|v| v as f32).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairpipe_abi::domain::Attribute;

    fn domain() -> Domain {
        let cat = |name: &str, levels: &[&str]| Attribute::categorical(name, levels.iter().map(|l| l.to_string()).collect(), false);
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
        let plan = plan(Path::new("m.onnx"), &inputs, &domain(), &Feeding::default()).unwrap();
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
        let err = plan(Path::new("m.onnx"), &[input("x", ElementType::Float32, &[-1, 5])], &domain(), &Feeding::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("takes 5 features but the data has 3"), "{err}");
        assert!(err.contains("x float32[N,5]") && err.contains("education-num (integer)"), "{err}");
    }

    #[test]
    fn a_named_input_without_a_column_suggests_one() {
        let inputs = vec![input("sexx", ElementType::String, &[-1, 1]), input("age", ElementType::Float32, &[-1, 1])];
        let err = plan(Path::new("m.onnx"), &inputs, &domain(), &Feeding::default()).unwrap_err().to_string();
        assert!(err.contains("sexx") && err.contains("did you mean"), "{err}");
    }

    #[test]
    fn a_numeric_input_for_text_categories_is_refused() {
        let inputs = vec![input("sex", ElementType::Float32, &[-1, 1]), input("age", ElementType::Float32, &[-1, 1])];
        let err = plan(Path::new("m.onnx"), &inputs, &domain(), &Feeding::default()).unwrap_err().to_string();
        assert!(err.contains("holds text categories"), "{err}");
    }

    #[test]
    fn the_inputs_map_feeds_renamed_inputs_and_names_a_wrong_column_or_input() {
        let inputs = vec![
            input("edu_num", ElementType::Int64, &[-1, 1]),
            input("sex", ElementType::String, &[-1, 1]),
            input("age", ElementType::Float32, &[-1, 1]),
        ];
        let feeding = |pairs: &[(&str, &str)]| Feeding {
            inputs: pairs.iter().map(|(i, c)| (i.to_string(), c.to_string())).collect(),
            coded: Vec::new(),
        };
        let err = plan(Path::new("m.onnx"), &inputs, &domain(), &Feeding::default()).unwrap_err().to_string();
        assert!(err.contains("edu_num") && err.contains("inputs = { \"edu_num\" = \"column\" }"), "{err}");
        let plan = plan(Path::new("m.onnx"), &inputs, &domain(), &feeding(&[("edu_num", "education-num")])).unwrap();
        let batch = plan.batch(&domain(), &[30.0, 1.0, 9.0], 1);
        assert_eq!(batch[0].values, InputValues::Int64(vec![9]));
        let err = super::plan(Path::new("m.onnx"), &inputs, &domain(), &feeding(&[("edu_num", "education_num")])).unwrap_err().to_string();
        assert!(err.contains("not a feature column") && err.contains("did you mean `education-num`"), "{err}");
        let err = super::plan(Path::new("m.onnx"), &inputs, &domain(), &feeding(&[("edu_nun", "education-num")])).unwrap_err().to_string();
        assert!(err.contains("no input \"edu_nun\"") && err.contains("did you mean `edu_num`"), "{err}");
    }

    #[test]
    fn a_coded_category_gives_a_numeric_input_its_code() {
        let mut d = domain();
        d.attributes[1].lower = 1.0;
        d.attributes[1].upper = 2.0;
        let inputs = vec![input("sex", ElementType::Int32, &[-1]), input("age", ElementType::Float64, &[-1])];
        let coded = Feeding { coded: vec![false, true, false], ..Feeding::default() };
        let plan = plan(Path::new("m.onnx"), &inputs, &d, &coded).unwrap();
        assert_eq!(plan.batch(&d, &[30.0, 2.0, 9.0], 1)[0].values, InputValues::Int32(vec![2]));
        let err = super::plan(Path::new("m.onnx"), &inputs, &d, &Feeding::default()).unwrap_err().to_string();
        assert!(err.contains("holds text categories") && err.contains("`codes`"), "{err}");
    }

    #[test]
    fn the_encoded_vector_is_cast_to_any_numeric_type_when_nothing_is_lost() {
        let vector = |ty: ElementType| vec![input("x", ty, &[-1, 3])];
        for (ty, expected) in [
            (ElementType::Int64, InputValues::Int64(vec![30, 1, 9])),
            (ElementType::Int32, InputValues::Int32(vec![30, 1, 9])),
            (ElementType::Float16, InputValues::Float16(vec![0x4f80, 0x3c00, 0x4880])),
            (ElementType::Float64, InputValues::Float64(vec![30.0, 1.0, 9.0])),
        ] {
            let plan = plan(Path::new("m.onnx"), &vector(ty.clone()), &domain(), &Feeding::default()).unwrap();
            assert_eq!(plan.batch(&domain(), &[30.0, 1.0, 9.0], 1)[0].values, expected, "{ty}");
        }
        // A continuous column cannot be cast to an integer or float16 without rounding.
        let mut d = domain();
        d.attributes[0].kind = AttributeKind::Continuous;
        let err = plan(Path::new("m.onnx"), &vector(ElementType::Int64), &d, &Feeding::default()).unwrap_err().to_string();
        assert!(err.contains("takes int64") && err.contains("\"age\" is continuous"), "{err}");
        // float16 holds whole numbers up to 2048 exactly, int32 up to 2^31 - 1.
        let mut d = domain();
        d.attributes[2].upper = 5000.0;
        let err = plan(Path::new("m.onnx"), &vector(ElementType::Float16), &d, &Feeding::default()).unwrap_err().to_string();
        assert!(err.contains("\"education-num\" reaches 5000") && err.contains("float16"), "{err}");
        d.attributes[2].upper = 3e9;
        assert!(plan(Path::new("m.onnx"), &vector(ElementType::Int32), &d, &Feeding::default()).is_err());
        assert!(plan(Path::new("m.onnx"), &vector(ElementType::Int64), &d, &Feeding::default()).is_ok());
    }
}
