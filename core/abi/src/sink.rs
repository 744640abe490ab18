//! Bookkeeping every search repeats: row keys for hashing `f64` rows, and [`CaseSink`], which
//! counts the distinct inputs tried (the `generated` figure) and emits each discriminatory input
//! once, up to an optional limit.

use std::collections::HashSet;

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

/// Distinct inputs tried and distinct discriminatory inputs emitted, with an optional limit on the
/// latter.
#[derive(Debug, Default)]
pub struct CaseSink {
    tried: HashSet<RowKey>,
    found: HashSet<RowKey>,
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
        let fresh = rows.chunks_exact(width).filter(|r| self.tried.insert(row_key(r))).count();
        if fresh > 0 {
            host.count_generated(fresh as u64);
        }
        fresh
    }

    /// Emit `row` with `verdict` unless it was emitted before; `true` when it was new.
    pub fn emit(&mut self, host: &mut Host, row: &[f64], verdict: &RowCheck, origin: u32) -> Result<bool, PluginError> {
        if !self.found.insert(row_key(row)) {
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
        let v = host.check(&[1.0, 1.0]).unwrap().remove(0);
        assert!(sink.emit(&mut host, &[1.0, 1.0], &v, origin::GLOBAL).unwrap());
        assert!(!sink.emit(&mut host, &[1.0, 1.0], &v, origin::LOCAL).unwrap());
        assert!(!sink.full());
        assert!(sink.emit(&mut host, &[2.0, 1.0], &v, origin::LOCAL).unwrap());
        assert!(sink.full());
        drop(host);
        let run = mock.take_run();
        assert_eq!(run.generated, 3);
        assert_eq!(run.cases.iter().map(|c| c.origin).collect::<Vec<_>>(), [origin::GLOBAL, origin::LOCAL]);
        assert_ne!(row_key(&[0.0]), row_key(&[-0.0]));
    }
}
