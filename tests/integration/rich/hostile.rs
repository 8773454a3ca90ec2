//! Review findings on downloads: an encrypted attachment whose ciphertext does not match
//! its event's SHA-256 is refused (502 `attachment_corrupt`) before any byte, and an
//! event naming `mxc://../config` never makes the server call another media endpoint.

use std::io::Read as _;

use matrix_sdk_crypto::AttachmentEncryptor;
use serde_json::json;

use super::*;

#[tokio::test]
async fn a_tampered_encrypted_attachment_is_refused_before_any_byte() {
    let p = plain("").await;
    let (app, token, room, bob) = (&p.app, p.token.as_str(), p.room.as_str(), &p.bob);
    let secret: Vec<u8> = (0..600_000u32).map(|i| (i * 13 % 251) as u8).collect();
    let mut cursor = std::io::Cursor::new(secret.clone());
    let mut encryptor = AttachmentEncryptor::new(&mut cursor);
    let mut cipher = Vec::new();
    encryptor.read_to_end(&mut cipher).unwrap();
    let info = serde_json::to_value(encryptor.finish()).unwrap();
    // The same ciphertext with one bit flipped near its end (AES-CTR decrypts it without
    // noticing: only the hash tells).
    let mut tampered = cipher.clone();
    let at = tampered.len() - 10;
    tampered[at] ^= 0x01;
    let event = |mxc: String, name: &str| {
        let mut file = info.clone();
        file["url"] = json!(mxc);
        json!({"msgtype": "m.file", "body": name, "file": file,
            "info": {"mimetype": "application/octet-stream", "size": secret.len()}})
    };
    let good_mxc = bob.upload(cipher, "application/octet-stream").await;
    let bad_mxc = bob.upload(tampered, "application/octet-stream").await;
    let good = bob
        .send(room, "m.room.message", event(good_mxc, "good.bin"))
        .await;
    let bad = bob
        .send(room, "m.room.message", event(bad_mxc, "bad.bin"))
        .await;
    wait_event_id(app, token, room, &bad).await;

    // The positive marker: the intact one decrypts byte for byte.
    let (status, _, _, _, bytes) = download(app, token, room, &good, false).await;
    assert_eq!(status, 200);
    assert!(
        bytes == secret,
        "intact attachment differs ({} bytes)",
        bytes.len()
    );

    let resp = app
        .get_auth(
            &format!("/api/rooms/{}/media/{}", enc(room), enc(&bad)),
            token,
        )
        .await;
    assert_eq!(resp.status(), 502);
    assert!(resp.headers().get("content-disposition").is_none());
    let ctype = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ctype.starts_with("application/json"), "{ctype}");
    let body = resp.bytes().await.unwrap();
    let err: serde_json::Value = serde_json::from_slice(&body).expect("a JSON error, no bytes");
    assert_eq!(err["error"], "attachment_corrupt", "{err}");
    assert!(body.len() < 1024, "only the error: {} bytes", body.len());
    // Not one plaintext piece slipped out: the secret's first bytes are not in the body.
    assert!(!body.windows(64).any(|w| w == &secret[..64]));
}

#[tokio::test]
async fn an_event_naming_a_dot_segment_media_id_calls_no_other_endpoint() {
    let p = plain("").await;
    let (app, token, room, bob) = (&p.app, p.token.as_str(), p.room.as_str(), &p.bob);
    // The positive marker: an ordinary attachment of Bob's downloads.
    let fine = png(32, 32, 1_000);
    let fine_mxc = bob.upload(fine.clone(), "image/png").await;
    let fine_ev = bob
        .send(
            room,
            "m.room.message",
            json!({"msgtype": "m.file", "body": "fine.png", "url": fine_mxc,
            "info": {"mimetype": "image/png", "size": fine.len()}}),
        )
        .await;
    let mut hostile = Vec::new();
    for url in ["mxc://../config", "mxc://./config", "mxc://%2e%2e/config"] {
        hostile.push(
            bob.send(
                room,
                "m.room.message",
                json!({"msgtype": "m.file", "body": "config.json", "url": url,
                "info": {"mimetype": "application/json"}}),
            )
            .await,
        );
    }
    let enc_ev = bob
        .send(
            room,
            "m.room.message",
            json!({"msgtype": "m.file", "body": "e.bin",
            "file": {"url": "mxc://../config", "v": "v2",
                "key": {"kty": "oct", "key_ops": ["encrypt", "decrypt"], "alg": "A256CTR",
                    "k": "qcHVMSgYg-71CauWBezXI5qkaRb0LuIy-Wx5kIaHMIA", "ext": true},
                "iv": "X85+XgHN+HEAAAAAAAAAAA",
                "hashes": {"sha256": "5qG4fFnbbVdlAB1Q72JDKwCagV6Dbkx9PpSNbPfSKjY"}},
            "info": {"mimetype": "application/octet-stream"}}),
        )
        .await;
    hostile.push(enc_ev.clone());
    wait_event_id(app, token, room, &enc_ev).await;
    let (status, _, _, _, bytes) = download(app, token, room, &fine_ev, false).await;
    assert_eq!((status, bytes == fine), (200, true));

    for ev in &hostile {
        let resp = app
            .get_auth(
                &format!("/api/rooms/{}/media/{}", enc(room), enc(ev)),
                token,
            )
            .await;
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        // Before the fix the server fetched /_matrix/client/v1/media/config and served
        // Synapse's answer ({"m.upload.size": …}) as the attachment.
        assert!(!body.contains("m.upload.size"), "{ev}: {status} {body}");
        assert_eq!(status, 502, "{ev}: {body}");
        let err: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(err["error"], "homeserver_error", "{ev}: {err}");
        assert!(
            err["message"].as_str().unwrap().contains("url"),
            "names the field: {err}"
        );
    }
}
