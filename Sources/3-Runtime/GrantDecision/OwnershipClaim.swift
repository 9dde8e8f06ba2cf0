import Foundation

/// One customer's claim on a purchase: an `appAccountToken` that came with one of its events.
///
/// Who owns a purchase, in one rule (every arrival order of the same events names the same owner,
/// since the owner is a function of the set of claims):
/// 1. **Apple's signed word is authoritative, and the newest wins.** A token in Apple's signed data
///    (a transaction or renewal info) is a verified claim; among verified claims the one Apple gave
///    last owns the purchase, whatever the transfer policy: Apple changes a purchase's token only
///    deliberately (Set App Account Token, a crossgrade bought under another account).
/// 2. **Uploads count only where Apple names nobody.** A claim from an authenticated upload ranks by
///    when the pipeline received it (never by the JWS's own dates, which an old copy keeps); the
///    transfer policy decides between such claims (`refuse`: the first received keeps it;
///    `allow`: the latest takes it). An upload never takes a purchase Apple's token names.
public struct OwnershipClaim: Hashable, Codable, Sendable {
    public var customerId: UUID
    /// The moment the claim ranks by: for a verified claim, the latest moment Apple's data named the
    /// customer (``EventVersion/asOf`` of that event: when the API answered, or the transaction's
    /// signing); for an upload's claim, when the pipeline first received it.
    public var claimedAt: Date
    /// True when Apple's signed data named the customer; false when only an upload did.
    public var verified: Bool
    /// The event that carried the claim at ``claimedAt``.
    public var eventKey: String
    /// When, and by which event, the customer first claimed the purchase: what `ownership_claims`
    /// shows, so a claim's row is written only when its standing changes, not on every event that
    /// repeats it. Nil in states written before it was kept (then ``claimedAt`` and ``eventKey``).
    public var firstClaimedAt: Date?
    public var firstEventKey: String?

    public init(customerId: UUID, claimedAt: Date, verified: Bool, eventKey: String) {
        self.customerId = customerId
        self.claimedAt = claimedAt
        self.verified = verified
        self.eventKey = eventKey
        firstClaimedAt = claimedAt
        firstEventKey = eventKey
    }

    /// The customer's first claim: its moment and event.
    public var first: (at: Date, eventKey: String) { (firstClaimedAt ?? claimedAt, firstEventKey ?? eventKey) }

    /// A claim's place in `ownership_claims`.
    public enum Status: String, Sendable {
        case owner
        /// Lost to an earlier upload under `refuse`, or an upload's claim on a purchase Apple names.
        case refused
        /// Replaced: by Apple's newer token, or by a later upload under `allow`.
        case superseded
    }

    /// The claims with `claim` merged in: one entry per customer, with the strongest evidence and
    /// its deciding moment (a verified claim's latest, an upload's earliest). Sorted by customer, so
    /// equal sets compare equal.
    static func merge(_ claims: [OwnershipClaim], _ claim: OwnershipClaim) -> [OwnershipClaim] {
        var byCustomer = Dictionary(claims.map { ($0.customerId, $0) }, uniquingKeysWith: { a, _ in a })
        if let existing = byCustomer[claim.customerId] {
            var merged: OwnershipClaim
            if claim.verified != existing.verified {
                merged = claim.verified ? claim : existing
            } else if claim.verified {
                merged = claim.rank > existing.rank ? claim : existing
            } else {
                merged = claim.rank < existing.rank ? claim : existing
            }
            let first = (claim.first.at, claim.first.eventKey) < (existing.first.at, existing.first.eventKey) ? claim.first : existing.first
            merged.firstClaimedAt = first.at
            merged.firstEventKey = first.eventKey
            byCustomer[claim.customerId] = merged
        } else {
            byCustomer[claim.customerId] = claim
        }
        return byCustomer.values.sorted { $0.customerId.uuidString < $1.customerId.uuidString }
    }

    /// The owner: the newest verified claim; when there is none, the uploads' claims under `policy`
    /// (the first received under `refuse`, the latest under `allow`).
    static func owner(of claims: [OwnershipClaim], policy: GrantPolicy.TransferPolicy) -> UUID? {
        let verified = claims.filter(\.verified)
        if !verified.isEmpty { return verified.max { $0.rank < $1.rank }?.customerId }
        let ordered = claims.sorted { $0.rank < $1.rank }
        switch policy {
        case .refuse: return ordered.first?.customerId
        case .allow: return ordered.last?.customerId
        }
    }

    /// `claim`'s status among `claims` under `policy`.
    static func status(of claim: OwnershipClaim, among claims: [OwnershipClaim], policy: GrantPolicy.TransferPolicy) -> Status {
        guard let owner = owner(of: claims, policy: policy) else { return .refused }
        if claim.customerId == owner { return .owner }
        if claim.verified { return .superseded }
        if claims.contains(where: \.verified) { return .refused }
        return policy == .refuse ? .refused : .superseded
    }

    /// Total order: the moment, then the event, then the customer.
    private var rank: (Date, String, String) { (claimedAt, eventKey, customerId.uuidString) }
}
