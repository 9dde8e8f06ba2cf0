/// Why an operator job refused or failed, with a stable code for scripts and a sentence for people.
public struct OperationsError: Error, Sendable, CustomStringConvertible {
    /// The operator tool's `<area>.<reason>` codes (schemas/headers.md): `ops.*` for its own
    /// refusals, the pipeline's areas where a dependency failed.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let unknownStage = Code(rawValue: "ops.unknown_stage")
        public static let unknownApp = Code(rawValue: "ops.unknown_app")
        /// A subscription names no bundle ID and none was given.
        public static let unknownBundle = Code(rawValue: "ops.unknown_bundle")
        public static let configuration = Code(rawValue: "ops.configuration")
        public static let jsonOutput = Code(rawValue: "ops.json_output")
        public static let deadLetterNotFound = Code(rawValue: "ops.dead_letter_not_found")
        public static let customerNotFound = Code(rawValue: "ops.customer_not_found")
        public static let orderNotFound = Code(rawValue: "ops.order_not_found")
        /// `appstorectl extend-status --request-id` names no recorded mass extension.
        public static let massExtensionNotFound = Code(rawValue: "ops.mass_extension_not_found")
        /// `appstorectl extend-all --wait`: Apple had not finished within the wait.
        public static let massExtensionIncomplete = Code(rawValue: "ops.mass_extension_incomplete")
        public static let invalidWindow = Code(rawValue: "ops.invalid_window")
        public static let reconcileIncomplete = Code(rawValue: "ops.reconcile_incomplete")
        public static let refundSweepIncomplete = Code(rawValue: "ops.refund_sweep_incomplete")
        public static let unkeyedRecord = Code(rawValue: "ops.unkeyed_record")
        public static let notArrived = Code(rawValue: "ops.not_arrived")
        public static let noSuchPartition = Code(rawValue: "ops.no_such_partition")
        public static let offsetOutOfRange = Code(rawValue: "ops.offset_out_of_range")
        public static let groupActive = Code(rawValue: "ops.group_active")
        public static let brokerUnreachable = Code(rawValue: "topics.broker_unreachable")
        /// A record of the changes topic is not an entitlement change.
        public static let malformedChange = Code(rawValue: "record.malformed_change")
        /// The same codes as the store's and ingest's, for the same failures.
        public static let storeUnavailable = Code(rawValue: "store.unavailable")
        public static let storeFailed = Code(rawValue: "store.failed")
        public static let brokerUnavailable = Code(rawValue: "kafka.broker_unavailable")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    static func unknownStage(_ name: String) -> OperationsError {
        OperationsError(.unknownStage, "no stage is called \(name); choose one of verify, enrich, grant")
    }
}
