//! The ntfy receiver: one POST to a topic URL (`https://ntfy.sh/my-house`,
//! or a server of one's own), the summary as the message, with a title,
//! a priority and tags as ntfy's headers. Resolved alerts go at the default
//! priority with a check mark. An access token, when given, is sent as
//! ntfy's bearer token.

use super::http::{client, post, HttpClient};
use super::Receiver;
use domain::alerts::Notification;
use futures_util::future::BoxFuture;

pub struct Ntfy {
    name: String,
    url: String,
    /// ntfy's priority of a firing alert: 1 (min) to 5 (urgent).
    priority: u8,
    token: Option<String>,
    client: HttpClient,
}

impl Ntfy {
    pub fn new(name: &str, url: &str, priority: u8, token: Option<String>) -> Result<Self, String> {
        Ok(Self {
            name: name.to_owned(),
            url: url.to_owned(),
            priority,
            token,
            client: client()?,
        })
    }

    /// The headers ntfy reads: title, priority and tags.
    pub fn headers(&self, n: &Notification) -> Vec<(&'static str, String)> {
        let (priority, tags) = if n.resolved {
            (3, "white_check_mark".to_owned())
        } else {
            (self.priority, format!("warning,{}", n.rule))
        };
        let mut out = vec![
            ("title", n.title()),
            ("priority", priority.to_string()),
            ("tags", tags),
        ];
        if let Some(token) = &self.token {
            out.push(("authorization", format!("Bearer {token}")));
        }
        out
    }
}

impl Receiver for Ntfy {
    fn name(&self) -> &str {
        &self.name
    }

    fn send<'a>(&'a self, n: &'a Notification) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let headers = self.headers(n);
            post(
                &self.client,
                &self.url,
                &headers,
                n.summary.clone().into_bytes(),
            )
            .await
        })
    }
}
