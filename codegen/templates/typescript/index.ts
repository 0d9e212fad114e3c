// {{ preamble }}
// Source: codegen/templates/typescript/index.ts.

export * from "./types.js";
export * from "./validators.js";
export * from "./messages.js";
export { ValidationError, formatPath, check, run } from "./runtime.js";
export type { Checked, Context, DecodeOptions, Decoder, Path, Tolerated } from "./runtime.js";
