//! The two-phase search that MAFT and EIDIG share (global generation from seeds, then local
//! generation from each global IDI), with the gradient left to the method: MAFT estimates it by
//! zero-order differences ([`gradient::Perturbation`]), EIDIG asks the host for the model's own.
//! A library of the method plugins (`plugins/maft`, `plugins/eidig`), so that no plugin links
//! another; the algorithms and their sources are documented in the `maft` plugin.

pub mod global;
pub mod gradient;
pub mod local;
pub mod scored;

/// What the global and local phases read from a method's parameters (MAFT's, or another
/// method's that shares the two phases, such as EIDIG).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchSettings {
    /// Iterations of the local phase per global IDI.
    pub local_num: usize,
    /// Iterations per seed in the global phase.
    pub max_iter: usize,
    /// Global move, in attribute steps.
    pub global_step: f64,
    /// Local move, in attribute steps.
    pub local_step: f64,
    /// Momentum decay.
    pub decay: f64,
    /// Consecutive successful local iterations between probability updates (`usize::MAX`: never).
    pub update_interval: usize,
    /// ε of the selection probabilities.
    pub epsilon: f64,
    /// Seeds or walks advanced in lockstep.
    pub parallel_walks: usize,
}
