//! The shared cache of scored rows: P(favourable) of every row a plugin asked the model about,
//! keyed by the row's fingerprint (see below), so that a row asked for again — Aequitas' fully
//! directed strategy asks for the same rows dozens of times — is answered without the model.
//!
//! A cache belongs to an [`crate::oracle::Oracle`] and its clones, and serves every `predict` call
//! of the plugin runs given that oracle, from any thread. The host gives **each plugin run its own**
//! (each `generate` block of seeds, each `group_score`; [`crate::oracle::Oracle::with_fresh_cache`]):
//! a cache shared across stages would make `rows_scored` depend on what ran before and on how a
//! stage is split into units or shards, and the figures of a sharded run must equal the unsharded
//! run's. The host's own checks (`verify`, `estimate`, `check`, accuracy) do not go through it:
//! they score what they score. A remote model keeps one for the whole run (its rows cost a request).
//!
//! **Fingerprints, not rows.** A row is known by the 128-bit XXH3 hash of its values' bit patterns
//! (so `0.0` and `-0.0`, or two NaNs with different payloads, are different rows — the model sees
//! them as they are). The cache stores that fingerprint and the probability, never the row: filing
//! a row appends 24 bytes whatever its width, and a lookup compares 16 bytes. Two different rows
//! share a fingerprint with probability 2⁻¹²⁸ (XXH3-128 passes SMHasher's collision tests; the
//! rows are not crafted against it): over a run of n distinct rows the chance that any two collide
//! is about n²/2¹²⁹ — below 10⁻²⁰ for a billion rows. (Keyed by the whole row, the cache had been
//! about half of a remote audit's client CPU: 8 bytes per attribute to copy, to compare and to
//! bring in from memory.)
//!
//! **Bounded memory.** The cache holds at most [`ScoreCache::capacity`] rows (default
//! [`DEFAULT_CACHE_ROWS`], set with `FAIRPIPE_CACHE_ROWS`; `0` turns the cache off). A row costs
//! its 24-byte entry and 16 to 32 bytes of index (8-byte slots, a quarter to a half full): under
//! 60 bytes a row whatever the row's width, so the default is under 60 MB.
//!
//! **One hash per row, one lock per shard.** A row is hashed once per call; its fingerprint chooses
//! the shard (high half), finds the row in the tables and joins repeats within the call (low
//! half). [`ScoreCache::answer`] groups a call's rows by shard and locks each shard once to look
//! its rows up and once to file the new ones (a lock per row had cost a remote audit about 7% of
//! fairpipe's CPU).
//!
//! **Eviction: two generations per shard.** The rows are spread over [`SHARDS`] shards, each
//! behind its own mutex (rayon threads asking for rows of different shards do not wait for each
//! other). A shard keeps a *current* and a *previous* table of at most `capacity / (2 × SHARDS)`
//! rows each; new rows go into the current one, and when it is full the previous table is dropped
//! and the current one becomes the previous one. A row found in the previous table is copied back
//! into the current one. This approximates least-recently-used eviction at O(1) cost per row: a
//! row used at least once per generation stays.
//!
//! Results do not depend on the cache: a model gives the same probability for the same row (the
//! models fairpipe runs score each row independently of the others in its batch), so the cases a
//! search finds are the same with the cache, without it, or with any capacity; only the number of
//! rows sent to the model changes.

use std::borrow::Cow;
use std::sync::Mutex;

use hashbrown::HashTable;
use rayon::prelude::*;

/// Rows the cache holds at most unless `FAIRPIPE_CACHE_ROWS` says otherwise (under 60 MB).
pub const DEFAULT_CACHE_ROWS: usize = 1_000_000;

/// The environment variable that sets the capacity in rows (`0`: no cache).
pub const CACHE_ROWS_ENV: &str = "FAIRPIPE_CACHE_ROWS";

/// Number of independently locked shards.
pub const SHARDS: usize = 16;

/// Above this many rows, [`ScoreCache::answer`] hashes and looks rows up on the rayon pool.
const PARALLEL_LOOKUP_ROWS: usize = 16_384;

/// Rows whose slots are touched together before they are probed (see [`Generation`]): enough
/// reads in flight to hide the memory's latency, few enough to stay in the first-level cache.
const TOUCH_AHEAD: usize = 32;

/// A row's fingerprint: the 128-bit XXH3 hash of its values' bit patterns (see the module
/// documentation). `low` places the row in a table, `high` chooses its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    low: u64,
    high: u64,
}

impl Fingerprint {
    /// The fingerprint of a row of values.
    pub fn of(row: &[f64]) -> Self {
        let hash = xxhash_rust::xxh3::xxh3_128(bytemuck::cast_slice(row));
        Fingerprint { low: hash as u64, high: (hash >> 64) as u64 }
    }

