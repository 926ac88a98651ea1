//! libFuzzer target: the porcupine history reader (`shakedown_core::fuzz::Reader::Porcupine`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shakedown_fuzz::fuzz_reader(shakedown_fuzz::Reader::Porcupine, data)
});
