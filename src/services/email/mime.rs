//! Building an outgoing message with lettre's MIME builder (never by hand): the text (and
//! HTML alternative) body, then every file as an attachment part, base64-encoded so each
//! file arrives byte-identical whatever it holds. A spooled file's part gets a marker for
//! a body, replaced by the file's base64 text as the message goes out ([`super::wire`]).

use lettre::address::Envelope;
use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Attachment, Body, Mailbox, MultiPart, SinglePart};

use super::spool::Spooled;
use super::wire::Outgoing;
use crate::error::{AppError, AppResult};

/// A file of an outgoing message.
pub struct File {
    pub name: String,
    pub mimetype: String,
    pub content: Content,
}

/// Where a file's bytes are: small files taken from a server message are in memory;
/// uploads and forwarded files are in the sealed spool and stream as the message goes out.
pub enum Content {
    Bytes(Vec<u8>),
    Spooled(Spooled),
}

/// Everything that goes into one message.
pub struct Parts {
    pub from: Mailbox,
    pub to: Vec<Mailbox>,
    pub cc: Vec<Mailbox>,
    pub bcc: Vec<Mailbox>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    pub files: Vec<File>,
    /// Without angle brackets.
    pub message_id: String,
    pub in_reply_to: Option<String>,
    pub references: Option<String>,
    /// A draft: Bcc is kept in the header (for the next edit) and recipients are optional.
    pub draft: bool,
}

pub fn angle(id: &str) -> String {
    format!(
        "<{}>",
        id.trim().trim_start_matches('<').trim_end_matches('>')
    )
}

/// The part of a file; a spooled one's body is `marker` (base64 text, so lettre writes it
/// as it is) and the file goes into `spliced` to take its place on the wire.
fn attachment(f: File, marker: String, spliced: &mut Vec<(String, Spooled)>) -> SinglePart {
    let ctype = ContentType::parse(&f.mimetype)
        .unwrap_or_else(|_| ContentType::parse("application/octet-stream").expect("a valid type"));
    let body = match f.content {
        Content::Bytes(bytes) => Body::new_with_encoding(bytes, ContentTransferEncoding::Base64)
            .unwrap_or_else(Body::new),
        Content::Spooled(s) => {
            spliced.push((marker.clone(), s));
            Body::dangerous_pre_encoded(marker.into_bytes(), ContentTransferEncoding::Base64)
        }
    };
    Attachment::new(f.name).body(body, ctype)
}

/// The message ready to go out (its envelope: From and every To/Cc/Bcc; for a draft
/// without recipients, From to itself: a draft is never sent as it is). 400 naming `to`
/// when lettre refuses the addresses.
pub fn build(p: Parts) -> AppResult<Outgoing> {
    let mut spliced = Vec::new();
    let message = message(p, &mut spliced).map_err(|e| AppError::invalid("to", e.to_string()))?;
    let envelope = message.envelope().clone();
    Outgoing::new(envelope, message.formatted(), spliced).map_err(AppError::internal)
}

fn message(
    p: Parts,
    spliced: &mut Vec<(String, Spooled)>,
) -> Result<lettre::Message, lettre::error::Error> {
    let mut b = lettre::Message::builder()
        .from(p.from.clone())
        .subject(p.subject)
        .date_now()
        .message_id(Some(angle(&p.message_id)));
    let no_recipients = p.to.is_empty() && p.cc.is_empty() && p.bcc.is_empty();
    for m in p.to {
        b = b.to(m);
    }
    for m in p.cc {
        b = b.cc(m);
    }
    for m in p.bcc {
        b = b.bcc(m);
    }
    if let Some(r) = p.in_reply_to {
        b = b.in_reply_to(angle(&r));
    }
    if let Some(refs) = p.references {
        b = b.references(refs);
    }
    if p.draft {
        b = b.keep_bcc();
        if no_recipients {
            let me = p.from.email.clone();
            b = b.envelope(Envelope::new(Some(me.clone()), vec![me])?);
        }
    }
    let text_part = match p.html {
        Some(html) => Text::Alternative(MultiPart::alternative_plain_html(p.text, html)),
        None => Text::Plain(p.text),
    };
    if p.files.is_empty() {
        return match text_part {
            Text::Alternative(m) => b.multipart(m),
            Text::Plain(t) => b.body(t),
        };
    }
    let mut mixed = match text_part {
        Text::Alternative(m) => MultiPart::mixed().multipart(m),
        Text::Plain(t) => MultiPart::mixed().singlepart(SinglePart::plain(t)),
    };
    // Letters and digits only (valid base64 text); random, so no text can hold it.
    let tag = uuid::Uuid::new_v4().simple().to_string();
    for (i, f) in p.files.into_iter().enumerate() {
        mixed = mixed.singlepart(attachment(f, format!("SWITCHBOARD{i}X{tag}"), spliced));
    }
    b.multipart(mixed)
}

