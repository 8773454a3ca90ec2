//! Feeding sync responses to the machine: a response with nothing for it is skipped while
//! the machine is at rest, and anything new is fed.

use std::sync::Arc;

use matrix_sdk_crypto::OlmMachine;
use ruma::{OwnedDeviceId, OwnedUserId};
use serde_json::{json, Value};

use super::{SyncCrypto, UserCrypto};

async fn crypto() -> Arc<UserCrypto> {
    let user = OwnedUserId::try_from("@me:example.org").unwrap();
    let device = OwnedDeviceId::from("SYNCDEV");
    let machine = OlmMachine::new(&user, &device).await;
    UserCrypto::standalone(machine, "me")
}

fn feed<'a>(
    to_device: &'a [Value],
    devices: &'a Value,
    counts: &'a Value,
    next_batch: &'a str,
) -> SyncCrypto<'a> {
    SyncCrypto {
        to_device,
        device_lists: devices,
        one_time_keys_count: counts,
        unused_fallback_key_types: None,
        next_batch,
    }
}

/// The position of the last response the machine was fed (its store keeps it).
async fn fed_up_to(c: &UserCrypto) -> Option<String> {
    c.machine.store().next_batch_token().await.unwrap()
}

fn at_rest(c: &UserCrypto) -> bool {
    c.at_rest.lock().unwrap().is_some()
}

#[tokio::test]
async fn an_empty_response_is_skipped_only_while_the_machine_is_at_rest() {
    let c = crypto().await;
    let (none, no_devices) = (Vec::new(), json!({}));
    let fifty = json!({"signed_curve25519": 50});
    assert!(!at_rest(&c), "a new machine is fed the first response");
    c.receive_sync(&feed(&none, &no_devices, &fifty, "s1"))
        .await
        .unwrap();
    assert!(at_rest(&c), "fed an empty response, it rests");
    assert_eq!(fed_up_to(&c).await.as_deref(), Some("s1"));
    c.receive_sync(&feed(&none, &no_devices, &fifty, "s2"))
        .await
        .unwrap();
    assert!(at_rest(&c), "the same counts again: skipped, still at rest");
    assert_eq!(fed_up_to(&c).await.as_deref(), Some("s1"), "s2 was not fed");

    // Other key counts are fed (and the machine rests again on them).
    let fewer = json!({"signed_curve25519": 10});
    assert!(!c.at_rest_with(&super::KeyCounts::of(&feed(
        &none,
        &no_devices,
        &fewer,
        "s3"
    ))));
    c.receive_sync(&feed(&none, &no_devices, &fewer, "s3"))
        .await
        .unwrap();
    assert!(at_rest(&c));
    assert_eq!(fed_up_to(&c).await.as_deref(), Some("s3"));

    // A device change is fed, and so is the response after it.
    let changed = json!({"changed": ["@friend:example.org"]});
    c.receive_sync(&feed(&none, &changed, &fewer, "s4"))
        .await
        .unwrap();
    assert!(!at_rest(&c), "a device change leaves the rest");
    assert_eq!(fed_up_to(&c).await.as_deref(), Some("s4"));

    // Requests to send leave the rest too (the next response is fed whatever it holds).
    c.receive_sync(&feed(&none, &no_devices, &fewer, "s5"))
        .await
        .unwrap();
    assert!(at_rest(&c));
    assert_eq!(
        fed_up_to(&c).await.as_deref(),
        Some("s5"),
        "fed after the change"
    );
    c.leave_rest();
    assert!(!at_rest(&c));
    c.receive_sync(&feed(&none, &no_devices, &fewer, "s6"))
        .await
        .unwrap();
    assert_eq!(
        fed_up_to(&c).await.as_deref(),
        Some("s6"),
        "fed after leaving the rest"
    );
}
