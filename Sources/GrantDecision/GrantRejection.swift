/// Why an enriched event can never be applied. Grant dead-letters the record with ``code``; once
/// the cause is fixed (data or configuration), the dead letter can be replayed.
public struct GrantRejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable, machine-readable code (`grant.<reason>`), used in dead-letter headers and metrics.
    public let code: String
    /// One human sentence: what is wrong and with which identifier. No payloads, no secrets.
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    static func missingEnvironment() -> GrantRejection {
        .init(code: "grant.unknown_environment", message: "the record's environment is not one Apple defines, so it cannot be keyed")
    }

    static func missingPurchase(_ detail: String) -> GrantRejection {
        .init(code: "grant.missing_purchase", message: "the record names a purchase but \(detail)")
    }

    static func environmentMismatch(_ record: String, _ transaction: String) -> GrantRejection {
        .init(
            code: "grant.environment_mismatch",
            message: "the record's environment \(record) differs from its transaction's environment \(transaction)")
    }

    static func unknownDuration(_ productId: String) -> GrantRejection {
        .init(
            code: "grant.non_renewing_duration_unknown",
            message: "non-renewing product \(productId) has no expiresDate and no durationDays in the product mapping")
    }
}
