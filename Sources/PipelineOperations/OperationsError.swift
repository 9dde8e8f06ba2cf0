/// Why an operator job refused or failed, with a stable code for scripts and a sentence for people.
public struct OperationsError: Error, Sendable, CustomStringConvertible {
    public let code: String
    public let message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    static func unknownStage(_ name: String) -> OperationsError {
        OperationsError("unknown_stage", "no stage is called \(name); choose one of verify, enrich, grant")
    }
}
