import Foundation

/// Commitment details of a transaction on a plan with a commitment (monthly billing, 12-month term).
///
/// See https://developer.apple.com/documentation/appstoreserverapi/transactioncommitmentinfo
public struct TransactionCommitmentInfo: Codable, Hashable, Sendable {
    /// Which billing period of the commitment this transaction pays.
    public var billingPeriodNumber: Int32?
    /// When the commitment ends.
    public var commitmentExpiresDate: Date?
    /// Total commitment price in milliunits.
    public var commitmentPrice: Int64?
    /// Number of billing periods in the commitment.
    public var totalBillingPeriods: Int32?

    public init(
        billingPeriodNumber: Int32? = nil,
        commitmentExpiresDate: Date? = nil,
        commitmentPrice: Int64? = nil,
        totalBillingPeriods: Int32? = nil
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
        self.totalBillingPeriods = totalBillingPeriods
    }
}
