//! What the transport reads of a JSON-RPC message to route it: its kind, its id, its method
//! and the session it names. One borrowed pass that skips everything else (no tree is built);
//! the protocol itself is the core's.

use serde::Deserialize;
use serde_json::value::RawValue;

/// A message's routing facts.
#[derive(Debug, Default)]
pub(crate) struct Envelope {
    /// The id's JSON text (`"a"` and `1` stay apart), when the message has one.
    pub id: Option<String>,
    /// The method, for requests and notifications.
    pub method: Option<String>,
    /// `params.sessionId`.
    pub params_session: Option<String>,
    /// `result.sessionId` (a response that creates or names a session).
    pub result_session: Option<String>,
    /// The message has an `error` member (a response: the request failed).
    pub failed: bool,
}

impl Envelope {
    /// A response (an id and no method).
    pub fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }

    /// A request (a method and an id).
    pub fn is_request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    params: Option<Scoped>,
    #[serde(default)]
    result: Option<Scoped>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// An object's `sessionId`; anything else (another kind of value included) reads as none.
#[derive(Default)]
struct Scoped(Option<String>);

impl<'de> Deserialize<'de> for Scoped {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scoped;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scoped, A::Error> {
                let mut session = None;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == "sessionId" && session.is_none() {
                        session = match map.next_value::<serde_json::Value>()? {
                            serde_json::Value::String(s) => Some(s),
                            _ => None,
                        };
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Scoped(session))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scoped, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scoped(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Scoped, E> {
                Ok(Scoped(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Scoped, E> {
                Ok(Scoped(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Scoped, E> {
                Ok(Scoped(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Scoped, E> {
                Ok(Scoped(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Scoped, E> {
                Ok(Scoped(None))
            }
            fn visit_unit<E>(self) -> Result<Scoped, E> {
                Ok(Scoped(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Reads a message's routing facts; `None` when it is not a JSON object.
pub(crate) fn envelope(text: &[u8]) -> Option<Envelope> {
    // A derived struct would also read an array as its members in order.
    if text.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let wire: Wire<'_> = serde_json::from_slice(text).ok()?;
    Some(Envelope {
        id: wire.id.map(|id| id.get().to_owned()).filter(|id| id != "null"),
        method: wire.method.map(|m| m.into_owned()),
        params_session: wire.params.and_then(|p| p.0),
        result_session: wire.result.and_then(|r| r.0),
        failed: wire.error.is_some(),
    })
}

/// Whether the text is a JSON array (a batch), looking past leading whitespace only.
pub(crate) fn is_batch(text: &[u8]) -> bool {
    text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// The methods that act on one session: their POST must name it in `Acp-Session-Id` (the
/// official TypeScript SDK's list, v1 and v2).
pub(crate) fn is_session_scoped(method: &str) -> bool {
    use acp_inject_core::wire::methods::{
        SESSION_CANCEL, SESSION_CLOSE, SESSION_INJECT, SESSION_PROMPT, SESSION_REPLACE_INJECT, SESSION_RESUME, SESSION_REVOKE_INJECT,
        SESSION_STATUS,
    };
    use acp_inject_core::wire::v1::methods::SESSION_LOAD;
    let scoped = [
        SESSION_CANCEL,
        SESSION_CLOSE,
        SESSION_LOAD,
        SESSION_PROMPT,
        SESSION_RESUME,
        SESSION_INJECT,
        SESSION_REVOKE_INJECT,
        SESSION_REPLACE_INJECT,
        SESSION_STATUS,
    ];
    // And methods of the SDK's list that neither version here has.
    scoped.contains(&method)
        || matches!(method, "session/delete" | "session/fork" | "session/set_config_option" | "session/set_mode" | "session/set_model")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_routing_facts_and_nothing_else() {
        let e = envelope(br#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}"#).unwrap();
        assert_eq!(
            (e.id.as_deref(), e.method.as_deref(), e.params_session.as_deref()),
            (Some("7"), Some("session/prompt"), Some("s1"))
        );
        assert!(e.is_request() && !e.is_response());
        let e = envelope(br#"{"jsonrpc":"2.0","id":"7","result":{"sessionId":"s2"}}"#).unwrap();
        assert_eq!((e.id.as_deref(), e.result_session.as_deref()), (Some("\"7\""), Some("s2")));
        assert!(e.is_response());
        let e = envelope(br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":3}}"#).unwrap();
        assert_eq!(e.params_session, None);
        let e = envelope(br#"{"id":null,"error":{"code":-32700,"message":"x"},"result":[1]}"#).unwrap();
        assert!(e.id.is_none() && !e.is_response() && e.failed);
        assert!(!envelope(br#"{"id":1,"result":{}}"#).unwrap().failed);
        assert!(envelope(b"[1]").is_none() && envelope(b"{").is_none() && envelope(b"\xff").is_none());
        assert!(is_batch(b" \n[{}]") && !is_batch(b"{}"));
    }
}
