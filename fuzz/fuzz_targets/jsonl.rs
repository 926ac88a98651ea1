//! libFuzzer target: the jsonl history reader (`shakedown_core::fuzz::Reader::Jsonl`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shakedown_fuzz::fuzz_reader(shakedown_fuzz::Reader::Jsonl, data)
});
