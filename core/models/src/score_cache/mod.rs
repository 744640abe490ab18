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
//! **One hash per row, one visit per row.** A row is hashed once per call; its fingerprint
//! chooses the shard (high half) and finds the row in the tables (low half). [`ScoreCache::answer`]
//! groups a call's rows by shard and locks each shard once to look its rows up and once to file
//! their answers (a lock per row had cost a remote audit about 7% of fairpipe's CPU). A row the
//! cache does not hold gets its entry in the same visit, marked *pending* with the index of the
//! call's row that sends it: a repeat of it later in the call finds the mark and shares that row's
//! answer, and the answer is written into the entry by its place, without a second search (the
//! entries of a call are appended together, so filing them writes neighbouring memory). A row
//! pending for another call still in flight, or for a call whose model failed, is taken over and
//! sent again: a row is never waited for, and a failure leaves nothing wrong behind.
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

use rayon::prelude::*;

mod auto;

pub use auto::{repeats_that_pay, CacheChoice, CacheSwitch, AUTO_WINDOW_ROWS};

/// Rows the cache holds at most unless `FAIRPIPE_CACHE_ROWS` says otherwise (under 60 MB).
pub const DEFAULT_CACHE_ROWS: usize = 1_000_000;

/// The environment variable that sets the capacity in rows (`0`: no cache).
pub const CACHE_ROWS_ENV: &str = "FAIRPIPE_CACHE_ROWS";

/// Number of independently locked shards.
pub const SHARDS: usize = 16;

/// Above this many rows, [`ScoreCache::answer`] hashes and looks rows up on the rayon pool. SG's
/// 5,000-row explanation batches are the reason it is not higher: looked up on one thread they
/// held census-sg's search to 1.54–1.76 s on 2 cores, on the pool to 1.47–1.62 s (release, quiet
/// machine, 4 alternating runs; 16,384 before 2026-11-26).
const PARALLEL_LOOKUP_ROWS: usize = 4_096;

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

/// A row held: its fingerprint and its probability, or — while the row is out at the model —
/// a [pending](pending) mark naming the row of the call that sent it.
#[derive(Clone, Copy)]
struct Entry {
    fingerprint: Fingerprint,
    p: f64,
}

impl Entry {
    /// The row's probability, or `None` while it is out at the model.
    fn probability(self) -> Option<f64> {
        Some(self.p).filter(|&p| pending_row(p).is_none())
    }
}

/// The high half of a pending mark: a negative quiet NaN, which no model's probability is (a
/// NaN is never filed: [`ScoreCache::answer`] and [`ScoreCache::insert`] skip it).
const PENDING: u64 = 0xFFF8_0000_0000_0000;

/// The mark of a row out at the model, sent by row `row` of the call that asked for it.
fn pending(row: u32) -> f64 {
    f64::from_bits(PENDING | u64::from(row))
}

/// The row that sent a pending entry, or `None` for a probability.
fn pending_row(p: f64) -> Option<u32> {
    let bits = p.to_bits();
    (bits >> 32 == PENDING >> 32).then_some(bits as u32)
}

/// A slot of a generation's index: 32 bits of the row's fingerprint (its tag) in the high half,
/// the row's place in the generation's entries plus one in the low half (`0`: a free slot). Plain
/// integers, so that a new index is zeroed memory the system hands over untouched (a row asked
/// for touches only its own slots' pages).
#[derive(Clone, Copy)]
struct Slot(u64);

impl Slot {
    /// The slot of the row with `fingerprint` at `place` in the entries.
    fn of(fingerprint: Fingerprint, place: usize) -> Self {
        Slot(u64::from(tag_of(fingerprint)) << 32 | (place as u64 + 1))
    }

    fn tag(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The row's place in the entries (the slot is not free).
    fn place(self) -> usize {
        (self.0 as u32 - 1) as usize
    }

    fn is_free(self) -> bool {
        self.0 as u32 == 0
    }
}

/// The tag of a fingerprint: bits its slot does not already say (the table places rows by the
/// low bits of `low`, the shard comes from `high`).
fn tag_of(fingerprint: Fingerprint) -> u32 {
    (fingerprint.low >> 32) as u32
}

/// The rows of one generation of a shard: the rows end to end (`entries`, 24 bytes each) and an
/// open-addressing index over them (linear probing from the slot the fingerprint's low bits name;
/// 8-byte slots, at most [`Generation::MAX_LOAD`] full, doubled when it would be fuller). A
/// generation's entries never move and are never removed, so `(number, place)` names a row's
/// entry for as long as the generation lives.
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
    /// Which generation of its shard this is (the first is 1; 0 names none).
    number: u32,
    entries: Vec<Entry>,
    slots: Vec<u64>,
}

