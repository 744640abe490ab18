//! Pieces: the independent units inside one stage. An `estimate` splits into blocks of trials
//! (trial `t` draws from a stream of its own, so any split gives the same counts), a `generate`
//! into `units` blocks of its seeds (each block searched by its own run of the plugin, with a
//! stream derived from the stage seed and the block's number alone). A stage computes each piece
//! on its own ([`crate::stage::Stage::run_piece`]) and combines them in piece order
//! ([`crate::stage::Stage::combine`]); its ordinary run does exactly that, so pieces
//! computed on other machines (`fairpipe run --shard`) and combined by `fairpipe merge` give the
//! figures of the unsharded run.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What one piece of a stage computed, kept to be combined (in the run itself, or by `fairpipe
/// merge` from a part's files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Piece {
    /// Estimate trials `first .. first + counts.len()`: the discriminatory inputs of each trial.
    Trials {
        /// The first trial's index.
        first: usize,
        /// Discriminatory inputs per trial.
        counts: Vec<usize>,
        /// Model rows the piece scored.
        queries: u64,
        /// Per protected attribute (column order), the piece's inputs whose treatment changes
        /// when that attribute alone changes; empty in pieces written before it was recorded.
        #[serde(default)]
        alone: Vec<usize>,
        /// Each trial's sums of discrim-eval's paired logit differences (none for a labels-only
        /// model, or in a piece written before they were recorded).
        #[serde(default)]
        shifts: Vec<crate::logit_shift::ShiftSums>,
        /// With two or more protected attributes, the piece's inputs with hidden intersectional
        /// flips ([`crate::check::Checker::hidden_intersectional`]); `None` with one attribute or
        /// in a piece written before it was recorded.
        #[serde(default)]
        hidden: Option<usize>,
        /// Where the inputs are clustered (an LLM's names, `cluster_by` columns), their verdicts
        /// summed per cluster ([`crate::estimate::TrialOutcomes::flip_clusters`]); `None` where
        /// nothing is clustered or in a piece written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flip_clusters: Option<crate::clustered::ClusterSums>,
    },
    /// One search over one block of seeds.
    Search(SearchPiece),
}

/// One plugin run over one block of seeds: its cases and counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchPiece {
    /// Instances, row-major (written as f64 bit patterns, so they read back exactly).
    #[serde(with = "f64_bits")]
    pub instances: Vec<f64>,
    /// Counterparts, row-major (bit patterns likewise).
    #[serde(with = "f64_bits")]
    pub counterparts: Vec<f64>,
    /// Origin code per case.
    pub origins: Vec<u32>,
    /// Seconds since the piece's run started, per case.
    pub at_s: Vec<f64>,
    /// Unique test inputs the run generated.
    pub generated: u64,
    /// Model rows the run scored.
    pub queries: u64,
    /// Rows the plugin asked for (scored or answered by the score cache).
    #[serde(default)]
    pub asked: u64,
    /// Rows the score cache answered.
    #[serde(default)]
    pub cache_hits: u64,
    /// Whether the piece's queries went through a score cache, and why (the generate stage's
    /// `cache` and `cache_choice`); absent in pieces written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_choice: Option<Box<(bool, String)>>,
    /// How the gradients the plugin asked for were computed (`"exact"`, `"finite_differences"`;
    /// absent when it asked for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradient: Option<String>,
    /// Rows whose gradient the plugin asked for.
    #[serde(default)]
    pub gradient_rows: u64,
    /// Model rows evaluated for those gradients (also counted in `queries` and `asked`).
    #[serde(default)]
    pub gradient_model_rows: u64,
    /// Rows the plugin asked about that lay outside the domain and were held to it before the
    /// model saw them; absent for a model that takes any real input, which sees every row as asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_held: Option<u64>,
    /// Wall time of the run.
    pub elapsed_s: f64,
    /// Seconds spent in the model.
    pub model_time_s: f64,
    /// Whether the host's time budget cut the run short.
    pub stopped_by_host: bool,
    /// The model's budget that cut it short (an LLM's `max_requests`, `max_tokens_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// Seed rows in the block.
    pub seeds: usize,
    /// The plugin's report (its own figures), if it sent one.
    pub report: Option<Value>,
}

/// Block `k` of `n` over `len` items: contiguous, in order, sizes differing by at most one.
pub fn block(len: usize, n: usize, k: usize) -> Range<usize> {
    let n = n.max(1) as u128;
    let at = |i: u128| (len as u128 * i / n) as usize;
    at(k as u128)..at(k as u128 + 1)
}

/// The random seed of piece `k` of a stage split into `n` pieces: the stage's own seed when the
/// stage is one piece (the unsplit run), else a SplitMix64 mix of the stage seed and `k` alone.
pub fn piece_seed(stage_seed: u64, k: usize, n: usize) -> u64 {
    if n <= 1 {
        return stage_seed;
    }
    let mut z = stage_seed ^ (k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Serde for `Vec<f64>` as the values' bit patterns (JSON numbers read back exactly).
mod f64_bits {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|x| x.to_bits()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Vec::<u64>::deserialize(d)?.into_iter().map(f64::from_bits).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_item_once_in_order() {
        for len in [0, 1, 7, 400] {
            for n in [1, 2, 3, 16] {
                let all: Vec<usize> = (0..n).flat_map(|k| block(len, n, k)).collect();
                assert_eq!(all, (0..len).collect::<Vec<_>>(), "len {len}, n {n}");
                let sizes: Vec<usize> = (0..n).map(|k| block(len, n, k).len()).collect();
                assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
            }
        }
    }

    #[test]
    fn a_search_piece_reads_back_bit_for_bit() {
        let piece = Piece::Search(SearchPiece {
            instances: vec![0.1 + 0.2, -0.0, f64::MIN_POSITIVE, 1e300],
            counterparts: vec![1.0 / 3.0, 2.0, 3.0, 4.0],
            origins: vec![1, 2],
            at_s: vec![0.5, 0.25],
            generated: 9,
            queries: 20,
            asked: 25,
            cache_hits: 5,
            cache_choice: Some(Box::new((true, "on (cache = true)".into()))),
            gradient: Some("exact".into()),
            gradient_rows: 3,
            gradient_model_rows: 3,
            rows_held: Some(2),
            elapsed_s: 1.5,
            model_time_s: 0.5,
            stopped_by_host: false,
            budget: None,
            seeds: 3,
            report: None,
        });
        let back: Piece = serde_json::from_str(&serde_json::to_string(&piece).unwrap()).unwrap();
        match (&back, &piece) {
            (Piece::Search(a), Piece::Search(b)) => {
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&a.instances), bits(&b.instances));
                assert_eq!(bits(&a.counterparts), bits(&b.counterparts));
            }
            _ => panic!("{back:?}"),
        }
    }

    #[test]
    fn one_piece_keeps_the_stage_seed_and_several_get_distinct_ones() {
        assert_eq!(piece_seed(42, 0, 1), 42);
        let seeds: std::collections::BTreeSet<u64> = (0..100).map(|k| piece_seed(42, k, 100)).collect();
        assert_eq!(seeds.len(), 100);
        assert_eq!(piece_seed(42, 3, 10), piece_seed(42, 3, 20), "a piece's seed depends on its number alone");
    }
}
