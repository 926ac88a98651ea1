//! libFuzzer target: the edn history reader (`shakedown_core::fuzz::Reader::Edn`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shakedown_fuzz::fuzz_reader(shakedown_fuzz::Reader::Edn, data)
});