    /// The row's shard.
    fn shard(self) -> usize {
        (self.high % SHARDS as u64) as usize
    }
}

/// A row held: its fingerprint and its probability.
#[derive(Clone, Copy)]
struct Entry {
    fingerprint: Fingerprint,
    p: f64,
}

/// A slot of a generation's index: 32 bits of the row's fingerprint (its tag) and the row's
/// place in the generation's entries, plus one (`0`: a free slot).
#[derive(Clone, Copy, Default)]
struct Slot {
    tag: u32,
    place: u32,
}

impl Slot {
    /// The slot of the row with `fingerprint` at `place` in the entries.
    fn of(fingerprint: Fingerprint, place: usize) -> Self {
        Slot { tag: tag_of(fingerprint), place: place as u32 + 1 }
    }

    fn is_free(self) -> bool {
        self.place == 0
    }
}

/// The tag of a fingerprint: bits its slot does not already say (the table places rows by the
/// low bits of `low`, the shard comes from `high`).
fn tag_of(fingerprint: Fingerprint) -> u32 {
    (fingerprint.low >> 32) as u32
}

/// The rows of one generation of a shard: the rows end to end (`entries`, 24 bytes each) and an
/// open-addressing index over them (linear probing from the slot the fingerprint's low bits name;
/// 8-byte slots, at most [`Generation::MAX_LOAD`] full, doubled when it would be fuller).
///
/// Built for memory rather than for instructions: a remote audit's cache outgrows the
/// processor's caches, and each row asked for costs a lookup in slots scattered over it. Eight
/// rows' slots share a cache line, a row that is not here is told by its slot alone (its tag
/// differs; the entry is read only when the tag matches), a new row is appended (no random
/// write of 24 bytes), and a call's rows are [touched](Generation::touch) a group at a time
/// before they are probed, so that their memory reads overlap instead of waiting for each in
/// turn. (A general hash map holding the same 24-byte entries had cost a remote audit about 120 ns
/// a row filed, a memory read each.)
#[derive(Default)]
struct Generation {
    entries: Vec<Entry>,
    slots: Vec<Slot>,
}

impl Generation {
    /// Slots of a table's first allocation.
    const MIN_SLOTS: usize = 64;
    /// Most rows per slot (1/2): linear probing reads about 1.5 slots for a row that is there
    /// and 2.5 for one that is not (fewer below the limit), nearly always in one cache line.
    const MAX_LOAD: (usize, usize) = (1, 2);

    /// An empty generation ready for `rows` rows without growing.
    fn with_room(rows: usize) -> Self {
        let slots = (rows * Self::MAX_LOAD.1).div_ceil(Self::MAX_LOAD.0).next_power_of_two().max(Self::MIN_SLOTS);
        Generation { entries: Vec::with_capacity(rows), slots: vec![Slot::default(); slots] }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    /// The slot a fingerprint's probe starts at (the table has slots).
    fn home(&self, fingerprint: Fingerprint) -> usize {
        fingerprint.low as usize & (self.slots.len() - 1)
    }

    /// Read `fingerprint`'s home slot, and its entry when the tag matches, so that the probe that
    /// follows finds them in the cache (see the type's documentation).
    fn touch(&self, fingerprint: Fingerprint) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        let slot = self.slots[self.home(fingerprint)];
        if slot.tag == tag_of(fingerprint) && !slot.is_free() {
            return self.entries[slot.place as usize - 1].fingerprint.high;
        }
        u64::from(slot.place)
    }

    /// The slot holding `fingerprint`, or the free slot where it goes (the index has a free
    /// slot), and whether it holds it.
    fn probe(&self, fingerprint: Fingerprint) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let tag = tag_of(fingerprint);
        let mut i = self.home(fingerprint);
        loop {
            let slot = self.slots[i];
            if slot.is_free() {
                return (i, false);
            }
            if slot.tag == tag && self.entries[slot.place as usize - 1].fingerprint == fingerprint {
                return (i, true);
            }
            i = (i + 1) & mask;
        }
    }

    /// The probability of the row with `fingerprint`, if it is here.
    fn find(&self, fingerprint: Fingerprint) -> Option<f64> {
        if self.slots.is_empty() {
            return None;
        }
        match self.probe(fingerprint) {
            (i, true) => Some(self.entries[self.slots[i].place as usize - 1].p),
            (_, false) => None,
        }
    }

    /// Set the probability of the row with `fingerprint`, adding the row if it is not here.
    fn put(&mut self, fingerprint: Fingerprint, p: f64) {
        if (self.len() + 1) * Self::MAX_LOAD.1 > self.slots.len() * Self::MAX_LOAD.0 {
            self.grow();
        }
        match self.probe(fingerprint) {
            (i, true) => self.entries[self.slots[i].place as usize - 1].p = p,
            (i, false) => {
                self.slots[i] = Slot::of(fingerprint, self.entries.len());
                self.entries.push(Entry { fingerprint, p });
            }
        }
    }

    /// Double the slots (or make the first ones) and index every row again.
    fn grow(&mut self) {
        self.slots = vec![Slot::default(); (self.slots.len() * 2).max(Self::MIN_SLOTS)];
        for place in 0..self.entries.len() {
            let fingerprint = self.entries[place].fingerprint;
            let (i, _) = self.probe(fingerprint);
            self.slots[i] = Slot::of(fingerprint, place);
        }
    }
}

