//! The seed: the one number a run is a function of.
//!
//! A [`Seed`] is a `u64`. It prints in hex (`0x2a`) because that is how it
//! travels through failure reports and replay commands, and it parses from
//! hex (`0x2a`) or decimal (`42`), so whatever a user copies back works.

use std::fmt;
use std::str::FromStr;

/// The number a simulated run is a function of.
///
/// Same seed, same binary: the same scheduling decisions, the same frame
/// splits, the same tool latencies, the same trace.
///
/// ```
/// use livesim::Seed;
///
/// let seed: Seed = "0x2a".parse().unwrap();
/// assert_eq!(seed, Seed::new(42));
/// assert_eq!(seed.to_string(), "0x2a");
/// assert_eq!("42".parse::<Seed>().unwrap(), seed);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Seed(u64);

impl Seed {
    /// A seed with the given value.
    pub const fn new(value: u64) -> Self {
        Seed(value)
    }

    /// The seed's value.
    pub const fn value(self) -> u64 {
        self.0
    }
}

impl From<u64> for Seed {
    fn from(value: u64) -> Self {
        Seed(value)
    }
}

impl fmt::Display for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seed({:#x})", self.0)
    }
}

/// Why a string is not a seed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a seed: {reason} (write it as hex like 0x2a or decimal like 42)")]
pub struct ParseSeedError {
    input: String,
    reason: &'static str,
}

impl FromStr for Seed {
    type Err = ParseSeedError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim().replace('_', "");
        let fail = |reason| ParseSeedError {
            input: s.to_string(),
            reason,
        };
        if trimmed.is_empty() {
            return Err(fail("it is empty"));
        }
        let parsed = match trimmed
            .strip_prefix("0x")
            .or_else(|| trimmed.strip_prefix("0X"))
        {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => trimmed.parse::<u64>(),
        };
        parsed.map(Seed).map_err(|e| {
            fail(match e.kind() {
                std::num::IntErrorKind::PosOverflow => "it does not fit in 64 bits",
                std::num::IntErrorKind::Empty => "it has no digits",
                _ => "it has a character that is not a digit",
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hex_decimal_and_underscores() {
        assert_eq!("0xdead_beef".parse::<Seed>().unwrap(), Seed(0xdead_beef));
        assert_eq!("0XFF".parse::<Seed>().unwrap(), Seed(255));
        assert_eq!(" 17 ".parse::<Seed>().unwrap(), Seed(17));
        assert_eq!(
            "18446744073709551615".parse::<Seed>().unwrap(),
            Seed(u64::MAX)
        );
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        let err = "0xzz".parse::<Seed>().unwrap_err().to_string();
        assert!(
            err.contains("`0xzz`") && err.contains("not a digit"),
            "{err}"
        );
        let err = "0x1_0000_0000_0000_0000".parse::<Seed>().unwrap_err();
        assert!(err.to_string().contains("64 bits"));
        assert!(
            "".parse::<Seed>()
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(
            "0x".parse::<Seed>()
                .unwrap_err()
                .to_string()
                .contains("no digits")
        );
    }

    #[test]
    fn display_round_trips() {
        for v in [0, 1, 0x2a, u64::MAX] {
            let s = Seed(v);
            assert_eq!(s.to_string().parse::<Seed>().unwrap(), s);
        }
    }
}
