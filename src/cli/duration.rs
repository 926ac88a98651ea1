//! Durations as people write them on the command line: `10m`, `90s`, `1h30m`, `1h 30m`, `24h`,
//! `500ms`, `2.5s`, or a bare number of seconds; every flag that takes a duration reads it here.
//! Pure. Does not own what a flag allows beyond that (a time limit must be positive: the config
//! says so).

/// Parse `text` into milliseconds. Units: `ms`, `s`, `m`, `h`; parts add up (`1m30s`); a bare
/// number is seconds. The error says what was expected.
pub fn parse_ms(text: &str) -> Result<u64, String> {
    let t: String = text.split_whitespace().collect();
    let t = t.as_str();
    let expected = || {
        format!(
            "{text:?}: expected a duration such as 500ms, 30s, 10m, 1h30m or a number of seconds"
        )
    };
    if t.is_empty() {
        return Err(expected());
    }
    if let Ok(s) = t.parse::<f64>() {
        return to_ms(s, 1000.0).ok_or_else(expected);
    }
    let mut total_ms = 0.0;
    let mut rest = t;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(expected)?;
        if num_len == 0 {
            return Err(expected());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| expected())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return Err(expected()),
        };
        rest = &rest[unit_len..];
        total_ms += value * scale;
    }
    to_ms(total_ms, 1.0).ok_or_else(expected)
}

/// A duration flag's value in seconds (clap's `value_parser` for the `f64` seconds flags).
pub fn seconds(text: &str) -> Result<f64, String> {
    parse_ms(text).map(|ms| ms as f64 / 1000.0)
}

fn to_ms(value: f64, scale: f64) -> Option<u64> {
    let ms = value * scale;
    (0.0..1e15).contains(&ms).then(|| ms.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_people_write() {
        assert_eq!(parse_ms("10m"), Ok(600_000));
        assert_eq!(parse_ms("90s"), Ok(90_000));
        assert_eq!(parse_ms("1h30m"), Ok(5_400_000));
        assert_eq!(parse_ms("500ms"), Ok(500));
        assert_eq!(parse_ms("2.5s"), Ok(2_500));
        assert_eq!(parse_ms("20"), Ok(20_000));
        assert_eq!(parse_ms(" 1m 0s "), Ok(60_000));
        assert_eq!(parse_ms("1h 30m"), Ok(5_400_000));
        assert_eq!(seconds("24h"), Ok(86_400.0));
        assert_eq!(seconds("0.25"), Ok(0.25));
        assert_eq!(seconds("1m30s"), Ok(90.0));
        for bad in ["", "ten", "5x", "-3", "m", "1.2.3s", "inf"] {
            let e = parse_ms(bad).unwrap_err();
            assert!(e.contains("expected a duration"), "{bad}: {e}");
        }
    }
}
