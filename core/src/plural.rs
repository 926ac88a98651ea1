//! Counted nouns in messages for people: `1 key`, `2 keys`. One definition, so no summary says
//! "1 runs" again. Pure; owns nothing else.

/// `"s"` unless `n` is one: for `format!("{n} key{}", s(n))`.
pub fn s(n: impl TryInto<u64>) -> &'static str {
    match n.try_into() {
        Ok(1) => "",
        _ => "s",
    }
}

/// `n` and the noun, singular when `n` is one: `counted(1, "key")` is `1 key`.
pub fn counted(n: impl TryInto<u64> + std::fmt::Display + Copy, noun: &str) -> String {
    format!("{n} {noun}{}", s(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_everything_else_plural() {
        assert_eq!(counted(1u64, "key"), "1 key");
        assert_eq!(counted(0usize, "key"), "0 keys");
        assert_eq!(counted(2u32, "session"), "2 sessions");
        assert_eq!(s(1usize), "");
        assert_eq!(s(-1i64), "s");
    }
}
