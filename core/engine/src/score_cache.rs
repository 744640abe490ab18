//! The shared cache of scored rows: P(favourable) of every row a plugin asked the model about,
//! keyed by the encoded row (the bit patterns of its `f64`s), so that a row asked for again —
//! Aequitas' fully directed strategy asks for the same rows dozens of times — is answered without
//! the model.
//!
//! A cache belongs to an [`crate::oracle::Oracle`] and its clones, and serves every `predict` call
//! of the plugin runs given that oracle, from any thread. The host gives **each plugin run its own**
//! (each `generate` block of seeds, each `group_score`; [`crate::oracle::Oracle::with_fresh_cache`]):
//! a cache shared across stages would make `rows_scored` depend on what ran before and on how a
//! stage is split into units or shards, and the figures of a sharded run must equal the unsharded
//! run's. The host's own checks (`verify`, `estimate`, `check`, accuracy) do not go through it:
//! they score what they score.
//!
//! **Bounded memory.** The cache holds at most [`ScoreCache::capacity`] rows (default
//! [`DEFAULT_CACHE_ROWS`], set with `FAIRPIPE_CACHE_ROWS`; `0` turns the cache off). A row costs
//! its key (8 bytes per attribute) plus a table entry holding its hash, its probability and the
//! key's place (about 25 bytes), stored end to end per generation (no allocation per row): about
//! 130 bytes on census' 13 attributes, so the default is about 130 MB at most (more while a
//! vector grows).
//!
//! **One hash per row, one lock per shard.** A row's key is hashed once per call; the hash chooses
//! the shard, finds the row in the tables, joins repeats within the call and files the row when it
//! is remembered. [`ScoreCache::answer`] groups a call's rows by shard and locks each shard once
//! to look its rows up and once to file the new ones (a lock per row had cost a remote audit about
//! 7% of fairpipe's CPU).
//!
//! **Eviction: two generations per shard.** The rows are spread over [`SHARDS`] shards by the
//! hash of their key, each behind its own mutex (rayon threads asking for rows of different shards
//! do not wait for each other). A shard keeps a *current* and a *previous* table of at most
//! `capacity / (2 × SHARDS)` rows each; new rows go into the current one, and when it is full the
//! previous table is dropped and the current one becomes the previous one. A row found in the
//! previous table is copied back into the current one. This approximates least-recently-used
//! eviction at O(1) cost per row: a row used at least once per generation stays.
//!
//! Results do not depend on the cache: a model gives the same probability for the same row (the
//! models fairpipe runs score each row independently of the others in its batch), so the cases a
//! search finds are the same with the cache, without it, or with any capacity; only the number of
//! rows sent to the model changes.

use std::borrow::Cow;
use std::sync::Mutex;

use hashbrown::HashTable;

/// Rows the cache holds at most unless `FAIRPIPE_CACHE_ROWS` says otherwise (about 125 MB on
/// census' 13 attributes).
pub const DEFAULT_CACHE_ROWS: usize = 1_000_000;

/// The environment variable that sets the capacity in rows (`0`: no cache).
pub const CACHE_ROWS_ENV: &str = "FAIRPIPE_CACHE_ROWS";

/// Number of independently locked shards.
pub const SHARDS: usize = 16;

/// Above this many rows, [`ScoreCache::answer`] looks rows up on the rayon pool.
const PARALLEL_LOOKUP_ROWS: usize = 2048;

/// The hash of an encoded row: rustc's FxHash multiply-rotate over its words, finished with a
/// SplitMix64 mix so that every bit is usable (the shard, the table slot and its tag each take
/// different bits).
pub fn hash_row(key: &[u64]) -> u64 {
    hash_words(key.iter().copied())
}

/// [`hash_row`] of a row's values, without encoding them first.
fn hash_values(row: &[f64]) -> u64 {
    hash_words(row.iter().map(|v| v.to_bits()))
}

