//! libFuzzer target: the history-txt history reader (`shakedown_core::fuzz::Reader::HistoryTxt`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    shakedown_fuzz::fuzz_reader(shakedown_fuzz::Reader::HistoryTxt, data)
});
