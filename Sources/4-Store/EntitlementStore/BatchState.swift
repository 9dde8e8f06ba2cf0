import AppStore
import Foundation
import GrantDecision
import PipelineRecords

/// The state of one batch's purchases while its events are decided one after another: loaded
/// once, updated in memory by every decision, and written back once, with what changed.
struct BatchState {
    var applied: Set<String> = []
    var purchases: [PurchaseKey: PurchaseState] = [:]
    /// The purchases as loaded: the ownership claims written are only those that differ from these.
    var storedPurchases: [PurchaseKey: PurchaseState] = [:]
    /// The `signedDate` (ms, as written in the stored payload; nil when it has none) of each stored
    /// transaction the batch carries, by ``transactionKey(_:_:)``: a copy that is not newer is not sent.
    var storedTransactions: [String: Double?] = [:]
    var entitlements: [PurchaseKey: [EntitlementGrant]] = [:]
    var consumables: [PurchaseKey: ConsumableGrant] = [:]

    // What to write.
    var dirtyPurchases: Set<PurchaseKey> = []
    var entitlementWrites: [EntitlementGrant.ID: EntitlementGrant?] = [:]
    var dirtyConsumables: Set<PurchaseKey> = []
    var transactions: [String: StoreRows.Transaction] = [:]
    var customers: [CustomerKey: String?] = [:]
    var notifications: [StoreRows.Notification] = []
    var consumptionRequests: [StoreRows.ConsumptionRequest] = []
    var massExtensionReports: [StoreRows.MassExtensionReport] = []
    /// The batch's `RESCIND_CONSENT`s, and waiting ones it attributed (``EntitlementStore/attributeConsentRescinds``).
    var consentRescinds: [StoreRows.ConsentRescind] = []
    /// The owner of a purchase (or consumable) of each app transaction the batch's decisions
    /// touched: a `RESCIND_CONSENT` still waiting for one is now that owner's.
    var owners: [AppTransactionKey: CustomerKey] = [:]
    /// The committed `RESCIND_CONSENT`s still waiting for a customer, of the batch's app
    /// transactions (`grant_load`, migration 0018).
    var waitingRescinds: [AppTransactionKey: [StoreRows.ConsentRescind]] = [:]
    /// The customers whose access a rescinded consent suspends (``GrantPolicy/RescindedConsentPolicy/suspend`` only).
    var suspended: Set<CustomerKey> = []
    /// The batch's new `EXTERNAL_PURCHASE_TOKEN`s, to record and publish (migration 0019).
    var externalPurchaseTokens: [StoreRows.ExternalPurchaseTokenRow] = []

    /// An app transaction (the customer's download of the app) of one environment.
    struct AppTransactionKey: Hashable, Comparable {
        var environment: String
        var appTransactionId: String

        static func < (a: Self, b: Self) -> Bool { (a.environment, a.appTransactionId) < (b.environment, b.appTransactionId) }
    }
    var changes: [EntitlementChange] = []
    /// The trace context of each event that was traced, by event key: its changes' outbox rows keep it.
    var traces: [String: String] = [:]

    func snapshot(for event: GrantEvent) -> GrantSnapshot {
        let seen = applied.contains(Self.appliedKey(event.environment, event.eventKey))
        guard let key = event.purchaseKey else { return GrantSnapshot(alreadyApplied: seen) }
        return GrantSnapshot(
            purchase: purchases[key], entitlements: entitlements[key] ?? [], consumable: consumables[key], alreadyApplied: seen,
            suspendedCustomers: suspendedCustomers(of: event.environment))
    }

    /// Event keys are unique per environment.
    static func appliedKey(_ environment: String, _ eventKey: String) -> String {
        "\(environment)\u{0}\(eventKey)"
    }

    /// Transaction IDs are unique per environment.
    static func transactionKey(_ environment: String, _ transactionId: String) -> String {
        "\(environment)\u{0}\(transactionId)"
    }

    /// A date's milliseconds as the batch's JSON writes them (whole when within a microsecond of a
    /// whole millisecond), so it compares exactly with a stored payload's `signedDate`.
    static func encodedMilliseconds(_ date: Date) -> Double {
        let milliseconds = date.timeIntervalSince1970 * 1000
        let whole = milliseconds.rounded()
        return abs(milliseconds - whole) < 0.001 ? whole : milliseconds
    }

