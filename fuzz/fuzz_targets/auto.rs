//! libFuzzer target: format detection (`--format auto`), then the reader it picks (`shakedown_core::fuzz::Reader::Auto`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shakedown_fuzz::fuzz_reader(shakedown_fuzz::Reader::Auto, data)
});
