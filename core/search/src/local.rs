//! MAFT Algorithm 4, local generation: around each global IDI, `local_num` single-attribute steps,
//! the attribute drawn with the normalised reciprocals of the two gradients' magnitudes (recomputed
//! every `update_interval` consecutive successes), the direction ±`local_step` by a fair coin; a
//! discriminatory result is kept and the walk goes on from it, otherwise the walk returns to its
//! global IDI and the initial probabilities.
//!
//! Walks are independent and each draws from its own random generator (seeded from the run's seed
//! and the walk's index), so advancing many in lockstep — two model calls per step for all of them —
//! gives exactly the results of running them one after another.

use fairpipe_abi::sdk::{origin, CaseSink, Host, PluginError};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::gradient::{selection_probabilities, GradientSource};
use crate::scored::{find_pair, found, is_discriminatory, max_diff, random_pick, score, Scores};
use crate::SearchSettings;

/// One local walk.
struct Walk {
    /// The global IDI it starts from, and its scores.
    x0: Vec<f64>,
    s0: Scores,
    /// Current input and its scores.
    x: Vec<f64>,
    s: Scores,
    /// Initial and current selection probabilities over the free attributes.
    p0: Vec<f64>,
    p: Vec<f64>,
    suc_iter: usize,
    rng: Xoshiro256PlusPlus,
}

/// Run the local phase from `starts` (global IDIs with their scores).
pub fn run(
    host: &mut Host,
    settings: &SearchSettings,
    grads: &impl GradientSource,
    starts: Vec<(Vec<f64>, Scores)>,
    sink: &mut CaseSink,
) -> Result<(), PluginError> {
    if grads.attrs().is_empty() || settings.local_num == 0 {
        return Ok(());
    }
    let base: u64 = host.rng.gen();
    let mut index = 0u64;
    let mut starts = starts.into_iter().peekable();
    while starts.peek().is_some() {
        let mut walks: Vec<Walk> = starts
            .by_ref()
            .take(settings.parallel_walks)
            .map(|(x0, s0)| {
                index += 1;
                Walk {
                    x: x0.clone(),
                    s: s0.clone(),
                    x0,
                    s0,
                    p0: Vec::new(),
                    p: Vec::new(),
                    suc_iter: 0,
                    rng: Xoshiro256PlusPlus::seed_from_u64(base.wrapping_add(index)),
                }
            })
            .collect();
        for step in 0..settings.local_num {
            update_probabilities(host, settings, grads, &mut walks, step == 0)?;
            perturb_and_check(host, settings, grads.attrs(), &mut walks, sink)?;
            if sink.full() {
                return Ok(());
            }
            host.tick()?;
        }
    }
    Ok(())
}

/// Lines 5–12 (and the set-up before the loop): recompute the probabilities of every walk due for
/// it, all gradients in one model call. At the start the counterpart is the most different variant
/// (`max_diff`); later a random label-flipping one (`FindPair`).
fn update_probabilities(
    host: &mut Host,
    settings: &SearchSettings,
    grads: &impl GradientSource,
    walks: &mut [Walk],
    initial: bool,
) -> Result<(), PluginError> {
    let width = host.domain.width();
    let due: Vec<usize> = (0..walks.len()).filter(|&w| initial || walks[w].suc_iter >= settings.update_interval).collect();
    if due.is_empty() {
        return Ok(());
    }
    let mut rows = Vec::with_capacity(due.len() * 2 * width);
    let mut ps = Vec::with_capacity(due.len() * 2);
    for &w in &due {
        let walk = &mut walks[w];
        let combo = if initial { max_diff(&walk.s) } else { find_pair(host, &walk.s, &mut walk.rng) };
        rows.extend_from_slice(&walk.x);
        rows.extend_from_slice(&host.variants.variant(&walk.x, combo));
        ps.extend([walk.s[0], walk.s[1 + combo]]);
    }
    let gradients = grads.gradients(host, &rows, &ps)?;
    for (k, &w) in due.iter().enumerate() {
        let walk = &mut walks[w];
        walk.p = selection_probabilities(&gradients[2 * k], &gradients[2 * k + 1], grads.attrs(), settings.epsilon);
        if initial {
            walk.p0 = walk.p.clone();
        }
        walk.suc_iter = 0;
    }
    Ok(())
}

/// Lines 14–28: one step of every walk, all checks in one model call.
fn perturb_and_check(
    host: &mut Host,
    settings: &SearchSettings,
    attrs: &[usize],
    walks: &mut [Walk],
    sink: &mut CaseSink,
) -> Result<(), PluginError> {
    let width = host.domain.width();
    let mut rows = Vec::with_capacity(walks.len() * width);
    for walk in walks.iter_mut() {
        walk.suc_iter += 1;
        let a = attrs[random_pick(&walk.p, &mut walk.rng)];
        let direction = if random_pick(&[0.5, 0.5], &mut walk.rng) == 0 { -1.0 } else { 1.0 };
        let attr = &host.domain.attributes[a];
        walk.x[a] = attr.clip(walk.x[a] + direction * settings.local_step * attr.step);
        rows.extend_from_slice(&walk.x);
    }
    let scores = score(host, &rows)?;
    sink.tried(host, &rows);
    for (walk, s) in walks.iter_mut().zip(scores) {
        if is_discriminatory(host, &s) {
            found(sink, host, &walk.x, &s, origin::LOCAL)?;
            walk.s = s;
            if sink.full() {
                return Ok(());
            }
        } else {
            walk.x.clone_from(&walk.x0);
            walk.s.clone_from(&walk.s0);
            walk.p.clone_from(&walk.p0);
            walk.suc_iter = 0;
        }
    }
    Ok(())
}
