// The boundary encoding (docs/encoding.md): the MessagePack form in which every value crosses
// between this package and the Rust library. The generated encoders and decoders (Values.swift,
// from codegen/src/values/swift.rs) read and write it with the reader and writer here.
//
// Hand-written on purpose: SwiftPM fetches packages from git, which the environments this
// package is built and tested in cannot reach, and the encoding needs a small subset of
// MessagePack (nil, booleans, integers, float 64, strings, arrays, maps with string keys): a
// few hundred lines, with no dependency. The reader works on the bytes in place (no copy, no
// intermediate tree) and checks what it reads: a wrong type, a truncated value, an integer out
// of range, a key that is no field, a missing required field or an unknown class is a
// `BoundaryError` saying where. (Strings are taken as the UTF-8 the library writes; bytes that
// are not are repaired, never trusted.)
import Foundation

/// A value that crosses in the boundary encoding: every type of Values.swift, and the scalars,
/// arrays and optionals of them.
public protocol BoundaryCodable: Sendable {
    /// Reads the value from `reader`.
    init(boundary reader: inout BoundaryReader) throws
    /// Writes the value into `writer`.
    func encode(boundary writer: inout BoundaryWriter)
}

/// Reading and writing values in the boundary encoding.
public enum Boundary {
    /// `value`, encoded.
    public static func encode<T: BoundaryCodable>(_ value: T) -> Data {
        var w = BoundaryWriter()
        value.encode(boundary: &w)
        return Data(w.bytes)
    }

    /// The value of type `type` that `data` encodes, all of it.
    ///
    /// - Throws: `BoundaryError` when `data` is not one.
    public static func decode<T: BoundaryCodable>(_ type: T.Type, from data: Data) throws -> T {
        try data.withUnsafeBytes { try decode(type, from: $0) }
    }

    /// The value of type `type` that `bytes` encode, all of them.
    static func decode<T: BoundaryCodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        var r = BoundaryReader(bytes)
        let value = try T(boundary: &r)
        try r.finish()
        return value
    }
}

/// Why bytes did not decode, and where (`AgentMessageChunk.content.text: expected a string,
/// found an integer`).
public struct BoundaryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public let message: String
    /// The fields and items leading to it, outermost first.
    public let path: [String]

    init(_ message: String, path: [String] = []) {
        self.message = message
        self.path = path
    }

    /// The error, one level further out: inside field (or item) `key`.
    func at(_ key: String) -> BoundaryError { BoundaryError(message, path: [key] + path) }

    public var description: String { path.isEmpty ? message : path.joined(separator: ".") + ": " + message }

    static func missing(_ type: String, _ field: String) -> BoundaryError {
        BoundaryError("\(type) needs `\(field)`")
    }

    static func unknownField(_ type: String, _ field: String) -> BoundaryError {
        BoundaryError("\(type) has no field `\(field)`")
    }

    static func unknownClass(_ union: String, _ tag: String) -> BoundaryError {
        BoundaryError("`\(tag)` is not a kind of \(union)")
    }

    static func unknownValue(_ type: String, _ value: String) -> BoundaryError {
        BoundaryError("\(String(reflecting: value)) is not a value of \(type)")
    }
}

/// Runs `body` (the read of field `key`), placing any error inside that field.
@inline(__always)
func at<T>(_ key: String, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let e as BoundaryError {
        throw e.at(key)
    }
}

