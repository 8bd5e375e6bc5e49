//! The repository's sources, for the tests that read them as text
//! (`tests/tests/layers.rs`, `code_shape.rs`): what the compiler cannot see.

use std::path::{Path, PathBuf};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `under`, in order.
pub fn sources(under: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![under.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every (file, line) under `dir` (relative to the repository) that names
/// one of `forbidden`, outside comments.
pub fn offenders(dir: &str, forbidden: &[&str]) -> Vec<String> {
    let base = repo().join(dir);
    let files = if base.is_dir() {
        sources(&base)
    } else {
        vec![base]
    };
    let mut found = Vec::new();
    for file in files {
        let name = file.strip_prefix(repo()).unwrap().display().to_string();
        for (n, line) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for f in forbidden {
                if code.contains(f) {
                    found.push(format!("{name}:{}: {f}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    found
}

/// Each crate under `shared/` by its folder's name (`.` for `shared`
/// itself), with its `src`.
pub fn crates() -> Vec<(String, PathBuf)> {
    let mut out = vec![(".".to_string(), repo().join("shared/src"))];
    for entry in std::fs::read_dir(repo().join("shared")).unwrap() {
        let path = entry.unwrap().path();
        if path.join("Cargo.toml").exists() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, path.join("src")));
        }
    }
    out.sort();
    out
}

/// The code of a file before its unit tests (`#[cfg(test)] mod tests`).
pub fn before_tests(text: &str) -> &str {
    match text.find("mod tests {") {
        Some(at) => &text[..text[..at].rfind("#[cfg(").unwrap_or(at)],
        None => text,
    }
}

/// The folder of each function crate under `functions/`.
pub fn function_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("functions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 7, "{dirs:?}");
    dirs
}

/// Each function crate's name and its `main.rs`.
pub fn function_mains() -> Vec<(String, String)> {
    function_dirs()
        .into_iter()
        .map(|d| {
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            (
                name,
                std::fs::read_to_string(d.join("src/main.rs")).unwrap(),
            )
        })
        .collect()
}
