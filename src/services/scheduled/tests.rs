use super::*;

#[test]
fn pages_are_validated_not_clamped() {
    assert_eq!(parse_page(None, None).unwrap(), (50, 0));
    assert_eq!(parse_page(Some("100"), Some("7")).unwrap(), (100, 7));
    for (l, o) in [
        (Some("0"), None),
        (Some("101"), None),
        (Some("x"), None),
        (None, Some("-1")),
        (None, Some("1.5")),
    ] {
        assert_eq!(parse_page(l, o).unwrap_err().code(), "invalid_request");
    }
}

#[test]
fn schedule_times_must_parse_and_be_in_the_future() {
    let now = DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
        .unwrap()
        .timestamp_millis();
    assert_eq!(
        parse_schedule_time("2030-01-01T00:00:01.5+00:00", now).unwrap(),
        now + 1_500
    );
    for bad in [
        "2029-12-31T23:59:59Z",
        "2030-01-01T00:00:00Z",
        "tomorrow",
        "",
        "2030-01-01",
    ] {
        assert_eq!(
            parse_schedule_time(bad, now).unwrap_err().code(),
            "invalid_schedule_time",
            "{bad}"
        );
    }
}

#[test]
fn plaintext_becomes_text_or_given_content() {
    assert_eq!(
        message_content("hi"),
        json!({"msgtype": "m.text", "body": "hi"})
    );
    let notice = r#"{"msgtype":"m.notice","body":"b","format":"org.matrix.custom.html","formatted_body":"<b>b</b>"}"#;
    assert_eq!(message_content(notice)["msgtype"], "m.notice");
    assert_eq!(message_content(r#"{"a":1}"#)["body"], r#"{"a":1}"#);
}

#[test]
fn room_ids_and_platforms_are_checked() {
    assert!(validate_room_id("roomId", "!abc:hs").is_ok());
    assert!(validate_room_id("roomId", "abc:hs").is_err());
    assert!(validate_room_id("roomId", "!a b:hs").is_err());
    assert_eq!(
        validate_platform(Some("Discord")).unwrap().as_deref(),
        Some("discord")
    );
    assert!(validate_platform(Some("signal")).is_err());
    assert!(parse_id("id", "nope").is_err());
}
