import AppStoreServerAPI
import EntitlementStore

/// What an app that opted in tells Apple when a customer asks for a refund: built only from our
/// own records, so Apple hears "delivered" exactly when grant delivered the purchase.
///
/// Apple wants an answer only with the customer's consent; opting an app in
/// (`CONSUMPTION_APPS`) states that the app obtains that consent (for example in its terms).
public struct ConsumptionPolicy: Hashable, Sendable {
    /// Bundle IDs that opted in.
    public var apps: Set<String>
    /// Whether the apps provide a free sample or trial of their content.
    public var sampleContentProvided: Bool
    /// The refund preference for a delivered purchase (`DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`), or
    /// none to leave it to Apple.
    public var deliveredRefundPreference: String?
    /// The refund preference when our records show no delivery.
    public var undeliveredRefundPreference: String?

    public init(
        apps: Set<String>, sampleContentProvided: Bool = false, deliveredRefundPreference: String? = nil,
        undeliveredRefundPreference: String? = "GRANT_FULL"
    ) {
        self.apps = apps
        self.sampleContentProvided = sampleContentProvided
        self.deliveredRefundPreference = deliveredRefundPreference
        self.undeliveredRefundPreference = undeliveredRefundPreference
    }

    /// What to do with one request.
    public enum Decision: Hashable, Sendable {
        case send(transactionId: String, bundleId: String, ConsumptionRequest)
        case skip(String)
    }

    public func decide(_ request: ConsumptionRequestRecord) -> Decision {
        guard let bundleId = request.bundleId, apps.contains(bundleId) else {
            return .skip("app \(request.bundleId ?? "(unknown)") has not opted in to consumption answers (CONSUMPTION_APPS)")
        }
        guard let transactionId = request.transactionId, !transactionId.isEmpty else {
            return .skip("the request names no transaction")
        }
        let delivered = request.delivered
        // Apple refuses a percentage for auto-renewable subscriptions; otherwise we only know it
        // for certain when nothing was delivered (0). Usage inside the app is not in our records.
        let percentage: Int32? = request.productType == "Auto-Renewable Subscription" || delivered ? nil : 0
        return .send(
            transactionId: transactionId, bundleId: bundleId,
            ConsumptionRequest(
                customerConsented: true, sampleContentProvided: sampleContentProvided,
                deliveryStatus: delivered ? "DELIVERED" : "UNDELIVERED_OTHER", consumptionPercentage: percentage,
                refundPreference: delivered ? deliveredRefundPreference : undeliveredRefundPreference))
    }
}
