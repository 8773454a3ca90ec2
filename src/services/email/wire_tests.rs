use lettre::message::header::ContentTransferEncoding;
use lettre::message::Body;

use super::super::spool::{SpoolWriter, CHUNK};
use super::*;
use crate::crypto::DataKey;

/// lettre's own base64 body of `bytes`.
fn lettre_base64(bytes: &[u8]) -> Vec<u8> {
    Body::new_with_encoding(bytes.to_vec(), ContentTransferEncoding::Base64)
        .unwrap()
        .into_vec()
}

fn varied(n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 131 + i / 7) % 256) as u8).collect()
}

/// Sizes at the edges of a base64 group (3), a line (57) and a spool chunk (64 KiB).
const SIZES: &[usize] = &[
    0,
    1,
    2,
    3,
    4,
    56,
    57,
    58,
    113,
    114,
    115,
    171,
    CHUNK - 1,
    CHUNK,
    CHUNK + 1,
    3 * CHUNK + 7,
    57 * 3 * 1000,
];

#[test]
fn the_streaming_encoder_writes_exactly_what_lettre_writes() {
    for &n in SIZES {
        let bytes = varied(n);
        let want = lettre_base64(&bytes);
        assert_eq!(encoded_len(n as u64), want.len() as u64, "length of {n}");
        for piece in [1, 2, 56, 57, 58, 1000, CHUNK] {
            let mut enc = Base64Lines::default();
            let mut out = Vec::new();
            for p in bytes.chunks(piece) {
                enc.push(p, &mut out);
            }
            enc.finish(&mut out);
            assert!(out == want, "{n} bytes in pieces of {piece}");
        }
        let text = String::from_utf8(want).unwrap();
        assert!(text.split("\r\n").all(|l| l.len() <= 76), "lines ≤ 76");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(text.replace("\r\n", ""))
            .unwrap();
        assert_eq!(decoded, bytes, "decodes to the bytes of {n}");
    }
}

fn spooled(dir: &std::path::Path, id: &str, bytes: &[u8]) -> Spooled {
    let dek = DataKey::from_bytes([9; 32]);
    let mut w = SpoolWriter::create(dir, id, &dek).unwrap();
    w.write(bytes).unwrap();
    w.finish().unwrap()
}

fn envelope() -> Envelope {
    Envelope::new(
        Some("a@example.org".parse().unwrap()),
        vec!["b@example.org".parse().unwrap()],
    )
    .unwrap()
}

#[test]
fn markers_are_replaced_by_the_files_and_the_length_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (varied(CHUNK + 58), varied(100));
    let skeleton = b"head\r\nMARK0\r\nmiddle\r\nMARK1\r\ntail".to_vec();
    let files = vec![
        ("MARK0".to_owned(), spooled(dir.path(), "a", &a)),
        ("MARK1".to_owned(), spooled(dir.path(), "b", &b)),
    ];
    let out = Outgoing::new(envelope(), skeleton, files).unwrap();
    let mut want = b"head\r\n".to_vec();
    want.extend(lettre_base64(&a));
    want.extend(b"\r\nmiddle\r\n");
    want.extend(lettre_base64(&b));
    want.extend(b"\r\ntail");
    let got = out.to_vec().unwrap();
    assert!(got == want, "the skeleton with each file in its place");
    assert_eq!(out.wire_len(), want.len() as u64);
    assert!(out.is_ascii());
    let pieces: Vec<Vec<u8>> = out.pieces().unwrap().map(Result::unwrap).collect();
    assert!(
        pieces.iter().all(|p| p.len() < CHUNK * 3 / 2),
        "no piece holds more than a chunk's base64"
    );
}

#[test]
fn a_marker_missing_or_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = spooled(dir.path(), "a", b"x");
    let twice = Outgoing::new(
        envelope(),
        b"MARK0 MARK0".to_vec(),
        vec![("MARK0".into(), f.clone())],
    );
    assert!(twice.is_err());
    let missing = Outgoing::new(envelope(), b"none".to_vec(), vec![("MARK0".into(), f)]);
    assert!(missing.is_err());
}

#[test]
fn a_chunk_that_does_not_open_is_an_error_piece_and_ends_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = varied(3 * CHUNK);
    let f = spooled(dir.path(), "a", &bytes);
    // Damage the second chunk.
    let mut raw = std::fs::read(&f.path).unwrap();
    let second = 4 + u32::from_be_bytes(raw[..4].try_into().unwrap()) as usize + 40;
    raw[second] ^= 1;
    std::fs::write(&f.path, raw).unwrap();
    let out = Outgoing::new(envelope(), b"a MARK0 b".to_vec(), vec![("MARK0".into(), f)]).unwrap();
    let items: Vec<io::Result<Vec<u8>>> = out.pieces().unwrap().collect();
    assert!(items[..2].iter().all(Result::is_ok), "text, first chunk");
    assert!(items[2].is_err(), "the damaged chunk");
    assert_eq!(items.len(), 3, "nothing after it");
}

#[test]
fn a_file_gone_from_the_spool_fails_before_any_piece() {
    let dir = tempfile::tempdir().unwrap();
    let f = spooled(dir.path(), "a", b"abc");
    std::fs::remove_file(&f.path).unwrap();
    let out = Outgoing::new(envelope(), b"MARK0".to_vec(), vec![("MARK0".into(), f)]).unwrap();
    assert!(out.pieces().is_err());
}
