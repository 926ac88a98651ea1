//! The clock faults' parameters: the defaults and bounds of `bump-clock` and `strobe-clock`
//! (step magnitudes, strobe period and duration, offset sampling), read by the spec (`spec`)
//! and the nemesis alike.
//!
//! Pure data. Does not own drawing a step or a strobe, or touching a node (`nemesis::clock`).

/// Default smallest step magnitude drawn, in ms (Jepsen: 2^2).
pub const DEFAULT_MIN_DELTA_MS: u64 = 4;
/// Default largest step magnitude drawn, in ms (Jepsen: 2^18, about 4.4 minutes).
pub const DEFAULT_MAX_DELTA_MS: u64 = 262_144;
/// Default largest strobe period drawn, in ms (Jepsen: 2^10).
pub const DEFAULT_MAX_PERIOD_MS: u64 = 1_024;
/// Default strobe duration, in ms.
pub const DEFAULT_STROBE_DURATION_MS: u64 = 10_000;
/// Longest strobe accepted, in ms (the nemesis op blocks for the whole strobe).
pub const MAX_STROBE_DURATION_MS: u64 = 60_000;
/// Smallest sampling period accepted during a strobe, in ms.
pub const MIN_OFFSETS_EVERY_MS: u64 = 100;
