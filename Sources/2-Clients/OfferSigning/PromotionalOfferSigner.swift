import Crypto
import Foundation
import JSONCoding

/// What an app passes to StoreKit for a promotional offer signed the original way
/// (`SKPaymentDiscount`, or StoreKit 2's
/// `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`).
public struct PromotionalOfferSignature: Sendable, Equatable {
    /// The key ID the signature was made with (StoreKit's `keyID` / `keyIdentifier`).
    public let keyID: String
    /// The one-time nonce; StoreKit takes the UUID, the message holds it lower-cased.
    public let nonce: UUID
    /// UNIX time in milliseconds; Apple accepts the signature for 24 hours from it.
    public let timestamp: Int64
    /// The ECDSA signature, DER, standard base64 (StoreKit's `signature`, decoded to `Data` in the app).
    public let signature: String
}

/// Signs promotional offers the way Apple's page "Generating a signature for promotional offers"
/// and its libraries' `PromotionalOfferSignatureCreator` do: ECDSA P-256 with SHA-256 over the UTF-8
/// bytes of ``message(bundleId:keyID:productIdentifier:offerIdentifier:appAccountToken:nonce:timestamp:)``,
/// the signature DER-encoded and base64'd. ECDSA signatures are randomized: two signatures of the
/// same message differ, and both verify.
public struct PromotionalOfferSigner: Sendable {
    /// The app's bundle ID, the message's first field.
    public let bundleId: String
    public let key: OfferSigningKey

    public init(bundleId: String, key: OfferSigningKey) throws(OfferSigningError) {
        try OfferField.check(bundleId, name: "the bundle ID")
        self.bundleId = bundleId
        self.key = key
    }

    /// Apple's message: the fields joined by U+2063 (INVISIBLE SEPARATOR) in this order, the
    /// `appAccountToken` (StoreKit 1's `applicationUsername`; may be empty) and the nonce lower-cased,
    /// the timestamp in decimal milliseconds.
    public static func message(
        bundleId: String, keyID: String, productIdentifier: String, offerIdentifier: String, appAccountToken: String, nonce: UUID,
        timestamp: Int64
    ) -> String {
        [
            bundleId, keyID, productIdentifier, offerIdentifier, appAccountToken.lowercased(), nonce.uuidString.lowercased(), String(timestamp),
        ].joined(separator: String(OfferField.separator))
    }

    /// Signs one offer for one customer.
    /// - Parameters:
    ///   - appAccountToken: the customer the purchase will carry (StoreKit 2: the same UUID as the
    ///     purchase's `appAccountToken` option), or empty for none.
    ///   - nonce: a fresh UUID for every signature (the default).
    ///   - now: when the signature is made; its milliseconds are the timestamp.
    public func sign(
        productIdentifier: String, offerIdentifier: String, appAccountToken: String, nonce: UUID = UUID(), now: Date = Date()
    ) throws(OfferSigningError) -> PromotionalOfferSignature {
        try sign(
            productIdentifier: productIdentifier, offerIdentifier: offerIdentifier, appAccountToken: appAccountToken, nonce: nonce,
            timestamp: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// Signs with a given timestamp (milliseconds), as Apple's creators take it.
    public func sign(
        productIdentifier: String, offerIdentifier: String, appAccountToken: String, nonce: UUID, timestamp: Int64
    ) throws(OfferSigningError) -> PromotionalOfferSignature {
        try OfferField.check(productIdentifier, name: "the product identifier")
        try OfferField.check(offerIdentifier, name: "the offer identifier")
        try OfferField.check(appAccountToken, name: "the appAccountToken", allowEmpty: true)
        guard timestamp > 0 else { throw OfferSigningError(.invalidField, "the timestamp must be positive milliseconds") }
        let text = Self.message(
            bundleId: bundleId, keyID: key.keyID, productIdentifier: productIdentifier, offerIdentifier: offerIdentifier,
            appAccountToken: appAccountToken, nonce: nonce, timestamp: timestamp)
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try key.privateKey.signature(for: Array(text.utf8))
        } catch {
            throw OfferSigningError(.signingFailed, "the promotional offer could not be signed")
        }
        return PromotionalOfferSignature(
            keyID: key.keyID, nonce: nonce, timestamp: timestamp, signature: Base64.encodeStandard(Array(signature.derRepresentation)))
    }
}
