import AppStore
import Foundation

/// Get Transaction Info's answer.
public struct TransactionInfoResponse: Codable, Hashable, Sendable {
    public var signedTransactionInfo: String?
    public init(signedTransactionInfo: String?) { self.signedTransactionInfo = signedTransactionInfo }
}

/// Get App Transaction Info's answer: the customer's app transaction, signed.
public struct AppTransactionInfoResponse: Codable, Hashable, Sendable {
    public var signedAppTransactionInfo: String?
    public init(signedAppTransactionInfo: String?) { self.signedAppTransactionInfo = signedAppTransactionInfo }
}

/// Get Refund History v2's answer: ≤ 20 refunded transactions per page, by `revocationDate`.
public struct RefundHistoryResponse: Codable, Hashable, Sendable {
    public var signedTransactions: [String]?
    public var revision: String?
    public var hasMore: Bool?
    public init(signedTransactions: [String]?, revision: String?, hasMore: Bool?) {
        self.signedTransactions = signedTransactions
        self.revision = revision
        self.hasMore = hasMore
    }
}

/// Look Up Order ID's answer: `status` 0 = valid order, 1 = invalid.
public struct OrderLookupResponse: Codable, Hashable, Sendable {
    public var status: Int32?
    public var signedTransactions: [String]?
    public init(status: Int32?, signedTransactions: [String]?) {
        self.status = status
        self.signedTransactions = signedTransactions
    }
}

/// Request a Test Notification's answer.
public struct SendTestNotificationResponse: Codable, Hashable, Sendable {
    public var testNotificationToken: String?
    public init(testNotificationToken: String?) { self.testNotificationToken = testNotificationToken }
}

/// One delivery attempt of a notification (`SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, … kept as Apple's string).
public struct SendAttemptItem: Codable, Hashable, Sendable {
    public var attemptDate: Date?
    public var sendAttemptResult: String?
    public init(attemptDate: Date?, sendAttemptResult: String?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }
}

/// Get Test Notification Status's answer.
public struct CheckTestNotificationResponse: Codable, Hashable, Sendable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttemptItem]?
    public init(signedPayload: String?, sendAttempts: [SendAttemptItem]?) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// Get Notification History's request body (dates in milliseconds).
public struct NotificationHistoryRequest: Codable, Hashable, Sendable {
    public var startDate: Date?
    public var endDate: Date?
    public var notificationType: NotificationType?
    public var notificationSubtype: NotificationSubtype?
    public var transactionId: String?
    public var onlyFailures: Bool?
    public init(
        startDate: Date?, endDate: Date?, notificationType: NotificationType? = nil, notificationSubtype: NotificationSubtype? = nil,
        transactionId: String? = nil, onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}

/// Get Notification History's answer: ≤ 20 items, continued with `paginationToken` and the same body.
public struct NotificationHistoryResponse: Codable, Hashable, Sendable {
    public var paginationToken: String?
    public var hasMore: Bool?
    public var notificationHistory: [NotificationHistoryResponseItem]?
    public init(paginationToken: String?, hasMore: Bool?, notificationHistory: [NotificationHistoryResponseItem]?) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }
}

/// One notification as first sent, with its delivery attempts.
public struct NotificationHistoryResponseItem: Codable, Hashable, Sendable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttemptItem]?
    public init(signedPayload: String?, sendAttempts: [SendAttemptItem]?) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// Send Consumption Information's body (v2, API 1.19+).
public struct ConsumptionRequest: Codable, Hashable, Sendable {
    /// Delivery status values Apple accepts.
    public static let deliveryStatuses: Set<String> = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]
    /// Refund preference values Apple accepts.
    public static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    public var customerConsented: Bool?
    public var sampleContentProvided: Bool?
    public var deliveryStatus: String?
    /// Milliunits (100000 = 100 %); not for auto-renewable subscriptions; 0 when undelivered.
    public var consumptionPercentage: Int32?
    public var refundPreference: String?
    public init(
        customerConsented: Bool?, sampleContentProvided: Bool?, deliveryStatus: String?, consumptionPercentage: Int32? = nil,
        refundPreference: String? = nil
    ) {
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}

/// The body of Set App Account Token.
public struct UpdateAppAccountTokenRequest: Codable, Hashable, Sendable {
    /// The customer's UUID; Apple answers 400 `4000183` for anything else.
    public var appAccountToken: UUID?
    public init(appAccountToken: UUID?) {
        self.appAccountToken = appAccountToken
    }
}

/// Extend a Subscription Renewal Date's body.
public struct ExtendRenewalDateRequest: Codable, Hashable, Sendable {
    /// 1…90.
    public var extendByDays: Int32?
    /// 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var extendReasonCode: Int32?
    /// Your unique ID for the request (≤ 128 characters).
    public var requestIdentifier: String?
    public init(extendByDays: Int32?, extendReasonCode: Int32?, requestIdentifier: String?) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }
}

/// Extend a Subscription Renewal Date's answer.
public struct ExtendRenewalDateResponse: Codable, Hashable, Sendable {
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var success: Bool?
    public var effectiveDate: Date?
    public init(originalTransactionId: String?, webOrderLineItemId: String?, success: Bool?, effectiveDate: Date?) {
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.success = success
        self.effectiveDate = effectiveDate
    }
}

/// Extend Subscription Renewal Dates for All Active Subscribers' body: every active subscriber of
/// `productId` (in the given storefronts, or all) is extended, asynchronously.
public struct MassExtendRenewalDateRequest: Codable, Hashable, Sendable {
    /// 1…90.
    public var extendByDays: Int32?
    /// 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var extendReasonCode: Int32?
    /// Your unique ID for the request (a UUID); the status endpoint and the `RENEWAL_EXTENSION/SUMMARY` name it.
    public var requestIdentifier: String?
    /// Storefronts (ISO 3166-1 alpha-3) to extend in; `nil`: all.
    public var storefrontCountryCodes: [String]?
    /// The auto-renewable subscription product.
    public var productId: String?
    public init(
        extendByDays: Int32?, extendReasonCode: Int32?, requestIdentifier: String?, storefrontCountryCodes: [String]? = nil,
        productId: String?
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.productId = productId
    }
}

/// Extend Subscription Renewal Dates for All Active Subscribers' answer.
public struct MassExtendRenewalDateResponse: Codable, Hashable, Sendable {
    public var requestIdentifier: String?
    public init(requestIdentifier: String?) {
        self.requestIdentifier = requestIdentifier
    }
}

/// Get Status of Subscription Renewal Date Extensions' answer.
public struct MassExtendRenewalDateStatusResponse: Codable, Hashable, Sendable {
    public var requestIdentifier: String?
    /// Whether Apple finished the request.
    public var complete: Bool?
    /// When it finished.
    public var completeDate: Date?
    /// Subscriptions extended so far.
    public var succeededCount: Int64?
    /// Subscriptions that could not be extended so far.
    public var failedCount: Int64?
    public init(requestIdentifier: String?, complete: Bool?, completeDate: Date?, succeededCount: Int64?, failedCount: Int64?) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}
