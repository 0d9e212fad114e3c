acp_inject_codegen_macro::wire_types!("schemas/missing-ref.schema.json");

fn main() {}
