//! Random tokens, one-time codes and their storage hashes.
//!
//! Bearer tokens (personal tokens, refresh tokens) are long and uniformly
//! random, so a fast SHA-256 is enough to store them: guessing is hopeless
//! and lookups stay indexable. Six-digit codes are short, so they are stored
//! with Argon2id (salted, slow) to make offline guessing of a leaked hash
//! expensive; online guessing must additionally be rate-limited by callers.

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::Argon2;
use hmac::{Hmac, KeyInit, Mac};
use rand::distr::{Alphanumeric, SampleString, Uniform};
use rand::RngExt as _;
use sha2::{Digest, Sha256};

use super::{os_rng, random_array};

/// Prefix of personal access tokens (helps secret scanners and humans).
pub const PERSONAL_TOKEN_PREFIX: &str = "csk_";
/// Random base62 characters after the prefix of a personal token (~285 bits).
pub const PERSONAL_TOKEN_RANDOM_LEN: usize = 48;
/// Length of refresh tokens in base62 characters (~381 bits).
pub const REFRESH_TOKEN_LEN: usize = 64;

/// Lowercase hex SHA-256 of a string, for storing bearer tokens.
pub fn sha256_hex(s: &str) -> String {
    // Every request with a personal token hashes it: hex digits into a stack buffer, then
    // one allocation (rather than 32 `write!`s or a String grown char by char).
    let mut out = [0u8; 64];
    // 32 bytes always fit 64 hex digits, and hex digits are ASCII.
    let _ = hex::encode_to_slice(Sha256::digest(s.as_bytes()), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `n` characters drawn uniformly from `[0-9A-Za-z]` using the OS RNG.
pub fn random_base62(n: usize) -> String {
    // `Alphanumeric` samples by rejection, so every character is equally likely.
    Alphanumeric.sample_string(&mut os_rng(), n)
}

/// A personal access token: `csk_` + 48 base62 characters (52 in total).
pub fn generate_personal_token() -> String {
    format!(
        "{PERSONAL_TOKEN_PREFIX}{}",
        random_base62(PERSONAL_TOKEN_RANDOM_LEN)
    )
}

/// A refresh token: 64 base62 characters.
pub fn generate_refresh_token() -> String {
    random_base62(REFRESH_TOKEN_LEN)
}

/// A six-digit numeric code (`000000`–`999999`), uniformly distributed.
pub fn generate_code() -> String {
    // `Uniform::sample` uses Lemire's method with rejection: unbiased.
    let dist = Uniform::new(0u32, 1_000_000).expect("non-empty range");
    format!("{:06}", os_rng().sample(dist))
}

/// Argon2id PHC string of a one-time code, with a fresh random salt.
pub fn hash_code(code: &str) -> String {
    let salt: [u8; 16] = random_array();
    Argon2::default()
        .hash_password_with_salt(code.as_bytes(), &salt)
        // Only fails for out-of-range inputs (passwords > 4 GiB, bad salt length).
        .expect("argon2 hashing of a short code with a 16-byte salt cannot fail")
        .to_string()
}

/// Check a code against a PHC string from [`hash_code`]; malformed hashes yield `false`.
pub fn verify_code(code: &str, hash: &str) -> bool {
    Argon2::default()
        .verify_password(code.as_bytes(), hash)
        .is_ok()
}

/// Constant-time equality of two byte strings (timing reveals neither content
/// nor the position of the first difference).
///
/// Both inputs are MACed under a fresh random key and the tags are compared
/// with the MAC's constant-time verification; the lengths may leak, which is
/// fine for comparing hashes or tokens of public length.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let key: [u8; 32] = random_array();
    let tag = |data: &[u8]| {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key)
            .expect("HMAC accepts keys of any length");
        mac.update(data);
        mac
    };
    let tag_a = tag(a).finalize().into_bytes();
    tag(b).verify_slice(&tag_a).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_base62(s: &str) -> bool {
        s.bytes().all(|c| c.is_ascii_alphanumeric())
    }

    #[test]
    fn sha256_hex_matches_a_known_vector() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn personal_token_is_52_chars_with_csk_prefix_and_base62_tail() {
        let t = generate_personal_token();
        assert_eq!(t.len(), 52);
        assert!(t.starts_with("csk_"));
        assert!(is_base62(&t[4..]));
        assert_ne!(t, generate_personal_token());
    }

    #[test]
    fn refresh_token_is_long_base62_and_unique() {
        let t = generate_refresh_token();
        assert!(t.len() >= 43);
        assert!(is_base62(&t));
        assert_ne!(t, generate_refresh_token());
    }

    #[test]
    fn random_base62_has_the_requested_length_and_uses_the_whole_alphabet() {
        assert_eq!(random_base62(0), "");
        let s = random_base62(20_000);
        assert_eq!(s.len(), 20_000);
        assert!(is_base62(&s));
        let distinct: std::collections::HashSet<char> = s.chars().collect();
        assert_eq!(distinct.len(), 62);
    }

    #[test]
    fn code_is_six_decimal_digits() {
        let mut saw_leading_zero_possible = false;
        for _ in 0..2000 {
            let c = generate_code();
            assert_eq!(c.len(), 6);
            assert!(c.bytes().all(|b| b.is_ascii_digit()));
            saw_leading_zero_possible |= c.starts_with('0');
        }
        // P(no leading zero in 2000 draws) = 0.9^2000 ≈ 1e-92.
        assert!(saw_leading_zero_possible);
    }

    #[test]
    fn argon2_code_verification_accepts_the_right_code_and_rejects_others() {
        let hash = hash_code("012345");
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_code("012345", &hash));
        assert!(!verify_code("012346", &hash));
        assert!(!verify_code("012345", "not a phc string"));
        // Fresh salt each time.
        assert_ne!(hash, hash_code("012345"));
    }

    #[test]
    fn constant_time_eq_compares_contents_and_lengths() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
