//! Sharded runs and their merge. `fairpipe run … --shard K/N` runs the units whose index is K
//! modulo N (K counts from 0, as a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` does) into a
//! **part**: one subfolder per unit and a `manifest.json` naming the pipeline (hash), seed,
//! fairpipe version, every unit of the run and the ones in this part. [`merge`] checks that parts
//! belong together and cover every unit exactly once, then writes the result the unsharded run
//! writes, with the same function ([`super::finish`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use serde_json::Map;

use super::summary::SweepSummary;
use super::{finish, PipelineSource, Sweep, SweepInfo, SweepReport};
use crate::error::{Error, MergeError, OutputError, Result};
use crate::output::write_json;
use crate::pieces::Piece;
use crate::run::PieceMode;
use crate::stage::summary::Summary;

/// The environment variable holding the shard index when `--shard env` is given (Kubernetes sets
/// it in an Indexed Job).
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The environment variable holding the shard count when `--shard env` is given (set it to the
/// Job's `completions`).
pub const COUNT_ENV: &str = "FAIRPIPE_SHARD_COUNT";
/// The file naming a part's contents.
pub const MANIFEST: &str = "manifest.json";
/// The manifest's format name.
const FORMAT: &str = "fairpipe-part";

/// Shard `index` of `count` (index from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSpec {
    /// Which shard, 0 ≤ index < count.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

/// Why a `--shard` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardSpecError {
    /// Not `K/N` or `env`.
    #[error("`{0}`: expected K/N (shard K of N, K from 0), e.g. 0/4, or `env`")]
    Form(String),
    /// `env`, and a variable it reads is not set.
    #[error("--shard env: the environment variable {0} is not set")]
    Unset(&'static str),
    /// `env`, and the variables' values do not make a shard.
    #[error("--shard env ({INDEX_ENV}, {COUNT_ENV}): {0}")]
    FromEnv(ShardNumbers),
    /// `K/N` whose numbers do not make a shard.
    #[error("`{text}`: {problem}")]
    Numbers {
        /// The value as written.
        text: String,
        /// What is wrong with its numbers.
        problem: ShardNumbers,
    },
}

/// What is wrong with a shard's index and count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardNumbers {
    /// The index is not a whole number.
    #[error("the shard index `{0}` is not a whole number")]
    Index(String),
    /// The count is not a whole number.
    #[error("the shard count `{0}` is not a whole number")]
    Count(String),
    /// The count is 0.
    #[error("the shard count must be at least 1")]
    NoShards,
    /// The index is not below the count.
    #[error("shard index {index} is not below the count {count} (indices run from 0 to {})", count - 1)]
    Beyond {
        /// The index.
        index: usize,
        /// The count.
        count: usize,
    },
}

impl std::str::FromStr for ShardSpec {
    type Err = ShardSpecError;
    /// `K/N`, or `env`: K from `JOB_COMPLETION_INDEX`, N from `FAIRPIPE_SHARD_COUNT`.
    fn from_str(s: &str) -> std::result::Result<Self, ShardSpecError> {
        if s == "env" {
            let read = |name: &'static str| std::env::var(name).map_err(|_| ShardSpecError::Unset(name));
            return ShardSpec::new(&read(INDEX_ENV)?, &read(COUNT_ENV)?).map_err(ShardSpecError::FromEnv);
        }
        let (k, n) = s.split_once('/').ok_or_else(|| ShardSpecError::Form(s.to_string()))?;
        ShardSpec::new(k, n).map_err(|problem| ShardSpecError::Numbers { text: s.to_string(), problem })
    }
}

impl ShardSpec {
    /// Shard `k` of `n` from their texts.
    fn new(k: &str, n: &str) -> std::result::Result<ShardSpec, ShardNumbers> {
        let index: usize = k.trim().parse().map_err(|_| ShardNumbers::Index(k.to_string()))?;
        let count: usize = n.trim().parse().map_err(|_| ShardNumbers::Count(n.to_string()))?;
        if count == 0 {
            return Err(ShardNumbers::NoShards);
        }
        if index >= count {
            return Err(ShardNumbers::Beyond { index, count });
        }
        Ok(ShardSpec { index, count })
    }

