import AppStore

/// The App Store Server API endpoints this client calls, with Apple's documented rate limits.
///
/// Apple limits each app per endpoint, in requests per second enforced hourly, in Production; Sandbox
/// limits are 10 % of these. The client's limiter keeps below them (see ``RateLimitPolicy``).
public enum AppStoreAPIEndpoint: String, CaseIterable, Hashable, Sendable {
    case transactionInfo = "GET /inApps/v1/transactions/{transactionId}"
    case transactionHistory = "GET /inApps/v2/history/{transactionId}"
    case subscriptionStatuses = "GET /inApps/v1/subscriptions/{transactionId}"
    case refundHistory = "GET /inApps/v2/refund/lookup/{transactionId}"
    case orderLookup = "GET /inApps/v1/lookup/{orderId}"
    case notificationHistory = "POST /inApps/v1/notifications/history"
    case requestTestNotification = "POST /inApps/v1/notifications/test"
    case testNotificationStatus = "GET /inApps/v1/notifications/test/{token}"
    case sendConsumption = "PUT /inApps/v2/transactions/consumption/{transactionId}"
    case extendRenewalDate = "PUT /inApps/v1/subscriptions/extend/{originalTransactionId}"
    case massExtendRenewalDate = "POST /inApps/v1/subscriptions/extend/mass"
    case massExtensionStatus = "GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}"
    case setAppAccountToken = "PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken"
    case appTransactionInfo = "GET /inApps/v1/transactions/appTransactions/{transactionId}"

    /// Apple's documented Production limit, requests per second.
    public var productionLimit: Double {
        switch self {
        case .transactionInfo, .transactionHistory, .subscriptionStatuses, .sendConsumption, .notificationHistory, .appTransactionInfo: 50
        case .extendRenewalDate, .setAppAccountToken: 20
        // Apple's table does not list Get Status of Subscription Renewal Date Extensions: limited as its
        // other lookups by identifier are.
        case .orderLookup, .refundHistory, .massExtensionStatus: 10
        case .massExtendRenewalDate: 1
        case .requestTestNotification, .testNotificationStatus: 1
        }
    }

    /// Apple's documented limit for `environment` (Sandbox: 10 % of Production).
    public func documentedLimit(in environment: AppStoreEnvironment) -> Double {
        environment == .production ? productionLimit : productionLimit / 10
    }

    /// A short name for metrics and logs.
    public var name: String {
        switch self {
        case .transactionInfo: "transaction_info"
        case .transactionHistory: "transaction_history"
        case .subscriptionStatuses: "subscription_statuses"
        case .refundHistory: "refund_history"
        case .orderLookup: "order_lookup"
        case .notificationHistory: "notification_history"
        case .requestTestNotification: "request_test_notification"
        case .testNotificationStatus: "test_notification_status"
        case .sendConsumption: "send_consumption"
        case .extendRenewalDate: "extend_renewal_date"
        case .massExtendRenewalDate: "mass_extend_renewal_date"
        case .massExtensionStatus: "mass_extension_status"
        case .setAppAccountToken: "set_app_account_token"
        case .appTransactionInfo: "app_transaction_info"
        }
    }
}

/// Apple's hosts per environment.
public enum AppStoreAPIHost {
    /// Production (current host, since 2026-05).
    public static let production = "https://api.storekit.apple.com"
    /// Sandbox.
    public static let sandbox = "https://api.storekit-sandbox.apple.com"

    /// The base URL for data from `environment`; Xcode and local-testing data have no API.
    public static func baseURL(for environment: AppStoreEnvironment) throws(AppStoreAPIError) -> String {
        switch environment {
        case .production: return production
        case .sandbox: return sandbox
        default:
            throw AppStoreAPIError(
                .invalidRequest, "the App Store Server API serves Sandbox and Production only, not \(environment.rawValue)")
        }
    }
}
