import EnvironmentSettings
import Foundation

/// Offer signing as ingest serves it (`POST /v1/offers/signature`): the In-App Purchase key, its
/// key ID and issuer ID, and the apps it signs for. Off unless `OFFER_SIGNING_KEY_FILE` is set;
/// once it is, every other variable is required, so a half-configured deployment stops at start
/// instead of answering every app with an error.
public struct OfferSigningSettings: Sendable, CustomStringConvertible {
    public let key: OfferSigningKey
    public let issuerID: String
    /// The apps signatures are made for; a request for any other app is refused.
    public let bundleIds: [String]

    /// - Throws: `offer.invalid_field` when the issuer ID or a bundle ID cannot be signed, or no app is listed.
    public init(key: OfferSigningKey, issuerID: String, bundleIds: [String]) throws(OfferSigningError) {
        guard !bundleIds.isEmpty else { throw OfferSigningError(.invalidField, "no app is listed") }
        for bundleId in bundleIds { _ = try PromotionalOfferSigner(bundleId: bundleId, key: key) }
        _ = try OfferJWSSigner(bundleId: bundleIds[0], issuerID: issuerID, key: key)
        self.key = key
        self.issuerID = issuerID
        self.bundleIds = bundleIds
    }

    /// One line for the start log: never key material.
    public var description: String { "key ID \(key.keyID), issuer \(issuerID), apps \(bundleIds.joined(separator: ","))" }

    /// The v1 signer for `bundleId`, or nil when the app is not configured.
    public func promotionalOfferSigner(for bundleId: String) -> PromotionalOfferSigner? {
        guard bundleIds.contains(bundleId) else { return nil }
        return try? PromotionalOfferSigner(bundleId: bundleId, key: key)
    }

    /// The JWS signer for `bundleId`, or nil when the app is not configured.
    public func jwsSigner(for bundleId: String) -> OfferJWSSigner? {
        guard bundleIds.contains(bundleId) else { return nil }
        return try? OfferJWSSigner(bundleId: bundleId, issuerID: issuerID, key: key)
    }

    /// The file's name is not secret; its contents are, and are never printed.
    public static let keyFile = Setting<String?>.optional(
        "OFFER_SIGNING_KEY_FILE", shown: "off",
        meaning: "the In-App Purchase key (.p8, PKCS#8 P-256) that signs offers; set it to serve POST /v1/offers/signature")
    public static let keyID = Setting<String>.required(
        "OFFER_SIGNING_KEY_ID", shown: "(with the key file: required)", meaning: "the key's ID from App Store Connect")
    public static let issuerIDSetting = Setting<String>.required(
        "OFFER_SIGNING_ISSUER_ID", shown: "(with the key file: required)", meaning: "the issuer ID from App Store Connect's Keys page (the JWS's iss)"
    )
    public static let apps = Setting<String>.required(
        "OFFER_SIGNING_APPS", shown: "(with the key file: required)", meaning: "comma-separated bundle IDs the key signs offers for")

    /// The variables, for `--help`.
    public static let variables = [keyFile.help, keyID.help, issuerIDSetting.help, apps.help]

    /// nil when `OFFER_SIGNING_KEY_FILE` is unset (and no other offer variable is); otherwise the
    /// checked settings, or one line naming the variable that is missing or wrong.
    public static func read(_ env: EnvironmentReader) throws(ConfigurationError) -> OfferSigningSettings? {
        guard let path = try env.read(keyFile) else {
            if let stray = [keyID, issuerIDSetting, apps].first(where: { env.string($0.name) != nil }) {
                throw ConfigurationError(
                    variable: keyFile.name, problem: "is not set, but \(stray.name) is: set the key file to sign offers, or unset \(stray.name)")
            }
            return nil
        }
        let id = try env.read(keyID)
        let key: OfferSigningKey
        do {
            key = try OfferSigningKey(keyID: id, file: path)
        } catch {
            let variable = error.code == .invalidField ? keyID.name : keyFile.name
            throw ConfigurationError(variable: variable, problem: error.message)
        }
        let issuer = try env.read(issuerIDSetting)
        let list = try env.read(apps).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !list.isEmpty else { throw ConfigurationError(variable: apps.name, problem: "lists no bundle ID") }
        guard Set(list).count == list.count else { throw ConfigurationError(variable: apps.name, problem: "lists a bundle ID twice") }
        do {
            _ = try OfferJWSSigner(bundleId: list[0], issuerID: issuer, key: key)
        } catch {
            throw ConfigurationError(variable: issuerIDSetting.name, problem: error.message)
        }
        do {
            return try OfferSigningSettings(key: key, issuerID: issuer, bundleIds: list)
        } catch {
            throw ConfigurationError(variable: apps.name, problem: error.message)
        }
    }
}
