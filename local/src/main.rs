//! `ingester-local`: the ingester's HTTP API on this machine, no AWS needed.
//!
//! `serve` answers DESIGN §5 on 127.0.0.1:3000 with the Lambdas' own Router
//! (`shared::api::router`), on an embedded SQLite store (default) or a
//! DynamoDB-compatible endpoint; `replay` runs Lambda event files through the
//! same Router and the registry handler.

mod cli;
mod commands;
mod memory;
mod serve;

use clap::Parser;
use cli::{Cli, Command};
use ingester_local::stop::Stop;
use std::process::ExitCode;

/// Why the program ends with a failure: settings that cannot work, which
/// exit with status 78 (EX_CONFIG, which the service unit does not restart
/// on: a restart would only say the same), or anything else (status 1).
pub(crate) enum Failure {
    Settings(String),
    Other(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Other(e)
    }
}

/// Exit status of settings that cannot work (sysexits.h's EX_CONFIG).
const EX_CONFIG: u8 = 78;

async fn run(cli: Cli, stop: &Stop) -> Result<bool, Failure> {
    match cli.command {
        Command::Serve(args) => serve::serve_command(args, stop).await,
        // The one-shot commands resume from their checkpoints (or start
        // over harmlessly): a stop ends them at their next await.
        command => match stop.or(commands::one_shot(command, stop)).await {
            Some(done) => Ok(done?),
            None => Err(Failure::Other("stopped by a signal before the end".into())),
        },
    }
}

