//! `ingester-local serve --mqtt` (issue 26; docs/mqtt.md): a subscription
//! to a home broker whose messages go through the same ingest as HTTP,
//! the messages in flight stored together (`shared::mqtt::ingest_messages`).
//!
//! QoS 1 with a persistent session (`clean_session = false`) and manual
//! acknowledgements: a message is acknowledged only once it is stored (the
//! messages that arrived together in one write, acknowledged after it), or
//! once it is clear it never can be (then it is logged with its topic and
//! reason, counted, and sent to the dead-letter topic if one is set). A
//! message the store cannot take yet is not acknowledged: the connection is
//! dropped and made again after a backoff, and the broker delivers the
//! message again. So with the store failing, or the server stopped, the
//! broker keeps what it was sent. The connection's state is logged and
//! reported by `GET /health` (`SubscriptionHealth`).

use rumqttc::{
    AsyncClient, Event, EventLoop, Incoming, MqttOptions, Publish, QoS, TlsConfiguration, Transport,
};
use shared::model::Timestamp;
use shared::mqtt::subscription::SubscriptionHealth;
use shared::mqtt::{ingest_messages, Message, MessageError, Outcome, ReceiveTimes};
use shared::registry::RegistryCache;
use shared::store::Store;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The topics subscribed to when none is given: every shape of docs/mqtt.md.
pub const DEFAULT_TOPICS: [&str; 6] = [
    "readings/#",
    "tele/+/SENSOR",
    "zigbee2mqtt/#",
    "+/status/+",
    "shellies/#",
    "dsmr/#",
];

/// Most messages stored in one write: more than a broker keeps in flight
/// to one client by default (mosquitto's `max_inflight_messages` is 20,
/// EMQX's 32), so a batch is whatever has arrived, and its memory stays
/// bounded with a broker set to send more.
pub const MAX_BATCH: usize = 100;

const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Where and how to subscribe.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]` (8883).
    pub url: String,
    pub username: Option<String>,
    pub password: Option<String>,
    /// The CA certificate (PEM) that signed an `mqtts://` broker's.
    pub ca_file: Option<PathBuf>,
    pub topics: Vec<String>,
    /// The session's name at the broker: keep it, or a restart starts a new
    /// session and misses what was published meanwhile.
    pub client_id: String,
    pub dead_letter: Option<String>,
}

impl Settings {
    /// The broker's options; the error says what is wrong with the settings.
    pub fn options(&self) -> Result<MqttOptions, String> {
        let (tls, rest) = if let Some(rest) = self.url.strip_prefix("mqtts://") {
            (true, rest)
        } else if let Some(rest) = self.url.strip_prefix("mqtt://") {
            (false, rest)
        } else {
            return Err(format!(
                "--mqtt {:?}: expected mqtt://HOST[:PORT] or mqtts://HOST[:PORT]",
                self.url
            ));
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .map_err(|_| format!("--mqtt {:?}: port {p:?} is not a number", self.url))?,
            ),
            None => (rest, if tls { 8883 } else { 1883 }),
        };
        if host.is_empty() {
            return Err(format!("--mqtt {:?}: no host", self.url));
        }
        let mut options = MqttOptions::new(&self.client_id, host, port);
        options
            .set_keep_alive(Duration::from_secs(30))
            .set_clean_session(false)
            .set_manual_acks(true)
            // A batch on readings/<device> may be up to the write limit.
            .set_max_packet_size(
                shared::ingest::MAX_BODY_BYTES + 64 * 1024,
                shared::ingest::MAX_BODY_BYTES + 64 * 1024,
            );
        if let Some(user) = &self.username {
            options.set_credentials(user, self.password.clone().unwrap_or_default());
        }
        if tls {
            let ca = match &self.ca_file {
                Some(path) => {
                    std::fs::read(path).map_err(|e| format!("--mqtt-ca {}: {e}", path.display()))?
                }
                None => return Err("an mqtts:// broker needs --mqtt-ca FILE".into()),
            };
            options.set_transport(Transport::Tls(TlsConfiguration::Simple {
                ca,
                alpn: None,
                client_auth: None,
            }));
        }
        Ok(options)
    }
}

/// What became of one message.
enum Handled {
    /// Stored, ignored, or never storable: acknowledge it.
    Done,
    /// The store could not take it: leave it with the broker.
    Later,
}

/// Stores the messages the broker has in flight to us in one write
/// (`ingest_messages`): what became of each, in order.
async fn handle<S: Store>(
    store: &S,
    registry: &RegistryCache,
    client: &AsyncClient,
    settings: &Settings,
    health: &SubscriptionHealth,
    batch: &[(Publish, Timestamp)],
) -> Vec<Handled> {
    let messages: Vec<Message> = batch
        .iter()
        .map(|(m, received)| Message {
            topic: &m.topic,
            payload: &m.payload,
            received: *received,
        })
        .collect();
    let outcomes = ingest_messages(store, registry, &messages, Default::default()).await;
    batch
        .iter()
        .zip(outcomes)
        .map(|((message, _), outcome)| handled(client, settings, health, message, outcome))
        .collect()
}

