/// Why an enriched event can never be applied. Grant dead-letters the record with ``code``; once
/// the cause is fixed (data or configuration), the dead letter can be replayed.
public struct GrantRejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `grant.<reason>` codes (schemas/headers.md), used in dead-letter headers and metrics.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The record's environment is not one Apple defines, so its purchase cannot be keyed.
        public static let unknownEnvironment = Code(rawValue: "grant.unknown_environment")
        /// The record names a purchase but its transaction is missing or incomplete.
        public static let missingPurchase = Code(rawValue: "grant.missing_purchase")
        /// The record's environment differs from its transaction's.
        public static let environmentMismatch = Code(rawValue: "grant.environment_mismatch")
        /// A non-renewing product has no `expiresDate` and no `durationDays` in the product mapping.
        public static let nonRenewingDurationUnknown = Code(rawValue: "grant.non_renewing_duration_unknown")
        /// A notification without `notificationUUID` cannot be deduplicated.
        public static let missingNotificationUUID = Code(rawValue: "grant.missing_notification_uuid")
    }

    /// A stable, machine-readable code.
    public let code: Code
    /// One human sentence: what is wrong and with which identifier. No payloads, no secrets.
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    static func missingEnvironment() -> GrantRejection {
        .init(code: .unknownEnvironment, message: "the record's environment is not one Apple defines, so it cannot be keyed")
    }

    static func missingPurchase(_ detail: String) -> GrantRejection {
        .init(code: .missingPurchase, message: "the record names a purchase but \(detail)")
    }

    static func environmentMismatch(_ record: String, _ transaction: String) -> GrantRejection {
        .init(
            code: .environmentMismatch,
            message: "the record's environment \(record) differs from its transaction's environment \(transaction)")
    }

    static func unknownDuration(_ productId: String) -> GrantRejection {
        .init(
            code: .nonRenewingDurationUnknown,
            message: "non-renewing product \(productId) has no expiresDate and no durationDays in the product mapping")
    }
}