/// Writes the boundary encoding into a byte buffer.
public struct BoundaryWriter {
    var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(256) }

    mutating func writeNil() { bytes.append(0xc0) }

    mutating func writeBool(_ b: Bool) { bytes.append(b ? 0xc3 : 0xc2) }

    mutating func writeBigEndian<I: FixedWidthInteger>(_ value: I) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// An integer in the smallest form.
    mutating func writeInt(_ n: Int) {
        if n >= 0 {
            if n < 0x80 { bytes.append(UInt8(n)) }
            else if n <= 0xff { bytes.append(0xcc); bytes.append(UInt8(n)) }
            else if n <= 0xffff { bytes.append(0xcd); writeBigEndian(UInt16(n)) }
            else if n <= 0xffff_ffff { bytes.append(0xce); writeBigEndian(UInt32(n)) }
            else { bytes.append(0xcf); writeBigEndian(UInt64(n)) }
        } else {
            if n >= -32 { bytes.append(UInt8(bitPattern: Int8(n))) }
            else if n >= -0x80 { bytes.append(0xd0); bytes.append(UInt8(bitPattern: Int8(n))) }
            else if n >= -0x8000 { bytes.append(0xd1); writeBigEndian(Int16(n)) }
            else if n >= -0x8000_0000 { bytes.append(0xd2); writeBigEndian(Int32(n)) }
            else { bytes.append(0xd3); writeBigEndian(Int64(n)) }
        }
    }

    mutating func writeDouble(_ d: Double) {
        bytes.append(0xcb)
        writeBigEndian(d.bitPattern)
    }

    mutating func writeString(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            let n = utf8.count
            if n < 32 { bytes.append(0xa0 | UInt8(n)) }
            else if n <= 0xff { bytes.append(0xd9); bytes.append(UInt8(n)) }
            else if n <= 0xffff { bytes.append(0xda); writeBigEndian(UInt16(n)) }
            else { bytes.append(0xdb); writeBigEndian(UInt32(n)) }
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func writeArrayHeader(_ n: Int) {
        if n < 16 { bytes.append(0x90 | UInt8(n)) }
        else if n <= 0xffff { bytes.append(0xdc); writeBigEndian(UInt16(n)) }
        else { bytes.append(0xdd); writeBigEndian(UInt32(n)) }
    }

    mutating func writeMapHeader(_ n: Int) {
        if n < 16 { bytes.append(0x80 | UInt8(n)) }
        else if n <= 0xffff { bytes.append(0xde); writeBigEndian(UInt16(n)) }
        else { bytes.append(0xdf); writeBigEndian(UInt32(n)) }
    }

    /// The class tag, the first pair of a class's map.
    mutating func writeTag(_ className: String) {
        writeString("$")
        writeString(className)
    }

    /// A wire union's open branch: class `className`, the tag's value and the whole object.
    mutating func writeOther(class className: String, tag: String, raw: [String: JSONValue]) {
        writeMapHeader(3)
        writeTag(className)
        writeString("tag")
        writeString(tag)
        writeString("raw")
        raw.encode(boundary: &self)
    }
}

/// Reads the boundary encoding from bytes, in place.
public struct BoundaryReader {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// How deep JSON values may nest (as deep as the Rust side reads them).
    static let maxDepth = 128

    func peek() throws -> UInt8 {
        guard position < bytes.count else { throw BoundaryError("the value ends early") }
        return bytes[position]
    }

    mutating func byte() throws -> UInt8 {
        let b = try peek()
        position += 1
        return b
    }

    mutating func bigEndian<I: FixedWidthInteger>(_: I.Type) throws -> I {
        let size = MemoryLayout<I>.size
        guard bytes.count - position >= size else { throw BoundaryError("the value ends early") }
        var v: I = 0
        for i in 0..<size { v = (v << 8) | I(bytes[position + i]) }
        position += size
        return v
    }

    /// What the next value is, for errors.
    func found() -> String {
        guard position < bytes.count else { return "the end" }
        switch bytes[position] {
        case 0xc0: return "null"
        case 0xc2, 0xc3: return "a boolean"
        case 0x00...0x7f, 0xe0...0xff, 0xcc...0xd3: return "an integer"
        case 0xca, 0xcb: return "a number"
        case 0xa0...0xbf, 0xd9...0xdb: return "a string"
        case 0x90...0x9f, 0xdc, 0xdd: return "a list"
        case 0x80...0x8f, 0xde, 0xdf: return "a map"
        case 0xc4...0xc6: return "bytes"
        default: return "an extension value"
        }
    }

    func expected(_ what: String) -> BoundaryError {
        BoundaryError("expected \(what), found \(found())")
    }

    /// Reads a nil when one is next.
    mutating func readNil() -> Bool {
        if position < bytes.count && bytes[position] == 0xc0 {
            position += 1
            return true
        }
        return false
    }

    mutating func readBool() throws -> Bool {
        switch try peek() {
        case 0xc2: position += 1; return false
        case 0xc3: position += 1; return true
        default: throw expected("a boolean")
        }
    }

    /// An integer (any width; out of `Int`'s range is an error).
    mutating func readInt() throws -> Int {
        let b = try peek()
        switch b {
        case 0x00...0x7f: position += 1; return Int(b)
        case 0xe0...0xff: position += 1; return Int(Int8(bitPattern: b))
        case 0xcc: position += 1; return Int(try bigEndian(UInt8.self))
        case 0xcd: position += 1; return Int(try bigEndian(UInt16.self))
        case 0xce: position += 1; return Int(try bigEndian(UInt32.self))
        case 0xcf:
            position += 1
            let v = try bigEndian(UInt64.self)
            guard v <= UInt64(Int.max) else { throw BoundaryError("expected an integer, found one out of range") }
            return Int(v)
        case 0xd0: position += 1; return Int(try bigEndian(Int8.self))
        case 0xd1: position += 1; return Int(try bigEndian(Int16.self))
        case 0xd2: position += 1; return Int(try bigEndian(Int32.self))
        case 0xd3: position += 1; return Int(try bigEndian(Int64.self))
        default: throw expected("an integer")
        }
    }

