//! Unit tests of the sync worker's backoff.

use super::*;

#[test]
fn backoff_doubles_from_one_second_up_to_a_minute_and_resets() {
    let mut b = Backoff::new();
    let waits: Vec<u64> = (0..9).map(|_| b.next().as_secs()).collect();
    assert_eq!(waits, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
    b.reset();
    assert_eq!(b.next(), BACKOFF_START);
}

#[test]
fn a_failing_crypto_machine_is_retried_from_a_minute_up_to_an_hour() {
    let mut b = Backoff::between(CRYPTO_BACKOFF_START, CRYPTO_BACKOFF_MAX);
    let waits: Vec<u64> = (0..8).map(|_| b.next().as_secs()).collect();
    assert_eq!(waits, vec![60, 120, 240, 480, 960, 1920, 3600, 3600]);
}
