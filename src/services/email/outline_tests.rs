use base64::Engine;

use super::*;

/// `bytes` in base64 the way mail programs write it: lines of `line` characters, CRLF
/// between them (and after the last one when `trailing`).
fn encoded(bytes: &[u8], line: usize, trailing: bool) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut out = b64
        .as_bytes()
        .chunks(line)
        .collect::<Vec<_>>()
        .join(&b"\r\n"[..]);
    if trailing {
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn tail(e: &[u8]) -> &[u8] {
    &e[e.len().saturating_sub(TAIL as usize)..]
}

#[test]
fn a_regular_base64_part_is_measured_from_its_last_bytes() {
    // Around a base64 group (3 bytes), a line (57 bytes) and the tail's length.
    for n in [
        20_000,
        20_001,
        20_002,
        20_003,
        57 * 400,
        57 * 400 + 1,
        1_000_000,
    ] {
        for (line, trailing) in [(76, false), (76, true), (64, false), (72, true)] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
            let e = encoded(&bytes, line, trailing);
            assert_eq!(
                base64_size(e.len() as u64, tail(&e)),
                Some(n as u64),
                "{n} bytes, lines of {line}, trailing CRLF {trailing}"
            );
        }
    }
}

#[test]
fn an_irregular_base64_part_is_not_guessed() {
    let bytes: Vec<u8> = (0..30_000).map(|i| (i % 256) as u8).collect();
    let mut e = encoded(&bytes, 76, false);
    // One line in the middle is shorter: the lengths no longer add up.
    let at = e.len() / 2;
    let cut = at + e[at..].iter().position(|b| *b == b'\n').unwrap() - 3;
    e.drain(cut..cut + 2);
    assert_eq!(base64_size(e.len() as u64, tail(&e)), None);
    // Bare LF line ends, and a tail that is no base64 at all.
    let lf: Vec<u8> = encoded(&bytes, 76, false)
        .into_iter()
        .filter(|b| *b != b'\r')
        .collect();
    assert_eq!(base64_size(lf.len() as u64, tail(&lf)), None);
    assert_eq!(base64_size(40_000, &[b'!'; 512]), None);
    assert_eq!(base64_size(40_000, b""), None);
}
