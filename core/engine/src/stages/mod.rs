//! The stage kinds, one module per family.

pub mod audit;
pub mod group;
pub mod load;
pub mod mitigate;
pub mod model;
pub mod retrain;
pub mod search;