    /// Whether unit number `unit` belongs to this shard.
    pub fn holds(&self, unit: usize) -> bool {
        unit % self.count == self.index
    }
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A part's `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// `fairpipe-part`.
    pub format: String,
    /// The manifest's format version (1).
    pub format_version: u32,
    /// Which shard wrote it.
    pub shard: ShardSpec,
    /// The ids of the units in this part.
    pub units_here: Vec<String>,
    /// The run's identity and every unit.
    pub sweep: SweepInfo,
}

/// What a shard run produced.
#[derive(Debug, Clone)]
pub struct PartReport {
    /// The manifest written.
    pub manifest: Manifest,
    /// Whether every gate of its units passed (`None`: no gate or no unit).
    pub gate_passed: Option<bool>,
}

impl Sweep {
    /// Run the units of shard `shard` into part folder `out` (all or nothing, under its lock):
    /// one subfolder per unit and `manifest.json`. A shard with no unit (more shards than units)
    /// writes only the manifest.
    pub fn run_shard(&self, out: &Path, shard: ShardSpec, jobs: usize, show: bool) -> Result<PartReport> {
        crate::staging::check_target(out)?;
        let _lock = crate::staging::Lock::acquire(out)?;
        let staging = crate::staging::Staging::begin(out)?;
        let mine: Vec<usize> = (0..self.info.units.len()).filter(|&i| shard.holds(i)).collect();
        let (pieces, whole): (Vec<usize>, Vec<usize>) = mine.iter().partition(|&&i| self.info.units[i].piece.is_some());
        let summaries = self.run_units(&whole, staging.dir(), jobs, show)?;
        if !pieces.is_empty() {
            self.run_pieces(&pieces, staging.dir(), show)?;
        }
        let gates: Vec<bool> = summaries.values().filter_map(super::gate_passed).collect();
        let manifest = Manifest {
            format: FORMAT.into(),
            format_version: 1,
            shard,
            units_here: mine.iter().map(|&i| self.info.units[i].id.clone()).collect(),
            sweep: self.info.clone(),
        };
        write_json(&staging.dir().join(MANIFEST), &serde_json::to_value(&manifest).map_err(|e| Error::Internal(e.to_string()))?)?;
        staging.commit()?;
        Ok(PartReport { manifest, gate_passed: (!gates.is_empty()).then(|| gates.iter().all(|&g| g)) })
    }
}

impl Sweep {
    /// Compute the piece units `indices` of the plain pipeline into `dir`: the stages they read
    /// run once, then each piece; each is written to its file ([`super::UnitInfo::path_in_part`])
    /// with the figures of the stages it read, which the merge checks against its own run.
    fn run_pieces(&self, indices: &[usize], dir: &Path, show: bool) -> Result<()> {
        let mut held: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for &i in indices {
            if let Some(p) = &self.info.units[i].piece {
                held.entry(p.stage.clone()).or_default().push(p.piece);
            }
        }
        let started = std::time::Instant::now();
        let (run, computed) = self.pipeline(0)?.execute_with(false, &mut PieceMode::Compute(held))?;
        let upstream = fingerprint(&run.summary.to_json()["stages"]);
        for (stage, k, piece) in computed {
            let unit = self
                .info
                .units
                .iter()
                .find(|u| u.piece.as_ref().is_some_and(|p| p.stage == stage && p.piece == k))
                .ok_or_else(|| MergeError::UnknownPiece { stage: stage.to_string(), piece: k })?;
            let path = dir.join(unit.path_in_part());
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| OutputError { path: parent.to_path_buf(), message: e.to_string() })?;
            }
            let file = PieceFile { unit: unit.id.clone(), upstream: upstream.clone(), result: piece };
            write_json(&path, &serde_json::to_value(&file).map_err(|e| Error::Internal(e.to_string()))?)?;
        }
        if show {
            eprintln!("{} pieces ({:.1} s)", indices.len(), started.elapsed().as_secs_f64());
        }
        Ok(())
    }
}

