//! Structured JSON logs, filtered by `RUST_LOG` (default `info`).
//!
//! The filter is `tracing_subscriber`'s `Targets`: levels, for every target
//! or by target (`warn`, `info,ingester_dynamodb=debug`), which is all a
//! function's settings need. `EnvFilter` also matches spans and fields, by
//! regular expressions: its regex engine was 0.25 MB of every function
//! (docs/BENCHMARKS.md, "Function footprint").

use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// The default, and what a `RUST_LOG` that is not a list of levels gets.
const DEFAULT: &str = "info";

pub fn init() {
    let (filter, refused) = filter(std::env::var("RUST_LOG").ok().as_deref());
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .json()
                .with_target(false)
                .with_current_span(false)
                .without_time(), // CloudWatch stamps every line
        )
        .with(filter)
        .try_init();
    if let Some(e) = refused {
        tracing::warn!(error = %e, "RUST_LOG is not a list of levels; logging at {DEFAULT}");
    }
}

/// The filter `RUST_LOG` names, or the default with why it was refused.
fn filter(rust_log: Option<&str>) -> (Targets, Option<String>) {
    let default = || DEFAULT.parse::<Targets>().expect("the default parses");
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => (default(), None),
        Some(text) => match text.parse::<Targets>() {
            Ok(targets) => (targets, None),
            Err(e) => (default(), Some(format!("{text:?}: {e}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::filter;
    use tracing::Level;
    use tracing_subscriber::filter::LevelFilter;

    #[test]
    fn rust_log_sets_levels_and_a_bad_one_falls_back_to_info() {
        let (f, refused) = filter(None);
        assert_eq!(refused, None);
        assert!(f.would_enable("shared::api", &Level::INFO));
        assert!(!f.would_enable("shared::api", &Level::DEBUG));

        let (f, refused) = filter(Some("warn,shared::store=debug"));
        assert_eq!(refused, None);
        assert!(!f.would_enable("shared::api", &Level::INFO));
        assert!(f.would_enable("shared::store::dynamodb", &Level::DEBUG));
        assert_eq!(f.default_level(), Some(LevelFilter::WARN));

        let (f, refused) = filter(Some("  "));
        assert_eq!(refused, None);
        assert!(f.would_enable("x", &Level::INFO));

        let (f, refused) = filter(Some("shared=loud"));
        assert!(refused.unwrap().contains("shared=loud"));
        assert!(f.would_enable("shared", &Level::INFO));
        assert!(!f.would_enable("shared", &Level::DEBUG));
    }
}
