acp_inject_codegen_macro::wire_types!("../../../../codegen/macro/tests/ui/schemas/missing-ref.schema.json");

fn main() {}
