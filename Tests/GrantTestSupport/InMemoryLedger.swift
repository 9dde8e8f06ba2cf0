import Foundation
import GrantDecision
import PipelineRecords

/// Grant's state held in memory: what ``GrantDecider`` would see and write, without Postgres.
/// Lets decision tests run whole event sequences and compare the outcome of different orders.
public struct InMemoryLedger: Sendable {
    public var purchases: [PurchaseKey: PurchaseState] = [:]
    public var entitlements: [EntitlementGrant.ID: EntitlementGrant] = [:]
    public var consumables: [PurchaseKey: ConsumableGrant] = [:]
    public var applied: Set<String> = []
    public var changes: [EntitlementChange] = []
    public let policy: GrantPolicy

    public init(policy: GrantPolicy) {
        self.policy = policy
    }

    /// Decides one record against the ledger and folds the decision in.
    @discardableResult
    public mutating func apply(_ record: EnrichedRecord) throws -> GrantDecision {
        let event = try GrantEvent(record)
        var snapshot = GrantSnapshot(alreadyApplied: applied.contains("\(event.environment):\(event.eventKey)"))
        if let key = event.purchaseKey {
            snapshot.purchase = purchases[key]
            snapshot.entitlements = entitlements.values.filter {
                $0.id.customer.environment == key.environment && $0.id.sourceId == key.purchaseId
            }.sorted { $0.id < $1.id }
            snapshot.consumable = consumables[key]
        }
        let decision = try GrantDecider.decide(snapshot, event: event, policy: policy)
        guard decision.outcome != .duplicate else { return decision }
        applied.insert("\(event.environment):\(event.eventKey)")
        if let key = event.purchaseKey {
            if let p = decision.purchase { purchases[key] = p }
            if let c = decision.consumable { consumables[key] = c }
        }
        for id in decision.deletions { entitlements[id] = nil }
        for row in decision.entitlements { entitlements[row.id] = row }
        changes += decision.changes
        return decision
    }

    /// The rows of one purchase's entitlements, sorted.
    public func rows(source: String) -> [EntitlementGrant] {
        entitlements.values.filter { $0.id.sourceId == source }.sorted { $0.id < $1.id }
    }
}
