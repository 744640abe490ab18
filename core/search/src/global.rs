//! MAFT Algorithm 3, global generation: from each seed, up to `max_iter` momentum steps along the
//! estimated gradients of the input and of its most different protected variant.
//!
//! Seeds are independent and the phase draws no random numbers, so all seeds of a chunk advance in
//! lockstep — two model calls per step for the whole chunk (the check, then every gradient) — and
//! the result is exactly that of the sequential algorithm: the global IDIs are returned in the order
//! of their seeds (as the sequential algorithm finds them), whatever the chunk size, because that
//! order decides which local walk, with which random stream, starts from each.

use fairpipe_abi::sdk::{origin, CaseSink, Host, PluginError};

use crate::gradient::{sign, GradientSource};
use crate::scored::{found, is_discriminatory, max_diff, score, Scores};
use crate::SearchSettings;

/// A seed's search state.
struct Walker {
    x: Vec<f64>,
    grad1: Vec<f64>,
    grad2: Vec<f64>,
}

/// Run the global phase on `seeds` (row-major); returns the distinct global IDIs with their scores,
/// in the order of the seeds they came from (an IDI reached from several seeds counts for the
/// first of them).
pub fn run(
    host: &mut Host,
    settings: &SearchSettings,
    grads: &impl GradientSource,
    seeds: &[f64],
    sink: &mut CaseSink,
) -> Result<Vec<(Vec<f64>, Scores)>, PluginError> {
    let width = host.domain.width();
    // (seed index, IDI, its scores) for every seed that ended on an IDI.
    let mut reached: Vec<(usize, Vec<f64>, Scores)> = Vec::new();
    for (c, chunk) in seeds.chunks(settings.parallel_walks * width).enumerate() {
        let first_seed = c * settings.parallel_walks;
        let mut walkers: Vec<Walker> =
            chunk.chunks_exact(width).map(|x| Walker { x: x.to_vec(), grad1: vec![0.0; width], grad2: vec![0.0; width] }).collect();
        let mut active: Vec<usize> = (0..walkers.len()).collect();
        for _ in 0..settings.max_iter {
            if active.is_empty() {
                break;
            }
            let rows: Vec<f64> = active.iter().flat_map(|&w| walkers[w].x.iter().copied()).collect();
            let scores = score(host, &rows)?;
            sink.tried(host, &rows);
            // Lines 9–13: keep discriminatory inputs; pair the others with their most different variant.
            let mut moving = Vec::new();
            for (&w, s) in active.iter().zip(scores) {
                if is_discriminatory(host, &s) {
                    found(sink, host, &walkers[w].x, &s, origin::GLOBAL)?;
                    reached.push((first_seed + w, walkers[w].x.clone(), s));
                    if sink.full() {
                        return Ok(in_seed_order(reached));
                    }
                } else {
                    let counterpart = host.variants.variant(&walkers[w].x, max_diff(&s));
                    moving.push((w, s, counterpart));
                }
            }
            // Lines 14–15: both gradients of every moving seed in one call.
            let mut grad_rows = Vec::with_capacity(moving.len() * 2 * width);
            let mut grad_ps = Vec::with_capacity(moving.len() * 2);
            for (w, s, counterpart) in &moving {
                grad_rows.extend_from_slice(&walkers[*w].x);
                grad_rows.extend_from_slice(counterpart);
                grad_ps.extend([s[0], s[1 + max_diff(s)]]);
            }
            let gradients = grads.gradients(host, &grad_rows, &grad_ps)?;
            // Lines 16–25: momentum, agreeing signs, step against the gradient, clip.
            for (k, (w, _, _)) in moving.iter().enumerate() {
                let (own, other) = (&gradients[2 * k], &gradients[2 * k + 1]);
                let walker = &mut walkers[*w];
                for a in 0..width {
                    walker.grad1[a] = settings.decay * walker.grad1[a] + own[a];
                    walker.grad2[a] = settings.decay * walker.grad2[a] + other[a];
                }
                for &a in grads.attrs() {
                    let (s1, s2) = (sign(walker.grad1[a]), sign(walker.grad2[a]));
                    if s1 == s2 && s1 != 0.0 {
                        let attr = &host.domain.attributes[a];
                        walker.x[a] = attr.clip(walker.x[a] - s1 * settings.global_step * attr.step);
                    }
                }
            }
            active = moving.into_iter().map(|(w, _, _)| w).collect();
            host.tick()?;
        }
    }
    Ok(in_seed_order(reached))
}

/// The distinct IDIs of `reached`, in the order of their seeds.
fn in_seed_order(mut reached: Vec<(usize, Vec<f64>, Scores)>) -> Vec<(Vec<f64>, Scores)> {
    reached.sort_by_key(|(seed, _, _)| *seed);
    let mut seen = std::collections::HashSet::new();
    reached
        .into_iter()
        .filter(|(_, x, _)| seen.insert(x.iter().map(|v| v.to_bits()).collect::<Vec<u64>>()))
        .map(|(_, x, s)| (x, s))
        .collect()
}
