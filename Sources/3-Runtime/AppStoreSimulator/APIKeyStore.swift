import Crypto
import Foundation

/// The App Store Connect In-App Purchase key the simulator accepts tokens from: created on first
/// start in the state directory (`api-key.p8`, a PKCS#8 PEM readable by the owner only, and
/// `api-key.json` with the issuer ID, key ID and key file name), reused afterwards, so the pipeline
/// can be configured with `APPSTORE_API_CREDENTIALS=<bundleId>:<issuerId>:<keyId>:<dir>/api-key.p8`.
public struct SimulatorAPIKey: Sendable {
    /// `api-key.json`.
    public struct Descriptor: Codable, Hashable, Sendable {
        public var issuerId: String
        public var keyId: String
        /// File name of the `.p8` next to the JSON.
        public var privateKeyFile: String
    }

    public static let descriptorFileName = "api-key.json"
    public static let privateKeyFileName = "api-key.p8"

    public let issuerID: String
    public let keyID: String
    /// The key (a test key: it only opens the simulator).
    public let privateKey: P256.Signing.PrivateKey
    /// Where the `.p8` is, when stored.
    public let privateKeyPath: String?

    public init(issuerID: String, keyID: String, privateKey: P256.Signing.PrivateKey, privateKeyPath: String? = nil) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.privateKey = privateKey
        self.privateKeyPath = privateKeyPath
    }

    /// A key chosen by whoever runs the simulator (`SIM_API_KEY_FILE`, `SIM_API_ISSUER_ID`,
    /// `SIM_API_KEY_ID`): a deployment's secrets can then hold one key that both the simulator and
    /// the pipeline's credentials name, instead of one the simulator made at random.
    public static func load(privateKeyFile path: String, issuerID: String, keyID: String) throws -> SimulatorAPIKey {
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        return SimulatorAPIKey(
            issuerID: issuerID, keyID: keyID, privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem), privateKeyPath: path)
    }

    /// Loads the key from `directory`, or creates and saves one there.
    public static func loadOrCreate(at directory: URL) throws -> SimulatorAPIKey {
        let descriptorURL = directory.appendingPathComponent(descriptorFileName)
        if let data = FileManager.default.contents(atPath: descriptorURL.path) {
            let descriptor = try JSONDecoder().decode(Descriptor.self, from: data)
            let keyURL = directory.appendingPathComponent(descriptor.privateKeyFile)
            let pem = try String(contentsOf: keyURL, encoding: .utf8)
            return SimulatorAPIKey(
                issuerID: descriptor.issuerId, keyID: descriptor.keyId,
                privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem), privateKeyPath: keyURL.path)
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = P256.Signing.PrivateKey()
        let keyID = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10)).uppercased()
        let keyURL = directory.appendingPathComponent(privateKeyFileName)
        try Data(key.pemRepresentation.utf8).write(to: keyURL, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyURL.path)
        let descriptor = Descriptor(issuerId: UUID().uuidString.lowercased(), keyId: keyID, privateKeyFile: privateKeyFileName)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(descriptor).write(to: descriptorURL, options: .atomic)
        return SimulatorAPIKey(issuerID: descriptor.issuerId, keyID: keyID, privateKey: key, privateKeyPath: keyURL.path)
    }
}
