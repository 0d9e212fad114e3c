//! Any bytes through the framing and the typed decoders: never a panic, and every value that
//! decodes re-encodes to JSON that decodes to the same value.
#![no_main]

use acp_inject_core::wire::jsonrpc::{self, Incoming};
use acp_inject_core::wire::{self as w};
use libfuzzer_sys::fuzz_target;
use serde::{de::DeserializeOwned, Serialize};

fn round_trip<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(json: &str) {
    if let Ok(v) = jsonrpc::decode::<T>(json) {
        let again = serde_json::to_string(&v).expect("decoded values encode");
        let back: T = serde_json::from_str(&again).unwrap_or_else(|e| panic!("re-encoded value does not decode: {e}\n{again}"));
        assert_eq!(back, v, "round trip changed the value");
    }
}

fn message(m: Incoming<'_>) {
    match m {
        Incoming::Request { method, params, .. } | Incoming::Notification { method, params } => {
            let p = params.map_or("{}", |p| p.get());
            match &*method {
                "session/prompt" => round_trip::<w::PromptRequest>(p),
                "session/inject" => round_trip::<w::InjectRequest>(p),
                "session/revoke_inject" => round_trip::<w::RevokeInjectRequest>(p),
                "session/replace_inject" => round_trip::<w::ReplaceInjectRequest>(p),
                "session/update" => round_trip::<w::UpdateSessionNotification>(p),
                "initialize" => round_trip::<w::InitializeRequest>(p),
                "session/request_permission" => round_trip::<w::RequestPermissionRequest>(p),
                _ => round_trip::<w::SessionUpdate>(p),
            }
        }
        Incoming::Response { outcome: Ok(r), .. } => {
            round_trip::<w::InitializeResponse>(r.get());
            round_trip::<w::PromptResponse>(r.get());
        }
        Incoming::Response { .. } => {}
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = jsonrpc::parse_bytes(data) {
        message(m);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        round_trip::<w::SessionUpdate>(text);
        round_trip::<w::ContentBlock>(text);
    }
});
