//! Bookkeeping every search repeats: row keys for hashing `f64` rows, and [`CaseSink`], which
//! counts the distinct inputs tried (the `generated` figure) and emits each discriminatory input
//! once, up to an optional limit.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, DefaultHasher, Hasher};

use crate::error::PluginError;
use crate::host::Host;
use crate::variants::RowCheck;

/// A row as a hashable key: the bit patterns of its values (`-0.0` and `0.0` differ; rows come
/// from the same arithmetic, so equal rows have equal bits).
pub type RowKey = Vec<u64>;

/// The [`RowKey`] of `row`.
pub fn row_key(row: &[f64]) -> RowKey {
    row.iter().map(|v| v.to_bits()).collect()
}

/// A row's 128-bit fingerprint: two SipHash-1-3 digests (std's `DefaultHasher`, whose keys are
/// fixed, so the same in every run) of the bit patterns of its values, told apart by a leading
/// word. Two different rows share one with probability about 2⁻¹²⁸ (for 10⁹ rows tried, the
/// chance of any such pair is below 10⁻²⁰).
fn fingerprint(row: &[f64]) -> u128 {
    let digest = |lane: u64| {
        let mut h = DefaultHasher::new();
        h.write_u64(lane);
        for v in row {
            h.write_u64(v.to_bits());
        }
        h.finish()
    };
    (u128::from(digest(0)) << 64) | u128::from(digest(1))
}

/// The hasher of a set of [`fingerprint`]s: they are hashes already, so their low 64 bits are the
/// table's hash (other writes are folded in, for completeness).
#[derive(Debug, Default, Clone, Copy)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u128(&mut self, v: u128) {
        self.0 ^= v as u64;
    }
}

/// Rows already seen, as their fingerprints: 16 bytes a row in one table, so that neither growing
/// it (rehashing millions of rows) nor dropping it (freeing one allocation per row) takes seconds
/// — the work a search does after its time budget asks it to stop (rows kept as `Vec<u64>` keys
/// took ~0.35 µs a row to free, half a second after a 3 s GRFT run and past the host's 2 s grace
/// after a 10 s one).
type SeenRows = HashSet<u128, BuildHasherDefault<Prehashed>>;

/// Distinct inputs tried and distinct discriminatory inputs emitted, with an optional limit on the
/// latter.
#[derive(Debug, Default)]
pub struct CaseSink {
    tried: SeenRows,
    found: SeenRows,
    /// Stop after this many distinct IDIs (0: no limit).
    pub max_idis: usize,
}

impl CaseSink {
    /// A sink that is [`CaseSink::full`] after `max_idis` distinct IDIs (0: no limit).
    pub fn new(max_idis: usize) -> Self {
        CaseSink { max_idis, ..CaseSink::default() }
    }

    /// Record that `rows` (row-major) were checked: the ones not tried before are counted as
    /// generated with the host (no progress call when none is new). Returns how many were new.
    pub fn tried(&mut self, host: &mut Host, rows: &[f64]) -> usize {
        let width = host.domain.width();
        let fresh = rows.chunks_exact(width).filter(|r| self.tried.insert(fingerprint(r))).count();
        if fresh > 0 {
            host.count_generated(fresh as u64);
        }
        fresh
    }

    /// Emit `row` with `verdict` unless it was emitted before; `true` when it was new.
    pub fn emit(&mut self, host: &mut Host, row: &[f64], verdict: &RowCheck, origin: u32) -> Result<bool, PluginError> {
        if !self.found.insert(fingerprint(row)) {
            return Ok(false);
        }
        host.emit(row, verdict, origin)?;
        Ok(true)
    }

    /// Whether the IDI limit is reached.
    pub fn full(&self) -> bool {
        self.max_idis > 0 && self.found.len() >= self.max_idis
    }

    /// Distinct inputs tried so far.
    pub fn n_tried(&self) -> usize {
        self.tried.len()
    }

    /// Distinct IDIs emitted so far.
    pub fn n_found(&self) -> usize {
        self.found.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdk::origin;
    use crate::testing::{planted_domain, MockHost};

    #[test]
    fn rows_are_counted_and_emitted_once() {
        let mock = MockHost::new(planted_domain(1), |r| r[1]);
        let mut host = mock.host().unwrap();
        let mut sink = CaseSink::new(2);
        assert_eq!(sink.tried(&mut host, &[1.0, 0.0, 2.0, 0.0, 1.0, 0.0]), 2);
        assert_eq!(sink.tried(&mut host, &[2.0, 0.0, 3.0, 0.0]), 1);
        assert_eq!(sink.n_tried(), 3);
        // The same values in another order and a value's other zero are other rows; (1, 0) is not.
        assert_eq!(sink.tried(&mut host, &[0.0, 1.0, 1.0, 0.0, -0.0, 1.0]), 2);
        assert_eq!(sink.n_tried(), 5);
        let v = host.check(&[1.0, 1.0]).unwrap().remove(0);
        assert!(sink.emit(&mut host, &[1.0, 1.0], &v, origin::GLOBAL).unwrap());
        assert!(!sink.emit(&mut host, &[1.0, 1.0], &v, origin::LOCAL).unwrap());
        assert!(!sink.full());
        assert!(sink.emit(&mut host, &[2.0, 1.0], &v, origin::LOCAL).unwrap());
        assert!(sink.full());
        drop(host);
        let run = mock.take_run();
        assert_eq!(run.generated, 5);
        assert_eq!(run.cases.iter().map(|c| c.origin).collect::<Vec<_>>(), [origin::GLOBAL, origin::LOCAL]);
        assert_ne!(row_key(&[0.0]), row_key(&[-0.0]));
    }
}
