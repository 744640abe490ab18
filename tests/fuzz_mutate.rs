//! The fuzz targets under a stable driver, in the normal suite (libFuzzer needs a nightly
//! toolchain; CI has stable): each target's body (`fairpipe::fuzzing`) is fed a fixed number of
//! inputs made by mutating its checked-in corpus (`fuzz/corpus/<target>/`) the way libFuzzer's
//! default mutators do — bit flips, random and boundary bytes, inserted, erased and repeated
//! ranges, numbers rewritten, splices of two inputs — from a fixed seed, so a run is repeatable.
//! Built with this suite's overflow checks, as `cargo fuzz -a` builds; a panic is a finding.
//!
//! `FAIRPIPE_FUZZ_RUNS` sets the inputs per target (default [`DEFAULT_RUNS`]) and
//! `FAIRPIPE_FUZZ_SEED` the seed; `scripts/fuzz-stable.sh` runs it long and keeps the statistics
//! lines it prints (docs/fuzzing.md). A finding is written to `target/fuzz-findings/` and named in
//! the failure, to be fixed and added to the corpus.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Inputs per target in the normal suite (about 10 s for all six in a debug build).
const DEFAULT_RUNS: u64 = 20_000;

/// The largest input made, in bytes (libFuzzer's default `-max_len` for a corpus of small files).
const MAX_LEN: usize = 4096;

/// SplitMix64: a small, fixed, seedable generator (the driver must not depend on a crate's
/// stream, which may change between versions).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes worth trying where a reader checks a bound: zero, sign and size edges, and the
/// characters the readers split on (quotes, separators, brackets, line ends, `=`, `.`, `-`).
const INTERESTING: &[u8] = b"\x00\x01\x7f\x80\xff\"',;\t|[]{}\n\r=.-e9#\\";

/// Numbers a field may be rewritten to: edges of the integer and float types and of the readers'
/// limits.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e308",
    "-1e308",
    "1e-320",
    "NaN",
    "inf",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "4294967296",
    "2147483648",
    "65536",
    "99999999999999999999",
];

/// One mutation of `data` (1 to 8 stacked), possibly splicing in `other`.
fn mutate(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..1 + rng.below(8) {
        let len = data.len();
        match rng.below(10) {
            // Flip one bit.
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            // A random byte.
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next() as u8;
            }
            // An interesting byte, replaced or inserted.
            2 => {
                let b = INTERESTING[rng.below(INTERESTING.len())];
                if len > 0 && rng.below(2) == 0 {
                    let i = rng.below(len);
                    data[i] = b;
                } else {
                    data.insert(rng.below(len + 1), b);
                }
            }
            // Erase a range.
            3 if len > 1 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(16)).min(len);
                data.drain(start..end);
            }
            // Repeat a range (lengthens lists, nests brackets).
            4 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(64)).min(len);
                let piece = data[start..end].to_vec();
                let at = rng.below(len + 1);
                for _ in 0..1 + rng.below(4) {
                    data.splice(at..at, piece.iter().copied());
                }
            }
            // Rewrite the first run of ASCII digits after a point as an edge number.
            5 if len > 0 => {
                let from = rng.below(len);
                if let Some(start) = data[from..].iter().position(u8::is_ascii_digit).map(|p| p + from) {
                    let end = data[start..].iter().position(|b| !b.is_ascii_digit()).map_or(data.len(), |p| p + start);
                    let number = NUMBERS[rng.below(NUMBERS.len())].as_bytes();
                    data.splice(start..end, number.iter().copied());
                }
            }
            // Add or subtract a small amount to a byte (an off-by-one in a count or a length).
            6 if len > 0 => {
                let i = rng.below(len);
                data[i] = data[i].wrapping_add([1u8, 255, 2, 254, 16, 240][rng.below(6)]);
            }
            // Splice: this input's head and another's tail.
            7 if !other.is_empty() => {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len());
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            // Cut the tail (a truncated answer or file).
            8 if len > 0 => data.truncate(rng.below(len)),
            // Swap two bytes.
            _ if len > 1 => {
                let (i, j) = (rng.below(len), rng.below(len));
                data.swap(i, j);
            }
            _ => data.push(rng.next() as u8),
        }
    }
    data.truncate(MAX_LEN);
}

