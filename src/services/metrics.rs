//! `GET /metrics`: the process registry (`crate::metrics`) plus what is measured at scrape
//! time from the database (the scheduler's queue).

use crate::metrics::{self, Gauge};
use crate::services::context::Context;
use crate::store::scheduled_messages;

/// The Prometheus text exposition. A database that cannot be read leaves its gauges out
/// (the rest still tells the operator what is wrong).
pub async fn exposition(ctx: &Context) -> String {
    let now = crate::services::scheduled::now_ms();
    let queue = ctx
        .store
        .query(move |c| scheduled_messages::queue_depth(c, now))
        .await
        .ok();
    let mut extra = Vec::new();
    if let Some((pending, due)) = queue {
        extra.push(Gauge {
            name: "switchboard_scheduler_pending",
            help: "Scheduled messages waiting to be sent.",
            value: pending as f64,
        });
        extra.push(Gauge {
            name: "switchboard_scheduler_due",
            help: "Scheduled messages due now or overdue (the scheduler's queue).",
            value: due as f64,
        });
    }
    metrics::render(&extra)
}
