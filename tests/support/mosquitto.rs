//! Debian's mosquitto for the MQTT tests and bench (issue 26): on a free
//! port of 127.0.0.1 only, with a persistent store, stopped on drop; and
//! `mosquitto_pub` publishing at QoS 1, as a device does.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Each line a QoS 1 message to `topic` of the broker on `port`
/// (`mosquitto_pub -l`), returning once the publisher has sent them all
/// (and the broker acknowledged them).
pub fn publish_lines(port: u16, topic: &str, lines: &[String]) {
    use std::io::Write;
    let mut child = Command::new("mosquitto_pub")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-q", "1"])
        .args(["-t", topic, "-l"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    // Closing stdin ends the publisher once it has sent every line.
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    assert!(child.wait().unwrap().success(), "mosquitto_pub -l {topic}");
}

/// A mosquitto with a persistent store, on 127.0.0.1 only; stopped on drop.
pub struct Broker {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

impl Broker {
    pub fn start(dir: &Path, port: u16) -> Broker {
        Broker::start_with(dir, port, "allow_anonymous true\n")
    }

    /// A broker whose listener has these settings too (`password_file`,
    /// `cafile`/`certfile`/`keyfile`, ...), each on its own line.
    pub fn start_with(dir: &Path, port: u16, listener: &str) -> Broker {
        let conf = dir.join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!(
                // No cap on what the broker queues for a subscriber that lags
                // (mosquitto's default, 1000, drops the rest: docs/mqtt.md).
                "listener {port} 127.0.0.1\n{listener}persistence true\npersistence_location {}/\nautosave_interval 1\nmax_queued_messages 0\n",
                dir.display()
            ),
        )
        .unwrap();
        let bin = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("Debian's mosquitto (scripts/install-test-tools installs it)");
        let child = Command::new(bin)
            .args(["-c", conf.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "mosquitto did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Broker {
            child,
            port,
            dir: dir.to_owned(),
        }
    }

    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// A QoS 1 publish, as a device makes it.
    pub fn publish(&self, topic: &str, payload: &str) {
        let ok = Command::new("mosquitto_pub")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q", "1"])
            .args(["-t", topic, "-m", payload])
            .status()
            .unwrap();
        assert!(ok.success(), "mosquitto_pub {topic}");
    }

    /// Each line a QoS 1 message to `topic` ([`publish_lines`]).
    pub fn publish_lines(&self, topic: &str, lines: &[String]) {
        publish_lines(self.port, topic, lines)
    }

    /// Stops it (its persistence file is written on the way out).
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    pub fn restart(mut self) -> Broker {
        self.stop();
        let (dir, port) = (self.dir.clone(), self.port);
        std::mem::forget(self);
        Broker::start(&dir, port)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
