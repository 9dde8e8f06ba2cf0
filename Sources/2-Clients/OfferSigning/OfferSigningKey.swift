import Crypto
import Foundation

/// The app's In-App Purchase key from App Store Connect (a `.p8` file: PKCS#8 P-256) and its key
/// ID. Every offer signature is made with it. The private key never leaves this value: its
/// description shows the key ID only, so logging it by mistake leaks nothing.
public struct OfferSigningKey: Sendable, CustomStringConvertible {
    /// The key ID from App Store Connect: the v1 message's `keyIdentifier`, the JWS header's `kid`.
    public let keyID: String
    let privateKey: P256.Signing.PrivateKey

    /// The public half, for checking what was signed.
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    public var description: String { "OfferSigningKey(keyID: \(keyID))" }

    /// A key already in memory (tests, tools that made one).
    public init(keyID: String, privateKey: P256.Signing.PrivateKey) throws(OfferSigningError) {
        try OfferField.check(keyID, name: "the key ID")
        self.keyID = keyID
        self.privateKey = privateKey
    }

    /// - Throws: `offer.invalid_key` when `pem` is no P-256 PKCS#8 PEM key (the message never repeats it).
    public init(keyID: String, pem: String) throws(OfferSigningError) {
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw OfferSigningError(.invalidKey, "the key for key ID \(keyID) is not a P-256 PKCS#8 PEM (.p8) key")
        }
        try self.init(keyID: keyID, privateKey: key)
    }

    /// Reads the `.p8` file at `path` (a mounted secret).
    public init(keyID: String, file path: String) throws(OfferSigningError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw OfferSigningError(.invalidKey, "the key file \(path) cannot be read")
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: String(decoding: data, as: UTF8.self))
        } catch {
            throw OfferSigningError(.invalidKey, "the key file \(path) holds no P-256 PKCS#8 PEM (.p8) key")
        }
        try self.init(keyID: keyID, privateKey: key)
    }
}

/// The checks every signed text field passes. Apple joins the v1 message's fields with U+2063, so
/// a field holding that character (or a control character) could make two different offers sign
/// the same bytes; such a field is refused rather than signed.
enum OfferField {
    static let separator: Character = "\u{2063}"
    static let maximumBytes = 256

    static func check(_ value: String, name: String, allowEmpty: Bool = false) throws(OfferSigningError) {
        guard allowEmpty || !value.isEmpty else { throw OfferSigningError(.invalidField, "\(name) is empty") }
        guard value.utf8.count <= maximumBytes else {
            throw OfferSigningError(.invalidField, "\(name) is longer than \(maximumBytes) bytes")
        }
        guard !value.contains(separator), !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw OfferSigningError(.invalidField, "\(name) contains U+2063 or a control character")
        }
    }
}