/// What one target's run did.
struct Stats {
    runs: u64,
    corpus: usize,
    elapsed: Duration,
    slowest: Duration,
    longest: usize,
    findings: Vec<PathBuf>,
}

/// Feed `runs` mutated corpus inputs to `run`; a panic is kept in `findings` (written under
/// `findings_dir`).
fn drive(target: &str, run: fairpipe::fuzzing::Target, corpus: &[Vec<u8>], runs: u64, seed: u64, findings_dir: &Path) -> Stats {
    let mut rng = Rng(fairpipe_core::run::stage_seed(seed, target));
    let mut stats =
        Stats { runs, corpus: corpus.len(), elapsed: Duration::ZERO, slowest: Duration::ZERO, longest: 0, findings: Vec::new() };
    let started = Instant::now();
    for _ in 0..runs {
        let mut input = corpus[rng.below(corpus.len())].clone();
        let other = &corpus[rng.below(corpus.len())];
        mutate(&mut rng, &mut input, other);
        stats.longest = stats.longest.max(input.len());
        let one = Instant::now();
        let outcome = std::panic::catch_unwind(|| run(&input));
        stats.slowest = stats.slowest.max(one.elapsed());
        if outcome.is_err() {
            std::fs::create_dir_all(findings_dir).unwrap();
            let file = findings_dir.join(format!("{target}-{}", stats.findings.len()));
            std::fs::write(&file, &input).unwrap();
            stats.findings.push(file);
        }
    }
    stats.elapsed = started.elapsed();
    stats
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text.parse().unwrap_or_else(|_| panic!("{name}={text:?} is not a whole number")),
        Err(_) => default,
    }
}

#[test]
fn every_fuzz_target_survives_mutations_of_its_corpus() {
    let runs = env_number("FAIRPIPE_FUZZ_RUNS", DEFAULT_RUNS);
    let seed = env_number("FAIRPIPE_FUZZ_SEED", 1);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let findings_dir = root.join("target/fuzz-findings");
    let mut failures = Vec::new();
    for (target, run) in fairpipe::fuzzing::TARGETS {
        let dir = root.join("fuzz/corpus").join(target);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let corpus: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
        assert!(!corpus.is_empty(), "{}: an empty corpus", dir.display());
        let stats = drive(target, *run, &corpus, runs, seed, &findings_dir);
        // The statistics line scripts/fuzz-stable.sh keeps.
        println!(
            "fuzz-stable: target={target} runs={} seed={seed} corpus={} seconds={:.1} exec_per_s={:.0} longest_input={} slowest_ms={:.1} findings={}",
            stats.runs,
            stats.corpus,
            stats.elapsed.as_secs_f64(),
            stats.runs as f64 / stats.elapsed.as_secs_f64().max(1e-9),
            stats.longest,
            stats.slowest.as_secs_f64() * 1000.0,
            stats.findings.len()
        );
        failures.extend(
            stats.findings.iter().map(|f| format!("`{target}` panics on {} (replay: put it in fuzz/corpus/{target}/)", f.display())),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_mutator_changes_inputs_grows_and_shrinks_them_and_repeats_from_a_seed() {
    let corpus = [b"age,sex,y\n1,0,1\n".to_vec(), b"[stages.a]\nkind = \"load\"\n".to_vec()];
    let make = |seed: u64| {
        let mut rng = Rng(seed);
        (0..500)
            .map(|i| {
                let mut input = corpus[i % 2].clone();
                mutate(&mut rng, &mut input, &corpus[(i + 1) % 2]);
                input
            })
            .collect::<Vec<_>>()
    };
    let (a, b, c) = (make(7), make(7), make(8));
    assert_eq!(a, b, "the same seed makes the same inputs");
    assert_ne!(a, c, "another seed, other inputs");
    let changed = a.iter().enumerate().filter(|(i, m)| **m != corpus[i % 2]).count();
    assert!(changed >= 450, "{changed} of 500 inputs changed");
    assert!(a.iter().any(|m| m.len() > 40) && a.iter().any(|m| m.len() < 10), "lengths: {:?}", a.iter().map(Vec::len).collect::<Vec<_>>());
    let distinct: std::collections::BTreeSet<&Vec<u8>> = a.iter().collect();
    assert!(distinct.len() >= 400, "{} distinct inputs of 500", distinct.len());
}
