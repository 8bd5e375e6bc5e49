//! `ingester-local export` and `import`: the files around the library's
//! export use case (docs/backup.md). An export to a file is written under a
//! temporary name (`.NAME.partial`) and renamed once complete, so a failed or
//! killed export never leaves half a file under the name asked for; gzip is
//! chosen with `--gzip` or a name ending `.gz`. An import reads a file or
//! standard input, gzip or not (told by the first two bytes).

use indicatif::{ProgressBar, ProgressStyle};
use shared::export::{Exported, Format, Imported, Importer, Selection};
use shared::model::Timestamp;
use shared::store::Store;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// A spinner with a count, on a terminal only (indicatif hides it elsewhere).
fn counter(what: &'static str) -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {pos} readings {msg} ({elapsed}, {per_sec})")
            .expect("a valid template"),
    );
    bar.set_message(what);
    bar
}

/// Writes the selection to `out` (a file, or standard output for `None` or `-`).
pub async fn export<S: Store>(
    store: &S,
    selection: &Selection,
    format: Format,
    out: Option<&Path>,
    gzip: bool,
) -> Result<Exported, String> {
    let bar = counter("exported");
    let progress = |n| bar.set_position(n);
    let target = out.filter(|p| p.as_os_str() != "-");
    let gzip = gzip || target.is_some_and(|p| p.extension().is_some_and(|e| e == "gz"));
    let result = match target {
        None => {
            let stdout = std::io::stdout().lock();
            write_to(
                store,
                selection,
                format,
                BufWriter::new(stdout),
                gzip,
                progress,
            )
            .await
        }
        Some(path) => {
            let partial = shared::store::sqlite::partial_name(path);
            let file = std::fs::File::create(&partial)
                .map_err(|e| format!("creating {}: {e}", partial.display()))?;
            let done = write_to(
                store,
                selection,
                format,
                BufWriter::new(&file),
                gzip,
                progress,
            )
            .await;
            let done = done.and_then(|d| {
                file.sync_all()
                    .and_then(|()| std::fs::rename(&partial, path))
                    .map_err(|e| format!("finishing {}: {e}", path.display()))?;
                Ok(d)
            });
            if done.is_err() {
                let _ = std::fs::remove_file(&partial);
            }
            done
        }
    };
    bar.finish_and_clear();
    result
}

async fn write_to<S: Store, W: Write>(
    store: &S,
    selection: &Selection,
    format: Format,
    out: W,
    gzip: bool,
    progress: impl FnMut(u64),
) -> Result<Exported, String> {
    let fail = |e: shared::export::ExportError| format!("export: {e}");
    if gzip {
        let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        let done = shared::export::export(store, selection, format, &mut encoder, progress)
            .await
            .map_err(fail)?;
        encoder
            .finish()
            .and_then(|mut out| out.flush())
            .map_err(|e| format!("export: writing: {e}"))?;
        Ok(done)
    } else {
        shared::export::export(store, selection, format, out, progress)
            .await
            .map_err(fail)
    }
}

/// Reads `from` (a file, or standard input for `-`) into the store.
pub async fn import<S: Store>(store: &S, from: &Path) -> Result<Imported, String> {
    let input: Box<dyn Read> = if from.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(from).map_err(|e| format!("{}: {e}", from.display()))?)
    };
    let mut input = BufReader::with_capacity(1 << 16, input);
    let gzipped = input
        .fill_buf()
        .map_err(|e| format!("{}: {e}", from.display()))?
        .starts_with(&[0x1f, 0x8b]);
    let input: Box<dyn BufRead> = if gzipped {
        Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(input),
        ))
    } else {
        Box::new(input)
    };
    let bar = counter("imported");
    let done = Importer::new(store, Timestamp::now())
        .run(input, |n| bar.set_position(n))
        .await
        .map_err(|e| format!("import {}: {e}", from.display()));
    bar.finish_and_clear();
    done
}
