//! Who may call the service: the bearer token and the access rules. A
//! neutral module: the configuration builds these, the HTTP edge checks
//! them. The token never appears in a log line, an error or a response, and
//! the comparison takes constant time.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The dashboard's session cookie (docs/dashboard.md).
pub const SESSION_COOKIE: &str = "ingester_session";

/// Whether the read routes need the token too (without a token set, nothing does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAccess {
    /// Reads need the bearer token whenever one is set (the default).
    Token,
    /// Reads are open to anyone who can reach the API.
    Open,
}

/// Who may call the API: the token (when set) and whether reads need it.
#[derive(Debug, Clone)]
pub struct Access {
    pub token: Option<BearerToken>,
    pub reads: ReadAccess,
}

impl Access {
    /// No token: everything is open.
    pub fn open() -> Self {
        Self {
            token: None,
            reads: ReadAccess::Open,
        }
    }

    /// The access rule, for every edge (the API's layer, the InfluxDB
    /// routes, the dashboard's pages): a request may go on when no token is
    /// set, when it reads and reads are open, or when what it presents is
    /// admitted by the token (`admitted`: each wire presents it its own way,
    /// a bearer header, InfluxDB's schemes, the dashboard's cookie).
    pub fn allows(&self, read: bool, admitted: impl FnOnce(&BearerToken) -> bool) -> bool {
        match &self.token {
            None => true,
            Some(_) if read && self.reads == ReadAccess::Open => true,
            Some(token) => admitted(token),
        }
    }
}

#[derive(Clone)]
pub struct BearerToken {
    /// Only the digest is kept: comparing digests takes the same time whatever the length.
    digest: [u8; 32],
    /// The dashboard's session value: derived from the token, so the cookie
    /// never holds the token itself and stops working when the token changes.
    session: [u8; 32],
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl BearerToken {
    /// `None` for an empty token: an empty token would let anyone in.
    pub fn new(token: &str) -> Option<Self> {
        let token = token.trim();
        (!token.is_empty()).then(|| Self {
            digest: Sha256::digest(token.as_bytes()).into(),
            session: Sha256::new()
                .chain_update(b"ingester dashboard session\0")
                .chain_update(token.as_bytes())
                .finalize()
                .into(),
        })
    }

    /// The value of the session cookie this token grants (hex).
    pub fn session_value(&self) -> String {
        self.session.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// True when `value` is this token's session cookie's value.
    pub fn admits_session_value(&self, value: &str) -> bool {
        bool::from(value.as_bytes().ct_eq(self.session_value().as_bytes()))
    }

    /// True when `presented` is this token (however the client sent it).
    pub fn admits_token(&self, presented: &str) -> bool {
        let presented: [u8; 32] = Sha256::digest(presented.trim().as_bytes()).into();
        presented.ct_eq(&self.digest).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one access rule: no token, everything; a token, writes need it,
    /// and reads too unless they are open; what is presented is the edge's
    /// to judge (`admitted`).
    #[test]
    fn the_access_rule_for_every_edge() {
        let token = BearerToken::new("t").unwrap();
        let with = |reads| Access {
            token: Some(token.clone()),
            reads,
        };
        for read in [true, false] {
            for admitted in [true, false] {
                assert!(Access::open().allows(read, |_| admitted));
                assert_eq!(with(ReadAccess::Token).allows(read, |_| admitted), admitted);
                assert_eq!(
                    with(ReadAccess::Open).allows(read, |_| admitted),
                    read || admitted
                );
            }
        }
        // The edge's judgement is asked only where it matters.
        assert!(with(ReadAccess::Open).allows(true, |_| panic!("not asked")));
        assert!(Access::open().allows(false, |_| panic!("not asked")));
    }

    #[test]
    fn only_the_exact_token_and_its_session_are_admitted() {
        let t = BearerToken::new("s3cret-token").unwrap();
        assert!(t.admits_token("s3cret-token"));
        assert!(!t.admits_token("s3cret-tokem"));
        assert!(!t.admits_token("s3cret-token-longer"));
        assert!(t.admits_session_value(&t.session_value()));
        assert!(!t.admits_session_value("s3cret-token"));
        assert!(BearerToken::new("  ").is_none());
        assert_eq!(format!("{t:?}"), "BearerToken(<redacted>)");
    }
}
