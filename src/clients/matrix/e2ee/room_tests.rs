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

fn feed<'a>(to_device: &'a [Value], devices: &'a Value, counts: &'a Value) -> SyncCrypto<'a> {
    SyncCrypto {
        to_device,
        device_lists: devices,
        one_time_keys_count: counts,
        unused_fallback_key_types: None,
        next_batch: "s1",
    }
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
    c.receive_sync(&feed(&none, &no_devices, &fifty))
        .await
        .unwrap();
    assert!(at_rest(&c), "fed an empty response, it rests");
    c.receive_sync(&feed(&none, &no_devices, &fifty))
        .await
        .unwrap();
    assert!(at_rest(&c), "the same counts again: skipped, still at rest");

    // Other key counts are fed (and the machine rests again on them).
    let fewer = json!({"signed_curve25519": 10});
    assert!(!c.at_rest_with(&super::KeyCounts::of(&feed(&none, &no_devices, &fewer))));
    c.receive_sync(&feed(&none, &no_devices, &fewer))
        .await
        .unwrap();
    assert!(at_rest(&c));

    // A device change is fed, and so is the response after it.
    let changed = json!({"changed": ["@friend:example.org"]});
    c.receive_sync(&feed(&none, &changed, &fewer))
        .await
        .unwrap();
    assert!(!at_rest(&c), "a device change leaves the rest");

    // Requests to send leave the rest too (the next response is fed whatever it holds).
    c.receive_sync(&feed(&none, &no_devices, &fewer))
        .await
        .unwrap();
    assert!(at_rest(&c));
    c.leave_rest();
    assert!(!at_rest(&c));
}
