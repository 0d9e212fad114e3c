// How this layer calls the generated binding (module AcpInjectFFI, never seen by users): value
// arguments go in encoded, results come back decoded, and the binding's one error
// (`FfiError.Failed(message:error:)`, the error encoded) is rethrown as the `AcpError` it
// carries.
import AcpInjectFFI
import Foundation

extension AcpError {
    /// The error an `FfiError.Failed` carries (its bytes); bytes that do not decode (a bug)
    /// keep the message.
    init(message: String, encoded: Data) {
        self = (try? Boundary.decode(AcpError.self, from: encoded)) ?? .internal(detail: message)
    }

    /// The binding's error, for a callback the library made into this process (an agent
    /// runtime's) that failed.
    var ffi: FfiError { .Failed(message: description, error: Boundary.encode(self)) }

    /// Any error thrown into the library by Swift code it called: an `AcpError` as it is,
    /// anything else as `.internal`.
    static func from(_ error: Error) -> AcpError {
        if let e = error as? AcpError { return e }
        return .internal(detail: "\(error)")
    }
}

/// Runs a call of the binding, rethrowing its error as the `AcpError` it carries.
func call<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let FfiError.Failed(message, error) {
        throw AcpError(message: message, encoded: error)
    }
}

/// The async form of ``call(_:)``.
func callAsync<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let FfiError.Failed(message, error) {
        throw AcpError(message: message, encoded: error)
    }
}

/// `value` encoded, for an argument.
func arg<T: BoundaryCodable>(_ value: T) -> Data {
    Boundary.encode(value)
}

/// The value of type `T` the library returned (bytes that do not decode are a bug:
/// `AcpError.internal`).
func result<T: BoundaryCodable>(_ type: T.Type, _ data: Data) throws -> T {
    do {
        return try Boundary.decode(type, from: data)
    } catch {
        throw AcpError.internal(detail: "the library's answer is not a \(type): \(error)")
    }
}

/// The value of type `T` a library callback handed in (bytes that do not decode are a bug:
/// `AcpError.internal`, as the binding's error).
func input<T: BoundaryCodable>(_ type: T.Type, _ data: Data) throws -> T {
    do {
        return try Boundary.decode(type, from: data)
    } catch {
        throw AcpError.internal(detail: "the library's argument is not a \(type): \(error)").ffi
    }
}

/// The library's version, for checking that this package and the library match.
public func libraryVersion() -> String {
    AcpInjectFFI.libraryVersion()
}

/// The default agent configuration: queue and steer, replace, `finish`, batch drain.
public func defaultAgentConfig() -> AgentConfig {
    // The library's own value: it always decodes.
    (try? Boundary.decode(AgentConfig.self, from: AcpInjectFFI.defaultAgentConfig())) ?? AgentConfig(info: AgentInfo(name: "", version: ""))
}

/// Stops the library's runtime: waits up to `timeout` seconds for its tasks to yield, then
/// drops them. A later async call starts a new runtime.
public func shutdownRuntime(timeout: TimeInterval = 1) {
    AcpInjectFFI.shutdownRuntime(timeoutMs: UInt64(max(0, timeout) * 1000))
}

/// A value behind a lock (the one `@unchecked Sendable` of this package: the lock is what
/// makes it safe).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Sets the value and returns the old one.
    @discardableResult
    func exchange(_ new: Value) -> Value { withLock { v in defer { v = new }; return v } }
}
