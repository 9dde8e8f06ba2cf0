import Crypto
import Foundation

/// One App Store Connect In-App Purchase key, and the app it signs requests for.
///
/// Apple issues keys per team, but every request token names one bundle ID (`bid`), so the client
/// holds one credential per app. The private key never leaves this value: its description shows the
/// key ID and issuer only, so logging a credential by mistake leaks nothing.
public struct AppStoreAPICredentials: Sendable, CustomStringConvertible {
    /// The app the key is used for (the token's `bid`).
    public let bundleId: String
    /// The issuer ID from App Store Connect (the token's `iss`).
    public let issuerID: String
    /// The key ID (the token header's `kid`).
    public let keyID: String
    /// The `.p8` key: PKCS#8 P-256.
    let privateKey: P256.Signing.PrivateKey

    /// - Throws: ``AppStoreAPIError`` `invalid_credentials` when a field is empty or the key is no
    ///   P-256 PKCS#8 PEM (the message never contains key material).
    public init(bundleId: String, issuerID: String, keyID: String, privateKeyPEM: String) throws(AppStoreAPIError) {
        guard !bundleId.isEmpty, !issuerID.isEmpty, !keyID.isEmpty else {
            throw AppStoreAPIError(.invalidCredentials, "bundle ID, issuer ID and key ID must not be empty")
        }
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw AppStoreAPIError(
                .invalidCredentials, "the private key for key ID \(keyID) is not a P-256 PKCS#8 PEM (.p8) key")
        }
        self.bundleId = bundleId
        self.issuerID = issuerID
        self.keyID = keyID
    }

    /// Reads the `.p8` file at `path`.
    public init(bundleId: String, issuerID: String, keyID: String, privateKeyPath: String) throws(AppStoreAPIError) {
        guard let data = FileManager.default.contents(atPath: privateKeyPath) else {
            throw AppStoreAPIError(.invalidCredentials, "the key file \(privateKeyPath) cannot be read")
        }
        try self.init(
            bundleId: bundleId, issuerID: issuerID, keyID: keyID,
            privateKeyPEM: String(decoding: data, as: UTF8.self))
    }

    /// Credentials for an existing key (tests, the simulator's own key).
    public init(bundleId: String, issuerID: String, keyID: String, privateKey: P256.Signing.PrivateKey) {
        self.bundleId = bundleId
        self.issuerID = issuerID
        self.keyID = keyID
        self.privateKey = privateKey
    }

    public var description: String { "AppStoreAPICredentials(bundleId: \(bundleId), keyID: \(keyID), issuerID: \(issuerID))" }

    /// Parses `bundleId:issuerId:keyId:source` entries separated by commas, where `source` is the path
    /// of the `.p8` file, or `env:NAME` for a PEM held in the environment variable `NAME`.
    /// - Parameter environment: Where `env:` sources are read.
    public static func parseList(
        _ text: String, environment: [String: String] = ProcessInfo.processInfo.environment
    )
        throws(AppStoreAPIError) -> [AppStoreAPICredentials]
    {
        try parseList(text) { environment[$0] }
    }

    /// Parses the list like ``parseList(_:environment:)``, the PEM of an `env:NAME` source being
    /// `keyVariable(NAME)` (configuration reads it as a secret).
    public static func parseList(
        _ text: String, keyVariable: (String) -> String?
    ) throws(AppStoreAPIError) -> [AppStoreAPICredentials] {
        var result: [AppStoreAPICredentials] = []
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 4, !parts[3].isEmpty else {
                throw AppStoreAPIError(
                    .invalidCredentials,
                    "an entry is not bundleId:issuerId:keyId:/path/to/key.p8 (starts \"\(entry.prefix(40))\")")
            }
            if parts[3].hasPrefix("env:") {
                let name = String(parts[3].dropFirst(4))
                guard let pem = keyVariable(name), !pem.isEmpty else {
                    throw AppStoreAPIError(.invalidCredentials, "the key variable \(name) for \(parts[0]) is not set")
                }
                result.append(try AppStoreAPICredentials(bundleId: parts[0], issuerID: parts[1], keyID: parts[2], privateKeyPEM: pem))
            } else {
                result.append(
                    try AppStoreAPICredentials(bundleId: parts[0], issuerID: parts[1], keyID: parts[2], privateKeyPath: parts[3]))
            }
        }
        guard !result.isEmpty else { throw AppStoreAPIError(.invalidCredentials, "lists no credentials") }
        var seen: Set<String> = []
        for credential in result where !seen.insert(credential.bundleId).inserted {
            throw AppStoreAPIError(.invalidCredentials, "lists bundle ID \(credential.bundleId) twice")
        }
        return result
    }
}
