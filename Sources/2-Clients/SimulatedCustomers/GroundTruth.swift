import AppStore
import Foundation

/// An entitlement a customer should hold: what an end-to-end run compares with the database.
public struct ExpectedEntitlement: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The customer (`appAccountToken`, or the token the app uploaded with a purchase without one).
    public var customer: UUID
    public var entitlement: String
    /// When the paid period ends (`nil`: never, e.g. a non-consumable).
    public var until: Date?
    /// True when Apple expects a renewal (auto-renew on, not in billing retry): the pipeline keeps
    /// access for its configured leeway past ``until`` so processing delay never cuts a customer off.
    public var renewalExpected: Bool

    public init(customer: UUID, entitlement: String, until: Date?, renewalExpected: Bool = false) {
        self.customer = customer
        self.entitlement = entitlement
        self.until = until
        self.renewalExpected = renewalExpected
    }

    public var description: String {
        "\(entitlement) until \(until.map { Date.ISO8601FormatStyle(includingFractionalSeconds: true).format($0) } ?? "forever")"
    }
}

extension CustomerLifecycleBuilder {
    /// What the customer is entitled to at `time`, from Apple's records after every step: the
    /// newest transaction of the subscription when it is neither revoked nor past its end (or its
    /// grace period's end); non-consumables unless revoked; non-renewing passes for their duration.
    /// Consumables are counted by ``consumableUnits(at:)``.
    public func expectedEntitlements(for customer: UUID, at time: Date) -> [ExpectedEntitlement] {
        var result: [ExpectedEntitlement] = []
        if let sub = subscription, let latest = transactions[sub.latestTransactionId], latest.revocationDate == nil {
            let until: Date? =
                switch sub.status {
                case .active: sub.expires
                case .billingGracePeriod: sub.graceExpires
                default: nil
                }
            if let until, until > time {
                result.append(
                    ExpectedEntitlement(
                        customer: customer, entitlement: sub.product.entitlement, until: until,
                        renewalExpected: sub.status == .active && sub.autoRenew && !sub.inBillingRetry))
            }
        }
        for tx in transactions.values where tx.revocationDate == nil {
            let product = catalog.product(tx.productId ?? "")
            switch product.type {
            case .nonConsumable:
                result.append(ExpectedEntitlement(customer: customer, entitlement: product.entitlement, until: nil))
            case .nonRenewingSubscription:
                let until = tx.purchaseDate!.addingTimeInterval(Double(product.durationDays ?? 30) * 86_400)
                if until > time { result.append(ExpectedEntitlement(customer: customer, entitlement: product.entitlement, until: until)) }
            default:
                break
            }
        }
        return result.sorted { $0.entitlement < $1.entitlement }
    }

    /// Units of each consumable product bought and not refunded: a prorated refund takes its share
    /// of the pack (`revocationPercentage` milliunits, to the nearest unit, halves taken), any other
    /// refund all of it.
    public func consumableUnits() -> [String: Int] {
        var units: [String: Int] = [:]
        for tx in transactions.values where tx.type == .consumable {
            let bought = Double(tx.quantity ?? 1)
            var kept = bought
            if tx.revocationDate != nil {
                let share = tx.revocationType == .refundProrated ? Double(tx.revocationPercentage ?? 100_000) / 100_000 : 1
                kept = bought - (bought * share).rounded(.toNearestOrAwayFromZero)
            }
            if kept > 0 { units[tx.productId ?? "", default: 0] += Int(kept) }
        }
        return units
    }
}
