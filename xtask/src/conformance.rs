pub fn run(_a: &[String]) -> Result<(), String> { Err("not yet".into()) }
