import AppStore
import Foundation
import JSONCoding

// The pipeline's own records read straight from their bytes (``DirectJSONDecodable``), as Apple's
// models inside them already were: enrich reads a verified record and grant an enriched one (with the
// purchase's whole history) for every notification, and going through `Codable` over a parsed tree
// was most of grant's work in a replay. A required member that is absent or null, or an unknown case
// of one of the records' own enumerations, makes the reader give up, and the general path then
// reports it exactly as before.

extension VerifiedRecord: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case kind, source, environment, bundleId, appAppleId, originalTransactionId, transactionId, notificationUUID,
            notification, transaction, renewalInfo, appTransaction, hints, signedPayload, signedTransaction, verifiedAt
    }
    private static let names = Field.names()

    public static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
        var kind: Kind?
        var source: String?
        var bundleId: String?
        var originalTransactionId: String?
        var transactionId: String?
        var notificationUUID: String?
        var signedPayload: String?
        var signedTransaction: String?
        var environment: AppStoreEnvironment?
        var appAppleId: Int64?
        var notification: ResponseBodyV2DecodedPayload?
        var transaction: JWSTransactionDecodedPayload?
        var renewalInfo: JWSRenewalInfoDecodedPayload?
        var appTransaction: AppTransaction?
        var hints: AppUploadHints?
        var verifiedAt: Date?
        try parser.readMembers(depth: depth, names: names) { (parser, field) throws(DirectDecodingMiss) in
            switch Field(rawValue: field)! {
            case .kind: kind = try parser.readCase(Kind.self)
            case .source: source = try parser.readString()
            case .environment: environment = try parser.readEnum(AppStoreEnvironment.self)
            case .bundleId: bundleId = try parser.readString()
            case .appAppleId: appAppleId = try parser.readInt64()
            case .originalTransactionId: originalTransactionId = try parser.readString()
            case .transactionId: transactionId = try parser.readString()
            case .notificationUUID: notificationUUID = try parser.readString()
            case .notification: notification = try parser.readModel(ResponseBodyV2DecodedPayload.self, depth: depth)
            case .transaction: transaction = try parser.readModel(JWSTransactionDecodedPayload.self, depth: depth)
            case .renewalInfo: renewalInfo = try parser.readModel(JWSRenewalInfoDecodedPayload.self, depth: depth)
            case .appTransaction: appTransaction = try parser.readDecodable(AppTransaction.self, depth: depth)
            case .hints: hints = try parser.readDecodable(AppUploadHints.self, depth: depth)
            case .signedPayload: signedPayload = try parser.readString()
            case .signedTransaction: signedTransaction = try parser.readString()
            case .verifiedAt: verifiedAt = try parser.readDate()
            }
        }
        guard let kind, let source, let environment, let bundleId, let verifiedAt else { throw DirectDecodingMiss() }
        return Self(
            kind: kind, source: source, environment: environment, bundleId: bundleId, appAppleId: appAppleId,
            originalTransactionId: originalTransactionId, transactionId: transactionId, notificationUUID: notificationUUID,
            notification: notification, transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction,
            hints: hints, signedPayload: signedPayload, signedTransaction: signedTransaction, verifiedAt: verifiedAt)
    }
}

extension EnrichedRecord: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case verified, enrichment
    }
    private static let names = Field.names()

    public static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
        var verified: VerifiedRecord?
        var enrichment: Enrichment?
        try parser.readMembers(depth: depth, names: names) { (parser, field) throws(DirectDecodingMiss) in
            switch Field(rawValue: field)! {
            case .verified: verified = try parser.readModel(VerifiedRecord.self, depth: depth)
            case .enrichment: enrichment = try parser.readModel(Enrichment.self, depth: depth)
            }
        }
        guard let verified, let enrichment else { throw DirectDecodingMiss() }
        return Self(verified: verified, enrichment: enrichment)
    }
}

extension Enrichment: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case lookup, history, inForceTransactionId, subscriptionStatus, appAccountToken, appAccountTokenSource, fetchedAt
    }
    private static let names = Field.names()

    public static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
        var lookup: Lookup?
        var history: [JWSTransactionDecodedPayload]?
        var inForceTransactionId: String?
        var subscriptionStatus: SubscriptionStatusSnapshot?
        var appAccountToken: UUID?
        var appAccountTokenSource: AppAccountTokenSource?
        var fetchedAt: Date?
        try parser.readMembers(depth: depth, names: names) { (parser, field) throws(DirectDecodingMiss) in
            switch Field(rawValue: field)! {
            case .lookup: lookup = try parser.readCase(Lookup.self)
            case .history: history = try parser.readModels(JWSTransactionDecodedPayload.self, depth: depth)
            case .inForceTransactionId: inForceTransactionId = try parser.readString()
            case .subscriptionStatus: subscriptionStatus = try parser.readModel(SubscriptionStatusSnapshot.self, depth: depth)
            case .appAccountToken: appAccountToken = try parser.readUUID()
            case .appAccountTokenSource: appAccountTokenSource = try parser.readCase(AppAccountTokenSource.self)
            case .fetchedAt: fetchedAt = try parser.readDate()
            }
        }
        guard let lookup, let history, let fetchedAt else { throw DirectDecodingMiss() }
        return Self(
            lookup: lookup, history: history, inForceTransactionId: inForceTransactionId, subscriptionStatus: subscriptionStatus,
            appAccountToken: appAccountToken, appAccountTokenSource: appAccountTokenSource, fetchedAt: fetchedAt)
    }
}

extension SubscriptionStatusSnapshot: DirectJSONDecodable {
    private enum Field: Int, DirectFields {
        case subscriptionGroupIdentifier, status, transaction, renewalInfo
    }
    private static let names = Field.names()

    public static func read(from parser: inout JSONParser, depth: Int) throws(DirectDecodingMiss) -> Self {
        var subscriptionGroupIdentifier: String?
        var status: SubscriptionStatus?
        var transaction: JWSTransactionDecodedPayload?
        var renewalInfo: JWSRenewalInfoDecodedPayload?
        try parser.readMembers(depth: depth, names: names) { (parser, field) throws(DirectDecodingMiss) in
            switch Field(rawValue: field)! {
            case .subscriptionGroupIdentifier: subscriptionGroupIdentifier = try parser.readString()
            case .status: status = try parser.readEnum(SubscriptionStatus.self)
            case .transaction: transaction = try parser.readModel(JWSTransactionDecodedPayload.self, depth: depth)
            case .renewalInfo: renewalInfo = try parser.readModel(JWSRenewalInfoDecodedPayload.self, depth: depth)
            }
        }
        guard let status else { throw DirectDecodingMiss() }
        return Self(subscriptionGroupIdentifier: subscriptionGroupIdentifier, status: status, transaction: transaction, renewalInfo: renewalInfo)
    }
}
