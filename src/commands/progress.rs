//! Progress of the long commands (`reindex`, `backup`, `restore`): a bar on a terminal, plain
//! lines otherwise (a CI log, systemd's journal, a pipe), where a redrawn bar would be noise.
//! Both go to stderr, so stdout keeps only the result a script may read.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, ProgressBar, ProgressStyle};

/// How often a plain line is written at most while the work goes on (the first and the last
/// are always written).
const PLAIN_EVERY: Duration = Duration::from_secs(2);

/// What the counted units are.
#[derive(Debug, Clone, Copy)]
pub enum Unit {
    /// Things counted by number, with their name (`"messages"`).
    Items(&'static str),
    Bytes,
}

impl Unit {
    /// `500 of 1200 messages`, `2.00 MiB of 4.00 MiB`.
    fn of(self, done: u64, total: u64) -> String {
        match self {
            Self::Items(name) => format!("{done} of {total} {name}"),
            Self::Bytes => format!("{} of {}", HumanBytes(done), HumanBytes(total)),
        }
    }
}

/// One piece of work being counted up to a total (known from the start or set later).
pub struct Progress {
    label: String,
    unit: Unit,
    total: u64,
    done: u64,
    /// The bar when stderr is a terminal; plain lines otherwise.
    bar: Option<ProgressBar>,
    last_line: Option<Instant>,
}

impl Progress {
    /// Starts counting `label` (e.g. `"backup"`) up to `total`, which may still be 0.
    pub fn start(label: impl Into<String>, total: u64, unit: Unit) -> Self {
        Self::new(label.into(), total, unit, std::io::stderr().is_terminal())
    }

    fn new(label: String, total: u64, unit: Unit, terminal: bool) -> Self {
        let bar = terminal.then(|| {
            let counts = match unit {
                Unit::Items(name) => format!("{{pos}}/{{len}} {name}"),
                Unit::Bytes => "{bytes}/{total_bytes}".to_owned(),
            };
            let template = format!("{{msg}} [{{bar:30}}] {counts} ({{eta}} left)");
            let style = ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            let bar = ProgressBar::new(total).with_style(style);
            bar.set_message(label.clone());
            bar
        });
        let mut progress = Self {
            label,
            unit,
            total,
            done: 0,
            bar,
            last_line: None,
        };
        progress.plain_line(false);
        progress
    }

    /// The work has reached `done` of `total` units.
    pub fn update(&mut self, done: u64, total: u64) {
        self.done = done;
        self.total = total.max(done);
        match &self.bar {
            Some(bar) => {
                bar.set_length(self.total);
                bar.set_position(done);
            }
            None => self.plain_line(false),
        }
    }

    /// The work is done: the bar stays at its end, or the last plain line is written.
    pub fn finish(mut self) {
        match self.bar.take() {
            Some(bar) => bar.finish(),
            None => self.plain_line(true),
        }
    }

    /// `label: done of total (pct%)`, at most every [`PLAIN_EVERY`] unless `last`.
    fn plain_line(&mut self, last: bool) {
        if self.bar.is_some() {
            return;
        }
        let due = self.last_line.is_none_or(|t| t.elapsed() >= PLAIN_EVERY);
        if !(last || due) {
            return;
        }
        self.last_line = Some(Instant::now());
        eprintln!("{}", self.line(last));
    }

    fn line(&self, last: bool) -> String {
        let counts = self.unit.of(self.done, self.total);
        match (self.done * 100).checked_div(self.total) {
            _ if last => format!("{}: {counts}, done", self.label),
            Some(pct) => format!("{}: {counts} ({pct}%)", self.label),
            None => format!("{}: started", self.label),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_count_items_and_bytes() {
        let mut p = Progress::new("reindex".into(), 0, Unit::Items("messages"), false);
        p.update(500, 1200);
        assert_eq!(p.line(false), "reindex: 500 of 1200 messages (41%)");
        let mut p = Progress::new("backup".into(), 0, Unit::Bytes, false);
        assert_eq!(p.line(false), "backup: started");
        p.update(2 << 20, 4 << 20);
        assert_eq!(p.line(false), "backup: 2.00 MiB of 4.00 MiB (50%)");
        p.update(4 << 20, 4 << 20);
        assert_eq!(p.line(true), "backup: 4.00 MiB of 4.00 MiB, done");
    }
}