fn handled(
    client: &AsyncClient,
    settings: &Settings,
    health: &SubscriptionHealth,
    message: &Publish,
    outcome: Result<Outcome, MessageError>,
) -> Handled {
    match outcome {
        Ok(Outcome::Stored) => {
            health.stored();
            Handled::Done
        }
        Ok(Outcome::Ignored(why)) => {
            tracing::debug!(topic = %message.topic, why, "message without a reading of ours");
            health.ignored(format!("{}: {why}", message.topic));
            Handled::Done
        }
        Err(e) if e.may_succeed_later() => {
            tracing::warn!(topic = %message.topic, error = %e, "message not stored; the broker keeps it");
            health.deferred(format!("{}: {e}", message.topic));
            Handled::Later
        }
        Err(e) => {
            let reason = rejection(&e);
            tracing::warn!(topic = %message.topic, reason = %reason, "message rejected");
            health.rejected(format!("{}: {reason}", message.topic));
            if let Some(topic) = &settings.dead_letter {
                // The message as it came, for whoever fixes the device.
                if let Err(e) = client.try_publish(
                    topic.as_str(),
                    QoS::AtLeastOnce,
                    false,
                    message.payload.clone(),
                ) {
                    tracing::warn!(error = %e, "dead-letter publish failed");
                }
            }
            Handled::Done
        }
    }
}

fn rejection(e: &MessageError) -> String {
    e.detail()
}

fn connect(settings: &Settings) -> Result<(AsyncClient, EventLoop), String> {
    Ok(AsyncClient::new(settings.options()?, 1024))
}

/// Runs the subscription until the task is dropped.
///
/// The event loop is polled without pause (rumqttc needs that to send the
/// acknowledgements); a worker takes the messages that have arrived (at
/// most the broker's in-flight window, and [`MAX_BATCH`]), stores them in
/// one write, and acknowledges, in their order, each one it is done with.
/// When the store cannot take a message, the worker stops there and the
/// connection is dropped, so the broker delivers that message, and those
/// after it, again.
pub async fn run<S: Store>(
    settings: Settings,
    store: S,
    registry: RegistryCache,
    health: Arc<SubscriptionHealth>,
) -> Result<(), String> {
    let mut reconnect = shared::retry::Reconnect::new(FIRST_BACKOFF, MAX_BACKOFF);
    // One clock across reconnections: no two messages of the subscription
    // share a time, and a message delivered again keeps its first time
    // (`ReceiveTimes`).
    let mut times = ReceiveTimes::default();
    loop {
        let (client, mut events) = connect(&settings)?;
        // Each message with the time it arrived: a payload without a time
        // takes it (not the time its batch is stored).
        let (messages, mut inbox) = tokio::sync::mpsc::unbounded_channel::<(Publish, Timestamp)>();
        let worker = {
            let (client, settings, store, registry, health) = (
                client.clone(),
                settings.clone(),
                store.clone(),
                registry.clone(),
                health.clone(),
            );
            tokio::spawn(async move {
                let mut batch = Vec::new();
                while inbox.recv_many(&mut batch, MAX_BATCH).await > 0 {
                    let handled =
                        handle(&store, &registry, &client, &settings, &health, &batch).await;
                    for ((message, _), handled) in batch.drain(..).zip(handled) {
                        match handled {
                            Handled::Done => {
                                if let Err(e) = client.ack(&message).await {
                                    tracing::warn!(error = %e, "acknowledging failed");
                                }
                            }
                            Handled::Later => return,
                        }
                    }
                }
            })
        };
        let mut worker = std::pin::pin!(worker);
        loop {
            tokio::select! {
                // The worker stopped: the store could not take a message.
                _ = &mut worker => break,
                event = events.poll() => match event {
                    Ok(Event::Incoming(Incoming::ConnAck(ack))) => {
                        tracing::info!(broker = %settings.url, session_present = ack.session_present, "mqtt connected");
                        health.connected();
                        reconnect.reset();
                        for topic in &settings.topics {
                            client
                                .subscribe(topic.as_str(), QoS::AtLeastOnce)
                                .await
                                .map_err(|e| format!("subscribing to {topic}: {e}"))?;
                        }
                    }
                    Ok(Event::Incoming(Incoming::Publish(message))) => {
                        let at = times.time_of(&message.topic, &message.payload, message.dup, Timestamp::now());
                        let _ = messages.send((message, at));
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let wait = reconnect.next_delay();
                        tracing::warn!(broker = %settings.url, error = %e, retry_in_ms = wait.as_millis() as u64, "mqtt connection lost");
                        health.disconnected(e.to_string());
                        tokio::time::sleep(wait).await;
                    }
                },
            }
        }
        health.disconnected("the store could not take a message: reconnecting for it");
        drop(events);
        tokio::time::sleep(reconnect.next_delay()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str) -> Settings {
        Settings {
            url: url.into(),
            username: None,
            password: None,
            ca_file: None,
            topics: vec![],
            client_id: "t".into(),
            dead_letter: None,
        }
    }

    #[test]
    fn broker_urls() {
        let o = settings("mqtt://127.0.0.1:1999").options().unwrap();
        assert_eq!(o.broker_address(), ("127.0.0.1".to_string(), 1999));
        assert!(!o.clean_session());
        let o = settings("mqtt://broker.local").options().unwrap();
        assert_eq!(o.broker_address().1, 1883);
        let e = settings("http://x").options().unwrap_err();
        assert!(e.contains("mqtt://HOST"), "{e}");
        let e = settings("mqtts://x").options().unwrap_err();
        assert!(e.contains("--mqtt-ca"), "{e}");
        let e = settings("mqtt://x:port").options().unwrap_err();
        assert!(e.contains("not a number"), "{e}");
    }
}
