//! Readiness for a service manager: systemd's `Type=notify` units wait for
//! `READY=1` before they count the service as started (and start what comes
//! after it), and `STOPPING=1` tells them a stop is under way. Without a
//! `NOTIFY_SOCKET` (a terminal, a test) these do nothing.

use sd_notify::NotifyState;

/// The server listens: it is ready.
pub fn ready(addr: std::net::SocketAddr) {
    let status = format!("serving on http://{addr}");
    notify(&[NotifyState::Ready, NotifyState::Status(&status)]);
}

/// A stop was asked for: requests under way finish, then the store closes.
pub fn stopping() {
    notify(&[NotifyState::Stopping]);
}

fn notify(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "telling the service manager failed");
    }
}