fn main() -> ExitCode {
    // Before any thread starts, so that every thread inherits it.
    ingester_local::stop::hold_signals();
    // rustls's process default (mqtts:// brokers): ring, the one provider
    // the program names. Left to rustls, a build that links a second
    // provider too (the tests' SDK clients) would have no default.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // A server's log is its record; a one-shot command's stderr carries its
    // summary (export, alerts replay), which a script reads, so the store's
    // background news (the sealer's "sealed closed days") stays out of it
    // unless RUST_LOG asks. Warnings and errors still show.
    let serving = args.get(1).is_some_and(|a| a == "serve");
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(if serving { "info" } else { "warn" })
    });
    // Under systemd stderr is the journal: no colour codes in it.
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .compact()
        .init();
    // A backup is one blocking task, run as it is with no runtime: starting
    // one, and parsing every command's flags, were a sixth of a 1 MB
    // backup's time (docs/BENCHMARKS.md, "Backup during ingest"). A stop
    // signal takes its default action there: what it leaves is the partial
    // file, under its temporary name, which the next backup removes.
    if args.get(1).is_some_and(|a| a == "backup") {
        ingester_local::stop::let_signals_through();
        return match commands::backup_command(cli::BackupCommand::parse_alone(&args[1..])) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = Cli::parse_from(args);
    // A restore is one blocking task: its runtime needs no worker threads
    // (their start was a twentieth of a 2 MB backup's time).
    let mut builder = if matches!(cli.command, Command::Restore { .. }) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let stop = Stop::listen().map_err(|e| format!("listening for stop signals: {e}"))?;
        run(cli, &stop).await
    });
    // Ends every task, so the last handle on the store goes and the store
    // closes (its last seal and checkpoint), after blocking work under way.
    drop(runtime);
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(Failure::Settings(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(EX_CONFIG)
        }
        Err(Failure::Other(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::serve::door_check;

    /// The service's settings file (`debian/default`) names every flag of
    /// `serve` by its environment variable, and names nothing else: a
    /// household can set anything there, and nothing it sets is ignored.
    #[test]
    fn every_serve_flag_has_a_variable_in_the_settings_file() {
        use clap::CommandFactory;
        let cli = super::Cli::command();
        let serve = cli.find_subcommand("serve").unwrap();
        let mut flags: Vec<String> = Vec::new();
        for arg in serve.get_arguments() {
            if matches!(arg.get_id().as_str(), "help" | "version") {
                continue;
            }
            let env = arg
                .get_env()
                .unwrap_or_else(|| panic!("--{} has no environment variable", arg.get_id()));
            flags.push(env.to_string_lossy().into_owned());
        }
        let file = include_str!("../debian/default");
        let named: Vec<String> = file
            .lines()
            .map(|l| l.trim_start_matches('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(name, _)| name.to_owned())
            .filter(|name| {
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            })
            .collect();
        // Not the Lambdas' names: a shell that exported TABLE_NAME for them
        // must not switch `serve` to a table.
        assert!(!flags
            .iter()
            .any(|f| f == "TABLE_NAME" || f == "DYNAMODB_ENDPOINT"));
        flags.sort();
        let mut in_file: Vec<String> = named.into_iter().filter(|n| n != "RUST_LOG").collect();
        in_file.sort();
        assert_eq!(in_file, flags);
    }

    #[test]
    fn the_door_is_open_only_on_loopback_with_a_token_or_on_purpose() {
        let addr = |a: &str| a.parse().unwrap();
        for loopback in ["127.0.0.1:3000", "[::1]:3000", "[::ffff:127.0.0.1]:3000"] {
            assert!(
                door_check(addr(loopback), false, false).is_ok(),
                "{loopback}"
            );
        }
        for network in ["0.0.0.0:3000", "[::]:3000", "192.168.1.20:3000"] {
            let refused = door_check(addr(network), false, false).unwrap_err();
            assert!(refused.contains("--token") && refused.contains("--insecure-open"));
            assert!(door_check(addr(network), true, false).is_ok(), "{network}");
            assert!(door_check(addr(network), false, true).is_ok(), "{network}");
        }
    }

    /// `serve` without flags is configured as a function started with
    /// `TABLE_NAME` alone (whose defaults are the template's,
    /// tests/tests/template.rs), and the settings file's commented values are
    /// those defaults.
    #[test]
    fn serve_s_defaults_are_the_config_s_and_the_settings_file_s() {
        use clap::Parser;
        let args = super::Cli::parse_from(["ingester-local", "serve", "--table", "t"]);
        let super::Command::Serve(serve) = args.command else {
            panic!("not serve");
        };
        let ours = serve.store.config(None, false, std::time::Duration::ZERO);
        let theirs =
            shared::config::Config::from_lookup(|k| (k == "TABLE_NAME").then(|| "t".into()))
                .unwrap();
        assert_eq!(ours.raw_window, theirs.raw_window);
        assert_eq!(ours.retention, theirs.retention);
        assert_eq!(ours.indexes, theirs.indexes);
        assert_eq!(ours.shards, theirs.shards);
        assert_eq!(
            ours.registry_latest_interval,
            theirs.registry_latest_interval
        );
        assert_eq!(ours.dynamodb.budget, theirs.dynamodb.budget);
        let file = include_str!("../debian/default");
        let commented = |name: &str| -> String {
            file.lines()
                .find_map(|l| l.strip_prefix(&format!("#{name}=")))
                .unwrap_or_else(|| panic!("{name} is not in the settings file"))
                .to_owned()
        };
        let days = |r: Option<shared::store::Retention>, name: &str| {
            let n: u32 = commented(name).parse().unwrap();
            assert_eq!(shared::store::Retention::days(n), r, "{name}");
        };
        days(theirs.raw_window, "RAW_READING_DAYS");
        let switch = |on: bool, name: &str| {
            assert_eq!(commented(name), shared::config::switch_text(on), "{name}");
        };
        switch(theirs.indexes.room_time, "ROOM_INDEX");
        switch(theirs.indexes.box_search, "BOX_SEARCH");
        switch(theirs.indexes.all_devices, "ALL_DEVICES_FEED");
        assert_eq!(commented("ALL_DEVICES_SHARDS"), theirs.shards.to_string());
        assert_eq!(
            commented("REGISTRY_LATEST_SECONDS"),
            theirs.registry_latest_interval.as_secs().to_string()
        );
        assert_eq!(
            commented("DYNAMODB_BUDGET_MS"),
            theirs.dynamodb.budget.as_millis().to_string()
        );
    }

    /// An empty token is no token: the door stays shut.
    #[test]
    fn an_empty_token_is_no_token() {
        use clap::Parser;
        let args = super::Cli::parse_from(["ingester-local", "serve", "--memory"]);
        let super::Command::Serve(serve) = args.command else {
            panic!("not serve");
        };
        let config = serve
            .store
            .config(Some("   "), false, std::time::Duration::ZERO);
        assert!(config.ingest_token.is_none());
        assert!(door_check(
            "0.0.0.0:3000".parse().unwrap(),
            config.ingest_token.is_some(),
            false
        )
        .is_err());
    }
}
