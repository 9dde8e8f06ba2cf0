import Foundation
import JSONCoding

// The hot models read straight from the payload bytes (``DirectJSONDecodable``): the notification,
// its `data`, the transaction and the renewal info, which the verifier decodes for every
// notification. ``AppStoreJSON/decode(_:from:)`` tries these first and falls back to the general
// path for anything they do not read exactly as it would.

extension JSONParser {
    /// One of Apple's string enumerations; an unknown value is kept verbatim, as its `Decodable` does.
    public mutating func readEnum<T: AppStoreStringEnumeration>(_ type: T.Type) throws(Miss) -> T? {
        try readString().map(T.init(rawValue:))
    }

    /// One of Apple's integer enumerations; an unknown value is kept verbatim, as its `Decodable` does.
    public mutating func readEnum<T: AppStoreIntegerEnumeration>(_ type: T.Type) throws(Miss) -> T? {
        try readInt64().map { T(rawValue: Int($0)) }
    }
}

extension ResponseBodyV2DecodedPayload: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case notificationType, subtype, notificationUUID, data, summary, externalPurchaseToken, appData, version,
            signedDate
    }
    private static let names = Field.names()

    public static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
        var value = Self()
        try parser.readMembers(depth: depth, names: names) { (parser, field) throws(DirectDecodingMiss) in
            switch Field(rawValue: field)! {
            case .notificationType: value.notificationType = try parser.readEnum(NotificationType.self)
            case .subtype: value.subtype = try parser.readEnum(NotificationSubtype.self)
            case .notificationUUID: value.notificationUUID = try parser.readString()
            case .data: value.data = try parser.readModel(NotificationData.self, depth: depth)
            case .summary: value.summary = try parser.readDecodable(Summary.self, depth: depth)
            case .externalPurchaseToken:
                value.externalPurchaseToken = try parser.readDecodable(ExternalPurchaseToken.self, depth: depth)
            case .appData: value.appData = try parser.readDecodable(AppData.self, depth: depth)
            case .version: value.version = try parser.readString()
            case .signedDate: value.signedDate = try parser.readDate()
            }
        }
        return value
    }
}

extension NotificationData: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case environment, appAppleId, bundleId, bundleVersion, signedTransactionInfo, signedRenewalInfo, status,
            consumptionRequestReason
    }
    private static let names = Field.names()

    public static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
        var value = Self()
        try parser.readMembers(depth: depth, names: names) { (parser, field) throws(DirectDecodingMiss) in
            switch Field(rawValue: field)! {
            case .environment: value.environment = try parser.readEnum(AppStoreEnvironment.self)
            case .appAppleId: value.appAppleId = try parser.readInt64()
            case .bundleId: value.bundleId = try parser.readString()
            case .bundleVersion: value.bundleVersion = try parser.readString()
            case .signedTransactionInfo: value.signedTransactionInfo = try parser.readString()
            case .signedRenewalInfo: value.signedRenewalInfo = try parser.readString()
            case .status: value.status = try parser.readEnum(SubscriptionStatus.self)
            case .consumptionRequestReason:
                value.consumptionRequestReason = try parser.readEnum(ConsumptionRequestReason.self)
            }
        }
        return value
    }
}

