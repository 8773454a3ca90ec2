//! Hostile mail servers written for the tests: a small IMAP server that answers like an
//! honest one until its behaviour says otherwise (a huge literal, silence, UIDs invented
//! on every listing), and an SMTP server that answers once and then stays silent.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the IMAP server does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// The greeting announces a literal of this many bytes, then nothing comes.
    GreetingLiteral(u64),
    /// Honest until a message body is fetched: its literal announces this many bytes.
    FetchLiteral(u64),
    /// Accepts and never says a word.
    Silent,
    /// Every UID listing shows `n` new messages above the last ones (each `size` bytes).
    InventUids { n: u32, size: usize },
    /// One message of 5000 bytes; a FETCH of its structure answers without one.
    NoStructure,
    /// One message of 5000 bytes; a FETCH of its structure answers with one the IMAP
    /// parser cannot finish (`BODYSTRUCTURE ((("` and a string that never ends).
    BadStructure,
}

/// The size of the one message of [`Behaviour::NoStructure`] and [`Behaviour::BadStructure`].
const STRUCTURED_SIZE: usize = 5000;

pub struct FakeImap {
    pub port: u16,
    /// While set, no command of any connection is answered any more.
    pub silent: Arc<AtomicBool>,
    /// Message bodies the server was asked for.
    pub bodies_fetched: Arc<AtomicU32>,
    /// The next UID the server will invent.
    pub next_uid: Arc<AtomicU32>,
}

pub async fn imap(behaviour: Behaviour) -> FakeImap {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = Arc::new(AtomicBool::new(behaviour == Behaviour::Silent));
    let bodies = Arc::new(AtomicU32::new(0));
    let next_uid = Arc::new(AtomicU32::new(1));
    let (s, b, next) = (silent.clone(), bodies.clone(), next_uid.clone());
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let conn = Conn {
                behaviour,
                silent: s.clone(),
                bodies: b.clone(),
                next_uid: next_uid.clone(),
                listed: (0, 0),
            };
            tokio::spawn(conn.serve(sock));
        }
    });
    FakeImap {
        port,
        silent,
        bodies_fetched: bodies,
        next_uid: next,
    }
}

struct Conn {
    behaviour: Behaviour,
    silent: Arc<AtomicBool>,
    bodies: Arc<AtomicU32>,
    next_uid: Arc<AtomicU32>,
    /// UIDs `lo..hi` this connection's last SELECT showed.
    listed: (u32, u32),
}

async fn hold() {
    tokio::time::sleep(Duration::from_secs(600)).await;
}

fn message(uid: u32, size: usize) -> String {
    let head = format!(
        "From: Flood <flood@example.org>\r\nTo: you@example.org\r\nSubject: invented {uid}\r\n\
         Message-ID: <invented.{uid}@example.org>\r\nDate: Wed, 2 Jul 2025 12:00:00 +0000\r\n\r\n"
    );
    let body = "x".repeat(size.saturating_sub(head.len()).max(1));
    format!("{head}{body}")
}

impl Conn {
    async fn serve(mut self, sock: TcpStream) {
        let (r, mut w) = sock.into_split();
        let mut lines = BufReader::new(r).lines();
        let greeting = match self.behaviour {
            Behaviour::Silent => return hold().await,
            Behaviour::GreetingLiteral(n) => format!("* OK {{{n}}}\r\n"),
            _ => "* OK fake IMAP ready\r\n".to_owned(),
        };
        if w.write_all(greeting.as_bytes()).await.is_err() {
            return;
        }
        if matches!(self.behaviour, Behaviour::GreetingLiteral(_)) {
            return hold().await;
        }
        while let Ok(Some(line)) = lines.next_line().await {
            if self.silent.load(Ordering::SeqCst) {
                return hold().await;
            }
            let (tag, rest) = line.split_once(' ').unwrap_or((&line, ""));
            let upper = rest.to_ascii_uppercase();
            let reply = self.answer(tag, &upper).await;
            match reply {
                Some(r) => {
                    if w.write_all(r.as_bytes()).await.is_err() {
                        return;
                    }
                }
                None => return hold().await,
            }
            if upper.starts_with("LOGOUT") {
                return;
            }
        }
    }

    /// The size of every message this server lists.
    fn size(&self) -> usize {
        match self.behaviour {
            Behaviour::InventUids { size, .. } => size,
            Behaviour::NoStructure | Behaviour::BadStructure => STRUCTURED_SIZE,
            _ => 1000,
        }
    }

