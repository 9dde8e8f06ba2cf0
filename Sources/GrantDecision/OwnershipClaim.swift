import Foundation

/// One customer's claim on a purchase: an `appAccountToken` that came with one of its events.
///
/// Claims only accumulate (the earliest moment per customer is kept), and the owner is a function
/// of the set of claims, so every arrival order of the same events names the same owner.
public struct OwnershipClaim: Hashable, Codable, Sendable {
    public var customerId: UUID
    /// The `signedDate` of the earliest event that carried this claim.
    public var claimedAt: Date
    /// True when Apple's signed data named the customer; false when only the app's unverified
    /// upload hint did. Verified claims outrank unverified ones.
    public var verified: Bool
    /// The event that first carried the claim.
    public var eventKey: String

    public init(customerId: UUID, claimedAt: Date, verified: Bool, eventKey: String) {
        self.customerId = customerId
        self.claimedAt = claimedAt
        self.verified = verified
        self.eventKey = eventKey
    }

    /// The claims with `claim` merged in: one entry per customer, with its earliest claim and the
    /// strongest evidence. Sorted by customer, so equal sets compare equal.
    static func merge(_ claims: [OwnershipClaim], _ claim: OwnershipClaim) -> [OwnershipClaim] {
        var byCustomer = Dictionary(claims.map { ($0.customerId, $0) }, uniquingKeysWith: { a, _ in a })
        if var existing = byCustomer[claim.customerId] {
            if claim.verified && !existing.verified {
                existing = claim
            } else if claim.verified == existing.verified,
                (claim.claimedAt, claim.eventKey) < (existing.claimedAt, existing.eventKey)
            {
                existing.claimedAt = claim.claimedAt
                existing.eventKey = claim.eventKey
            }
            byCustomer[claim.customerId] = existing
        } else {
            byCustomer[claim.customerId] = claim
        }
        return byCustomer.values.sorted { $0.customerId.uuidString < $1.customerId.uuidString }
    }

    /// The owner: among the verified claims (or, when there are none, the unverified ones), the
    /// earliest under `refuse` and the latest under `allow`.
    static func owner(of claims: [OwnershipClaim], policy: GrantPolicy.TransferPolicy) -> UUID? {
        let pool = claims.contains(where: \.verified) ? claims.filter(\.verified) : claims
        let ordered = pool.sorted { ($0.claimedAt, $0.customerId.uuidString) < ($1.claimedAt, $1.customerId.uuidString) }
        switch policy {
        case .refuse: return ordered.first?.customerId
        case .allow: return ordered.last?.customerId
        }
    }
}
