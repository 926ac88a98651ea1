//! libFuzzer target: the json history reader (`shakedown_core::fuzz::Reader::Json`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shakedown_fuzz::fuzz_reader(shakedown_fuzz::Reader::Json, data)
});
