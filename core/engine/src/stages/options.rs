//! Config pieces several stage kinds share: which rows to use, the `protected` override, the
//! `gamma` threshold, and the plugin a stage runs (by name or library path, with its parameters).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::Split;
use crate::error::Result;
use crate::plugin::{self, Plugin};
use crate::stage::config::Checks;
use crate::stage::keys::KeyType;
use crate::stage::kind::KeyDoc;
use crate::stage::ScoreNeed;

/// The rows of a dataset a stage looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum Rows {
    /// The train split.
    Train,
    /// The test split.
    Test,
    /// Every row.
    All,
}

impl Rows {
    /// The split, `None` for every row.
    pub fn split(self) -> Option<Split> {
        match self {
            Rows::Train => Some(Split::Train),
            Rows::Test => Some(Split::Test),
            Rows::All => None,
        }
    }
}

/// The `protected` override the auditing stages share, described once (their configs'
/// `#[key(shared = PROTECTED)]`).
pub const PROTECTED: KeyDoc = KeyDoc::new(
    "protected",
    "string list",
    "the load stage's",
    "audit these protected attributes instead of the data's (one model, several audits)",
);

/// The `gamma` threshold several stages share, described once (their configs'
/// `#[key(shared = GAMMA)]`).
pub const GAMMA: KeyDoc = KeyDoc::new(
    "gamma",
    "float",
    "none (compare labels)",
    "count a pair as discriminatory when |f(x) - f(x')| > gamma (Aequitas Def. 4.1) instead of when labels differ",
);

/// The `cluster_by` columns several stages share, described once (their configs'
/// `#[key(shared = CLUSTER_BY)]`).
pub const CLUSTER_BY: KeyDoc = KeyDoc::new(
    "cluster_by",
    "string list",
    "[] (an LLM's pairs are clustered by the names shown and the document anyway)",
    "columns the observations share beyond the names and the document (a decision template, say): intervals are cluster-robust over them",
);

/// The `precision` several stages share, described once.
pub const PRECISION: KeyDoc = KeyDoc::new(
    "precision",
    "float",
    "none (ask everything)",
    "stop asking once the 95% interval's half-width is this or less (an anytime-valid confidence sequence, so the interval stays valid); the stage's size becomes a cap",
);

/// Check a `precision`: a half-width above 0 and below 0.5.
pub fn check_precision(checks: &mut Checks<'_, '_>, precision: Option<f64>) {
    if let Some(precision) = precision.filter(|p| !(*p > 0.0 && *p < 0.5)) {
        checks.problem("precision", format!("`precision` is the interval's half-width: a number above 0 and below 0.5, not {precision}"));
    }
}

/// Check the `protected` override: when given, it names at least one column.
pub fn check_protected(checks: &mut Checks<'_, '_>, protected: &Option<Vec<String>>) {
    if protected.as_ref().is_some_and(Vec::is_empty) {
        checks.problem("protected", "`protected` must name at least one column");
    }
}

/// Check a `gamma` threshold: in [0, 1].
pub fn check_gamma(checks: &mut Checks<'_, '_>, gamma: Option<f64>) {
    if let Some(g) = gamma {
        checks.within("gamma", g, 0.0, 1.0);
    }
}

/// `gamma`, when given, reads the model's probabilities ([`crate::stage::Stage::score_needs`]).
pub fn gamma_need(gamma: Option<f64>) -> Option<ScoreNeed> {
    gamma.map(|_| ScoreNeed {
        key: "gamma",
        what: "`gamma` (a threshold on the difference of two probabilities)".into(),
        instead: "leave `gamma` out: a pair then counts when its labels differ".into(),
    })
}

/// The plugin a stage names: `plugin = "NAME"` or `path = "LIBRARY"` (or a default), and the
/// plugin's own `params` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PluginChoice {
    /// Plugin name.
    pub plugin: Option<String>,
    /// Plugin library file, relative to the pipeline file.
    pub path: Option<PathBuf>,
    /// The plugin's parameters (a TOML table), validated by the plugin.
    pub params: Option<serde_json::Value>,
}

/// "an auditor", "a generator".
fn article(word: &str) -> String {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {word}")
    } else {
        format!("a {word}")
    }
}

impl PluginChoice {
    /// The parameters as sent to the plugin (`{}` when none).
    pub fn params(&self) -> serde_json::Value {
        self.params.clone().unwrap_or_else(|| serde_json::json!({}))
    }

    /// Load the plugin (`default` when neither name nor path is given; a relative `path`
    /// resolves in `dir`; names are looked up among the built-ins, then in `plugin_path` and the
    /// rest of the search path).
    pub fn load(&self, dir: &Path, plugin_path: &[PathBuf], default: Option<&str>) -> Result<&'static Plugin> {
        Ok(match (&self.plugin, &self.path, default) {
            (_, Some(path), _) => plugin::load_path(&dir.join(path))?,
            (Some(name), None, _) => plugin::load_by_name(name, plugin_path)?,
            (None, None, Some(default)) => plugin::load_by_name(default, plugin_path)?,
            (None, None, None) => {
                return Err(crate::error::StageError::cannot("plugin", "missing `plugin` (a plugin name) or `path` (a plugin library)"))
            }
        })
    }

    /// What `plugin` reads of the model, when it needs its probabilities: keyed at `path` or
    /// `plugin` (as written), offering the built-in methods of its kind that run on labels only.
    pub fn score_need(&self, plugin: &Plugin) -> Option<ScoreNeed> {
        plugin.needs_scores().then(|| ScoreNeed {
            key: if self.path.is_some() { "path" } else { "plugin" },
            what: format!("plugin `{}`", plugin.name),
            instead: format!("methods that run on labels only: {}", plugin::label_only_methods(plugin.kind()).join(", ")),
        })
    }

    /// Check that the plugin loads, is of `kind` (else `wrong_kind` advises) and accepts its parameters.
    pub fn validate(&self, checks: &mut Checks<'_, '_>, default: Option<&str>, kind: u32, wrong_kind: &str) {
        let (dir, plugin_path) = (checks.dir().to_path_buf(), checks.plugin_path().to_vec());
        let key = if self.path.is_some() { "path" } else { "plugin" };
        if self.plugin.is_none() && self.path.is_none() && default.is_none() {
            let span = checks.span("plugin");
            checks.at(&span, "missing `plugin` (a plugin name) or `path` (a plugin library)");
            return;
        }
        let plugin = match self.load(&dir, &plugin_path, default) {
            Ok(p) => p,
            Err(e) => {
                checks.problem(key, e);
                return;
            }
        };
        if plugin.kind() != kind {
            checks.problem("plugin", format!("plugin `{}` is {}; {wrong_kind}", plugin.name, article(plugin.kind_name())));
        }
        if let Err(e) = plugin.validate(&self.params()) {
            checks.problem("params", e);
        }
    }
}

/// Where the numbers of a flip-measuring kind's per-attribute figures are (`discriminatory_alone`,
/// `rate_alone`), for a gate condition ending at one (`StageFigures::numbers_inside`).
pub(crate) fn alone_numbers_inside(figure: &str) -> Option<(&'static str, &'static str)> {
    matches!(figure, "discriminatory_alone" | "rate_alone")
        .then_some(("one number per protected attribute changed alone, named by it (`rate_alone.sex`, …)", "sex"))
}
