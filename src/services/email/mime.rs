//! Building an outgoing message with lettre's MIME builder (never by hand): the text (and
//! HTML alternative) body, then every file as an attachment part, base64-encoded so each
//! file arrives byte-identical whatever it holds.

use lettre::address::Envelope;
use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Attachment, Body, Mailbox, MultiPart, SinglePart};
use lettre::Message;

use super::uploads::File;

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

fn attachment(f: File) -> SinglePart {
    let ctype = ContentType::parse(&f.mimetype)
        .unwrap_or_else(|_| ContentType::parse("application/octet-stream").expect("a valid type"));
    let body =
        Body::new_with_encoding(f.bytes, ContentTransferEncoding::Base64).unwrap_or_else(Body::new);
    Attachment::new(f.name).body(body, ctype)
}

/// The lettre message (its envelope: From and every To/Cc/Bcc; for a draft without
/// recipients, From to itself: a draft is never sent as it is).
pub fn build(p: Parts) -> Result<Message, lettre::error::Error> {
    let mut b = Message::builder()
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
        Some(html) => Content::Alternative(MultiPart::alternative_plain_html(p.text, html)),
        None => Content::Plain(p.text),
    };
    if p.files.is_empty() {
        return match text_part {
            Content::Alternative(m) => b.multipart(m),
            Content::Plain(t) => b.body(t),
        };
    }
    let mut mixed = match text_part {
        Content::Alternative(m) => MultiPart::mixed().multipart(m),
        Content::Plain(t) => MultiPart::mixed().singlepart(SinglePart::plain(t)),
    };
    for f in p.files {
        mixed = mixed.singlepart(attachment(f));
    }
    b.multipart(mixed)
}

enum Content {
    Plain(String),
    Alternative(MultiPart),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_arrive_byte_identical_in_a_mixed_message() {
        let pdf: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let text_file = b"line one\nline two\r\nno newline at the end".to_vec();
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
                    bytes: pdf.clone(),
                },
                File {
                    name: "notes.txt".into(),
                    mimetype: "text/plain".into(),
                    bytes: text_file.clone(),
                },
            ],
            message_id: "m1@example.org".into(),
            in_reply_to: None,
            references: None,
            draft: false,
        })
        .unwrap();
        let raw = m.formatted();
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
        assert!(String::from_utf8_lossy(&m.formatted()).contains("half a thought"));
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
        assert!(String::from_utf8_lossy(&m.formatted()).contains("Bcc: b@example.org"));
    }
}