extension JWSTransactionDecodedPayload: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case originalTransactionId, transactionId, webOrderLineItemId, bundleId, productId, subscriptionGroupIdentifier,
            purchaseDate, originalPurchaseDate, expiresDate, quantity, type, appAccountToken, inAppOwnershipType,
            signedDate, revocationReason, revocationDate, isUpgraded, offerType, offerIdentifier, environment,
            storefront, storefrontId, transactionReason, currency, price, offerDiscountType, appTransactionId,
            offerPeriod, revocationType, revocationPercentage, advancedCommerceInfo, billingPlanType, commitmentInfo
    }
    private static let names = Field.names()

    public static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
        var value = Self()
        try parser.readMembers(depth: depth, names: names) { (parser, field) throws(DirectDecodingMiss) in
            switch Field(rawValue: field)! {
            case .originalTransactionId: value.originalTransactionId = try parser.readString()
            case .transactionId: value.transactionId = try parser.readString()
            case .webOrderLineItemId: value.webOrderLineItemId = try parser.readString()
            case .bundleId: value.bundleId = try parser.readString()
            case .productId: value.productId = try parser.readString()
            case .subscriptionGroupIdentifier: value.subscriptionGroupIdentifier = try parser.readString()
            case .purchaseDate: value.purchaseDate = try parser.readDate()
            case .originalPurchaseDate: value.originalPurchaseDate = try parser.readDate()
            case .expiresDate: value.expiresDate = try parser.readDate()
            case .quantity: value.quantity = try parser.readInt32()
            case .type: value.type = try parser.readEnum(ProductType.self)
            case .appAccountToken: value.appAccountToken = try parser.readUUID()
            case .inAppOwnershipType: value.inAppOwnershipType = try parser.readEnum(InAppOwnershipType.self)
            case .signedDate: value.signedDate = try parser.readDate()
            case .revocationReason: value.revocationReason = try parser.readEnum(RevocationReason.self)
            case .revocationDate: value.revocationDate = try parser.readDate()
            case .isUpgraded: value.isUpgraded = try parser.readBool()
            case .offerType: value.offerType = try parser.readEnum(OfferType.self)
            case .offerIdentifier: value.offerIdentifier = try parser.readString()
            case .environment: value.environment = try parser.readEnum(AppStoreEnvironment.self)
            case .storefront: value.storefront = try parser.readString()
            case .storefrontId: value.storefrontId = try parser.readString()
            case .transactionReason: value.transactionReason = try parser.readEnum(TransactionReason.self)
            case .currency: value.currency = try parser.readString()
            case .price: value.price = try parser.readInt64()
            case .offerDiscountType: value.offerDiscountType = try parser.readEnum(OfferDiscountType.self)
            case .appTransactionId: value.appTransactionId = try parser.readString()
            case .offerPeriod: value.offerPeriod = try parser.readString()
            case .revocationType: value.revocationType = try parser.readEnum(RevocationType.self)
            case .revocationPercentage: value.revocationPercentage = try parser.readInt32()
            case .advancedCommerceInfo: value.advancedCommerceInfo = try parser.readDecodable(JSONValue.self, depth: depth)
            case .billingPlanType: value.billingPlanType = try parser.readEnum(BillingPlanType.self)
            case .commitmentInfo:
                value.commitmentInfo = try parser.readDecodable(TransactionCommitmentInfo.self, depth: depth)
            }
        }
        return value
    }
}

extension JWSRenewalInfoDecodedPayload: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case expirationIntent, originalTransactionId, autoRenewProductId, productId, autoRenewStatus,
            isInBillingRetryPeriod, priceIncreaseStatus, gracePeriodExpiresDate, offerType, offerIdentifier, signedDate,
            environment, recentSubscriptionStartDate, renewalDate, currency, renewalPrice, offerDiscountType,
            eligibleWinBackOfferIds, appAccountToken, appTransactionId, offerPeriod, advancedCommerceInfo,
            commitmentInfo, renewalBillingPlanType
    }
    private static let names = Field.names()

    public static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
        var value = Self()
        try parser.readMembers(depth: depth, names: names) { (parser, field) throws(DirectDecodingMiss) in
            switch Field(rawValue: field)! {
            case .expirationIntent: value.expirationIntent = try parser.readEnum(ExpirationIntent.self)
            case .originalTransactionId: value.originalTransactionId = try parser.readString()
            case .autoRenewProductId: value.autoRenewProductId = try parser.readString()
            case .productId: value.productId = try parser.readString()
            case .autoRenewStatus: value.autoRenewStatus = try parser.readEnum(AutoRenewStatus.self)
            case .isInBillingRetryPeriod: value.isInBillingRetryPeriod = try parser.readBool()
            case .priceIncreaseStatus: value.priceIncreaseStatus = try parser.readEnum(PriceIncreaseStatus.self)
            case .gracePeriodExpiresDate: value.gracePeriodExpiresDate = try parser.readDate()
            case .offerType: value.offerType = try parser.readEnum(OfferType.self)
            case .offerIdentifier: value.offerIdentifier = try parser.readString()
            case .signedDate: value.signedDate = try parser.readDate()
            case .environment: value.environment = try parser.readEnum(AppStoreEnvironment.self)
            case .recentSubscriptionStartDate: value.recentSubscriptionStartDate = try parser.readDate()
            case .renewalDate: value.renewalDate = try parser.readDate()
            case .currency: value.currency = try parser.readString()
            case .renewalPrice: value.renewalPrice = try parser.readInt64()
            case .offerDiscountType: value.offerDiscountType = try parser.readEnum(OfferDiscountType.self)
            case .eligibleWinBackOfferIds: value.eligibleWinBackOfferIds = try parser.readStrings(depth: depth)
            case .appAccountToken: value.appAccountToken = try parser.readUUID()
            case .appTransactionId: value.appTransactionId = try parser.readString()
            case .offerPeriod: value.offerPeriod = try parser.readString()
            case .advancedCommerceInfo: value.advancedCommerceInfo = try parser.readDecodable(JSONValue.self, depth: depth)
            case .commitmentInfo:
                value.commitmentInfo = try parser.readDecodable(RenewalCommitmentInfo.self, depth: depth)
            case .renewalBillingPlanType: value.renewalBillingPlanType = try parser.readEnum(BillingPlanType.self)
            }
        }
        return value
    }
}
