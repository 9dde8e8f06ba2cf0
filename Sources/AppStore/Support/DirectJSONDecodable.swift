import Foundation

/// A model ``AppStoreJSON/decode(_:from:)`` reads straight from the payload bytes, without building a
/// ``JSONTree`` or going through `Codable`: the notification, its `data`, the transaction and the
/// renewal info, which the verifier decodes for every notification.
///
/// The direct reader is a shortcut, never a second opinion. It uses ``JSONParser``'s grammar for every
/// byte, keeps the first of repeated keys, skips (and validates) unknown members, and gives up with
/// ``DirectDecodingMiss`` on anything it does not decode exactly as ``JSONTreeDecoder`` would (a wrong
/// type, an inexact number, an escaped key); ``AppStoreJSON`` then decodes the document the general
/// way, which yields the value or the precise error. So both paths accept the same documents with
/// the same results; tests compare them over generated and real payloads.
protocol DirectJSONDecodable: Decodable {
    /// Reads one object whose `{` is next, at nesting `depth` (1 for a top-level object).
    static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self
}

extension DirectJSONDecodable {
    /// The model, or `nil` when the document needs the general path.
    static func decodeDirectly(from bytes: [UInt8]) -> Self? {
        bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer)
            do {
                let value = try read(from: &parser, depth: 1)
                try parser.finish()
                return value
            } catch {
                return nil
            }
        }
    }
}

extension JSONParser {
    /// A nested model (or `null`) as the value of a member of an object at `depth`.
    mutating func readModel<T: DirectJSONDecodable>(_ type: T.Type, depth: Int) throws(Miss) -> T? {
        if try readNull() { return nil }
        return try T.read(from: &self, depth: depth + 1)
    }

    /// Reads the members of the object whose `{` is next: `member` is called with the field number of
    /// each first occurrence of a known key and must read its value; repeated and unknown keys are
    /// skipped (and so validated), as ``JSONTreeDecoder`` ignores them.
    mutating func readMembers(
        depth: Int,
        names: JSONFieldNames,
        _ member: (inout JSONParser, Int) throws(Miss) -> Void
    ) throws(Miss) {
        if try openObject(depth: depth) { return }
        var seen: UInt64 = 0
        repeat {
            let key = try memberKey()
            if let field = names.field(key), seen & (1 << field) == 0 {
                seen |= 1 << field
                try member(&self, field)
            } else {
                try skipValue(depth: depth)
            }
        } while try nextMember()
    }
}

/// The field names of a model as a `CaseIterable` enum in declaration order (the `Codable` keys).
protocol DirectFields: CaseIterable, RawRepresentable where RawValue == Int {}

extension DirectFields {
    /// The names, numbered by raw value.
    static func names() -> JSONFieldNames {
        precondition(allCases.count <= 64, "the seen-set is 64 bits")
        return JSONFieldNames(allCases.map { "\($0)" })
    }
}

extension ResponseBodyV2DecodedPayload: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case notificationType, subtype, notificationUUID, data, summary, externalPurchaseToken, appData, version,
            signedDate
    }
    private static let names = Field.names()

    static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
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

    static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
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

    static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
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

    static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
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