    /// A count that is never 0.
    mutating func readCount() throws -> Int {
        let n = try readInt()
        guard n >= 1 else { throw BoundaryError("a count here is at least 1") }
        return n
    }

    /// A number (an integer is taken as its value).
    mutating func readDouble() throws -> Double {
        switch try peek() {
        case 0xcb: position += 1; return Double(bitPattern: try bigEndian(UInt64.self))
        case 0xca: position += 1; return Double(Float(bitPattern: try bigEndian(UInt32.self)))
        case 0xcf:
            position += 1
            return Double(try bigEndian(UInt64.self))
        case 0x00...0x7f, 0xe0...0xff, 0xcc...0xce, 0xd0...0xd3: return Double(try readInt())
        default: throw expected("a number")
        }
    }

    mutating func stringLength() throws -> Int? {
        let b = try peek()
        switch b {
        case 0xa0...0xbf: position += 1; return Int(b & 0x1f)
        case 0xd9: position += 1; return Int(try bigEndian(UInt8.self))
        case 0xda: position += 1; return Int(try bigEndian(UInt16.self))
        case 0xdb: position += 1; return Int(try bigEndian(UInt32.self))
        default: return nil
        }
    }

    mutating func readString() throws -> String {
        guard let n = try stringLength() else { throw expected("a string") }
        guard bytes.count - position >= n else { throw BoundaryError("a string ends early") }
        let utf8 = UnsafeRawBufferPointer(rebasing: bytes[position..<position + n])
        position += n
        // The library writes Rust strings, which are UTF-8; anything else is repaired (U+FFFD).
        return String(decoding: utf8, as: UTF8.self)
    }

    mutating func readArrayHeader() throws -> Int {
        let b = try peek()
        switch b {
        case 0x90...0x9f: position += 1; return Int(b & 0x0f)
        case 0xdc: position += 1; return Int(try bigEndian(UInt16.self))
        case 0xdd: position += 1; return Int(try bigEndian(UInt32.self))
        default: throw expected("a list")
        }
    }

    mutating func readMapHeader() throws -> Int {
        let b = try peek()
        switch b {
        case 0x80...0x8f: position += 1; return Int(b & 0x0f)
        case 0xde: position += 1; return Int(try bigEndian(UInt16.self))
        case 0xdf: position += 1; return Int(try bigEndian(UInt32.self))
        default: throw expected("a map")
        }
    }

    /// The class tag: the first pair of a class's map, `"$"` and the class name.
    mutating func readTag() throws -> String {
        guard try at("$", { try readString() }) == "$" else {
            throw BoundaryError("a union's value names its class first, under \"$\"")
        }
        return try at("$") { try readString() }
    }

    /// The class tag, which must be `className`.
    mutating func expectTag(_ className: String) throws {
        let tag = try readTag()
        guard tag == className else { throw BoundaryError("expected a \(className), found a \(tag)") }
    }

    /// The pairs of a class without fields: there must be none.
    mutating func skipFields(_ className: String, count: Int) throws {
        if count > 0 { throw BoundaryError.unknownField(className, try readString()) }
    }

    /// A wire union's open branch (`count` pairs left): the tag's value and the object.
    mutating func readOther(count: Int) throws -> (String, [String: JSONValue]) {
        var tag: String?
        var raw: [String: JSONValue]?
        for _ in 0..<count {
            let key = try readString()
            switch key {
            case "tag": tag = try at("tag") { try readString() }
            case "raw": raw = try at("raw") { try [String: JSONValue](boundary: &self) }
            default: throw BoundaryError.unknownField("an unknown variant", key)
            }
        }
        guard let raw else { throw BoundaryError.missing("an unknown variant", "raw") }
        return (tag ?? "", raw)
    }

    /// Any value, as JSON.
    mutating func readJSON(depth: Int = 0) throws -> JSONValue {
        guard depth <= Self.maxDepth else { throw BoundaryError("a JSON value nests too deep") }
        let b = try peek()
        switch b {
        case 0xc0: position += 1; return .null
        case 0xc2, 0xc3: return .bool(try readBool())
        case 0xca, 0xcb: return .double(try readDouble())
        case 0xcf:
            // Beyond Int's range, as the nearest number.
            let start = position
            position += 1
            let v = try bigEndian(UInt64.self)
            if v <= UInt64(Int.max) { return .int(Int(v)) }
            _ = start
            return .double(Double(v))
        case 0x00...0x7f, 0xe0...0xff, 0xcc...0xce, 0xd0...0xd3: return .int(try readInt())
        case 0xa0...0xbf, 0xd9...0xdb: return .string(try readString())
        case 0x90...0x9f, 0xdc, 0xdd:
            let n = try readArrayHeader()
            var items: [JSONValue] = []
            items.reserveCapacity(min(n, bytes.count - position))
            for i in 0..<n { items.append(try at(String(i)) { try readJSON(depth: depth + 1) }) }
            return .array(items)
        case 0x80...0x8f, 0xde, 0xdf: return .object(try readObject(depth: depth))
        default: throw expected("a JSON value")
        }
    }

