import AppStore
import Foundation
import GrantDecision
import JSONCoding
import PipelineRecords

extension GrantWriteColumns {
    /// What `grant_write` gets for `batch`: every row its decisions changed, in key order (so
    /// concurrent batches lock rows in the same order), and its changes in batch order.
    init(_ batch: BatchState, policy: GrantPolicy) throws {
        for (customer, externalUser) in batch.customers.sorted(by: { $0.key < $1.key }) {
            customerEnv.append(customer.environment)
            customerId.append(customer.customerId)
            customerExternalUser.append(externalUser)
        }
        for (_, row) in batch.transactions.sorted(by: { $0.key < $1.key }) {
            transactionEnv.append(row.environment)
            transactionPayload.append(try StreamingJSONEncoder.encodeToString(row.transaction))
            transactionRawJWS.append(row.rawJWS)
        }
        let states = batch.dirtyPurchases.sorted().compactMap { batch.purchases[$0] }
        for state in states {
            purchaseState.append(try StreamingJSONEncoder.encodeToString(state))
            purchaseOwner.append(state.owner(policy: policy.transferPolicy))
            let before = batch.storedPurchases[state.key].map { EntitlementStore.claimRows($0, policy: policy) } ?? []
            for claim in EntitlementStore.claimRows(state, policy: policy) where !before.contains(claim) {
                claimEnv.append(claim.environment)
                claimPurchase.append(claim.originalTransactionId)
                claimCustomer.append(claim.customerId)
                claimFirstAt.append(claim.firstClaimedAt)
                claimVerified.append(claim.verified)
                claimStatus.append(claim.status)
                claimCause.append(claim.causeEventKey)
            }
        }
        for (id, grant) in batch.entitlementWrites.sorted(by: { $0.key < $1.key }) {
            guard let grant else {
                deletionEnv.append(id.customer.environment)
                deletionCustomer.append(id.customer.customerId)
                deletionKey.append(id.entitlementKey)
                deletionSource.append(id.sourceId)
                continue
            }
            entitlementEnv.append(id.customer.environment)
            entitlementCustomer.append(id.customer.customerId)
            entitlementKey.append(id.entitlementKey)
            entitlementSource.append(id.sourceId)
            entitlementSourceKind.append(grant.source.rawValue)
            entitlementProduct.append(grant.productId)
            entitlementActive.append(grant.active)
            entitlementFrom.append(grant.activeFrom)
            entitlementUntil.append(grant.activeUntil)
            entitlementReason.append(grant.reason)
        }
        for consumable in batch.dirtyConsumables.sorted().compactMap({ batch.consumables[$0] }) {
            consumableEnv.append(consumable.key.environment)
            consumableTransaction.append(consumable.transactionId)
            consumableCustomer.append(consumable.customer?.customerId)
            consumableProduct.append(consumable.productId)
            consumableKeys.append(try StreamingJSONEncoder.encodeToString(consumable.entitlementKeys))
            consumableQuantity.append(Int32(clamping: consumable.quantity))
            consumablePurchasedAt.append(consumable.purchasedAt)
            consumableRevokedAt.append(consumable.revokedAt)
            consumableRevocationReason.append(consumable.revocationReason.map { Int16(clamping: $0) })
            consumableAsOf.append(consumable.version.asOf)
            consumableEventKey.append(consumable.version.eventKey)
        }
        for n in batch.notifications {
            notificationEnv.append(n.environment)
            notificationKey.append(n.eventKey)
            notificationUUID.append(n.notificationUUID)
            notificationKind.append(n.kind)
            notificationSource.append(n.source)
            notificationType.append(n.type)
            notificationSubtype.append(n.subtype)
            notificationPurchase.append(n.originalTransactionId)
            notificationTransaction.append(n.transactionId)
            notificationSignedDate.append(n.signedDate)
            notificationVerifiedAt.append(n.verifiedAt)
            notificationIngestedAt.append(n.ingestedAt)
            notificationOutcome.append(n.outcome)
            notificationNote.append(n.note)
            notificationTraceId.append(n.traceId)
        }
        for r in batch.consumptionRequests {
            requestEnv.append(r.environment)
            requestUUID.append(r.notificationUUID)
            requestBundle.append(r.bundleId)
            requestTransaction.append(r.transactionId)
            requestPurchase.append(r.originalTransactionId)
            requestReason.append(r.reason)
            requestSignedDate.append(r.signedDate)
            requestDeadline.append(r.deadline)
        }
        var place: [CustomerKey: Int32] = [:]
        for change in batch.changes {
            let (head, tail) = try Self.eventAroundSeq(ChangeEvent(change, seq: Self.seqMark))
            changeEnv.append(change.customer.environment)
            changeCustomer.append(change.customer.customerId)
            place[change.customer, default: 0] += 1
            changeIndex.append(place[change.customer]!)
            changeEventHead.append(head)
            changeEventTail.append(tail)
            changeTrace.append(batch.traces[change.cause.eventKey])
            changeKind.append(change.kind.rawValue)
            changeKey.append(change.entitlementKey)
            changeSource.append(change.sourceId)
            changeProduct.append(change.productId)
            changeActive.append(change.active)
            changeUntil.append(change.activeUntil)
            changeReason.append(change.reason)
            changeQuantity.append(change.quantity.map { Int32(clamping: $0) })
            changeCauseKey.append(change.cause.eventKey)
            changeCauseType.append(change.cause.type)
            changeCauseSubtype.append(change.cause.subtype)
            changeCauseLookup.append(change.cause.lookup)
            changeCauseAsOf.append(change.cause.asOf)
            changeCauseSignedDate.append(change.cause.signedDate)
        }
    }

    /// The `seq` a change event is encoded with before grant_write numbers it: no real sequence
    /// number is negative, and no other value of the event can contain it.
    static let seqMark: Int64 = .min

    /// The event's bytes (the project's encoder) before and after its `seq` value: grant_write puts
    /// the number it allocates between them. ChangeEvent always encodes its `seq` (GrantWriteContractTests
    /// holds the published bytes equal to the encoder's), so a missing mark is a programming error.
    static func eventAroundSeq(_ event: ChangeEvent) throws -> (head: String, tail: String) {
        let text = try StreamingJSONEncoder.encodeToString(event)
        guard let range = text.range(of: "\"seq\":\(seqMark)") else { preconditionFailure("a change event encoded without its seq: \(text)") }
        return (String(text[..<range.lowerBound]) + "\"seq\":", String(text[range.upperBound...]))
    }
}
