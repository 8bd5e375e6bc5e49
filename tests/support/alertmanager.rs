//! Debian's Alertmanager (`prometheus-alertmanager`) for the alert tests:
//! on a free port of 127.0.0.1, without clustering, one receiver that sends
//! nowhere; stopped on drop. Its API (`/api/v2/alerts`) is what our webhook
//! posts to and what the tests read back.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = "/usr/bin/prometheus-alertmanager";

pub struct Alertmanager {
    child: Child,
    pub url: String,
    dir: PathBuf,
}

impl Alertmanager {
    pub fn start() -> Self {
        assert!(
            std::path::Path::new(BIN).exists(),
            "{BIN} is missing: scripts/install-test-tools installs Debian's prometheus-alertmanager"
        );
        let port = crate::mosquitto::free_port();
        let dir = std::env::temp_dir().join(format!("alertmanager-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("alertmanager.yml");
        std::fs::write(
            &config,
            "route:\n  receiver: nowhere\n  group_wait: 1s\nreceivers:\n  - name: nowhere\n",
        )
        .unwrap();
        let child = Command::new(BIN)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", dir.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("alertmanager starts");
        let am = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if ureq::get(&format!("{}/-/ready", am.url)).call().is_ok() {
                return am;
            }
            assert!(
                Instant::now() < deadline,
                "alertmanager not ready within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The alerts it holds as active (its API's default filter).
    pub fn alerts(&self) -> Vec<serde_json::Value> {
        let body = ureq::get(&format!("{}/api/v2/alerts", self.url))
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
