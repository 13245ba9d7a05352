//! The one fixed hash livesim uses wherever a hash must never change:
//! FNV-1a, 64-bit (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`).
//!
//! It names RNG streams and fingerprints traces. Both are promises across
//! runs, processes and releases, so neither may use `std`'s `DefaultHasher`
//! (whose algorithm is unspecified) or a randomly keyed `RandomState`.

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// An incremental FNV-1a 64-bit hasher.
///
/// ```
/// use livesim::executor::Fnv64;
///
/// let mut h = Fnv64::new();
/// h.write(b"a");
/// assert_eq!(h.finish(), 0xaf63dc4c8601ec8c); // the published FNV-1a test vector
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv64(u64);

impl Fnv64 {
    /// A hasher in its initial state.
    pub const fn new() -> Self {
        Fnv64(OFFSET_BASIS)
    }

    /// Mixes `bytes` into the hash.
    pub fn write(&mut self, bytes: &[u8]) {
        self.0 = fold(self.0, bytes);
    }

    /// Mixes a `u64` in, little-endian.
    pub fn write_u64(&mut self, value: u64) {
        self.write(&value.to_le_bytes());
    }

    /// The hash of everything written so far.
    pub const fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv64 {
    fn default() -> Self {
        Self::new()
    }
}

/// FNV-1a 64 of `bytes`, usable in constants.
pub const fn fnv1a64(bytes: &[u8]) -> u64 {
    fold(OFFSET_BASIS, bytes)
}

const fn fold(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(PRIME);
        i += 1;
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn incremental_equals_one_shot() {
        let mut h = Fnv64::new();
        h.write(b"foo");
        h.write(b"bar");
        assert_eq!(h.finish(), fnv1a64(b"foobar"));
    }
}
