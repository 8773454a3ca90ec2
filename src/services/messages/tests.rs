use super::*;

#[test]
fn limits_outside_1_to_100_are_refused_not_clamped() {
    assert_eq!(parse_limit(None).unwrap(), 50);
    assert_eq!(parse_limit(Some(1)).unwrap(), 1);
    assert_eq!(parse_limit(Some(100)).unwrap(), 100);
    for bad in [0, -1, 101] {
        assert_eq!(
            parse_limit(Some(bad)).unwrap_err().code(),
            "invalid_request"
        );
    }
}

#[test]
fn before_accepts_milliseconds_and_rfc3339() {
    assert_eq!(parse_before(None).unwrap(), None);
    assert_eq!(
        parse_before(Some("1700000000123")).unwrap(),
        Some(1_700_000_000_123)
    );
    assert_eq!(
        parse_before(Some("2023-11-14T22:13:20.123Z")).unwrap(),
        Some(1_700_000_000_123)
    );
    for bad in ["", "yesterday", "-5", "2023-13-01T00:00:00Z"] {
        assert!(parse_before(Some(bad)).is_err(), "{bad}");
    }
}

#[test]
fn cursors_round_trip_and_garbage_is_refused() {
    let c = Cursor {
        v: 1,
        one: false,
        r: "!room:example.org".into(),
        t: Some(42),
        e: Some("$ev".into()),
    };
    let encoded = c.encode();
    assert!(!encoded.contains(':') && !encoded.contains('+') && !encoded.contains('/'));
    assert_eq!(Cursor::decode(&encoded).unwrap(), c);
    assert_eq!(
        Cursor::decode(&encoded).unwrap().start(),
        PageStart::after(42, "$ev")
    );
    let half = Cursor {
        t: None,
        ..c.clone()
    }
    .encode();
    for bad in ["", "1700000000000", "%%%", &half, &"A".repeat(5000)] {
        assert!(Cursor::decode(bad).is_err(), "{bad}");
    }
}
