//! The MQTT alert receiver (docs/alerts.md): each notification published,
//! retained, at QoS 1 on `<topic>/<rule>/<device>` of the broker `serve
//! --mqtt` reads, as JSON (`status` `firing` or `resolved`, the value, the
//! summary, the labels). Home Assistant and Node-RED subscribe there; being
//! retained, the topic holds each series' latest word.
//!
//! A client of its own (its id the subscription's with `-alerts`, a clean
//! session: the alerts use case retries what was not acknowledged). A
//! notification counts as sent when the broker's PUBACK comes back; while
//! the broker is away the send fails (after a few seconds' wait for
//! a connection under way) and the notification waits in
//! the store for the next attempt.

use crate::mqtt::Settings;
use rumqttc::{AsyncClient, Event, Incoming, QoS};
use shared::domain::alerts::Notification;
use shared::notify::Receiver;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Mutex};

/// How long a send waits for a connection under way.
const CONNECT_WAIT: Duration = Duration::from_secs(3);

/// How long the broker has to acknowledge a publish.
const PUBACK_TIMEOUT: Duration = Duration::from_secs(5);

pub struct MqttReceiver {
    name: String,
    topic: String,
    client: AsyncClient,
    connected: Arc<AtomicBool>,
    /// PUBACKs from the event loop; one publish waits at a time.
    acks: Mutex<mpsc::UnboundedReceiver<()>>,
    events: tokio::task::JoinHandle<()>,
}

impl Drop for MqttReceiver {
    fn drop(&mut self) {
        self.events.abort();
    }
}

impl MqttReceiver {
    /// Connects (in the background, again and again) to the broker of `settings`.
    pub fn start(name: &str, topic: &str, settings: &Settings) -> Result<Self, String> {
        let mut options = settings.options()?;
        options
            .set_client_id(format!("{}-alerts", settings.client_id))
            .set_clean_session(true)
            .set_manual_acks(false);
        let (client, mut events) = AsyncClient::new(options, 64);
        let connected = Arc::new(AtomicBool::new(false));
        let (ack, acks) = mpsc::unbounded_channel();
        let flag = connected.clone();
        let url = settings.url.clone();
        let events = tokio::spawn(async move {
            let mut reconnect =
                shared::retry::Reconnect::new(Duration::from_millis(250), Duration::from_secs(30));
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Incoming::ConnAck(_))) => {
                        flag.store(true, Ordering::SeqCst);
                        reconnect.reset();
                    }
                    Ok(Event::Incoming(Incoming::PubAck(_))) => {
                        let _ = ack.send(());
                    }
                    Ok(_) => {}
                    Err(e) => {
                        if flag.swap(false, Ordering::SeqCst) {
                            tracing::warn!(broker = %url, error = %e, "mqtt alert receiver disconnected");
                        }
                        tokio::time::sleep(reconnect.next_delay()).await;
                    }
                }
            }
        });
        Ok(Self {
            name: name.to_owned(),
            topic: topic.trim_end_matches('/').to_owned(),
            client,
            connected,
            acks: Mutex::new(acks),
            events,
        })
    }

    /// The message of a notification.
    pub fn payload(n: &Notification) -> serde_json::Value {
        serde_json::json!({
            "status": if n.resolved { "resolved" } else { "firing" },
            "rule": n.rule,
            "device_id": n.device,
            "room": n.room,
            "value": n.value,
            "described": n.described,
            "summary": n.summary,
            "starts_at": n.starts_at_text(),
            "at": n.at_text(),
            "labels": n.labels,
        })
    }
}

impl Receiver for MqttReceiver {
    fn name(&self) -> &str {
        &self.name
    }

    fn send<'a>(
        &'a self,
        n: &'a Notification,
    ) -> futures_util::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let mut acks = self.acks.lock().await;
            while acks.try_recv().is_ok() {}
            // A connection being made (at start, or after a drop) is waited
            // for a moment; a broker that stays away fails the send.
            let deadline = tokio::time::Instant::now() + CONNECT_WAIT;
            while !self.connected.load(Ordering::SeqCst) {
                if tokio::time::Instant::now() >= deadline {
                    return Err("the MQTT broker is not connected".into());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let topic = format!("{}/{}/{}", self.topic, n.rule, n.device);
            self.client
                .publish(
                    topic,
                    QoS::AtLeastOnce,
                    true,
                    Self::payload(n).to_string().into_bytes(),
                )
                .await
                .map_err(|e| e.to_string())?;
            match tokio::time::timeout(PUBACK_TIMEOUT, acks.recv()).await {
                Ok(Some(())) => Ok(()),
                _ => Err(format!(
                    "the MQTT broker did not acknowledge within {} s",
                    PUBACK_TIMEOUT.as_secs()
                )),
            }
        })
    }
}
