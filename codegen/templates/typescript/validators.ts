// {{ preamble }}
// Source: spec/acp-inject.schema.json, rendered by codegen/src/typescript.rs.
//
// A decoder for every schema definition (`X$`, composable), and `decodeX(value)`, which throws
// a `ValidationError` naming the offending member (`at \`update.messageId\`: expected a string`).
// Decoders are declared after the decoders they use.

import * as d from "./runtime.js";
import type * as T from "./types.js";
{% for dec in p.decoders %}
{%- match dec.extra %}
{%- when Some(DecoderExtra::Enum { name, values: _ }) %}
/** The known values of `{{ name }}`. */
export const {{ name }}Values = [{{ dec.extra_values() }}] as const;
{% when Some(DecoderExtra::Union { name, tag, values: _, open }) %}
/** The known tags of `{{ name }}`. */
export const {{ name }}Tags = [{{ dec.extra_values() }}] as const;
{% if *open %}
/** Whether a decoded `{{ name }}` is one of the known variants (then its tag narrows it). */
export function isKnown{{ name }}(value: T.{{ name }}): value is T.Known{{ name }} {
  return ({{ name }}Tags as readonly string[]).includes(value[{{ tag }}]);
}
{% endif %}
{%- when None %}
{%- endmatch %}
export const {{ dec.constant }}: d.Decoder<T.{{ dec.ty }}> = {{ dec.expr }};
{% endfor %}
// ------------------------------------------------------------------------------------------
// One function per definition
// ------------------------------------------------------------------------------------------
{% for (ty, constant) in p.public %}
/** Checks a `{{ ty }}`; throws a `ValidationError` naming the offending member. */
export function decode{{ ty }}(value: unknown, options?: d.DecodeOptions): T.{{ ty }} {
  return d.run({{ constant }}, value, options);
}
{% endfor %}
/** The decoder of every definition, by definition name. */
export const decoders = {
{%- for (ty, constant) in p.public %}
  {{ ty }}: {{ constant }},
{%- endfor %}
} as const;