enum Text {
    Plain(String),
    Alternative(MultiPart),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One file spooled (streamed into the message), one in memory.
    #[test]
    fn files_arrive_byte_identical_in_a_mixed_message() {
        let pdf: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let text_file = b"line one\nline two\r\nno newline at the end".to_vec();
        let dir = tempfile::tempdir().unwrap();
        let dek = crate::crypto::DataKey::from_bytes([3; 32]);
        let mut w = super::super::spool::SpoolWriter::create(dir.path(), "pdf", &dek).unwrap();
        w.write(&pdf).unwrap();
        let spooled = w.finish().unwrap();
        let m = build(Parts {
            from: "Me <me@example.org>".parse().unwrap(),
            to: vec!["you@example.org".parse().unwrap()],
            cc: vec![],
            bcc: vec!["hidden@example.org".parse().unwrap()],
            subject: "Files".into(),
            text: "See attached".into(),
            html: None,
            files: vec![
                File {
                    name: "report ä.pdf".into(),
                    mimetype: "application/pdf".into(),
                    content: Content::Spooled(spooled),
                },
                File {
                    name: "notes.txt".into(),
                    mimetype: "text/plain".into(),
                    content: Content::Bytes(text_file.clone()),
                },
            ],
            message_id: "m1@example.org".into(),
            in_reply_to: None,
            references: None,
            draft: false,
        })
        .unwrap();
        let raw = m.to_vec().unwrap();
        assert_eq!(raw.len() as u64, m.wire_len());
        let text = String::from_utf8_lossy(&raw);
        assert!(text.contains("multipart/mixed"), "{text}");
        assert!(
            !text.contains("hidden@example.org"),
            "Bcc is not in a sent header"
        );
        let parsed = mail_parser::MessageParser::default().parse(&raw).unwrap();
        let files: Vec<_> = parsed.attachments().collect();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].contents(), &pdf[..]);
        assert_eq!(files[1].contents(), &text_file[..]);
        use mail_parser::MimeHeaders;
        assert_eq!(files[0].attachment_name(), Some("report ä.pdf"));
        assert_eq!(parsed.body_text(0).unwrap().trim(), "See attached");
    }

    #[test]
    fn a_draft_keeps_bcc_and_needs_no_recipient() {
        let m = build(Parts {
            from: "me@example.org".parse().unwrap(),
            to: vec![],
            cc: vec![],
            bcc: vec![],
            subject: String::new(),
            text: "half a thought".into(),
            html: None,
            files: vec![],
            message_id: "d1@example.org".into(),
            in_reply_to: None,
            references: None,
            draft: true,
        })
        .unwrap();
        assert!(String::from_utf8_lossy(&m.to_vec().unwrap()).contains("half a thought"));
        let m = build(Parts {
            from: "me@example.org".parse().unwrap(),
            to: vec![],
            cc: vec![],
            bcc: vec!["b@example.org".parse().unwrap()],
            subject: "s".into(),
            text: "t".into(),
            html: None,
            files: vec![],
            message_id: "d2@example.org".into(),
            in_reply_to: None,
            references: None,
            draft: true,
        })
        .unwrap();
        assert!(String::from_utf8_lossy(&m.to_vec().unwrap()).contains("Bcc: b@example.org"));
    }
}