    mutating func readObject(depth: Int = 0) throws -> [String: JSONValue] {
        let n = try readMapHeader()
        var object: [String: JSONValue] = [:]
        object.reserveCapacity(min(n, bytes.count - position))
        for _ in 0..<n {
            let key: String
            do { key = try readString() } catch let e as BoundaryError { throw BoundaryError("a JSON object's key: \(e)") }
            object[key] = try at(key) { try readJSON(depth: depth + 1) }
        }
        return object
    }

    /// Fails unless every byte was read.
    func finish() throws {
        if position != bytes.count { throw BoundaryError("\(bytes.count - position) bytes follow the value") }
    }
}

// MARK: - The scalars, arrays, optionals and JSON

extension Bool: BoundaryCodable {
    public init(boundary r: inout BoundaryReader) throws { self = try r.readBool() }
    public func encode(boundary w: inout BoundaryWriter) { w.writeBool(self) }
}

extension Int: BoundaryCodable {
    public init(boundary r: inout BoundaryReader) throws { self = try r.readInt() }
    public func encode(boundary w: inout BoundaryWriter) { w.writeInt(self) }
}

extension Double: BoundaryCodable {
    public init(boundary r: inout BoundaryReader) throws { self = try r.readDouble() }
    public func encode(boundary w: inout BoundaryWriter) { w.writeDouble(self) }
}

extension String: BoundaryCodable {
    public init(boundary r: inout BoundaryReader) throws { self = try r.readString() }
    public func encode(boundary w: inout BoundaryWriter) { w.writeString(self) }
}

extension Array: BoundaryCodable where Element: BoundaryCodable {
    public init(boundary r: inout BoundaryReader) throws {
        let n = try r.readArrayHeader()
        var items: [Element] = []
        // Every item takes at least a byte: a hostile length reserves no more than the input.
        items.reserveCapacity(Swift.min(n, r.bytes.count - r.position))
        for i in 0..<n { items.append(try at(String(i)) { try Element(boundary: &r) }) }
        self = items
    }

    public func encode(boundary w: inout BoundaryWriter) {
        w.writeArrayHeader(count)
        for item in self { item.encode(boundary: &w) }
    }
}

extension Optional: BoundaryCodable where Wrapped: BoundaryCodable {
    public init(boundary r: inout BoundaryReader) throws {
        self = r.readNil() ? nil : try Wrapped(boundary: &r)
    }

    public func encode(boundary w: inout BoundaryWriter) {
        switch self {
        case let .some(v): v.encode(boundary: &w)
        case .none: w.writeNil()
        }
    }
}

extension JSONValue: BoundaryCodable {
    public init(boundary r: inout BoundaryReader) throws { self = try r.readJSON() }

    public func encode(boundary w: inout BoundaryWriter) {
        switch self {
        case .null: w.writeNil()
        case let .bool(b): w.writeBool(b)
        case let .int(i): w.writeInt(i)
        case let .double(d): w.writeDouble(d)
        case let .string(s): w.writeString(s)
        case let .array(items): items.encode(boundary: &w)
        case let .object(members): members.encode(boundary: &w)
        }
    }
}

extension Dictionary: BoundaryCodable where Key == String, Value == JSONValue {
    public init(boundary r: inout BoundaryReader) throws { self = try r.readObject() }

    public func encode(boundary w: inout BoundaryWriter) {
        w.writeMapHeader(count)
        for (k, v) in self {
            w.writeString(k)
            v.encode(boundary: &w)
        }
    }
}

extension RequestId: BoundaryCodable {
    public init(boundary r: inout BoundaryReader) throws {
        if r.readNil() {
            self = .null
            return
        }
        switch try r.peek() {
        case 0xa0...0xbf, 0xd9...0xdb: self = .string(try r.readString())
        case 0x00...0x7f, 0xe0...0xff, 0xcc...0xd3: self = .int(try r.readInt())
        default: throw r.expected("a request id (an integer or a string)")
        }
    }

    public func encode(boundary w: inout BoundaryWriter) {
        switch self {
        case .null: w.writeNil()
        case let .int(n): w.writeInt(n)
        case let .string(s): w.writeString(s)
        }
    }
}
