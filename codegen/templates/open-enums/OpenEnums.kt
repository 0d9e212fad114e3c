// {{ preamble }}
// Source: the open string enums of spec/acp-inject.schema.json (codegen/src/open_enums.rs,
// codegen/templates/open-enums/OpenEnums.kt).
//
// The protocol's open string enums, lifted from their wire strings by the generated binding
// (`crates/ffi/uniffi.toml`): known values are objects, any other value is kept as the
// catch-all class, and two values are equal when their wire strings are.

package dev.acpinject
{% for e in enums %}
{{ e.kdoc() }}
public sealed class {{ e.name }}(
    /** The wire spelling. */
    public val value: String,
) {
{%- for v in e.values %}
{{ v.kdoc() }}
    public object {{ v.variant }} : {{ e.name }}("{{ v.wire }}")
{%- endfor %}

    /** A value this version does not know (values starting with `_` are extensions). */
    public class {{ e.catch_all }}(value: String) : {{ e.name }}(value)

    override fun equals(other: Any?): Boolean = other is {{ e.name }} && other.value == value

    override fun hashCode(): Int = value.hashCode()

    override fun toString(): String = value

    public companion object {
        /** The value spelled [value] on the wire: a known one, or [{{ e.catch_all }}]. */
        @JvmStatic
        public fun of(value: String): {{ e.name }} =
            when (value) {
{%- for v in e.values %}
                "{{ v.wire }}" -> {{ v.variant }}
{%- endfor %}
                else -> {{ e.catch_all }}(value)
            }
    }
}
{% endfor %}
