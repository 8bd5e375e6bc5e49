//! `ingester-local serve` as a child process on a free loopback port, and a
//! plain HTTP/1.1 client for it (the CLI tests and the embedded-store bench).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct LocalServer {
    pub child: Child,
    pub addr: String,
    /// Its log's lines since it served (the last 10,000).
    log: std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<String>>>,
}

/// The `ingester-local` binary that cargo built beside the running bench or
/// test binary (`target/<profile>/`), which must be built first; or
/// `INGESTER_LOCAL_BINARY` (a release build driven by a debug-built bench).
pub fn built_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("INGESTER_LOCAL_BINARY") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("ingester-local");
    assert!(
        path.exists(),
        "{} is not built: run `cargo build [--release] -p ingester-local` first",
        path.display()
    );
    path
}

impl LocalServer {
    /// Starts `binary serve --addr 127.0.0.1:0 ARGS` with `RUST_LOG=log` (which must
    /// let through its "serving on" line) and waits for that line.
    pub fn start(binary: &Path, args: &[&str], log: &str) -> LocalServer {
        let mut child = Command::new(binary)
            .arg("serve")
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", log)
            .env_remove("INGEST_TOKEN")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("ingester-local starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("the server said where it serves")
                .unwrap();
            if let Some(i) = line.find("serving on http://") {
                break line[i + "serving on http://".len()..].trim().to_owned();
            }
        };
        // Keep draining its log so it never blocks on a full pipe.
        let log = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut kept = kept.lock().unwrap();
                if kept.len() == 10_000 {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
        LocalServer { child, addr, log }
    }

    /// Its log's lines so far (the last 10,000).
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().iter().cloned().collect()
    }

    /// One request on its own connection: the status and the body text.
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        let body = body.unwrap_or("");
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).unwrap();
        let status = raw.split_whitespace().nth(1).unwrap().parse().unwrap();
        let text = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        (status, text.to_owned())
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
