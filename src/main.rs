//! `switchboard` command line: parses arguments and hands over to `commands`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use switchboard::commands::{self, UserCommand};
use switchboard::config::{LogFormat, Overrides};

/// mimalloc instead of glibc's malloc: under load glibc spent a third of the cheapest
/// route's CPU in `malloc`/`free` (every request's 8 KiB read buffer made it consolidate its
/// small-chunk bins), and after a busy run it kept ~100 MiB of freed memory in per-thread
/// arenas that RSS never gave back. Built without transparent huge pages (`no_thp`): with
/// them, every thread's heap segment was backed by whole 2 MiB pages and a burst of
/// blocking threads tripled the resident set. See docs/benchmarks.md for the profiles.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Switchboard: one inbox over WhatsApp, Telegram and Discord, served from your own
/// Matrix homeserver.
#[derive(Debug, Parser)]
#[command(name = "switchboard", version, about, long_about = None)]
struct Cli {
    /// Configuration file (TOML). Default: ./switchboard.toml if present, else built-in defaults.
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Address to listen on, e.g. 127.0.0.1:8080 (overrides server.listen).
    #[arg(long, global = true, value_name = "ADDR")]
    listen: Option<String>,
    /// Directory holding the database and key files (overrides storage.data_dir).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Log output format (overrides log.format).
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP service (the default when no command is given).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Print the OpenAPI 3.1 document (YAML) and exit.
    Openapi,
    /// Validate the configuration, key files and database, print a summary, and exit.
    CheckConfig,
    /// Manage users: list, show, promote to admin, set the subscription.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Write a consistent copy of the database to FILE (safe while the service runs).
    Backup {
        /// Destination file; must not exist.
        file: PathBuf,
    },
    /// Rebuild the encrypted search index from the stored messages and cached e-mail
    /// (all users, or one).
    Reindex {
        /// Only this user (id or e-mail is not accepted: the user id, see `user list`).
        #[arg(long, value_name = "USER_ID")]
        user: Option<String>,
    },
    /// Replace the database with the copy in FILE (stop the service first).
    Restore {
        /// A file written by `switchboard backup`.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let overrides = Overrides {
        config_path: cli.config,
        listen: cli.listen,
        data_dir: cli.data_dir,
        log_format: cli.log_format,
    };
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => commands::serve(&overrides),
        Command::Migrate => commands::migrate(&overrides),
        Command::Openapi => commands::openapi(),
        Command::CheckConfig => commands::check_config(&overrides),
        Command::User { command } => commands::user(&overrides, command),
        Command::Backup { file } => commands::backup(&overrides, &file),
        Command::Restore { file } => commands::restore(&overrides, &file),
        Command::Reindex { user } => commands::reindex(&overrides, user.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("switchboard: {message}");
            ExitCode::FAILURE
        }
    }
}
