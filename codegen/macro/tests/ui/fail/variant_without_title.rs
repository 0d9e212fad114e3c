acp_inject_codegen_macro::wire_types!("schemas/variant-without-title.schema.json");

fn main() {}
