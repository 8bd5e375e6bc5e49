//! Stop signals: SIGINT (Ctrl-C) and SIGTERM (systemd, `kill`) end the
//! program cleanly at any moment after `main` begins: while the store opens
//! or seals, while it serves, while an MQTT session connects.
//!
//! The signals are blocked first thing in `main`, before the runtime starts
//! a thread, so one that comes while the handlers are being installed waits
//! instead of killing the process (its default action); the handlers are
//! then installed and the signals let through on the main thread, where a
//! waiting one is delivered at once. A signal before `main` (in the dynamic
//! loader, a fraction of a millisecond) still takes its default action;
//! systemd counts that death by SIGTERM as a clean stop.

use tokio::sync::watch;

/// Whether a stop was asked for, and a way to wait for it.
#[derive(Clone)]
pub struct Stop {
    asked: watch::Receiver<bool>,
}

/// The signals that stop the program.
#[cfg(unix)]
const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Sets the stop signals' blocking for the calling thread (and the threads
/// it starts later).
#[cfg(unix)]
fn mask(how: libc::c_int) {
    // SAFETY: the set is initialised by sigemptyset before use, and
    // pthread_sigmask reads it and changes this thread's mask only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Holds the stop signals back until `Stop::listen`: call it first in
/// `main`, before any thread is started.
pub fn hold_signals() {
    #[cfg(unix)]
    mask(libc::SIG_BLOCK);
}

/// Lets the stop signals through again, with their default action, for a
/// command that runs without `Stop::listen` (`backup`).
pub fn let_signals_through() {
    #[cfg(unix)]
    mask(libc::SIG_UNBLOCK);
}

impl Stop {
    /// Installs the handlers (inside a Tokio runtime, on the thread that
    /// called `hold_signals`), then lets the signals through: one that came
    /// in between is delivered now.
    pub fn listen() -> std::io::Result<Stop> {
        let (tell, asked) = watch::channel(false);
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            // `signal` installs the handler when called, not when polled.
            let mut interrupt = signal(SignalKind::interrupt())?;
            let mut terminate = signal(SignalKind::terminate())?;
            tokio::spawn(async move {
                let name = tokio::select! {
                    _ = interrupt.recv() => "SIGINT",
                    _ = terminate.recv() => "SIGTERM",
                };
                tracing::info!(signal = name, "shutting down");
                let _ = tell.send(true);
            });
            mask(libc::SIG_UNBLOCK);
        }
        #[cfg(not(unix))]
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                tracing::info!(signal = "Ctrl-C", "shutting down");
                let _ = tell.send(true);
            }
        });
        Ok(Stop { asked })
    }

    pub fn is_asked(&self) -> bool {
        *self.asked.borrow()
    }

    /// Resolves once a stop is asked for.
    pub async fn asked(&self) {
        let mut asked = self.asked.clone();
        // An error means the sender is gone: no stop will ever come.
        if asked.wait_for(|a| *a).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// `work`'s output, or `None` when a stop is asked for first (`work` is
    /// then dropped at its next await point).
    pub async fn or<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            _ = self.asked() => None,
            out = work => Some(out),
        }
    }
}
