use super::*;

#[test]
fn tokens_are_hex_of_64_to_200_characters() {
    assert_eq!(validate_token(&"AB".repeat(32)).unwrap(), "ab".repeat(32));
    assert!(validate_token(&"a".repeat(63)).is_err());
    assert!(validate_token(&"a".repeat(200)).is_ok());
    assert!(validate_token(&"a".repeat(201)).is_err());
    assert!(validate_token(&format!("{}g", "a".repeat(63))).is_err());
}

#[test]
fn optional_fields_are_bounded() {
    assert_eq!(
        optional_field("deviceName", Some("  ".into()), 100).unwrap(),
        None
    );
    assert!(optional_field("deviceName", Some("x".repeat(101)), 100).is_err());
    assert!(optional_field("osVersion", Some("x".repeat(20)), 20).is_ok());
    assert!(parse_environment("staging").is_err());
}