impl Generation {
    /// Slots of a table's first allocation.
    const MIN_SLOTS: usize = 64;
    /// Most rows per slot (1/2): linear probing reads about 1.5 slots for a row that is there
    /// and 2.5 for one that is not (fewer below the limit), nearly always in one cache line.
    const MAX_LOAD: (usize, usize) = (1, 2);

    /// An empty generation numbered `number`, ready for `rows` rows without growing.
    fn with_room(number: u32, rows: usize) -> Self {
        let slots = (rows * Self::MAX_LOAD.1).div_ceil(Self::MAX_LOAD.0).next_power_of_two().max(Self::MIN_SLOTS);
        Generation { number, entries: Vec::with_capacity(rows), slots: vec![0; slots] }
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
        let slot = Slot(self.slots[self.home(fingerprint)]);
        if slot.tag() == tag_of(fingerprint) && !slot.is_free() {
            return self.entries[slot.place()].fingerprint.high;
        }
        slot.0
    }

    /// The place of `fingerprint`'s entry, or the free slot where it goes (`Err`; the index
    /// has a free slot).
    fn probe(&self, fingerprint: Fingerprint) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let tag = tag_of(fingerprint);
        let mut i = self.home(fingerprint);
        loop {
            let slot = Slot(self.slots[i]);
            if slot.is_free() {
                return Err(i);
            }
            let place = slot.place();
            if slot.tag() == tag && self.entries[place].fingerprint == fingerprint {
                return Ok(place);
            }
            i = (i + 1) & mask;
        }
    }

    /// The place of `fingerprint`'s entry, if it is here.
    fn find(&self, fingerprint: Fingerprint) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        self.probe(fingerprint).ok()
    }

    /// Append an entry for a row that is not here (`free`: where its probe ended, if the index
    /// has been probed for it since it last changed); its place.
    fn add(&mut self, fingerprint: Fingerprint, p: f64, free: Option<usize>) -> usize {
        let free = match free {
            Some(slot) if (self.len() + 1) * Self::MAX_LOAD.1 <= self.slots.len() * Self::MAX_LOAD.0 => slot,
            _ => {
                if (self.len() + 1) * Self::MAX_LOAD.1 > self.slots.len() * Self::MAX_LOAD.0 {
                    self.grow();
                }
                self.probe(fingerprint).expect_err("a row is added only when it is not here")
            }
        };
        let place = self.entries.len();
        self.slots[free] = Slot::of(fingerprint, place).0;
        self.entries.push(Entry { fingerprint, p });
        place
    }

    /// Double the slots (or make the first ones) and index every row again.
    fn grow(&mut self) {
        self.slots = vec![0; (self.slots.len() * 2).max(Self::MIN_SLOTS)];
        for place in 0..self.entries.len() {
            let fingerprint = self.entries[place].fingerprint;
            let free = self.probe(fingerprint).expect_err("each row is indexed once");
            self.slots[free] = Slot::of(fingerprint, place).0;
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

/// One shard's two generations (see the module documentation).
struct Shard {
    current: Generation,
    previous: Generation,
}

impl Default for Shard {
    fn default() -> Self {
        // The current generation always has slots (it is probed without checking); the previous
        // one, number 0, is none until the first turn.
        Shard { current: Generation::with_room(1, 0), previous: Generation::default() }
    }
}

impl Shard {
    /// The generation numbered `number`, if it still lives.
    fn generation_mut(&mut self, number: u32) -> Option<&mut Generation> {
        if self.current.number == number {
            Some(&mut self.current)
        } else if self.previous.number == number && number != 0 {
            Some(&mut self.previous)
        } else {
            None
        }
    }
}

/// Where a row's entry is: its generation's number and its place there.
#[derive(Clone, Copy, Debug, PartialEq)]
struct EntryAt {
    generation: u32,
    place: u32,
}

/// What a call's look-up says of one of its rows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answer {
    /// The cache knows its probability.
    Known(f64),
    /// The call sends it; its answer is filed at this entry (marked pending until then).
    Send(EntryAt),
    /// The same row as this earlier row of the call, which sends it.
    SameAs(u32),
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

/// `FAIRPIPE_CACHE_ROWS` holds something other than a whole number of rows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{CACHE_ROWS_ENV}={text:?} is not a whole number of rows (0 turns the score cache off)")]
pub struct CacheRowsError {
    /// The variable's value.
    pub text: String,
}

impl ScoreCache {
    /// A cache of at most `capacity` rows; `0` makes a cache that holds nothing.
    pub fn new(capacity: usize) -> Self {
        let shards = (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect();
        ScoreCache { shards, capacity, per_generation: capacity.div_ceil(2 * SHARDS) }
    }

    /// The capacity from `FAIRPIPE_CACHE_ROWS` (a whole number of rows), else
    /// [`DEFAULT_CACHE_ROWS`]; an unreadable value is an error naming the variable.
    pub fn capacity_from_env() -> Result<usize, CacheRowsError> {
        match std::env::var(CACHE_ROWS_ENV) {
            Err(_) => Ok(DEFAULT_CACHE_ROWS),
            Ok(text) => text.trim().parse::<usize>().map_err(|_| CacheRowsError { text }),
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

    /// Rows held now (rows out at the model included).
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

    /// The cached probability of `row`, if any (a row found in the previous generation is copied
    /// into the current one; a row out at the model has none yet).
    pub fn get(&self, row: &[f64]) -> Option<f64> {
        if !self.enabled() {
            return None;
        }
        let fingerprint = Fingerprint::of(row);
        let mut shard = self.lock(fingerprint.shard());
        if let Some(place) = shard.current.find(fingerprint) {
            return shard.current.entries[place].probability();
        }
        let place = shard.previous.find(fingerprint)?;
        let p = shard.previous.entries[place].probability()?;
        self.add_locked(&mut shard, fingerprint, p, None);
        Some(p)
    }

    /// Remember `p` for `row` (a NaN is not remembered).
    pub fn insert(&self, row: &[f64], p: f64) {
        if !self.enabled() || p.is_nan() {
            return;
        }
        let fingerprint = Fingerprint::of(row);
        let mut shard = self.lock(fingerprint.shard());
        match shard.current.find(fingerprint) {
            Some(place) => shard.current.entries[place].p = p,
            None => {
                self.add_locked(&mut shard, fingerprint, p, None);
            }
        }
    }

    /// Add an entry (`p`: a probability or a pending mark) for a row that is not in the current
    /// generation of a locked shard, starting a new generation first when the current one is full
    /// (the new one is sized for a whole generation: it will fill as far); where it went. `free`:
    /// where the row's probe of the current generation ended, if it was just probed.
    fn add_locked(&self, shard: &mut Shard, fingerprint: Fingerprint, p: f64, free: Option<usize>) -> EntryAt {
        let mut free = free;
        if shard.current.len() >= self.per_generation {
            let number = shard.current.number.wrapping_add(1).max(1);
            shard.previous = std::mem::replace(&mut shard.current, Generation::with_room(number, self.per_generation));
            free = None;
        }
        let place = shard.current.add(fingerprint, p, free);
        EntryAt { generation: shard.current.number, place: place as u32 }
    }

    /// What the cache says of row `row` of a call (`fingerprints`: the call's rows'), in a locked
    /// shard: its probability if known; else the earlier row of the call that sends it; else this
    /// row sends it, and its entry (added, or found pending for another call or a call that
    /// failed) is marked pending for it.
    fn look_up_locked(&self, shard: &mut Shard, fingerprints: &[Fingerprint], row: u32) -> Answer {
        let fingerprint = fingerprints[row as usize];
        // The row itself is sent by `sender` of this call if that earlier row has the same
        // fingerprint: the call's rows of a shard are looked up in order, under its lock, and
        // an earlier row with this fingerprint either found the probability, or sent the row
        // (marking it with its own index), or joined an even earlier row's mark.
        let own = |sender: u32| sender < row && fingerprints[sender as usize] == fingerprint;
        let (in_current, place) = match shard.current.probe(fingerprint) {
            Ok(place) => (true, place),
            Err(free) => {
                let Some(place) = shard.previous.find(fingerprint) else {
                    return Answer::Send(self.add_locked(shard, fingerprint, pending(row), Some(free)));
                };
                if let Some(p) = shard.previous.entries[place].probability() {
                    // Used again: copied into the current generation.
                    self.add_locked(shard, fingerprint, p, Some(free));
                    return Answer::Known(p);
                }
                (false, place)
            }
        };
        let generation = if in_current { &mut shard.current } else { &mut shard.previous };
        let number = generation.number;
        let entry = &mut generation.entries[place];
        match pending_row(entry.p) {
            None => Answer::Known(entry.p),
            Some(sender) if own(sender) => Answer::SameAs(sender),
            Some(_) => {
                entry.p = pending(row);
                Answer::Send(EntryAt { generation: number, place: place as u32 })
            }
        }
    }

    /// Read the home slots of a group of rows in both generations of a locked shard, so that the
    /// look-ups that follow find them in the cache (see [`Generation`]).
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
    ///
    /// A row is looked up, and when it is new its entry added (marked pending), in one visit to
    /// its shard; the answers are then written into those entries by place, without a second
    /// search. A row another call has out at the model is sent again by this call too (never
    /// waited for); if `score` fails, the rows stay marked pending and the next call to ask for
    /// them sends them. A row repeated within `x` is sent once as long as the call's new rows fit
    /// in a generation of its shard (`capacity / 32` rows of each shard; past that the
    /// oldest marks may be evicted before their repeats are seen, and a repeat is sent again).
    pub fn answer<E>(
        &self,
        x: &[f64],
        width: usize,
        out: &mut [f64],
        score: impl FnOnce(Cow<'_, [f64]>, &mut [f64]) -> Result<(), E>,
    ) -> Result<usize, E> {
        let rows = out.len();
        if !self.enabled() || width == 0 || rows == 0 || x.len() != rows * width || rows > u32::MAX as usize {
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
        // The rows grouped by shard, so that each shard is locked once to look its rows up and
        // once to file their answers, not once per row.
        let by_shard = ByShard::new(&fingerprints);
        let look_up = |&(shard, group): &(usize, &[u32])| -> (usize, Vec<(u32, Answer)>) {
            let mut locked = self.lock(shard);
            let mut answers = Vec::with_capacity(group.len());
            for part in group.chunks(TOUCH_AHEAD) {
                Self::touch_group(&locked, part.iter().map(|&i| fingerprints[i as usize]));
                answers.extend(part.iter().map(|&i| (i, self.look_up_locked(&mut locked, &fingerprints, i))));
            }
            (shard, answers)
        };
        let groups = by_shard.groups();
        let looked_up: Vec<(usize, Vec<(u32, Answer)>)> =
            if parallel { groups.par_iter().map(look_up).collect() } else { groups.iter().map(look_up).collect() };
        // The rows to send, in first-seen order, and each one's place in the batch.
        let mut is_sent = vec![false; rows];
        for (_, answers) in &looked_up {
            for &(i, answer) in answers {
                match answer {
                    Answer::Known(p) => out[i as usize] = p,
                    Answer::Send(_) => is_sent[i as usize] = true,
                    Answer::SameAs(_) => {}
                }
            }
        }
        let sent: Vec<usize> = (0..rows).filter(|&i| is_sent[i]).collect();
        if sent.is_empty() {
            return Ok(0);
        }
        let mut in_batch = vec![0u32; rows];
        let mut batch = Vec::with_capacity(sent.len() * width);
        for (k, &i) in sent.iter().enumerate() {
            in_batch[i] = k as u32;
            batch.extend_from_slice(&x[i * width..(i + 1) * width]);
        }
        let mut scored = vec![0.0; sent.len()];
        score(Cow::Owned(batch), &mut scored)?;
        for (shard, answers) in &looked_up {
            let mut filed: Option<std::sync::MutexGuard<'_, Shard>> = None;
            for &(i, answer) in answers {
                match answer {
                    Answer::Known(_) => {}
                    Answer::SameAs(sender) => out[i as usize] = scored[in_batch[sender as usize] as usize],
                    Answer::Send(at) => {
                        let p = scored[in_batch[i as usize] as usize];
                        out[i as usize] = p;
                        let locked = filed.get_or_insert_with(|| self.lock(*shard));
                        // A generation dropped meanwhile took the entry with it: nothing to file.
                        if let Some(generation) = locked.generation_mut(at.generation).filter(|_| !p.is_nan()) {
                            generation.entries[at.place as usize].p = p;
                        }
                    }
                }
            }
        }
        Ok(sent.len())
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

    /// A stand-in model of rows of `width` values: P = a tenth of the row's first value; what it
    /// was sent goes to `sent`.
    fn tenth_of(width: usize, sent: &mut Vec<f64>) -> impl FnOnce(Cow<'_, [f64]>, &mut [f64]) -> Result<(), &'static str> + '_ {
        move |x, out| {
            sent.extend_from_slice(&x);
            x.chunks(width).zip(out.iter_mut()).for_each(|(row, o)| *o = row[0] / 10.0);
            Ok(())
        }
    }

    /// [`tenth_of`] rows of one value.
    fn tenth(sent: &mut Vec<f64>) -> impl FnOnce(Cow<'_, [f64]>, &mut [f64]) -> Result<(), &'static str> + '_ {
        tenth_of(1, sent)
    }

    #[test]
    fn a_row_out_at_the_model_for_another_call_is_sent_by_this_one_too() {
        let cache = ScoreCache::new(1000);
        let (mut sent_a, mut out_a) = (Vec::new(), vec![0.0; 2]);
        let (mut sent_b, mut out_b) = (Vec::new(), vec![0.0; 3]);
        // While call A has rows 1 and 2 out at the model, call B asks for 2, 3 and 2 again.
        let sent = cache.answer(&[1.0, 2.0], 1, &mut out_a, |x, out| {
            assert_eq!(cache.get(&[2.0]), None, "a pending row has no probability yet");
            let b = cache.answer(&[2.0, 3.0, 2.0], 1, &mut out_b, tenth(&mut sent_b));
            assert_eq!(b, Ok(2), "B sends 2 (not waiting for A) and 3, once each");
            tenth(&mut sent_a)(x, out)
        });
        assert_eq!(sent, Ok(2));
        assert_eq!((sent_a.as_slice(), out_a.as_slice()), ([1.0, 2.0].as_slice(), [0.1, 0.2].as_slice()));
        assert_eq!((sent_b.as_slice(), out_b.as_slice()), ([2.0, 3.0].as_slice(), [0.2, 0.3, 0.2].as_slice()));
        assert_eq!([1.0, 2.0, 3.0].map(|v| cache.get(&[v])), [Some(0.1), Some(0.2), Some(0.3)]);
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn a_failed_call_leaves_its_rows_to_the_next_call() {
        let cache = ScoreCache::new(1000);
        let failed = cache.answer(&[7.0, 8.0, 7.0], 1, &mut [0.0; 3], |_: Cow<'_, [f64]>, _: &mut [f64]| Err("server down"));
        assert_eq!(failed, Err("server down"));
        assert_eq!(cache.get(&[7.0]), None);
        let (mut sent, mut out) = (Vec::new(), vec![0.0; 3]);
        assert_eq!(cache.answer(&[8.0, 7.0, 8.0], 1, &mut out, tenth(&mut sent)), Ok(2));
        assert_eq!((sent.as_slice(), out.as_slice()), ([8.0, 7.0].as_slice(), [0.8, 0.7, 0.8].as_slice()));
        assert_eq!(cache.get(&[7.0]), Some(0.7));
        assert_eq!(cache.len(), 2, "the failed call's entries were taken over, not doubled");
    }

    #[test]
    fn answers_agree_with_the_model_whatever_the_capacity_and_the_repeats() {
        use rand::{Rng, SeedableRng};
        for capacity in [0, 40, 640, 100_000] {
            let cache = ScoreCache::new(capacity);
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(capacity as u64);
            let mut seen = std::collections::HashSet::new();
            for call in 0..200 {
                // Now and then a call large enough to be looked up on the rayon pool.
                let rows = if call % 50 == 49 { 20_000 } else { rng.gen_range(1..3000) };
                // At most 6,000 distinct rows: all of them fit in the largest cache.
                let x: Vec<f64> =
                    (0..rows).flat_map(|_| [f64::from(rng.gen_range(0..600u32)), f64::from(rng.gen_range(0..10u32))]).collect();
                let (mut sent, mut out) = (Vec::new(), vec![0.0; rows]);
                let n = cache.answer(&x, 2, &mut out, tenth_of(2, &mut sent)).unwrap();
                let expected: Vec<f64> = x.chunks(2).map(|r| r[0] / 10.0).collect();
                assert_eq!(out, expected, "capacity {capacity}, call {call}");
                assert_eq!(n * 2, sent.len());
                let new: std::collections::HashSet<[u64; 2]> =
                    x.chunks(2).map(|r| [r[0].to_bits(), r[1].to_bits()]).filter(|r| !seen.contains(r)).collect();
                if capacity == 100_000 {
                    // Everything fits: exactly the rows never asked for before, once each, in order.
                    assert_eq!(n, new.len(), "call {call}");
                    let mut first = std::collections::HashSet::new();
                    let order: Vec<f64> = x
                        .chunks(2)
                        .filter(|r| new.contains(&[r[0].to_bits(), r[1].to_bits()]) && first.insert([r[0].to_bits(), r[1].to_bits()]))
                        .flatten()
                        .copied()
                        .collect();
                    assert_eq!(sent, order, "first-seen order, call {call}");
                } else if capacity == 0 {
                    assert_eq!(n, rows);
                } else {
                    assert!(n >= new.len() && n <= rows, "call {call}: {n} sent, {} new, {rows} rows", new.len());
                }
                seen.extend(x.chunks(2).map(|r| [r[0].to_bits(), r[1].to_bits()]));
                assert!(cache.len() <= cache.capacity(), "{} rows held", cache.len());
            }
        }
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
