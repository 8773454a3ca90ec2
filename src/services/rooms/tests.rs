use super::*;

fn map(entries: &[(&str, &[&str])]) -> HashMap<String, Vec<String>> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect()
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn m_direct_names_the_partner() {
    let direct = map(&[("@bob:hs", &["!r:hs"]), ("@carol:hs", &["!other:hs"])]);
    let got = resolve_recipient("@me:hs", "!r:hs", false, None, None, Some(&direct), &[]);
    assert_eq!(got, (true, Some("@bob:hs".into())));
}

#[test]
fn a_direct_room_without_m_direct_uses_the_one_other_member_but_not_bridge_bots() {
    let members = ids(&["@me:hs", "@whatsappbot:hs", "@whatsapp_123:hs"]);
    let got = resolve_recipient(
        "@me:hs",
        "!r:hs",
        true,
        None,
        Some(&members),
        None,
        &["@whatsappbot:hs"],
    );
    assert_eq!(got, (true, Some("@whatsapp_123:hs".into())));
    let crowd = ids(&["@me:hs", "@a:hs", "@b:hs"]);
    let got = resolve_recipient(
        "@me:hs",
        "!r:hs",
        true,
        Some("@a:hs"),
        Some(&crowd),
        None,
        &[],
    );
    assert_eq!(got, (true, None));
    let alone = ids(&["@me:hs"]);
    let got = resolve_recipient(
        "@me:hs",
        "!r:hs",
        true,
        Some("@a:hs"),
        Some(&alone),
        None,
        &[],
    );
    assert_eq!(got, (true, Some("@a:hs".into())));
}

#[test]
fn group_rooms_have_no_recipient_and_unknown_members_keep_the_stored_one() {
    let members = ids(&["@me:hs", "@a:hs"]);
    assert_eq!(
        resolve_recipient(
            "@me:hs",
            "!r:hs",
            false,
            Some("@a:hs"),
            Some(&members),
            None,
            &[]
        ),
        (false, None)
    );
    assert_eq!(
        resolve_recipient("@me:hs", "!r:hs", true, Some("@a:hs"), None, None, &[]),
        (true, Some("@a:hs".into()))
    );
}

#[test]
fn cursors_round_trip_and_refuse_other_filters_and_garbage() {
    let key = RoomListKey {
        pinned: true,
        primary: 0.1 + 0.2,
        recency: 1_700_000_000_123,
        room_id: "!abc:hs".into(),
    };
    let c = encode_cursor(RoomSort::Importance, ArchivedFilter::All, &key);
    assert_eq!(
        decode_cursor(&c, RoomSort::Importance, ArchivedFilter::All).unwrap(),
        key
    );
    assert!(decode_cursor(&c, RoomSort::Recent, ArchivedFilter::All).is_err());
    assert!(decode_cursor(&c, RoomSort::Importance, ArchivedFilter::Active).is_err());
    for junk in ["garbage", "!!!", "e30", ""] {
        assert!(decode_cursor(junk, RoomSort::Recent, ArchivedFilter::Active).is_err());
    }
}

#[test]
fn query_values_are_strict() {
    assert!(parse_limit(Some(0)).is_err());
    assert!(parse_limit(Some(101)).is_err());
    assert_eq!(parse_limit(None).unwrap(), 50);
    assert_eq!(parse_sort(None, false).unwrap(), RoomSort::Importance);
    assert_eq!(parse_sort(None, true).unwrap(), RoomSort::Recent);
    assert!(parse_sort(Some("importance"), true).is_err());
    assert!(parse_sort(Some("bogus"), false).is_err());
    assert!(ArchivedFilter::parse(Some("maybe")).is_err());
    assert!(parse_delete_messages(Some("yes")).is_err());
    assert!(parse_delete_messages(Some("true")).unwrap());
}
