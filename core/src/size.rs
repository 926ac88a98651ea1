//! Byte sizes in words: reading a size as a user writes it (`--memory 2G`, `512MiB`, `1.5g`) and
//! showing one (`1.5 GiB`). Pure; a leaf that imports nothing from the crate. Does not own what
//! the sizes are for (the checker's memory budget is `checker::linear`'s, its default the CLI's).

/// Read a size: a number of bytes, optionally with a unit `K`, `M`, `G`, `T` (powers of 1024;
/// `KB`, `KiB`, `k` … mean the same), optionally with a fraction (`1.5G`). Errors say what was
/// expected, in plain words.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let expected = || {
        format!(
            "{s:?} is not a size: expected a number of bytes with an optional unit K, M, G or T (powers of 1024), such as 512M or 2G"
        )
    };
    let n: f64 = num.parse().map_err(|_| expected())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(expected()),
    };
    let bytes = n * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= usize::MAX as f64 {
        return Err(format!("{s:?} is too large a size"));
    }
    if bytes < 1.0 {
        return Err(format!("{s:?}: a size must be at least one byte"));
    }
    Ok(bytes as usize)
}

/// A size for people: `812 bytes`, `4.0 KiB`, `1.5 GiB`.
pub fn human_bytes(n: usize) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_written() {
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size(" 1.5g "), Ok(3 << 29));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("1000"), Ok(1000));
        for bad in ["", "G", "2X", "-1G", "two", "1.2.3M", "0", "0.1"] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
        assert!(parse_size("2X").unwrap_err().contains("such as 512M or 2G"));
        assert!(
            parse_size("99999999999T")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn sizes_show_in_binary_units() {
        assert_eq!(human_bytes(812), "812 bytes");
        assert_eq!(human_bytes(4096), "4.0 KiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
