import Foundation
import GrantDecision

/// `RESCIND_CONSENT` names the customer's app transaction, not a purchase (migration 0018). Its
/// `consent_rescinded` change goes to the customer who owns a purchase carrying that
/// `appTransactionId`: at once when one is known as it arrives (``GrantEvent``'s decision makes the
/// change), else from the next batch that decides an owned purchase carrying it. Apple's
/// notifications (and the pipeline's partitions and concurrent transactions) may bring the rescind
/// before the purchase; either order ends with one change.
extension BatchState {
    /// Gives the rescinds waiting for an app transaction whose owner this batch knows (this batch's
    /// own, and those committed before) that owner, and adds their changes.
    mutating func attributeConsentRescinds() {
        guard !owners.isEmpty, !consentRescinds.isEmpty || !waitingRescinds.isEmpty else { return }
        var found: [StoreRows.ConsentRescind] = []
        for (index, rescind) in consentRescinds.enumerated() where rescind.customerId == nil {
            guard let owner = owners[rescind.key] else { continue }
            consentRescinds[index].customerId = owner.customerId
            found.append(consentRescinds[index])
        }
        // Walked from the waiting side: almost always empty, where every batch has owners.
        for (key, waiting) in waitingRescinds.sorted(by: { $0.key < $1.key }) {
            guard let owner = owners[key] else { continue }
            for var rescind in waiting {
                rescind.customerId = owner.customerId
                consentRescinds.append(rescind)
                found.append(rescind)
            }
        }
        add(
            found.compactMap { rescind in
                rescind.customerId.map {
                    .consentRescinded(
                        customer: CustomerKey(environment: rescind.environment, customerId: $0), appTransactionId: rescind.appTransactionId,
                        cause: rescind.cause)
                }
            })
    }
}
