acp_inject_codegen_macro::wire_types!("no-such.schema.json");

fn main() {}
