import AppStore
import AppStoreServerAPI
import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// Extend Subscription Renewal Dates for All Active Subscribers and Get Status of Subscription
/// Renewal Date Extensions, as Apple does them: the request is checked and answered at once, and
/// the subscriptions are extended afterwards, in the background.
///
/// Which subscriptions a mass extension is about: every auto-renewable subscription of the product
/// (in the request's storefronts, if it names any) whose customer Apple still counts as a subscriber,
/// its status active, in billing retry or in its grace period, and that is not family-shared (Apple
/// extends those with the purchaser's). Of these, one is extended when it is active and was extended
/// fewer than twice in the last 365 days (Apple's limit per customer); any other fails. Each extended
/// one gets `RENEWAL_EXTENDED`, each failed one `RENEWAL_EXTENSION/FAILURE` (its transaction and
/// renewal info as they are), and the request ends with one `RENEWAL_EXTENSION/SUMMARY`.
extension SimulatorAPIRoutes {
    func massExtend(_ request: Request, _ context: BasicRequestContext, _ bundleId: String) async throws -> Response {
        let bytes = try await request.body.collect(upTo: Self.maximumBody)
        guard let body = try? AppStoreJSON.decoder.decode(MassExtendRenewalDateRequest.self, from: Data(bytes.readableBytesView)) else {
            throw SimulatorError.badRequest(4_000_000, "Invalid request.")
        }
        let (days, requestID) = try Self.extensionTerms(
            days: body.extendByDays, reason: body.extendReasonCode, requestIdentifier: body.requestIdentifier)
        if let storefronts = body.storefrontCountryCodes {
            guard !storefronts.isEmpty else { throw SimulatorError.badRequest(4_000_027, "Invalid empty storefront country code list.") }
            guard storefronts.allSatisfy({ $0.count == 3 && $0.allSatisfy { $0.isASCII && $0.isUppercase } }) else {
                throw SimulatorError.badRequest(4_000_028, "Invalid storefront country code.")
            }
        }
        guard let productId = body.productId, !productId.isEmpty, store.subscriptionProductIds(bundleId: bundleId).contains(productId) else {
            throw SimulatorError.badRequest(4_000_023, "Invalid product id.")
        }
        let started = store.state.withLock { state -> Bool in
            guard state.massExtensions[requestID] == nil else { return false }
            state.massExtensions[requestID] = SimulatedMassExtension(
                bundleId: bundleId, productId: productId, request: body, succeeded: [], failed: [], completeDate: nil)
            return true
        }
        // A repeated request identifier is answered again; the extension runs once.
        if started {
            let routes = self
            Task { routes.runMassExtension(requestID: requestID, body: body, days: days, productId: productId, bundleId: bundleId) }
        }
        return try Self.json(MassExtendRenewalDateResponse(requestIdentifier: requestID))
    }

    func massExtensionStatus(_ context: BasicRequestContext, _ bundleId: String) throws -> Response {
        guard let productId = context.parameters.get("productId"), let requestID = context.parameters.get("requestIdentifier"),
            let found = store.state.withLock({ $0.massExtensions[requestID] }), found.bundleId == bundleId, found.productId == productId
        else { throw SimulatorError.notFound(4_040_009, "Status request not found.") }
        return try Self.json(
            MassExtendRenewalDateStatusResponse(
                requestIdentifier: requestID, complete: found.completeDate != nil, completeDate: found.completeDate,
                succeededCount: Int64(found.succeeded.count), failedCount: Int64(found.failed.count)))
    }

    /// Extends what the request is about, one subscription at a time, and ends with the summary.
    func runMassExtension(requestID: String, body: MassExtendRenewalDateRequest, days: Int32, productId: String, bundleId: String) {
        let storefronts = body.storefrontCountryCodes.map(Set.init)
        for customer in store.customerIDs(bundleId: bundleId).sorted() {
            for latest in signing.latestSubscriptionTransactions(customerID: customer, bundleId: bundleId)
            where latest.productId == productId && latest.inAppOwnershipType != .familyShared {
                if let storefronts, !storefronts.contains(latest.storefront ?? "") { continue }
                let status = signing.status(of: latest)
                guard [.active, .billingRetry, .billingGracePeriod].contains(status), let original = latest.originalTransactionId,
                    let latestID = latest.transactionId
                else { continue }
                let extended = status == .active && extend(latest, by: days)
                store.state.withLock { state in
                    if extended {
                        state.massExtensions[requestID]?.succeeded.append(original)
                    } else {
                        state.massExtensions[requestID]?.failed.append(original)
                    }
                }
                try? announce(extended ? .renewalExtended : .renewalExtension, extended ? nil : .failure, transactionId: latestID, bundleId: bundleId)
            }
        }
        let done = store.state.withLock { state -> SimulatedMassExtension? in
            state.massExtensions[requestID]?.completeDate = store.now()
            return state.massExtensions[requestID]
        }
        guard let done else { return }
        let summary = Summary(
            environment: .sandbox, appAppleId: store.appAppleIds[bundleId], bundleId: bundleId, productId: productId,
            requestIdentifier: requestID, storefrontCountryCodes: body.storefrontCountryCodes, succeededCount: Int64(done.succeeded.count),
            failedCount: Int64(done.failed.count))
        try? announce(.renewalExtension, .summary, summary: summary, bundleId: bundleId)
    }

    /// Moves the subscription's current period end by `days`, unless it was extended twice in the
    /// last 365 days; remembers the extension for Apple's limit and for the lifecycle's ground truth.
    private func extend(_ latest: JWSTransactionDecodedPayload, by days: Int32) -> Bool {
        guard let original = latest.originalTransactionId, let latestID = latest.transactionId, let expires = latest.expiresDate else {
            return false
        }
        let now = store.now()
        let allowed = store.state.withLock { state -> Bool in
            let recent = (state.extensions[original] ?? []).filter { $0 > now.addingTimeInterval(-365 * 86_400) }
            guard recent.count < 2 else { return false }
            state.extensions[original, default: []].append(now)
            return true
        }
        guard allowed else { return false }
        let newExpiry = expires.addingTimeInterval(Double(days) * 86_400)
        store.modifyTransaction(latestID) { $0.expiresDate = newExpiry }
        store.recordAppliedExtension(
            SimulatedExtension(
                originalTransactionId: original, productId: latest.productId, appAccountToken: latest.appAccountToken, previousExpiry: expires,
                newExpiry: newExpiry))
        return true
    }
}

/// A mass extension the simulator was asked for, and how far it got.
struct SimulatedMassExtension: Sendable {
    var bundleId: String
    var productId: String
    var request: MassExtendRenewalDateRequest
    /// Original transaction IDs extended, and those that could not be.
    var succeeded: [String]
    var failed: [String]
    var completeDate: Date?
}

/// One renewal-date extension the simulator applied (single or mass): a lifecycle's ground truth
/// moves the customer's entitlement that ended at `previousExpiry` to `newExpiry`.
public struct SimulatedExtension: Codable, Hashable, Sendable {
    public var originalTransactionId: String
    public var productId: String?
    public var appAccountToken: UUID?
    public var previousExpiry: Date
    public var newExpiry: Date
}
