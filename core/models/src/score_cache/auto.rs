//! The `cache` key's `auto` policy: whether a plugin run's rows go through the score cache,
//! decided window by window from the share of repeated rows sampled and the model's cost (the
//! constants below), so that the cache is on only where its look-ups cost less than the rows they
//! save. The table itself is the parent module's [`super::ScoreCache`].

use std::sync::Mutex;

/// The generate stage's `cache` key: whether a plugin run's queries go through a score cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheChoice {
    /// `"auto"`: through a cache; for a network or linear model run in this process (whose cost
    /// per row is known, [`crate::Model::multiply_adds_per_row`]) only while the run's
    /// repeats pay for the look-ups ([`CacheSwitch`]).
    #[default]
    Auto,
    /// `true`: always through a cache.
    On,
    /// `false`: every row asked for goes to the model.
    Off,
}

/// What a row asked costs the cache when it holds the row, in nanoseconds, and what a row it does
/// not hold costs on top of the model, on one thread with the default capacity: fitted to two A/B
/// runs (release, `RAYON_NUM_THREADS=1`, cache on against off): `census-sg`, 65% repeats, costs
/// 54 ns a row asked more through the cache on a model of 118 ns a row; `credit-aequitas`, 88%
/// repeats, saves 72 ns a row asked on a model of 242 ns. (The micro-benchmark's 0.03 and 0.14 µs
/// are lower: its tables are small and stay in the processor's caches.)
const HIT_NS: f64 = 96.0;
/// See [`HIT_NS`].
const NEW_ROW_NS: f64 = 161.0;
/// What one multiply-add of an in-process network costs, in nanoseconds, with the oracle around it:
/// the native executor scores the bundled census network (1,645 multiply-adds) in about 118 ns a
/// row on one thread (`model_time_s / rows_scored` of `census-sg` with the cache off).
const MULTIPLY_ADD_NS: f64 = 0.072;
/// Rows asked between two decisions of `"auto"` ([`CacheSwitch`]).
pub const AUTO_WINDOW_ROWS: u64 = 100_000;

/// One row in this many (chosen by a hash of its values, so a row is always or never among them)
/// is remembered by [`CacheSwitch`] to count repeats.
const SAMPLE_ONE_IN: u64 = 16;

/// Sampled rows [`CacheSwitch`] remembers at most (then it forgets them all and starts again).
const SAMPLED_ROWS: usize = 1 << 18;

/// The repeats a run needs for the cache to pay on a model of `multiply_adds` per row: with a share
/// `h` of repeats, a row asked costs `h · HIT + (1 − h) · (NEW_ROW + model)` through the cache and
/// `model` without, so the cache pays when `h > NEW_ROW / (model − HIT + NEW_ROW)`.
pub fn repeats_that_pay(multiply_adds: u64) -> f64 {
    let model = multiply_adds as f64 * MULTIPLY_ADD_NS;
    (NEW_ROW_NS / (model - HIT_NS + NEW_ROW_NS)).min(1.0)
}

/// `"auto"` for an in-process model whose cost per row is known: the cache is used while the
/// rows the plugin asks repeat often enough to pay for the look-ups ([`repeats_that_pay`]).
///
/// Repeats are counted on a sample of the rows asked, whether the cache is on or off (the same
/// measure either way): one row in [`SAMPLE_ONE_IN`], chosen by a hash of its values (so a row is
/// always or never in the sample, and the sample's share of repeats estimates the share among all
/// rows), remembered by that hash. Every [`AUTO_WINDOW_ROWS`] rows asked (counted in whole calls)
/// the share of repeats in the window decides whether the next calls go through the cache: on
/// from the start and for the first window (which fills the cache), then off when a window's
/// share falls below what pays, on again when it rises [`TURN_ON_MARGIN`] above (Aequitas' walks
/// repeat more and more as they go: on credit 51% of rows 100,000–200,000 asked, 88% of all).
/// The decisions are read from the rows asked, so a plugin that asks the same rows in the same
/// order gets the same decisions every run.
#[derive(Debug)]
pub struct CacheSwitch {
    multiply_adds: u64,
    needed: f64,
    off: std::sync::atomic::AtomicBool,
    state: Mutex<SwitchState>,
}

