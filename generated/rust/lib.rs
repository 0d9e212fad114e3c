#![allow(clippy::all)]
include!("wire.rs");
