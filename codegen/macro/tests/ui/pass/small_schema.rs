// trybuild compiles this from `<target>/tests/trybuild/acp-inject-codegen-macro/`, the
// directory `wire_types!` resolves paths from; `tests/trybuild.rs` copies `ui/schemas/` there.
acp_inject_codegen_macro::wire_types!("schemas/small.schema.json");

use serde_json::{json, Value};

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(wire: Value) -> T {
    let typed: T = serde_json::from_value(wire.clone()).expect("decodes");
    assert_eq!(serde_json::to_value(&typed).unwrap(), wire, "re-encodes unchanged");
    typed
}

fn main() {
    // A plain struct holding a newtype and a tagged union, tag first.
    let n: PingNotification = round_trip(json!({ "sessionId": "s1", "event": { "kind": "tick", "count": 3 } }));
    assert_eq!(n.session_id.0, "s1");
    assert!(matches!(&n.event, Event::Tick(t) if **t == TickEvent { count: 3 }));
    assert_eq!(<PingNotification as Method>::METHOD, methods::PING);

    // Open string enum, closed string enum, tristate member.
    let e: Event = round_trip(json!({ "kind": "paint", "color": "_ultraviolet", "sizes": ["small"], "label": null }));
    let Event::Paint(p) = &e else { panic!("{e:?}") };
    assert_eq!(p.color, Color::Other("_ultraviolet".into()));
    assert_eq!(p.sizes, vec![Size::Small]);
    assert_eq!(p.label, Patch::Null);
    assert!(serde_json::from_value::<Size>(json!("medium")).is_err(), "closed enums reject unknown values");

    // The alias decodes, the schema spelling is written.
    let e: Event = serde_json::from_value(json!({ "kind": "draw", "color": "red", "sizes": ["large"] })).unwrap();
    assert_eq!(serde_json::to_value(&e).unwrap()["kind"], "paint");

    // minItems is enforced on decode.
    assert!(serde_json::from_value::<Event>(json!({ "kind": "paint", "color": "red", "sizes": [] })).is_err());

    // The open branch keeps an unknown variant whole, even with the tag last.
    let e: Event = round_trip(json!({ "at": [1, 2], "kind": "_resize" }));
    assert!(matches!(&e, Event::Other(u) if u.tag(Event::TAG) == Some("_resize")));

    // Request/response pairing and the method lists.
    fn response_of<R: Request>(_: &R) -> &'static str {
        <R::Response as Method>::METHOD
    }
    let req: EchoRequest = round_trip(json!({ "text": "hi", "tags": [] }));
    assert_eq!(response_of(&req), "echo");
    assert_eq!(methods::REQUESTS, &["echo"]);
    assert_eq!(methods::NOTIFICATIONS, &["ping"]);
}