#[derive(Debug, Default)]
struct SwitchState {
    /// The sampled rows seen, by hash (already a hash: kept as it is, not hashed again).
    seen: std::collections::HashSet<u64, std::hash::BuildHasherDefault<PassThrough>>,
    asked: u64,
    window_asked: u64,
    window_sampled: u64,
    window_repeats: u64,
    /// Each change: the row asked it took effect at, whether the cache went on, the window's
    /// share of repeats.
    changes: Vec<(u64, bool, f64)>,
}

/// A `Hasher` for keys that are hashes already: the key itself.
#[derive(Debug, Default)]
struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Points of repeats above [`repeats_that_pay`] a window needs to turn the cache back on (so that a
/// run near the break-even does not turn it on and off window after window, and a cache that may
/// have forgotten rows while off still pays).
const TURN_ON_MARGIN: f64 = 0.05;

/// A hash of a row's values (their bit patterns times an odd constant per column, summed — the
/// products do not wait on each other —, then mixed): picks the sample and keys it.
fn row_hash(row: &[f64]) -> u64 {
    let mut h = 0x243F_6A88_85A3_08D3u64;
    for (i, v) in row.iter().enumerate() {
        let odd = 0x9E37_79B9_7F4A_7C15u64.wrapping_add((i as u64).wrapping_mul(0xC632_BE59_BD9B_4E02));
        h = h.wrapping_add(v.to_bits().rotate_left(i as u32 % 64).wrapping_mul(odd));
    }
    // MurmurHash3's finaliser: every output bit depends on every input bit (small integers as
    // f64 have all-zero low bits, which a multiply alone leaves in the low bits).
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

impl CacheSwitch {
    /// A switch for a model of `multiply_adds` per row.
    pub fn new(multiply_adds: u64) -> Self {
        CacheSwitch {
            multiply_adds,
            needed: repeats_that_pay(multiply_adds),
            off: std::sync::atomic::AtomicBool::new(false),
            state: Mutex::new(SwitchState::default()),
        }
    }

    /// Whether the cache is off for now.
    pub fn is_off(&self) -> bool {
        self.off.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Count a call's rows (`x`, `width` values each): its sampled rows and which of them were
    /// seen before; at the end of a window, decide the next.
    pub fn record(&self, x: &[f64], width: usize) {
        if width == 0 {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for row in x.chunks_exact(width) {
            let h = row_hash(row);
            if (h >> 32) % SAMPLE_ONE_IN != 0 {
                continue;
            }
            if state.seen.len() >= SAMPLED_ROWS {
                state.seen.clear();
            }
            state.window_sampled += 1;
            if !state.seen.insert(h) {
                state.window_repeats += 1;
            }
        }
        self.end_of_call(&mut state, (x.len() / width) as u64);
    }

    /// Count a call's `rows`; at the end of a window, decide the next.
    fn end_of_call(&self, state: &mut SwitchState, rows: u64) {
        state.asked += rows;
        state.window_asked += rows;
        if state.window_asked < AUTO_WINDOW_ROWS {
            return;
        }
        let share = state.window_repeats as f64 / state.window_sampled.max(1) as f64;
        // The first window (all the rows asked so far) only fills the cache: repeats are rare
        // while it is empty.
        let warming_up = state.asked == state.window_asked;
        let on = if warming_up {
            true
        } else if self.is_off() {
            share >= self.needed + TURN_ON_MARGIN
        } else {
            share >= self.needed
        };
        if on == self.is_off() {
            self.off.store(!on, std::sync::atomic::Ordering::Release);
            let at = state.asked;
            state.changes.push((at, on, share));
        }
        (state.window_asked, state.window_sampled, state.window_repeats) = (0, 0, 0);
    }

    /// What was done and why, in words (the generate stage's `cache_choice`).
    pub fn describe(&self) -> String {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = format!(
            "auto: the model takes {} multiply-adds a row in this process, the cache pays above {:.0}% repeats (per {AUTO_WINDOW_ROWS} rows asked); on from the start",
            self.multiply_adds,
            100.0 * self.needed
        );
        const SHOWN: usize = 6;
        for &(at, on, share) in state.changes.iter().take(SHOWN) {
            text.push_str(&format!(", {} from row {at} ({:.0}% repeats)", if on { "on" } else { "off" }, 100.0 * share));
        }
        if state.changes.len() > SHOWN {
            text.push_str(&format!(", … {} changes in all, {} at the end", state.changes.len(), if self.is_off() { "off" } else { "on" }));
        }
        text
    }
}

impl serde::Serialize for CacheChoice {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CacheChoice::Auto => serializer.serialize_str("auto"),
            CacheChoice::On => serializer.serialize_bool(true),
            CacheChoice::Off => serializer.serialize_bool(false),
        }
    }
}

impl<'de> serde::Deserialize<'de> for CacheChoice {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Choice;
        impl serde::de::Visitor<'_> for Choice {
            type Value = CacheChoice;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("true, false or \"auto\"")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<CacheChoice, E> {
                Ok(if v { CacheChoice::On } else { CacheChoice::Off })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CacheChoice, E> {
                match v {
                    "auto" => Ok(CacheChoice::Auto),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        deserializer.deserialize_any(Choice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` distinct rows of width 3, the `k`-th from `start`.
    fn rows(start: u64, n: u64) -> Vec<f64> {
        (start..start + n).flat_map(|k| [k as f64, (k % 7) as f64, 0.5]).collect()
    }

    #[test]
    fn auto_follows_the_share_of_repeats_window_by_window() {
        // The bundled census network (1,645 multiply-adds): the cache pays above about 88% repeats;
        // a network of 100,000 above about 2%.
        assert!((0.85..0.90).contains(&repeats_that_pay(1645)), "{}", repeats_that_pay(1645));
        assert!(repeats_that_pay(100_000) < 0.05);
        assert_eq!(repeats_that_pay(0), 1.0);
        let w = AUTO_WINDOW_ROWS;
        let run = |switch: &CacheSwitch| {
            // The first window only warms the cache up, whatever its repeats.
            switch.record(&rows(50 * w, w), 3);
            assert!(!switch.is_off());
            // A window of new rows: off from its end.
            switch.record(&rows(0, w / 2), 3);
            assert!(!switch.is_off(), "decided before the window ended");
            switch.record(&rows(w / 2, w / 2), 3);
            assert!(switch.is_off());
            // The same rows again (all repeats): on again.
            switch.record(&rows(0, w), 3);
            assert!(!switch.is_off());
            // Half new: off.
            switch.record(&[rows(0, w / 2), rows(10 * w, w / 2)].concat(), 3);
            assert!(switch.is_off());
            switch.describe()
        };
        let text = run(&CacheSwitch::new(1645));
        assert!(
            text.contains("on from the start, off from row 200000 (0% repeats), on from row 300000 (100% repeats), off from row 400000 ("),
            "{text}"
        );
        // The same calls: the same decisions.
        assert_eq!(run(&CacheSwitch::new(1645)), text);
        // The sample estimates the share of repeats among all rows: a window half of whose rows
        // were asked before reads about 50% (a model of 10,000 multiply-adds: the cache pays above
        // 26%).
        let switch = CacheSwitch::new(10_000);
        switch.record(&rows(50 * w, w), 3);
        switch.record(&rows(0, w), 3);
        switch.record(&[rows(0, w / 2), rows(10 * w, w / 2)].concat(), 3);
        let text = switch.describe();
        assert!(text.contains("off from row 200000 (0% repeats), on from row 300000 ("), "{text}");
        let share: f64 = text.rsplit('(').next().unwrap().split('%').next().unwrap().parse().unwrap();
        assert!((45.0..55.0).contains(&share), "{text}");
        // A model costly enough: three quarters of a window repeating a quarter keep the cache on.
        let costly = CacheSwitch::new(100_000);
        costly.record(&rows(50 * w, w), 3);
        costly.record(&[rows(0, w / 4), rows(0, 3 * w / 4)].concat(), 3);
        assert!(!costly.is_off(), "{}", costly.describe());
    }

    #[test]
    fn the_cache_key_reads_true_false_and_auto_and_refuses_other_words() {
        let read = |v: serde_json::Value| serde_json::from_value::<CacheChoice>(v);
        assert_eq!(read(serde_json::json!(true)).unwrap(), CacheChoice::On);
        assert_eq!(read(serde_json::json!(false)).unwrap(), CacheChoice::Off);
        assert_eq!(read(serde_json::json!("auto")).unwrap(), CacheChoice::Auto);
        let err = read(serde_json::json!("yes")).unwrap_err().to_string();
        assert!(err.contains("true, false or \"auto\""), "{err}");
        assert!(read(serde_json::json!(1)).is_err());
        for choice in [CacheChoice::Auto, CacheChoice::On, CacheChoice::Off] {
            assert_eq!(read(serde_json::to_value(choice).unwrap()).unwrap(), choice);
        }
    }
}
