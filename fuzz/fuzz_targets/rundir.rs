//! libFuzzer target: the run-directory reader (`shakedown::fuzz::read_run_dir`), with the input
//! split into a run directory's files.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| { shakedown_fuzz::fuzz_run_dir(data) });
