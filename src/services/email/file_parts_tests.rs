use super::*;

fn decode_in_pieces(encoding: &str, encoded: &[u8], piece: usize) -> Option<Vec<u8>> {
    let mut d = Decoder::new(encoding)?;
    let mut out = Vec::new();
    for p in encoded.chunks(piece) {
        d.push(p, &mut out)?;
    }
    d.finish(&mut out)?;
    Some(out)
}

fn varied(n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 131 + i / 7) % 256) as u8).collect()
}

#[test]
fn base64_decoded_in_any_pieces_is_the_whole_part_decoded() {
    use base64::Engine;
    let bytes = varied(10_007);
    let flat = base64::engine::general_purpose::STANDARD.encode(&bytes);
    // As mail carries it: lines of 76 characters, CRLF.
    let lines: Vec<&str> = flat
        .as_bytes()
        .chunks(76)
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    let encoded = lines.join("\r\n");
    for piece in [1, 3, 4, 5, 77, 78, 1000, 4096, encoded.len()] {
        assert_eq!(
            decode_in_pieces("base64", encoded.as_bytes(), piece).as_deref(),
            Some(&bytes[..]),
            "pieces of {piece}"
        );
    }
}

#[test]
fn quoted_printable_decoded_in_any_pieces_is_the_whole_part_decoded() {
    let text =
        "Caf\u{e9} = caf\u{e9}\r\nA long line that goes on and on and on and on and on and on \
                past seventy-six characters for a soft break\r\n\ttab\u{0} end";
    let encoded =
        b"Caf=C3=A9 =3D caf=C3=A9\r\nA long line that goes on and on and on and on and on a=\r\n\
                    nd on past seventy-six characters for a soft break\r\n=09tab=00 end"
            .to_vec();
    let whole = quoted_printable_decode(&encoded).unwrap();
    assert_eq!(whole, text.as_bytes());
    for piece in [1, 2, 3, 10, 75, 76, 77, encoded.len()] {
        assert_eq!(
            decode_in_pieces("quoted-printable", &encoded, piece).as_deref(),
            Some(text.as_bytes()),
            "pieces of {piece}"
        );
    }
}

#[test]
fn identity_encodings_pass_bytes_through_and_unknown_ones_are_refused() {
    let bytes = varied(300);
    for e in ["7bit", "8bit", "binary"] {
        assert_eq!(decode_in_pieces(e, &bytes, 7), Some(bytes.clone()));
    }
    assert!(Decoder::new("x-uuencode").is_none());
    assert_eq!(decode_in_pieces("base64", b"QUJD!!!!", 3), None);
}

fn leaf(section: &[u32], mimetype: &str, disposition: Option<&str>, name: bool) -> Part {
    let kind = match mimetype.split('/').next() {
        Some("text") => PartKind::Text,
        Some("message") => PartKind::Message,
        _ => PartKind::Other,
    };
    Part {
        section: section.to_vec(),
        kind,
        mimetype: mimetype.into(),
        params: if name {
            vec![("name".into(), "f".into())]
        } else {
            vec![]
        },
        disposition: disposition.map(str::to_owned),
        disposition_params: vec![],
        encoding: "base64".into(),
        octets: 10,
        children: vec![],
    }
}

fn multi(section: &[u32], subtype: &str, children: Vec<Part>) -> Part {
    Part {
        section: section.to_vec(),
        kind: PartKind::Multipart,
        mimetype: format!("multipart/{subtype}"),
        params: vec![],
        disposition: None,
        disposition_params: vec![],
        encoding: "7bit".into(),
        octets: 0,
        children,
    }
}

fn sections(root: &Part) -> Vec<Vec<u32>> {
    attachment_parts(root)
        .into_iter()
        .map(|p| p.section.clone())
        .collect()
}

#[test]
fn the_body_is_not_a_file_and_everything_else_is() {
    // mixed( alternative(plain, html), pdf, text/plain attachment, message/rfc822, calendar )
    let root = multi(
        &[],
        "mixed",
        vec![
            multi(
                &[1],
                "alternative",
                vec![
                    leaf(&[1, 1], "text/plain", None, false),
                    leaf(&[1, 2], "text/html", None, false),
                ],
            ),
            leaf(&[2], "application/pdf", Some("attachment"), true),
            leaf(&[3], "text/plain", Some("attachment"), true),
            leaf(&[4], "message/rfc822", None, false),
            leaf(&[5], "text/calendar", None, false),
        ],
    );
    assert_eq!(sections(&root), vec![vec![2], vec![3], vec![4], vec![5]]);
}

#[test]
fn an_inline_image_in_a_related_group_is_a_file_and_a_single_part_body_is_not() {
    let root = multi(
        &[],
        "related",
        vec![
            leaf(&[1], "text/html", None, false),
            leaf(&[2], "image/png", Some("inline"), true),
        ],
    );
    assert_eq!(sections(&root), vec![vec![2]]);
    assert!(sections(&leaf(&[1], "text/plain", None, false)).is_empty());
    assert_eq!(
        sections(&leaf(&[1], "application/pdf", None, false)),
        vec![vec![1]]
    );
    // A second plain text after the body, inline in a mixed group: a body part, not a file
    // (mail-parser shows it as more body text).
    let root = multi(
        &[],
        "mixed",
        vec![
            leaf(&[1], "text/plain", None, false),
            leaf(&[2], "text/plain", None, false),
        ],
    );
    assert!(sections(&root).is_empty());
}
