acp_inject_codegen_macro::wire_types!(spec::SCHEMA);

fn main() {}
