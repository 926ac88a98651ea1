//! libFuzzer target: the jepsen-log history reader (`shakedown_core::fuzz::Reader::JepsenLog`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shakedown_fuzz::fuzz_reader(shakedown_fuzz::Reader::JepsenLog, data)
});
