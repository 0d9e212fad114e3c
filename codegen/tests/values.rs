//! The value model on the real schema and description: what the renderers rely on.

use acp_inject_codegen::values::{Kind, Model, Payload};

fn model() -> Model {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let schema = std::fs::read_to_string(root.join("spec/acp-inject.schema.json")).expect("the canonical schema");
    let described = std::fs::read_to_string(root.join("spec/values.json")).expect("the described values");
    let expansion = acp_inject_codegen::generate_formatted(&schema).expect("generates");
    Model::build(&described, &expansion).expect("the model builds")
}

#[test]
fn unions_are_flattened_into_one_level_of_classes() {
    let m = model();
    let updates = m.members("SessionUpdate");
    assert!(updates.contains(&"AgentMessageChunk".to_owned()) && updates.contains(&"IdleStateUpdate".to_owned()), "{updates:?}");
    assert!(updates.contains(&"OtherStateUpdate".to_owned()) && updates.last().map(String::as_str) == Some("OtherSessionUpdate"));
    let activity = m.members("SessionActivity");
    for class in
        ["AgentMessageChunk", "IdleStateUpdate", "PendingItem", "Violation", "SessionClosed", "Tolerated", "PermissionRequested"]
    {
        assert!(activity.contains(&class.to_owned()), "{class} in {activity:?}");
    }
    let idle = m.class("IdleStateUpdate").expect("a class");
    assert!(idle.tagged && idle.unions == ["StateUpdate"], "{:?}", idle.unions);
    let item = m.class("PendingItem").expect("a class");
    assert!(item.tagged && item.struct_type.is_some());
    assert!(!m.class("Usage").expect("a class").tagged, "a struct that is no variant carries no tag");
}

#[test]
fn wire_structs_are_built_with_new_and_the_described_ones_with_literals() {
    let m = model();
    let Some(Kind::Struct(usage)) = m.get("Usage").map(|t| &t.kind) else { panic!() };
    assert!(
        matches!(&usage.build, acp_inject_codegen::values::Build::New(r) if r == &["total_tokens", "input_tokens", "output_tokens"])
    );
    assert!(usage.fields.iter().all(|f| f.name == "total_tokens" || f.default.is_some()));
    let Some(Kind::Union(answer)) = m.get("Answer").map(|t| &t.kind) else { panic!() };
    assert!(answer.variants.iter().any(|v| matches!(&v.payload, Payload::Like { class } if class == "SessionPage")));
}
