//! `shakedown compare`'s pure core: a matrix spec (`compare/*.toml`) expanded into cells
//! ([`spec`]), the vocabulary of claims a cell can make and how one run's results bear on each
//! ([`claim`]), and folding a cell's seeds into claimed-vs-observed ([`outcome`]).
//!
//! Does not run anything (`app::compare` starts one `shakedown run` per cell and seed), parse
//! `run`'s flags (clap stays in `cli`; the driver validates each cell's flags through it before
//! the first run). No IO. [`page`] renders its matrix as HTML and JUnit.

pub mod claim;
pub mod outcome;
pub mod page;
pub mod spec;
