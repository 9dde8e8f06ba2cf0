import AppStore
import Foundation
import GrantDecision
import PipelineRecords

import struct SimulatedCustomers.SplitMix64

/// Realistic per-customer streams of enriched events: purchase, renewals, upgrade, downgrade,
/// crossgrade at renewal, auto-renew off/on, billing retry with and without grace, recovery,
/// expiry with each reason, refund and reversal, price increase, offers, extensions, consumables
/// and their refunds, a lifetime purchase. Deterministic for a seed; used by the store tests, the
/// resilience test and `grant-bench` (so it lives under Sources, where a benchmark may import it).
public struct LifecycleGenerator: Sendable {
    public static let monthly = "premium.monthly"
    public static let yearly = "premium.yearly"
    public static let plus = "premiumplus.monthly"
    public static let basic = "basic.monthly"
    public static let coins = "coins.100"
    public static let lifetime = "lifetime.unlock"

    /// The mapping the generated products need (monthly and yearly both grant `premium`).
    public static let catalog = ProductCatalog(products: [
        monthly: .init(entitlements: ["premium"]),
        yearly: .init(entitlements: ["premium"]),
        plus: .init(entitlements: ["premium", "premium_plus"]),
        basic: .init(entitlements: ["basic"]),
        coins: .init(entitlements: ["coins"]),
        lifetime: .init(entitlements: ["lifetime"]),
    ])

    public let seed: UInt64
    public let start: Date
    public let environment: AppStoreEnvironment

    public init(seed: UInt64, start: Date = Date(timeIntervalSince1970: 1_767_225_600), environment: AppStoreEnvironment = .production) {
        self.seed = seed
        self.start = start
        self.environment = environment
    }

