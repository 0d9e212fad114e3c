// {{ preamble }}
// Source: the open string enums of spec/acp-inject.schema.json (codegen/src/open_enums.rs,
// codegen/templates/open-enums/OpenEnums.swift).
//
// The protocol's open string enums, lifted from their wire strings by the generated binding
// (`crates/ffi/uniffi.toml`): known values are cases, any other value is kept in the catch-all
// case, and two values are equal when their wire strings are. They print as their case
// (`endTurn`, `other("_x")`); `rawValue` is the wire spelling.
{% for e in enums %}
{{ e.sdoc() }}
public enum {{ e.name }}: RawRepresentable, Hashable, Sendable {
{%- for v in e.values %}
{{ v.sdoc() }}
    case {{ v.swift() }}
{%- endfor %}
    /// A value this version does not know (values starting with `_` are extensions).
    case {{ e.swift_catch_all() }}(String)

    /// The value spelled `rawValue` on the wire: a known one, or ``{{ e.swift_catch_all() }}(_:)``.
    public init(rawValue: String) {
        switch rawValue {
{%- for v in e.values %}
        case "{{ v.wire }}": self = .{{ v.swift() }}
{%- endfor %}
        default: self = .{{ e.swift_catch_all() }}(rawValue)
        }
    }

    /// The wire spelling.
    public var rawValue: String {
        switch self {
{%- for v in e.values %}
        case .{{ v.swift() }}: return "{{ v.wire }}"
{%- endfor %}
        case .{{ e.swift_catch_all() }}(let value): return value
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue == rhs.rawValue }

    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
{% endfor %}