/// The indices of `fingerprints` grouped by shard (a counting sort), each group in index order:
/// `order[starts[s]..starts[s + 1]]` are shard `s`'s.
struct ByShard {
    order: Vec<u32>,
    starts: [usize; SHARDS + 1],
}

impl ByShard {
    fn new(fingerprints: &[Fingerprint]) -> Self {
        let mut starts = [0usize; SHARDS + 1];
        for f in fingerprints {
            starts[f.shard() + 1] += 1;
        }
        for s in 0..SHARDS {
            starts[s + 1] += starts[s];
        }
        let mut next = starts;
        let mut order = vec![0u32; fingerprints.len()];
        for (i, f) in fingerprints.iter().enumerate() {
            let s = f.shard();
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

#[derive(Default)]
struct Shard {
    current: Generation,
    previous: Generation,
}

/// A bounded, sharded map from rows (by fingerprint) to P(favourable) (see the module
/// documentation).
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
        (0..SHARDS)
            .map(|s| {
                let shard = self.lock(s);
                shard.current.len() + shard.previous.len()
            })
            .sum()
    }

    /// Whether the cache holds no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self, shard: usize) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[shard].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached probability of `row`, if any (a row found in the previous generation is moved
    /// into the current one).
    pub fn get(&self, row: &[f64]) -> Option<f64> {
        if !self.enabled() {
            return None;
        }
        let fingerprint = Fingerprint::of(row);
        self.get_locked(&mut self.lock(fingerprint.shard()), fingerprint)
    }

    /// [`Self::get`] in a shard already locked.
    fn get_locked(&self, shard: &mut Shard, fingerprint: Fingerprint) -> Option<f64> {
        if let Some(p) = shard.current.find(fingerprint) {
            return Some(p);
        }
        let p = shard.previous.find(fingerprint)?;
        // Left in the previous generation too: it is dropped whole when its turn comes.
        self.file_locked(shard, fingerprint, p);
        Some(p)
    }

    /// Remember `p` for `row`.
    pub fn insert(&self, row: &[f64], p: f64) {
        if !self.enabled() {
            return;
        }
        let fingerprint = Fingerprint::of(row);
        self.file_locked(&mut self.lock(fingerprint.shard()), fingerprint, p);
    }

    /// File `p` for the row with `fingerprint` in the current generation of a shard already
    /// locked, starting a new generation first when the current one is full and the row is not
    /// in it (the new one is sized for a whole generation: it will fill as far).
    fn file_locked(&self, shard: &mut Shard, fingerprint: Fingerprint, p: f64) {
        if shard.current.len() >= self.per_generation && shard.current.find(fingerprint).is_none() {
            shard.previous = std::mem::replace(&mut shard.current, Generation::with_room(self.per_generation));
        }
        shard.current.put(fingerprint, p);
    }

    /// Read the home slots of a group of rows in both generations of a locked shard, so that the
    /// lookups or filings that follow find them in the cache (see [`Generation`]).
    fn touch_group(shard: &Shard, fingerprints: impl Iterator<Item = Fingerprint>) {
        let mut seen = 0u64;
        for fingerprint in fingerprints {
            seen ^= shard.current.touch(fingerprint) ^ shard.previous.touch(fingerprint);
        }
        std::hint::black_box(seen);
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
        let parallel = rows > PARALLEL_LOOKUP_ROWS && rayon::current_num_threads() > 1;
        // Each row's fingerprint, computed once.
        let fingerprints: Vec<Fingerprint> = if parallel {
            x.par_chunks_exact(width).map(Fingerprint::of).collect()
        } else {
            x.chunks_exact(width).map(Fingerprint::of).collect()
        };
        // The rows grouped by shard, so that each shard is locked once per call, not once per row.
        let by_shard = ByShard::new(&fingerprints);
        let look_up = |&(shard, group): &(usize, &[u32])| -> Vec<(u32, Option<f64>)> {
            let mut shard = self.lock(shard);
            let mut found = Vec::with_capacity(group.len());
            for part in group.chunks(TOUCH_AHEAD) {
                Self::touch_group(&shard, part.iter().map(|&i| fingerprints[i as usize]));
                found.extend(part.iter().map(|&i| (i, self.get_locked(&mut shard, fingerprints[i as usize]))));
            }
            found
        };
        let found: Vec<Vec<(u32, Option<f64>)>> =
            if parallel { by_shard.groups().par_iter().map(look_up).collect() } else { by_shard.groups().iter().map(look_up).collect() };
        // The rows the cache did not have, in order.
        let mut is_missing = vec![false; rows];
        for (i, p) in found.into_iter().flatten() {
            match p {
                Some(p) => out[i as usize] = p,
                None => is_missing[i as usize] = true,
            }
        }
        // Distinct missing rows, in first-seen order (`distinct`: their indices in `x`), and each
        // missing row's place among them.
        let missing: Vec<usize> = (0..rows).filter(|&i| is_missing[i]).collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let mut first: HashTable<u32> = HashTable::with_capacity(missing.len());
        let mut distinct: Vec<usize> = Vec::with_capacity(missing.len());
        let mut slot_of: Vec<u32> = Vec::with_capacity(missing.len());
        for &i in &missing {
            let fingerprint = fingerprints[i];
            let same = |&d: &u32| fingerprints[distinct[d as usize]] == fingerprint;
            let slot = match first.find(fingerprint.low, same) {
                Some(&d) => d,
                None => {
                    let d = distinct.len() as u32;
                    distinct.push(i);
                    first.insert_unique(fingerprint.low, d, |&d| fingerprints[distinct[d as usize]].low);
                    d
                }
            };
            slot_of.push(slot);
        }
        let mut batch = Vec::with_capacity(distinct.len() * width);
        for &i in &distinct {
            batch.extend_from_slice(&x[i * width..(i + 1) * width]);
        }
        let mut scored = vec![0.0; distinct.len()];
        score(Cow::Owned(batch), &mut scored)?;
        for (&i, &slot) in missing.iter().zip(&slot_of) {
            out[i] = scored[slot as usize];
        }
        let distinct_fingerprints: Vec<Fingerprint> = distinct.iter().map(|&i| fingerprints[i]).collect();
        for (shard, group) in ByShard::new(&distinct_fingerprints).groups() {
            let mut shard = self.lock(shard);
            for part in group.chunks(TOUCH_AHEAD) {
                Self::touch_group(&shard, part.iter().map(|&d| distinct_fingerprints[d as usize]));
                for &d in part {
                    self.file_locked(&mut shard, distinct_fingerprints[d as usize], scored[d as usize]);
                }
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
        cache.insert(&[1.0, 2.0], 0.25);
        assert_eq!(cache.get(&[1.0, 2.0]), Some(0.25));
        assert_eq!(cache.get(&[1.0, 2.5]), None);
        assert_eq!(cache.get(&[-0.0, 2.0]), None);
        cache.insert(&[0.0, 2.0], 0.5);
        assert_eq!(cache.get(&[-0.0, 2.0]), None, "-0.0 is not 0.0 here");
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn never_holds_more_than_its_capacity_and_keeps_recently_used_rows() {
        let cache = ScoreCache::new(640);
        assert_eq!(cache.capacity(), 640);
        let hot = [-1.0];
        cache.insert(&hot, 0.75);
        for i in 0..100_000 {
            cache.insert(&[i as f64], i as f64);
            assert_eq!(cache.get(&hot), Some(0.75), "a row used all the time is kept (row {i})");
        }
        assert!(cache.len() <= cache.capacity(), "{} rows in a cache of {}", cache.len(), cache.capacity());
        assert!(cache.len() >= cache.capacity() / 2, "the cache is used: {} rows", cache.len());
        assert_eq!(cache.get(&[0.0]), None, "an old row was evicted");
        assert_eq!(cache.get(&[99_999.0]), Some(99_999.0), "the newest row is there");
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
        assert_eq!(cache.get(&[9.0]), None, "a failed row is not remembered");
    }

    #[test]
    fn capacity_zero_holds_nothing() {
        let cache = ScoreCache::new(0);
        cache.insert(&[1.0], 0.5);
        assert_eq!(cache.get(&[1.0]), None);
        assert!(cache.is_empty());
        assert!(!cache.enabled());
    }

    #[test]
    fn concurrent_use_agrees_with_sequential_use() {
        use rayon::prelude::*;
        let cache = ScoreCache::new(1 << 20);
        (0..50_000u32).into_par_iter().for_each(|i| {
            let row = [f64::from(i % 5_000), 1.0];
            match cache.get(&(row)) {
                Some(p) => assert_eq!(p, row[0] * 0.5),
                None => cache.insert(&(row), row[0] * 0.5),
            }
        });
        assert_eq!(cache.len(), 5_000);
    }
}