fn hash_words(words: impl Iterator<Item = u64>) -> u64 {
    let mut h: u64 = 0;
    for word in words {
        h = (h.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The bit patterns of a row's values: the cache's key (so `0.0` and `-0.0`, or two NaNs with
/// different payloads, are different rows — the model sees them as they are).
pub fn encode(row: &[f64]) -> Vec<u64> {
    row.iter().map(|v| v.to_bits()).collect()
}

/// The rows of one generation of a shard, stored end to end: the row of a table entry with
/// `index` i is `keys[i * width..(i + 1) * width]`; the entry itself holds the row's full hash and
/// probability, so a lookup reads the row's values only when the whole hash matches, and a hit
/// costs the table entry and the row (not a separate probability and hash vector).
#[derive(Default)]
struct Generation {
    width: usize,
    keys: Vec<u64>,
    table: HashTable<Entry>,
}

/// A table entry: the row's hash, its probability and where its values are.
#[derive(Clone, Copy)]
struct Entry {
    hash: u64,
    p: f64,
    index: u32,
}

impl Generation {
    fn len(&self) -> usize {
        self.table.len()
    }

    /// The entry of `row` (its values compared bit for bit).
    fn find_mut(&mut self, hash: u64, row: &[f64]) -> Option<&mut Entry> {
        if row.len() != self.width {
            return None;
        }
        let (w, keys) = (self.width, &self.keys);
        self.table
            .find_mut(hash, |e| e.hash == hash && same_bits(keys[e.index as usize * w..(e.index as usize + 1) * w].iter().copied(), row))
    }

    /// File a row that is not here yet. A generation holds rows of one width (a cache serves one
    /// model); a row of another width is not filed.
    fn push(&mut self, hash: u64, row: &[f64], p: f64) {
        if self.table.is_empty() {
            self.width = row.len();
        } else if row.len() != self.width {
            return;
        }
        let index = self.table.len() as u32;
        self.keys.extend(row.iter().map(|v| v.to_bits()));
        self.table.insert_unique(hash, Entry { hash, p, index }, |e| e.hash);
    }
}

/// The shard of a row's hash: bits 32–35, which a shard's own table does not use (see
/// [`ScoreCache::shard`]).
fn shard_of(hash: u64) -> usize {
    (hash >> 32) as usize % SHARDS
}

/// The indices of `hashes` grouped by shard (a counting sort), each group in index order:
/// `order[starts[s]..starts[s + 1]]` are shard `s`'s.
struct ByShard {
    order: Vec<u32>,
    starts: [usize; SHARDS + 1],
}

impl ByShard {
    fn new(hashes: &[u64]) -> Self {
        let mut starts = [0usize; SHARDS + 1];
        for &hash in hashes {
            starts[shard_of(hash) + 1] += 1;
        }
        for s in 0..SHARDS {
            starts[s + 1] += starts[s];
        }
        let mut next = starts;
        let mut order = vec![0u32; hashes.len()];
        for (i, &hash) in hashes.iter().enumerate() {
            let s = shard_of(hash);
            order[next[s]] = i as u32;
            next[s] += 1;
        }
        ByShard { order, starts }
    }

    /// (shard, its indices) for every shard with at least one.
    fn groups(&self) -> Vec<(usize, &[u32])> {
        (0..SHARDS).map(|s| (s, &self.order[self.starts[s]..self.starts[s + 1]])).filter(|(_, group)| !group.is_empty()).collect()
    }
}

/// Whether `bits` are exactly the bit patterns of `row`, as many as its values (`0.0` and `-0.0`
/// differ, a NaN equals itself).
fn same_bits(bits: impl Iterator<Item = u64>, row: &[f64]) -> bool {
    bits.eq(row.iter().map(|v| v.to_bits()))
}

/// A key's row of values (the same bit patterns).
fn decode(key: &[u64]) -> Vec<f64> {
    key.iter().map(|&bits| f64::from_bits(bits)).collect()
}

#[derive(Default)]
struct Shard {
    current: Generation,
    previous: Generation,
}

/// A bounded, sharded map from encoded rows to P(favourable) (see the module documentation).
pub struct ScoreCache {
    shards: Box<[Mutex<Shard>]>,
    capacity: usize,
    per_generation: usize,
}

impl std::fmt::Debug for ScoreCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScoreCache({} of {} rows)", self.len(), self.capacity)
    }
}

impl ScoreCache {
    /// A cache of at most `capacity` rows; `0` makes a cache that holds nothing.
    pub fn new(capacity: usize) -> Self {
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect();
        ScoreCache { shards, capacity, per_generation: capacity.div_ceil(2 * SHARDS) }
    }

    /// The capacity from `FAIRPIPE_CACHE_ROWS` (a whole number of rows), else
    /// [`DEFAULT_CACHE_ROWS`]; an unreadable value is an error naming the variable.
    pub fn capacity_from_env() -> Result<usize, String> {
        match std::env::var(CACHE_ROWS_ENV) {
            Err(_) => Ok(DEFAULT_CACHE_ROWS),
            Ok(text) => text
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("{CACHE_ROWS_ENV}={text:?} is not a whole number of rows (0 turns the score cache off)")),
        }
    }

    /// Most rows the cache holds (rounded up to a multiple of `2 × SHARDS`).
    pub fn capacity(&self) -> usize {
        self.per_generation * 2 * SHARDS
    }

    /// Whether the cache holds anything at all (capacity above 0).
    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Rows held now.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock().unwrap_or_else(|p| p.into_inner());
                s.current.len() + s.previous.len()
            })
            .sum()
    }

    /// Whether the cache holds no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shard of a row: bits 32–35 of its hash, which the shard's own table does not use (it
    /// places rows by the low bits and tags them with the top 7; sharing those would crowd one
    /// shard's rows into a corner of its table or make their tags collide).
    fn shard(&self, hash: u64) -> std::sync::MutexGuard<'_, Shard> {
        self.lock(shard_of(hash))
    }

    fn lock(&self, shard: usize) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[shard].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached probability of the row encoded as `key`, if any (a row found in the previous
    /// generation is moved into the current one).
    pub fn get(&self, key: &[u64]) -> Option<f64> {
        self.get_hashed(hash_row(key), &decode(key))
    }

    fn get_hashed(&self, hash: u64, row: &[f64]) -> Option<f64> {
        if !self.enabled() {
            return None;
        }
        self.get_locked(&mut self.shard(hash), hash, row)
    }

    /// [`Self::get`] in a shard already locked.
    fn get_locked(&self, shard: &mut Shard, hash: u64, row: &[f64]) -> Option<f64> {
        if let Some(entry) = shard.current.find_mut(hash, row) {
            return Some(entry.p);
        }
        let p = shard.previous.find_mut(hash, row)?.p;
        // Left in the previous generation too: it is dropped whole when its turn comes.
        self.put(shard, hash, row, p);
        Some(p)
    }

    /// Remember `p` for the row encoded as `key`.
    pub fn insert(&self, key: &[u64], p: f64) {
        self.insert_hashed(hash_row(key), &decode(key), p);
    }

    fn insert_hashed(&self, hash: u64, row: &[f64], p: f64) {
        if !self.enabled() {
            return;
        }
        self.insert_locked(&mut self.shard(hash), hash, row, p);
    }

    /// [`Self::insert`] in a shard already locked.
    fn insert_locked(&self, shard: &mut Shard, hash: u64, row: &[f64], p: f64) {
        if let Some(entry) = shard.current.find_mut(hash, row) {
            entry.p = p;
            return;
        }
        self.put(shard, hash, row, p);
    }

    /// File a row absent from the current generation, starting a new generation when it is full.
    fn put(&self, shard: &mut Shard, hash: u64, row: &[f64], p: f64) {
        if shard.current.len() >= self.per_generation {
            shard.previous = std::mem::take(&mut shard.current);
        }
        shard.current.push(hash, row, p);
    }

    /// Answer the `out.len()` rows of `x` (row-major, `width` values each): rows the cache holds
    /// are answered from it; the others, each distinct row once, in first-seen order, go to
    /// `score` in one batch (gathered, so `score` may keep it; `x` itself, borrowed, when the
    /// cache is off), and are remembered. A cache of capacity 0 sends every row. Returns the
    /// number of rows `score` was given (the rest were hits: cached, or repeated within `x`).
    pub fn answer<E>(
        &self,
        x: &[f64],
        width: usize,
        out: &mut [f64],
        score: impl FnOnce(Cow<'_, [f64]>, &mut [f64]) -> Result<(), E>,
    ) -> Result<usize, E> {
        let rows = out.len();
        if !self.enabled() || width == 0 || rows == 0 || x.len() != rows * width {
            score(Cow::Borrowed(x), out)?;
            return Ok(rows);
        }
        // Each row's hash, computed once from its values (compared bit for bit, never copied).
        let key = |i: usize| &x[i * width..(i + 1) * width];
        let hashes: Vec<u64> = (0..rows).map(|i| hash_values(key(i))).collect();
        // The rows grouped by shard, so that each shard is locked once per call, not once per row.
        let by_shard = ByShard::new(&hashes);
        let look_up = |&(shard, group): &(usize, &[u32])| -> Vec<(u32, Option<f64>)> {
            let mut shard = self.lock(shard);
            group.iter().map(|&i| (i, self.get_locked(&mut shard, hashes[i as usize], key(i as usize)))).collect()
        };
        let found: Vec<Vec<(u32, Option<f64>)>> = if rows <= PARALLEL_LOOKUP_ROWS || rayon::current_num_threads() == 1 {
            by_shard.groups().iter().map(look_up).collect()
        } else {
            use rayon::prelude::*;
            by_shard.groups().par_iter().map(look_up).collect()
        };
        // The rows the cache did not have, in order.
        let mut is_missing = vec![false; rows];
        for (i, p) in found.into_iter().flatten() {
            match p {
                Some(p) => out[i as usize] = p,
                None => is_missing[i as usize] = true,
            }
        }
        let missing: Vec<(usize, u64)> = (0..rows).filter(|&i| is_missing[i]).map(|i| (i, hashes[i])).collect();
        if missing.is_empty() {
            return Ok(0);
        }
        // Distinct missing rows, in first-seen order (`distinct`: their rows and hashes), and each
        // missing row's place among them.
        let mut first: HashTable<u32> = HashTable::with_capacity(missing.len());
        let mut distinct: Vec<(usize, u64)> = Vec::with_capacity(missing.len());
        let mut slot_of: Vec<u32> = Vec::with_capacity(missing.len());
        for &(i, hash) in &missing {
            let found = first.find(hash, |&d| same_bits(key(distinct[d as usize].0).iter().map(|v| v.to_bits()), key(i))).copied();
            let slot = match found {
                Some(d) => d,
                None => {
                    let d = distinct.len() as u32;
                    distinct.push((i, hash));
                    first.insert_unique(hash, d, |&d| distinct[d as usize].1);
                    d
                }
            };
            slot_of.push(slot);
        }
        let mut batch = Vec::with_capacity(distinct.len() * width);
        for &(i, _) in &distinct {
            batch.extend_from_slice(&x[i * width..(i + 1) * width]);
        }
        let mut scored = vec![0.0; distinct.len()];
        score(Cow::Owned(batch), &mut scored)?;
        for (&(i, _), &slot) in missing.iter().zip(&slot_of) {
            out[i] = scored[slot as usize];
        }
        let distinct_hashes: Vec<u64> = distinct.iter().map(|&(_, hash)| hash).collect();
        for (shard, group) in ByShard::new(&distinct_hashes).groups() {
            let mut shard = self.lock(shard);
            for &d in group {
                let (i, hash) = distinct[d as usize];
                self.insert_locked(&mut shard, hash, key(i), scored[d as usize]);
            }
        }
        Ok(distinct.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_it_was_given_and_keys_by_bit_pattern() {
        let cache = ScoreCache::new(1000);
        cache.insert(&encode(&[1.0, 2.0]), 0.25);
        assert_eq!(cache.get(&encode(&[1.0, 2.0])), Some(0.25));
        assert_eq!(cache.get(&encode(&[1.0, 2.5])), None);
        assert_eq!(cache.get(&encode(&[-0.0, 2.0])), None);
        cache.insert(&encode(&[0.0, 2.0]), 0.5);
        assert_eq!(cache.get(&encode(&[-0.0, 2.0])), None, "-0.0 is not 0.0 here");
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn never_holds_more_than_its_capacity_and_keeps_recently_used_rows() {
        let cache = ScoreCache::new(640);
        assert_eq!(cache.capacity(), 640);
        let hot = encode(&[-1.0]);
        cache.insert(&hot, 0.75);
        for i in 0..100_000 {
            cache.insert(&encode(&[i as f64]), i as f64);
            assert_eq!(cache.get(&hot), Some(0.75), "a row used all the time is kept (row {i})");
        }
        assert!(cache.len() <= cache.capacity(), "{} rows in a cache of {}", cache.len(), cache.capacity());
        assert!(cache.len() >= cache.capacity() / 2, "the cache is used: {} rows", cache.len());
        assert_eq!(cache.get(&encode(&[0.0])), None, "an old row was evicted");
        assert_eq!(cache.get(&encode(&[99_999.0])), Some(99_999.0), "the newest row is there");
    }

    #[test]
    fn answer_sends_each_new_row_once_and_keeps_the_order() {
        let cache = ScoreCache::new(1000);
        fn score(sent: &mut Vec<f64>) -> impl FnOnce(Cow<'_, [f64]>, &mut [f64]) -> Result<(), &'static str> + '_ {
            move |x, out| {
                sent.extend_from_slice(&x);
                x.iter().zip(out.iter_mut()).for_each(|(v, o)| *o = v / 10.0);
                Ok(())
            }
        }
        let (mut sent, mut out) = (Vec::new(), vec![0.0; 4]);
        assert_eq!(cache.answer(&[3.0, 1.0, 3.0, 2.0], 1, &mut out, score(&mut sent)), Ok(3));
        assert_eq!((sent.as_slice(), out.as_slice()), ([3.0, 1.0, 2.0].as_slice(), [0.3, 0.1, 0.3, 0.2].as_slice()));
        let (mut sent, mut out) = (Vec::new(), vec![0.0; 3]);
        assert_eq!(cache.answer(&[2.0, 4.0, 1.0], 1, &mut out, score(&mut sent)), Ok(1), "only the new row is sent");
        assert_eq!((sent.as_slice(), out.as_slice()), ([4.0].as_slice(), [0.2, 0.4, 0.1].as_slice()));
        let off = ScoreCache::new(0);
        let (mut sent, mut out) = (Vec::new(), vec![0.0; 2]);
        assert_eq!(off.answer(&[5.0, 5.0], 1, &mut out, score(&mut sent)), Ok(2), "capacity 0 sends every row");
        assert_eq!(sent, [5.0, 5.0]);
        let failed = cache.answer(&[9.0], 1, &mut [0.0], |_: Cow<'_, [f64]>, _: &mut [f64]| Err("server down"));
        assert_eq!(failed, Err("server down"));
        assert_eq!(cache.get(&encode(&[9.0])), None, "a failed row is not remembered");
    }

    #[test]
    fn capacity_zero_holds_nothing() {
        let cache = ScoreCache::new(0);
        cache.insert(&encode(&[1.0]), 0.5);
        assert_eq!(cache.get(&encode(&[1.0])), None);
        assert!(cache.is_empty());
        assert!(!cache.enabled());
    }

    #[test]
    fn concurrent_use_agrees_with_sequential_use() {
        use rayon::prelude::*;
        let cache = ScoreCache::new(1 << 20);
        (0..50_000u32).into_par_iter().for_each(|i| {
            let row = [f64::from(i % 5_000), 1.0];
            match cache.get(&encode(&row)) {
                Some(p) => assert_eq!(p, row[0] * 0.5),
                None => cache.insert(&encode(&row), row[0] * 0.5),
            }
        });
        assert_eq!(cache.len(), 5_000);
    }
}
