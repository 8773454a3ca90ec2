//! The rows of the read-route table: which route, which caller, what happens meanwhile,
//! and the target of each (issue 36), with the verdicts printed beside them.

use super::load::Outcome;

/// The row measured while messages arrive for the other users.
pub const OTHERS_ROW: &str = "  while 20 msg/s arrive for others";
/// The row measured while another member of the room is typing (issue 31).
pub const TYPING_ROW: &str = "  while 20 typing notices/s arrive";
/// Their target: this share of the quiet readable-history rate of the same run (issue 36).
pub const QUIET_SHARE_TARGET: f64 = 0.9;

/// Who calls a row's route.
#[derive(Clone, Copy)]
pub enum Caller {
    Token,
    Native,
}

/// One row of the table: a route, its caller, whether messages arrive meanwhile, the
/// target ratio to the trivial route and, where the issue sets one, the p99 target (ms).
pub struct Row {
    pub name: &'static str,
    pub path: String,
    pub caller: Caller,
    pub arriving: bool,
    /// Messages arrive for the other users meanwhile (target: relative to the quiet row).
    pub others: bool,
    /// Another member of the room types meanwhile (target: relative to the quiet row).
    pub typing: bool,
    /// Sent with `Accept-Encoding: gzip, deflate, br` (a browser's).
    pub gzip: bool,
    pub target: f64,
    pub p99_ms: Option<f64>,
}

/// What a browser sends.
pub const BROWSER_ACCEPT_ENCODING: &str = "gzip, deflate, br";

pub fn rows(history: &str, room: &str) -> Vec<Row> {
    let row = |name, path: &str, caller, arriving, target, p99_ms| Row {
        name,
        path: path.to_owned(),
        caller,
        arriving,
        others: false,
        typing: false,
        gzip: false,
        target,
        p99_ms,
    };
    use Caller::{Native, Token};
    let (rooms, rooms100) = ("/api/rooms", "/api/rooms?limit=100");
    vec![
        row(
            "readable history (personal token)",
            history,
            Token,
            false,
            0.8,
            None,
        ),
        row("  while 20 msg/s arrive", history, Token, true, 0.7, None),
        Row {
            gzip: true,
            ..row("  gzip accepted", history, Token, false, 0.8, None)
        },
        Row {
            gzip: true,
            ..row(
                "  gzip, while 20 msg/s arrive",
                history,
                Token,
                true,
                0.7,
                None,
            )
        },
        Row {
            others: true,
            ..row(OTHERS_ROW, history, Token, false, 0.0, None)
        },
        Row {
            typing: true,
            ..row(TYPING_ROW, history, Token, false, 0.0, None)
        },
        row(
            "native sealed history (access token)",
            history,
            Native,
            false,
            0.8,
            Some(20.0),
        ),
        row("  while 20 msg/s arrive ", history, Native, true, 0.7, None),
        Row {
            gzip: true,
            ..row("  gzip accepted ", history, Native, false, 0.8, Some(20.0))
        },
        row(
            "room list (personal token)",
            rooms,
            Token,
            false,
            0.8,
            Some(20.0),
        ),
        row("  limit=100", rooms100, Token, false, 0.8, Some(20.0)),
        row("room list (native)", rooms, Native, false, 0.8, Some(20.0)),
        row("  limit=100 ", rooms100, Native, false, 0.8, Some(20.0)),
        row(
            "room detail (personal token)",
            &format!("/api/rooms/{room}"),
            Token,
            false,
            0.8,
            None,
        ),
        row(
            "/api/messages/stats",
            "/api/messages/stats",
            Native,
            false,
            0.8,
            None,
        ),
    ]
}

pub fn verdict(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

/// The other-users or typing row against the quiet readable-history row of the same run.
pub fn quiet_share_verdict(
    measured: &[(&Row, Outcome, String)],
    row: &Row,
    o: &Outcome,
) -> (String, bool) {
    let quiet = measured
        .iter()
        .find(|(r, _, _)| !r.arriving && !r.others && !r.typing && r.caller_is_token_history())
        .map(|(_, q, _)| q.rate());
    let share = quiet.map(|q| o.rate() / q);
    let ok = share.is_some_and(|s| s >= QUIET_SHARE_TARGET) && o.errors == 0;
    let what = if row.typing {
        "while another member types (20 notices/s)"
    } else {
        "while 20 msg/s arrive for other users"
    };
    println!(
        "{:<40} readable history {what}: {} of its quiet rate (target >= {QUIET_SHARE_TARGET}) {}",
        "",
        share.map_or("not measured".to_owned(), |s| format!("{s:.3}")),
        verdict(ok)
    );
    (
        format!("readable history {what}: >= {QUIET_SHARE_TARGET}x its quiet rate"),
        ok,
    )
}

impl Row {
    pub fn caller_is_token_history(&self) -> bool {
        matches!(self.caller, Caller::Token) && self.path.starts_with("/api/messages")
    }
}
