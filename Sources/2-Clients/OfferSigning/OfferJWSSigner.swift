import Crypto
import Foundation
import JSONCoding

/// Signs the compact JWS that current StoreKit takes for promotional offers and for overriding
/// introductory-offer eligibility, as Apple's page "Generating JWS to sign App Store requests" and
/// its libraries' `PromotionalOfferV2SignatureCreator` and `IntroductoryOfferEligibilitySignatureCreator`
/// make them: header `{"alg":"ES256","kid":<key ID>,"typ":"JWT"}`; claims `iss` (issuer ID),
/// `iat` (UNIX seconds), `aud` (the feature), `bid`, `nonce` (a fresh UUID), and the feature's own
/// claims; no `exp` (Apple derives the expiry from `iat`). The signature is ES256's raw R‖S,
/// base64url like the two other segments.
public struct OfferJWSSigner: Sendable {
    /// `aud` of a promotional offer signature.
    public static let promotionalOfferAudience = "promotional-offer"
    /// `aud` of an introductory offer eligibility signature.
    public static let introductoryOfferEligibilityAudience = "introductory-offer-eligibility"

    public let bundleId: String
    /// The issuer ID from the Keys page in App Store Connect.
    public let issuerID: String
    public let key: OfferSigningKey

    public init(bundleId: String, issuerID: String, key: OfferSigningKey) throws(OfferSigningError) {
        try OfferField.check(bundleId, name: "the bundle ID")
        try OfferField.check(issuerID, name: "the issuer ID")
        self.bundleId = bundleId
        self.issuerID = issuerID
        self.key = key
    }

    /// A promotional offer signature for StoreKit's JWS-taking promotional offer purchase option.
    /// - Parameter transactionId: any transaction of the customer (its `appTransactionId` works
    ///   before a first purchase); optional but recommended by Apple, omitted from the claims when nil.
    public func promotionalOffer(
        productId: String, offerIdentifier: String, transactionId: String?, nonce: UUID = UUID(), issuedAt: Date = Date()
    ) throws(OfferSigningError) -> String {
        try OfferField.check(productId, name: "the product ID")
        try OfferField.check(offerIdentifier, name: "the offer identifier")
        if let transactionId { try OfferField.check(transactionId, name: "the transaction ID") }
        return try sign(
            PromotionalOfferClaims(
                base: base(Self.promotionalOfferAudience, nonce: nonce, issuedAt: issuedAt), productId: productId,
                offerIdentifier: offerIdentifier, transactionId: transactionId))
    }

    /// An introductory offer eligibility signature: StoreKit then offers (or withholds) the
    /// introductory offer as `allowIntroductoryOffer` says, whatever its own eligibility check found.
    /// - Parameter transactionId: any transaction of the customer (required here, as Apple's libraries require it).
    public func introductoryOfferEligibility(
        productId: String, allowIntroductoryOffer: Bool, transactionId: String, nonce: UUID = UUID(), issuedAt: Date = Date()
    ) throws(OfferSigningError) -> String {
        try OfferField.check(productId, name: "the product ID")
        try OfferField.check(transactionId, name: "the transaction ID")
        return try sign(
            IntroductoryOfferEligibilityClaims(
                base: base(Self.introductoryOfferEligibilityAudience, nonce: nonce, issuedAt: issuedAt), productId: productId,
                allowIntroductoryOffer: allowIntroductoryOffer, transactionId: transactionId))
    }

    private func base(_ audience: String, nonce: UUID, issuedAt: Date) -> BaseClaims {
        BaseClaims(
            iss: issuerID, iat: Int64(issuedAt.timeIntervalSince1970.rounded(.down)), aud: audience, bid: bundleId,
            nonce: nonce.uuidString.lowercased())
    }

    private func sign(_ claims: some Encodable) throws(OfferSigningError) -> String {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let header = Base64.encodeURL(try encoder.encode(Header(kid: key.keyID)))
            let input = header + "." + Base64.encodeURL(try encoder.encode(claims))
            let signature = try key.privateKey.signature(for: Array(input.utf8))
            return input + "." + Base64.encodeURL(signature.rawRepresentation)
        } catch {
            throw OfferSigningError(.signingFailed, "the offer JWS could not be encoded or signed")
        }
    }
}

/// The JOSE header Apple specifies for every App Store request JWS.
private struct Header: Encodable {
    var alg = "ES256"
    var kid: String
    var typ = "JWT"
}

/// The claims every App Store request JWS carries.
private struct BaseClaims {
    var iss: String
    var iat: Int64
    var aud: String
    var bid: String
    var nonce: String

    func encode(into container: inout KeyedEncodingContainer<ClaimKey>) throws {
        try container.encode(iss, forKey: ClaimKey("iss"))
        try container.encode(iat, forKey: ClaimKey("iat"))
        try container.encode(aud, forKey: ClaimKey("aud"))
        try container.encode(bid, forKey: ClaimKey("bid"))
        try container.encode(nonce, forKey: ClaimKey("nonce"))
    }
}

private struct ClaimKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// `productId`, `offerIdentifier` and, when known, `transactionId`.
private struct PromotionalOfferClaims: Encodable {
    var base: BaseClaims
    var productId: String
    var offerIdentifier: String
    var transactionId: String?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ClaimKey.self)
        try base.encode(into: &container)
        try container.encode(productId, forKey: ClaimKey("productId"))
        try container.encode(offerIdentifier, forKey: ClaimKey("offerIdentifier"))
        try container.encodeIfPresent(transactionId, forKey: ClaimKey("transactionId"))
    }
}

/// `productId`, `allowIntroductoryOffer` (a JSON boolean) and `transactionId`.
private struct IntroductoryOfferEligibilityClaims: Encodable {
    var base: BaseClaims
    var productId: String
    var allowIntroductoryOffer: Bool
    var transactionId: String

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ClaimKey.self)
        try base.encode(into: &container)
        try container.encode(productId, forKey: ClaimKey("productId"))
        try container.encode(allowIntroductoryOffer, forKey: ClaimKey("allowIntroductoryOffer"))
        try container.encode(transactionId, forKey: ClaimKey("transactionId"))
    }
}
