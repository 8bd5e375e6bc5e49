//! A thread that does a piece of work every so often until its owner goes,
//! then a last piece: the store's checkpointer and sealer.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;
use storage::StoreError;

pub struct Periodic {
    stop: Sender<()>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Periodic {
    /// Runs `tick` on `state` every `every` on a thread named `name`, and
    /// `last` on it once when dropped.
    pub fn start<S: Send + 'static>(
        name: &str,
        every: Duration,
        state: S,
        mut tick: impl FnMut(&S) + Send + 'static,
        last: impl FnOnce(S) + Send + 'static,
    ) -> Result<Self, StoreError> {
        let (stop, stopped) = channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    tick(&state);
                }
                last(state);
            })
            .map_err(|e| StoreError::Unavailable(format!("{name} thread: {e}")))?;
        Ok(Self {
            stop,
            thread: Mutex::new(Some(thread)),
        })
    }
}

impl Drop for Periodic {
    /// Stops the thread and waits for it: its work in progress and its last
    /// piece complete first.
    fn drop(&mut self) {
        let _ = self.stop.send(());
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}
