acp_inject_codegen_macro::wire_types!("../../../../codegen/macro/tests/ui/schemas/invalid-json.schema.json");

fn main() {}
