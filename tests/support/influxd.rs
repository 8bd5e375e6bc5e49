//! Debian's `influxd` (InfluxDB 1.6) on loopback with its own directories,
//! for the InfluxQL differential test and the InfluxDB benchmarks; stopped
//! on drop. `scripts/install-test-tools` installs it.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Influxd {
    child: Child,
    pub url: String,
    dir: PathBuf,
    agent: ureq::Agent,
}

/// Where Debian installs it, if it does.
pub fn binary() -> Option<&'static str> {
    ["/usr/bin/influxd", "/usr/sbin/influxd"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

/// Bytes of the files under `dir`.
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

impl Influxd {
    /// Starts it with its files under `dir/influxdb` and creates database `db`;
    /// `None` when it is not installed.
    pub fn start(dir: &Path, db: &str) -> Option<Influxd> {
        let binary = binary()?;
        let dir = dir.join("influxdb");
        std::fs::create_dir_all(&dir).unwrap();
        let (http, rpc) = (crate::mosquitto::free_port(), crate::mosquitto::free_port());
        let config = format!(
            "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n\
             [meta]\n  dir = \"{d}/meta\"\n\
             [data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n\
             [monitor]\n  store-enabled = false\n\
             [http]\n  bind-address = \"127.0.0.1:{http}\"\n  log-enabled = false\n\
             [ifql]\n  enabled = false\n\
             [logging]\n  level = \"error\"\n",
            d = dir.display()
        );
        let config_path = dir.join("influxdb.conf");
        std::fs::write(&config_path, config).unwrap();
        let child = Command::new(binary)
            .args(["-config", config_path.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let influx = Influxd {
            child,
            url: format!("http://127.0.0.1:{http}"),
            dir,
            agent: ureq::AgentBuilder::new().build(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while influx
            .agent
            .get(&format!("{}/ping", influx.url))
            .call()
            .is_err()
        {
            assert!(Instant::now() < deadline, "influxd did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        influx.query(&[("q", &format!("CREATE DATABASE \"{db}\""))]);
        Some(influx)
    }

    /// `POST /query` with these form parameters: the answer's JSON.
    pub fn query(&self, form: &[(&str, &str)]) -> Value {
        let response = match self
            .agent
            .post(&format!("{}/query", self.url))
            .send_form(form)
        {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("influxd: {e}"),
        };
        serde_json::from_str(&response.into_string().unwrap()).unwrap()
    }

    /// Writes line protocol to database `db` (`precision` as `/write` takes it).
    pub fn write(&self, db: &str, precision: &str, lines: &str) {
        let status = self
            .agent
            .post(&format!("{}/write?db={db}&precision={precision}", self.url))
            .send_string(lines)
            .map(|r| r.status())
            .unwrap_or_else(|e| panic!("influxd write: {e}"));
        assert_eq!(status, 204);
    }

    /// Stops it (SIGTERM, so that it closes its files) and reports its bytes on disk.
    pub fn stop(mut self) -> u64 {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        dir_size(&self.dir.join("data")) + dir_size(&self.dir.join("wal"))
    }
}

impl Drop for Influxd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
