acp_inject_codegen_macro::wire_types!("schemas/invalid-json.schema.json");

fn main() {}