    /// The reply to one command; `None` to go quiet.
    async fn answer(&mut self, tag: &str, cmd: &str) -> Option<String> {
        let ok = format!("{tag} OK done\r\n");
        if cmd.starts_with("CAPABILITY") {
            return Some(format!("* CAPABILITY IMAP4rev1\r\n{ok}"));
        }
        if cmd.starts_with("LIST") {
            return Some(format!("* LIST () \"/\" INBOX\r\n{ok}"));
        }
        if cmd.starts_with("SELECT") || cmd.starts_with("EXAMINE") {
            let (lo, hi) = match self.behaviour {
                Behaviour::InventUids { n, .. } => {
                    // Every SELECT: n more UIDs above the last ones.
                    let hi = self.next_uid.fetch_add(n, Ordering::SeqCst) + n;
                    (1, hi)
                }
                _ => (1, 2),
            };
            self.listed = (lo, hi);
            return Some(format!(
                "* {} EXISTS\r\n* OK [UIDVALIDITY 7] v\r\n* OK [UIDNEXT {hi}] n\r\n\
                 {tag} OK [READ-WRITE] selected\r\n",
                hi - lo
            ));
        }
        if cmd.starts_with("UID FETCH") && !cmd.contains("BODY") {
            let size = self.size();
            let (lo, hi) = self.listed;
            let mut out = String::new();
            for (seq, uid) in (lo..hi).enumerate() {
                let flags = if cmd.contains("FLAGS") {
                    "FLAGS () "
                } else {
                    ""
                };
                out.push_str(&format!(
                    "* {} FETCH (UID {uid} {flags}RFC822.SIZE {})\r\n",
                    seq + 1,
                    message(uid, size).len()
                ));
            }
            return Some(format!("{out}{ok}"));
        }
        if cmd.starts_with("UID FETCH") && cmd.contains("BODYSTRUCTURE") {
            let m = message(1, STRUCTURED_SIZE);
            let header = &m[..m.find("\r\n\r\n").unwrap() + 4];
            let structure = match self.behaviour {
                Behaviour::BadStructure => "BODYSTRUCTURE (((\"",
                _ => "",
            };
            return Some(format!(
                "* 1 FETCH (UID 1 FLAGS () RFC822.SIZE {} {structure}BODY[HEADER] {{{}}}\r\n{header})\r\n{ok}",
                m.len(),
                header.len()
            ));
        }
        if cmd.starts_with("UID FETCH") {
            self.bodies.fetch_add(1, Ordering::SeqCst);
            match self.behaviour {
                Behaviour::FetchLiteral(n) => {
                    // Announced, then held: the client must not wait for it with 500 MB
                    // in hand.
                    return Some(format!(
                        "* 1 FETCH (UID 1 FLAGS () RFC822.SIZE 1000 BODY[] {{{n}}}\r\n"
                    ));
                }
                Behaviour::InventUids { .. } | Behaviour::NoStructure | Behaviour::BadStructure => {
                    let size = self.size();
                    let set = cmd.split_whitespace().nth(2).unwrap_or("");
                    let (lo, hi) = self.listed;
                    let mut out = String::new();
                    for (seq, uid) in (lo..hi).enumerate() {
                        if !in_set(set, uid) {
                            continue;
                        }
                        let m = message(uid, size);
                        out.push_str(&format!(
                            "* {} FETCH (UID {uid} FLAGS () RFC822.SIZE {} BODY[] {{{}}}\r\n{m})\r\n",
                            seq + 1,
                            m.len(),
                            m.len()
                        ));
                    }
                    return Some(format!("{out}{ok}"));
                }
                _ => return Some(ok),
            }
        }
        Some(ok)
    }
}

/// Whether `uid` is in an IMAP UID set like `3,5:9`.
fn in_set(set: &str, uid: u32) -> bool {
    set.split(',').any(|part| match part.split_once(':') {
        Some((a, b)) => {
            let a: u32 = a.parse().unwrap_or(0);
            let b: u32 = if b == "*" {
                u32::MAX
            } else {
                b.parse().unwrap_or(0)
            };
            (a.min(b)..=a.max(b)).contains(&uid)
        }
        None => part.parse() == Ok(uid),
    })
}

/// An SMTP server that answers the first connection (greeting, EHLO, QUIT) and then
/// accepts every later one without a word.
pub async fn smtp_once_then_silent() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((sock, _)) = listener.accept().await {
            if !first {
                tokio::spawn(async move {
                    let _keep = sock;
                    hold().await;
                });
                continue;
            }
            first = false;
            tokio::spawn(async move {
                let (r, mut w) = sock.into_split();
                let mut lines = BufReader::new(r).lines();
                let _ = w.write_all(b"220 fake ESMTP\r\n").await;
                while let Ok(Some(line)) = lines.next_line().await {
                    let cmd = line.to_ascii_uppercase();
                    let reply: &[u8] = if cmd.starts_with("EHLO") {
                        b"250 fake\r\n"
                    } else if cmd.starts_with("QUIT") {
                        b"221 bye\r\n"
                    } else {
                        b"250 ok\r\n"
                    };
                    let _ = w.write_all(reply).await;
                    if cmd.starts_with("QUIT") {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// A listener that accepts connections and never writes (a silent SMTP or TLS peer).
pub async fn silent() -> u16 {
    imap(Behaviour::Silent).await.port
}