/// A piece's file in a part.
#[derive(Debug, Serialize, Deserialize)]
struct PieceFile {
    /// The unit id.
    unit: String,
    /// The figures (timings aside) of the stages the piece read, as the shard computed them.
    upstream: Value,
    /// What the piece computed.
    result: Piece,
}

/// Stage figures without what differs between any two runs of the same pipeline: timings and a
/// remote model's traffic.
fn fingerprint(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !(k.contains("elapsed") || k.contains("time") || k.contains("per_second") || k.as_str() == "remote"))
                .map(|(k, v)| (k.clone(), fingerprint(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(fingerprint).collect()),
        other => other.clone(),
    }
}

/// Read the manifest of part folder `part`.
pub fn read_manifest(part: &Path) -> std::result::Result<Manifest, MergeError> {
    let path = part.join(MANIFEST);
    let err = |message: String| MergeError::Manifest { path: path.clone(), message };
    if !part.is_dir() {
        return Err(MergeError::Manifest {
            path: part.to_path_buf(),
            message: "is not a folder; give the out folders of `fairpipe run --shard`".into(),
        });
    }
    let text =
        std::fs::read_to_string(&path).map_err(|e| err(format!("cannot read ({e}); not a part written by `fairpipe run --shard`")))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| err(format!("not a part manifest: {e}")))?;
    if m.format != FORMAT || m.format_version != 1 {
        return Err(err(format!("format {} version {}; this fairpipe reads {FORMAT} version 1", m.format, m.format_version)));
    }
    Ok(m)
}