    /// The customer of lifecycle `index`.
    public func customer(_ index: Int) -> UUID {
        var rng = SplitMix64(seed: seed ^ UInt64(index) &* 0x9E37_79B9)
        let a = rng.next()
        let b = rng.next()
        return UUID(
            uuid: withUnsafeBytes(of: (a, b)) { raw in
                let bytes = Array(raw)
                return (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], 0x40 | (bytes[6] & 0x0F), bytes[7],
                    0x80 | (bytes[8] & 0x3F), bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                )
            })
    }

    /// Every customer's events merged in the order Apple signed them.
    public func stream(customers: Int) -> [EnrichedRecord] {
        (0..<customers).flatMap { lifecycle($0) }.sorted {
            ($0.verified.notification?.signedDate ?? .distantPast, $0.verified.notificationUUID ?? "")
                < ($1.verified.notification?.signedDate ?? .distantPast, $1.verified.notificationUUID ?? "")
        }
    }

    /// One customer's events, in the order Apple signed them.
    public func lifecycle(_ index: Int) -> [EnrichedRecord] {
        var rng = SplitMix64(seed: seed &+ UInt64(index) &* 0x2545_F491_4F6C_DD1D)
        let token = customer(index)
        let begin = start.addingTimeInterval(Double(rng.next() % 86_400_000) / 1000)
        var sub = SimulatedPurchase(
            environment: environment, customer: token, productType: .autoRenewableSubscription,
            productId: Bool.random(using: &rng) ? Self.monthly : Self.yearly, originalTransactionId: "\(1_000_000 + index)00",
            start: begin, uuidSeed: rng.next())
        if sub.productId == Self.yearly { sub.period = 365 * 86_400 }
        var events: [EnrichedRecord] = []
        sub.addTransaction(reason: .purchase)
        events.append(sub.notify(.subscribed, .initialBuy))
        var extras = 0
        let steps = 4 + Int(rng.next() % 9)
        for _ in 0..<steps {
            sub.advance(Double(3600 + rng.next() % (3 * 86_400)))
            let roll = Int(rng.next() % 100)
            switch sub.status {
            case .active:
                if roll < 35 {
                    renewOrExpire(&sub, &events)
                } else if roll < 45 {
                    sub.autoRenew.toggle()
                    events.append(sub.notify(.didChangeRenewalStatus, sub.autoRenew ? .autoRenewEnabled : .autoRenewDisabled))
                } else if roll < 50, sub.productId != Self.plus {
                    sub.markLatestUpgraded()
                    sub.period = 30 * 86_400
                    sub.addTransaction(product: Self.plus, reason: .purchase)
                    sub.autoRenewProductId = Self.plus
                    events.append(sub.notify(.didChangeRenewalPref, .upgrade))
                } else if roll < 55 {
                    sub.autoRenewProductId = Self.basic
                    events.append(sub.notify(.didChangeRenewalPref, .downgrade))
                } else if roll < 63 {
                    failToRenew(&sub, &events, grace: roll < 59, rng: &rng)
                } else if roll < 69 {
                    sub.revokeLatest(.refundFull)
                    sub.status = .expired
                    sub.autoRenew = false
                    events.append(sub.notify(.refund))
                    if rng.next() % 2 == 0 {
                        sub.advance(86_400)
                        sub.revokeLatest(nil)
                        sub.status = .active
                        events.append(sub.notify(.refundReversed))
                    }
                } else if roll < 74 {
                    sub.priceIncrease = .customerHasNotResponded
                    events.append(sub.notify(.priceIncrease, .pending))
                    sub.advance(86_400)
                    sub.priceIncrease = .customerConsentedOrWasNotifiedWithoutNeedingConsent
                    events.append(sub.notify(.priceIncrease, .accepted))
                } else if roll < 82 {
                    extras += 1
                    events += consumable(index: index, n: extras, token: token, at: sub.now, refund: rng.next() % 4 == 0)
                } else if roll < 85 {
                    events.append(sub.notify(.offerRedeemed))
                } else if roll < 88, var last = sub.transactions.popLast() {
                    last.expiresDate = last.expiresDate?.addingTimeInterval(7 * 86_400)
                    sub.transactions.append(last)
                    events.append(sub.notify(.renewalExtended))
                } else if roll < 90 {
                    extras += 1
                    events += lifetimePurchase(index: index, n: extras, token: token, at: sub.now)
                } else {
                    events.append(sub.notify(.didChangeRenewalPref))  // a reverted downgrade
                }
            case .billingGracePeriod, .billingRetry:
                if roll < 50 {
                    sub.billingRetry = false
                    sub.graceUntil = nil
                    sub.status = .active
                    sub.addTransaction(product: sub.autoRenewProductId, reason: .renewal, start: sub.now)
                    events.append(sub.notify(.didRenew, .billingRecovery))
                } else if sub.status == .billingGracePeriod {
                    sub.status = .billingRetry
                    sub.advance(16 * 86_400)
                    events.append(sub.notify(.gracePeriodExpired))
                } else {
                    sub.status = .expired
                    sub.billingRetry = false
                    sub.autoRenew = false
                    sub.expirationIntent = .billingError
                    events.append(sub.notify(.expired, .billingRetry))
                }
            default:
                if roll < 60 {
                    sub.status = .active
                    sub.autoRenew = true
                    sub.expirationIntent = nil
                    sub.addTransaction(product: sub.autoRenewProductId, reason: .purchase)
                    events.append(sub.notify(.subscribed, .resubscribe))
                }
            }
        }
        return events
    }

    private func renewOrExpire(_ sub: inout SimulatedPurchase, _ events: inout [EnrichedRecord]) {
        guard let expires = sub.latest?.expiresDate else { return }
        if sub.now < expires.addingTimeInterval(-60) { sub.now = expires.addingTimeInterval(-60) }
        if sub.autoRenew {
            if sub.autoRenewProductId != sub.productId { sub.period = 30 * 86_400 }
            sub.addTransaction(product: sub.autoRenewProductId, reason: .renewal, start: expires)
            events.append(sub.notify(.didRenew))
        } else {
            sub.advance(120)
            sub.status = .expired
            sub.expirationIntent = .customerCancelled
            events.append(sub.notify(.expired, .voluntary))
        }
    }

    private func failToRenew(_ sub: inout SimulatedPurchase, _ events: inout [EnrichedRecord], grace: Bool, rng: inout SplitMix64) {
        guard sub.autoRenew, let expires = sub.latest?.expiresDate else { return }
        if sub.now < expires { sub.now = expires.addingTimeInterval(60) }
        sub.billingRetry = true
        sub.expirationIntent = .billingError
        sub.graceUntil = grace ? expires.addingTimeInterval(16 * 86_400) : nil
        sub.status = grace ? .billingGracePeriod : .billingRetry
        events.append(sub.notify(.didFailToRenew, grace ? .gracePeriod : nil))
    }

    private func consumable(index: Int, n: Int, token: UUID, at: Date, refund: Bool) -> [EnrichedRecord] {
        var c = SimulatedPurchase(
            environment: environment, customer: token, productType: .consumable, productId: Self.coins,
            originalTransactionId: "\(1_000_000 + index)c\(n)", start: at, uuidSeed: UInt64(index * 131 + n))
        c.addTransaction(reason: .purchase)
        var events = [c.notify(.oneTimeCharge)]
        if refund {
            c.advance(3 * 86_400)
            c.revokeLatest(.refundFull)
            events.append(c.notify(.refund))
        }
        return events
    }

    private func lifetimePurchase(index: Int, n: Int, token: UUID, at: Date) -> [EnrichedRecord] {
        var c = SimulatedPurchase(
            environment: environment, customer: token, productType: .nonConsumable, productId: Self.lifetime,
            originalTransactionId: "\(1_000_000 + index)l\(n)", start: at, uuidSeed: UInt64(index * 977 + n))
        c.addTransaction(reason: .purchase)
        return [c.notify(.oneTimeCharge)]
    }
}
