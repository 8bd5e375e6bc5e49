//! Debian's `victoria-metrics` on loopback with its own data directory, for
//! the export test (issue 41); stopped on drop. `scripts/install-test-tools`
//! installs it.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Victoria {
    child: Child,
    pub url: String,
    pub dir: PathBuf,
}

/// Where Debian installs it, if it does.
pub fn binary() -> Option<&'static str> {
    ["/usr/bin/victoria-metrics"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

impl Victoria {
    /// Starts it with its data under `dir/victoria-metrics`; `None` when it is not installed.
    pub fn start(dir: &Path) -> Option<Victoria> {
        let binary = binary()?;
        let dir = dir.join("victoria-metrics");
        std::fs::create_dir_all(&dir).unwrap();
        let port = crate::mosquitto::free_port();
        let child = Command::new(binary)
            .arg(format!("-storageDataPath={}", dir.display()))
            .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
            // Readings from the past: keep them all, show them at once.
            .arg("-retentionPeriod=100y")
            .arg("-search.latencyOffset=0s")
            .arg("-search.disableCache")
            .arg("-loggerLevel=ERROR")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let vm = Victoria {
            child,
            url: format!("http://127.0.0.1:{port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{}/health", vm.url)).call().is_err() {
            assert!(Instant::now() < deadline, "victoria-metrics did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(vm)
    }

    /// `POST /write` (InfluxDB line protocol, nanoseconds), then a flush so
    /// that what was written is searchable.
    pub fn write(&self, lines: &str) {
        let status = ureq::post(&format!("{}/write", self.url))
            .send_string(lines)
            .map(|r| r.status())
            .unwrap_or_else(|e| panic!("victoria-metrics write: {e}"));
        assert_eq!(status, 204);
        ureq::get(&format!("{}/internal/force_flush", self.url))
            .call()
            .unwrap();
    }

    /// Every series matching `selector`, from `/api/v1/export`: its labels
    /// and its (time in ms, value) pairs.
    pub fn export(&self, selector: &str) -> Vec<(Value, Vec<(i64, f64)>)> {
        let response = ureq::get(&format!("{}/api/v1/export", self.url))
            .query("match[]", selector)
            .query("start", "0")
            .call()
            .unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut response.into_reader(), &mut text).unwrap();
        text.lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).unwrap();
                let times = v["timestamps"].as_array().unwrap();
                let values = v["values"].as_array().unwrap();
                let points = times
                    .iter()
                    .zip(values)
                    .map(|(t, v)| (t.as_i64().unwrap(), v.as_f64().unwrap()))
                    .collect();
                (v["metric"].clone(), points)
            })
            .collect()
    }
}

impl Victoria {
    /// Flushes and merges what it holds, stops cleanly, and reports its
    /// bytes on disk (what the benches set against ours).
    pub fn stop_merged(mut self) -> u64 {
        for path in ["/internal/force_flush", "/internal/force_merge"] {
            ureq::get(&format!("{}{path}", self.url)).call().unwrap();
        }
        // The merge runs in the background: wait until the size settles.
        let mut last = 0;
        for _ in 0..60 {
            std::thread::sleep(Duration::from_millis(500));
            let now = crate::influxd::dir_size(&self.dir);
            if now == last {
                break;
            }
            last = now;
        }
        self.stop_cleanly();
        crate::influxd::dir_size(&self.dir)
    }

    /// SIGINT, as its docs say to stop it so that it closes its files; waits.
    pub fn stop_cleanly(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Victoria {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