/// Check that `parts` come from one run and cover each unit exactly once; returns their manifests
/// and, per unit id, the part holding it.
pub fn check_parts(parts: &[PathBuf]) -> std::result::Result<(Vec<Manifest>, BTreeMap<String, usize>), MergeError> {
    if parts.is_empty() {
        return Err(MergeError::Cover { total: 0, problems: "  no parts given".into() });
    }
    let manifests: Vec<Manifest> = parts.iter().map(|p| read_manifest(p)).collect::<std::result::Result<_, _>>()?;
    let first = &manifests[0];
    for (m, part) in manifests.iter().zip(parts).skip(1) {
        let checks: [(&'static str, String, String); 5] = [
            ("the pipeline (hash of its file and --gate conditions)", m.sweep.pipeline_hash.clone(), first.sweep.pipeline_hash.clone()),
            ("the seed", m.sweep.seed.to_string(), first.sweep.seed.to_string()),
            ("the fairpipe version", m.sweep.fairpipe_version.clone(), first.sweep.fairpipe_version.clone()),
            ("the shard count", m.shard.count.to_string(), first.shard.count.to_string()),
            ("the list of units", m.sweep.units.len().to_string() + " units", first.sweep.units.len().to_string() + " units"),
        ];
        for (what, theirs, ours) in checks {
            if theirs != ours {
                return Err(MergeError::Mismatch { part: part.clone(), first: parts[0].clone(), what, theirs, ours });
            }
        }
        if m.sweep != first.sweep {
            return Err(MergeError::Mismatch {
                part: part.clone(),
                first: parts[0].clone(),
                what: "the run's description (units, matrix, best figure)",
                theirs: "another".into(),
                ours: "this one".into(),
            });
        }
    }
    let mut holder: BTreeMap<String, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for (p, m) in manifests.iter().enumerate() {
        for id in &m.units_here {
            if !first.sweep.units.iter().any(|u| &u.id == id) {
                problems.push(format!("  unit `{id}` in {} is not a unit of the run", parts[p].display()));
            } else if let Some(&q) = holder.get(id) {
                problems.push(format!("  unit `{id}` is duplicated: in {} and in {}", parts[q].display(), parts[p].display()));
            } else if let Some(missing) =
                first.sweep.units.iter().find(|u| &u.id == id).map(|u| u.path_in_part()).filter(|path| !parts[p].join(path).exists())
            {
                problems.push(format!("  unit `{id}`: {} is missing from {}", missing.display(), parts[p].display()));
            } else {
                holder.insert(id.clone(), p);
            }
        }
    }
    for (i, u) in first.sweep.units.iter().enumerate() {
        if !holder.contains_key(&u.id) && !problems.iter().any(|l| l.contains(&format!("`{}`", u.id))) {
            problems.push(format!(
                "  unit `{}` is missing (shard {}/{} runs it; was its part given?)",
                u.id,
                i % first.shard.count,
                first.shard.count
            ));
        }
    }
    if !problems.is_empty() {
        return Err(MergeError::Cover { total: first.sweep.units.len(), problems: problems.join("\n") });
    }
    Ok((manifests, holder))
}

/// Merge `parts` into `out` (all or nothing, under its lock): the same `summary.json`, tables and
/// report the unsharded run writes. Each unit's folder is copied as its shard wrote it (a unit is
/// computed whole by one shard, so its IDIs, estimate counts and group tables are the unsharded
/// ones); a sweep's comparison is recomputed from the units' summaries.
pub fn merge(parts: &[PathBuf], out: &Path) -> Result<SweepReport> {
    let (manifests, holder) = check_parts(parts)?;
    let info = manifests[0].sweep.clone();
    crate::staging::check_target(out)?;
    let _lock = crate::staging::Lock::acquire(out)?;
    if let Some(source) = &info.source {
        return merge_pieces(&info, source, parts, &holder, out);
    }
    let staging = crate::staging::Staging::begin(out)?;
    let mut summaries = BTreeMap::new();
    for u in &info.units {
        let from = parts[holder[&u.id]].join(&u.id);
        let to = if info.matrix { staging.dir().join(&u.id) } else { staging.dir().to_path_buf() };
        copy_dir(&from, &to)?;
        let path = from.join("summary.json");
        let summary: Summary = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
            .map_err(|message| OutputError { path: path.clone(), message })?;
        summaries.insert(u.id.clone(), summary);
    }
    let report = if info.matrix {
        finish(&info, staging.dir(), &summaries)?
    } else {
        let summary = summaries
            .remove(super::PLAIN_UNIT)
            .ok_or_else(|| Error::Internal(format!("the parts hold no unit `{}`", super::PLAIN_UNIT)))?;
        SweepReport { gate_passed: super::gate_passed(&summary), summary: SweepSummary::Run(Box::new(summary)) }
    };
    staging.commit()?;
    Ok(report)
}

/// Merge a plain pipeline's pieces: run it again from `source`, its split stages combined from
/// the pieces, and write its result into `out` (whose lock the caller holds). The stages the
/// pieces read must give the figures they gave in every shard: a stage that does not (a model
/// trained with an unseeded library, say) is named, and nothing is written.
fn merge_pieces(
    info: &SweepInfo,
    source: &PipelineSource,
    parts: &[PathBuf],
    holder: &BTreeMap<String, usize>,
    out: &Path,
) -> Result<SweepReport> {
    let gates: Vec<crate::gate::Condition> = source
        .gates
        .iter()
        .map(|g| {
            g.parse()
                .map_err(|e: crate::gate::ConditionSyntaxError| MergeError::Gate { condition: g.clone(), message: e.to_string() }.into())
        })
        .collect::<Result<_>>()?;
    let sweep = Sweep::parse(&source.path, source.text.clone(), source.seed_override, gates, info.best.clone())?;
    if sweep.info.units != info.units || sweep.info.pipeline_hash != info.pipeline_hash {
        return Err(MergeError::Changed { pipeline: source.path.clone() }.into());
    }
    let mut pieces: BTreeMap<String, Vec<Piece>> = BTreeMap::new();
    let mut recorded: Vec<(Value, PathBuf)> = Vec::new();
    for u in &info.units {
        let path = parts[holder[&u.id]].join(u.path_in_part());
        let text = std::fs::read_to_string(&path).map_err(|e| OutputError { path: path.clone(), message: e.to_string() })?;
        let file: PieceFile =
            serde_json::from_str(&text).map_err(|e| OutputError { path: path.clone(), message: format!("not a piece file: {e}") })?;
        if file.unit != u.id {
            return Err(MergeError::WrongUnit { path: path.clone(), found: file.unit, expected: u.id.clone() }.into());
        }
        if !recorded.iter().any(|(v, _)| v == &file.upstream) {
            recorded.push((file.upstream, path));
        }
        let stage = u.piece.as_ref().map(|p| p.stage.clone()).unwrap_or_default();
        pieces.entry(stage).or_default().push(file.result);
    }
    let (run, _) = sweep.pipeline(0)?.execute_with(false, &mut PieceMode::Combine(pieces))?;
    let here = fingerprint(&run.summary.to_json()["stages"]);
    for (upstream, path) in &recorded {
        check_same_upstream(upstream, path, &here)?;
    }
    run.write_unlocked(out, info.report)?;
    Ok(SweepReport { gate_passed: super::gate_passed(&run.summary), summary: SweepSummary::Run(Box::new(run.summary)) })
}

/// Refuse pieces computed from other upstream results than the merge's own run (`here`): name
/// the first stage whose figures differ, with both values.
fn check_same_upstream(recorded: &Value, piece: &Path, here: &Value) -> Result<()> {
    let empty = Map::new();
    for (stage, figures) in recorded.as_object().unwrap_or(&empty) {
        let ours = here.get(stage);
        if ours == Some(figures) {
            continue;
        }
        let differing = figures
            .as_object()
            .and_then(|f| f.iter().find(|(k, v)| ours.and_then(|o| o.get(k.as_str())) != Some(*v)))
            .map(|(k, v)| {
                format!(
                    "`{k}` is {v} in {}, {} in the merge",
                    piece.display(),
                    ours.and_then(|o| o.get(k.as_str())).unwrap_or(&Value::Null)
                )
            })
            .unwrap_or_else(|| format!("its figures in {} differ from the merge's", piece.display()));
        return Err(MergeError::NotReproducible { stage: stage.to_string(), differing }.into());
    }
    Ok(())
}

/// Copy folder `from` into `to` (created), recursively.
fn copy_dir(from: &Path, to: &Path) -> std::result::Result<(), OutputError> {
    let err = |path: &Path, e: std::io::Error| OutputError { path: path.to_path_buf(), message: e.to_string() };
    std::fs::create_dir_all(to).map_err(|e| err(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| err(from, e))? {
        let entry = entry.map_err(|e| err(from, e))?;
        let target = to.join(entry.file_name());
        if entry.file_type().map_err(|e| err(&entry.path(), e))?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| err(&target, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_specs_are_checked_and_deal_units_round_robin() {
        let s: ShardSpec = "1/3".parse().unwrap();
        assert_eq!((0..7).filter(|&i| s.holds(i)).collect::<Vec<_>>(), [1, 4]);
        assert!("3/3".parse::<ShardSpec>().unwrap_err().to_string().contains("not below the count 3"));
        assert!("0/0".parse::<ShardSpec>().unwrap_err().to_string().contains("at least 1"));
        assert!("a/2".parse::<ShardSpec>().unwrap_err().to_string().contains("`a` is not a whole number"));
        assert!("2".parse::<ShardSpec>().unwrap_err().to_string().contains("expected K/N"));
    }
}
