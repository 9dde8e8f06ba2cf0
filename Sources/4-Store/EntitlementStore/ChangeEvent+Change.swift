import Foundation
import GrantDecision
import PipelineRecords

extension ChangeEvent {
    /// The change event of `c`, numbered `seq`.
    init(_ c: EntitlementChange, seq: Int64) {
        self.init(
            environment: c.customer.environment, customerId: c.customer.customerId, seq: seq, change: c.kind.rawValue,
            entitlementKey: c.entitlementKey, sourceId: c.sourceId, productId: c.productId, active: c.active, activeUntil: c.activeUntil,
            reason: c.reason, quantity: c.quantity, cause: c.cause)
    }
}
