// The few value types the generated ones (Values.swift) are built from: any JSON value, a
// JSON-RPC request id, a patch field's three states; and the `Codable` helpers they use.
import Foundation

/// Any JSON value (what `_meta`, `rawInput` and an unknown variant's `raw` hold).
///
/// Build one with literals: `let meta: [String: JSONValue] = ["trace": "abc", "n": 3]`.
public indirect enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    /// An integer (one beyond `Int`'s range is read as a `double`).
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case let .bool(b): try c.encode(b)
        case let .int(i): try c.encode(i)
        case let .double(d): try c.encode(d)
        case let .string(s): try c.encode(s)
        case let .array(a): try c.encode(a)
        case let .object(o): try c.encode(o)
        }
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case let .string(s) = self { return s }
        return nil
    }

    /// The member `key`, if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        if case let .object(o) = self { return o[key] }
        return nil
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// A JSON-RPC request id: an integer, a string or null.
public enum RequestId: Sendable, Hashable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    case int(Int)
    case string(String)
    case null

    public init(integerLiteral value: Int) { self = .int(value) }
    public init(stringLiteral value: String) { self = .string(value) }

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let i = try? c.decode(Int.self) {
            self = .int(i)
        } else {
            self = .string(try c.decode(String.self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case let .int(i): try c.encode(i)
        case let .string(s): try c.encode(s)
        case .null: try c.encodeNil()
        }
    }

    /// `7`, `"r1"` (quoted), `null`.
    public var description: String {
        switch self {
        case let .int(n): return String(n)
        case let .string(s): return String(reflecting: s)
        case .null: return "null"
        }
    }
}

/// A field whose absence and `null` mean different things (a message upsert's `content`:
/// absent leaves the content as it is, `null` clears it, a value replaces it).
public enum Patch<Value> {
    /// Absent: leave the current value.
    case absent
    /// `null`: clear the current value.
    case null
    /// Replace the current value.
    case value(Value)

    /// Whether it is absent.
    public var isAbsent: Bool {
        if case .absent = self { return true }
        return false
    }

    /// The value, if it carries one.
    public var valueIfPresent: Value? {
        if case let .value(v) = self { return v }
        return nil
    }
}

extension Patch: Sendable where Value: Sendable {}
extension Patch: Equatable where Value: Equatable {}
extension Patch: Hashable where Value: Hashable {}

/// A coding key of any name (union tags, one-member objects).
struct AnyCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension KeyedDecodingContainer {
    /// A patch field: absent, `null` or a value.
    func decodePatch<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> Patch<T> {
        guard contains(key) else { return .absent }
        if try decodeNil(forKey: key) { return .null }
        return .value(try decode(T.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    /// A patch field: left out when absent, `null`, or the value.
    mutating func encodePatch<T: Encodable>(_ patch: Patch<T>, forKey key: Key) throws {
        switch patch {
        case .absent: break
        case .null: try encodeNil(forKey: key)
        case let .value(v): try encode(v, forKey: key)
        }
    }
}