    /// Folds one decision into the batch.
    mutating func record(_ decision: GrantDecision, policy: GrantPolicy) {
        let event = decision.event
        guard decision.outcome != .duplicate else { return }
        applied.insert(Self.appliedKey(event.environment, event.eventKey))
        if let trace = event.traceContext { traces[event.eventKey] = trace }
        if let key = event.purchaseKey {
            if let purchase = decision.purchase, purchases[key] != purchase {
                purchases[key] = purchase
                dirtyPurchases.insert(key)
                let owner = purchase.owner(policy: policy.transferPolicy)
                if let owner { noteOwner(CustomerKey(environment: key.environment, customerId: owner), of: event) }
                for claim in purchase.claims {
                    let customer = CustomerKey(environment: key.environment, customerId: claim.customerId)
                    noteCustomer(customer, externalUserId: claim.customerId == owner ? event.linkedUser(for: claim.customerId) : nil)
                }
            }
            write(key, upserts: decision.entitlements, deletions: decision.deletions)
            if let consumable = decision.consumable, consumables[key] != consumable {
                if let customer = consumable.customer { noteOwner(customer, of: event) }
                consumables[key] = consumable
                dirtyConsumables.insert(key)
                if let customer = consumable.customer { noteCustomer(customer, externalUserId: event.linkedUser(for: customer.customerId)) }
            }
        }
        for t in event.transactions {
            guard let tid = t.transactionId, t.originalTransactionId != nil else { continue }
            let id = Self.transactionKey(event.environment, tid)
            if let existing = transactions[id], (existing.transaction.signedDate ?? .distantPast) >= (t.signedDate ?? .distantPast) { continue }
            if case .some(.some(let stored)) = storedTransactions[id], (t.signedDate.map(Self.encodedMilliseconds) ?? -.infinity) <= stored {
                continue  // the store holds this copy or a newer one (its upsert would change nothing)
            }
            let raw = event.kind == .transaction && tid == event.transaction?.transactionId ? event.signedTransaction : nil
            transactions[id] = StoreRows.Transaction(environment: event.environment, transaction: t, rawJWS: raw)
        }
        notifications.append(
            StoreRows.Notification(
                environment: event.environment, eventKey: event.eventKey, notificationUUID: event.notificationUUID,
                kind: event.kind.rawValue, source: event.source, type: event.typeName, subtype: event.subtype?.rawValue,
                originalTransactionId: event.purchaseKey?.purchaseId, transactionId: event.transaction?.transactionId,
                signedDate: event.signedDate, verifiedAt: event.verifiedAt, ingestedAt: event.ingestedAt, outcome: decision.outcome.rawValue,
                note: decision.note, traceId: event.traceID))
        if let request = event.consumptionRequest, let uuid = event.notificationUUID {
            consumptionRequests.append(
                StoreRows.ConsumptionRequest(
                    environment: event.environment, notificationUUID: uuid, bundleId: request.bundleId, transactionId: request.transactionId,
                    originalTransactionId: request.originalTransactionId, reason: request.reason, signedDate: event.signedDate,
                    deadline: (event.signedDate ?? event.verifiedAt).addingTimeInterval(ConsumptionRequestRecord.answerWindow)))
        }
        if let report = event.massExtension, let uuid = event.notificationUUID {
            massExtensionReports.append(
                StoreRows.MassExtensionReport(
                    environment: event.environment, notificationUUID: uuid, report: report.report.rawValue, bundleId: report.bundleId,
                    productId: report.productId, requestIdentifier: report.requestIdentifier, succeededCount: report.succeededCount,
                    failedCount: report.failedCount, originalTransactionId: report.originalTransactionId,
                    reportedAt: event.signedDate ?? event.verifiedAt))
        }
        if event.notificationType == .rescindConsent, let appTransactionId = event.appTransactionId {
            consentRescinds.append(
                StoreRows.ConsentRescind(
                    environment: event.environment, appTransactionId: appTransactionId, eventKey: event.eventKey,
                    notificationUUID: event.notificationUUID, subtype: event.subtype?.rawValue, lookup: event.lookup.rawValue,
                    asOf: event.version.asOf, signedDate: event.signedDate, customerId: event.appTransactionCustomer))
        }
        noteExternalPurchaseToken(of: event)
        add(decision.changes)
    }

    /// Applies a purchase's new and deleted entitlement rows to the batch and its writes.
    mutating func write(_ key: PurchaseKey, upserts: [EntitlementGrant], deletions: [EntitlementGrant.ID]) {
        var rows = Dictionary((entitlements[key] ?? []).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        for id in deletions {
            rows[id] = nil
            entitlementWrites[id] = .some(nil)
        }
        for row in upserts {
            rows[row.id] = row
            entitlementWrites[row.id] = .some(row)
        }
        entitlements[key] = rows.values.sorted { $0.id < $1.id }
    }

    /// The suspended customers of `environment` (almost always none).
    func suspendedCustomers(of environment: String) -> Set<UUID> {
        suspended.isEmpty ? [] : Set(suspended.lazy.filter { $0.environment == environment }.map(\.customerId))
    }

    /// Changes to number and publish with the batch.
    mutating func add(_ new: [EntitlementChange]) {
        for change in new { noteCustomer(change.customer, externalUserId: nil) }
        changes += new
    }

    private mutating func noteOwner(_ owner: CustomerKey, of event: GrantEvent) {
        guard let appTransactionId = event.transaction?.appTransactionId else { return }
        let key = AppTransactionKey(environment: owner.environment, appTransactionId: appTransactionId)
        if owners[key] == nil { owners[key] = owner }
    }

    /// The first external user ID the batch names for a customer is the one offered to the store
    /// (which keeps one already recorded), so a batch cannot relink a customer either.
    private mutating func noteCustomer(_ customer: CustomerKey, externalUserId: String?) {
        if let externalUserId, customers[customer] ?? nil == nil {
            customers[customer] = .some(externalUserId)
        } else if customers[customer] == nil {
            customers[customer] = .some(nil)
        }
    }
}
