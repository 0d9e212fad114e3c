acp_inject_codegen_macro::wire_types!("../../../../codegen/macro/tests/ui/schemas/variant-without-title.schema.json");

fn main() {}
