import Crypto
import EnvironmentSettings
import Foundation
import KafkaClient

/// The keys enrich signs its records with and grant checks them against (`RECORD_MAC_KEYS_FILE`):
/// an HMAC-SHA256 of each enriched record's body in the header `record-mac`. Grant trusts what
/// an enriched record says (Apple's history, the customer it names), so a record that did not come
/// from enrich must never reach it; the broker's ACLs (deploy/kafka) keep other principals off the
/// topic, and this keeps a forged record out even when they are wrong or a credential leaks. Ingest
/// never holds the keys.
///
/// The file holds one key per line, `<key id> <base64 key of at least 32 bytes>` (`#` comments):
/// enrich signs with the first, grant accepts any, so a new key is rolled out by adding it second
/// everywhere, then moving it first, then removing the old one.
public struct RecordKeys: Sendable {
    public struct Key: Sendable {
        public let id: String
        let key: SymmetricKey
    }

    /// The header holding `<key id>:<base64 MAC>`.
    public static let header = "record-mac"

    /// Signing first; all accepted.
    public let keys: [Key]

    public init(keys: [(id: String, secret: [UInt8])]) throws(ConfigurationError) {
        guard !keys.isEmpty else { throw ConfigurationError(variable: Self.fileSetting.name, problem: "names a file with no key") }
        var parsed: [Key] = []
        for (id, secret) in keys {
            guard !id.isEmpty, id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw ConfigurationError(variable: Self.fileSetting.name, problem: "has a key id that is not letters, digits, - or _")
            }
            guard secret.count >= 32 else {
                throw ConfigurationError(variable: Self.fileSetting.name, problem: "has key \(id) shorter than 32 bytes")
            }
            guard !parsed.contains(where: { $0.id == id }) else {
                throw ConfigurationError(variable: Self.fileSetting.name, problem: "has key id \(id) twice")
            }
            parsed.append(Key(id: id, key: SymmetricKey(data: secret)))
        }
        self.keys = parsed
    }

    /// Reads a keys file (see the type's documentation).
    public static func load(file path: String) throws(ConfigurationError) -> RecordKeys {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError(variable: fileSetting.name, problem: "names a file that cannot be read (\(path))")
        }
        var keys: [(id: String, secret: [UInt8])] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            let fields = trimmed.split(whereSeparator: \.isWhitespace)
            guard fields.count == 2, let secret = Data(base64Encoded: String(fields[1])) else {
                throw ConfigurationError(variable: fileSetting.name, problem: "has a line that is not '<key id> <base64 key>'")
            }
            keys.append((String(fields[0]), Array(secret)))
        }
        return try RecordKeys(keys: keys)
    }

    /// `RECORD_MAC_KEYS_FILE`, read and parsed at start; nil when unset.
    public static let fileSetting = Setting<RecordKeys?>(
        name: "RECORD_MAC_KEYS_FILE", defaultText: "",
        meaning: "file of '<key id> <base64 key>' lines: enrich signs each enriched record with the first, grant refuses records no listed key signed"
    ) { env throws(ConfigurationError) in
        guard let path = env.string("RECORD_MAC_KEYS_FILE") else { return nil }
        return try RecordKeys.load(file: path)
    }

    /// The `record-mac` header for `body`, signed with the first key.
    public func seal(_ body: [UInt8]) -> KafkaHeader {
        let signing = keys[0]
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: signing.key)
        return KafkaHeader(key: Self.header, string: "\(signing.id):\(Data(mac).base64EncodedString())")
    }

    /// Why `body` with `headers` is not a record enrich signed, or nil when one of the keys did.
    public func refusal(_ body: [UInt8], headers: [KafkaHeader]) -> String? {
        guard let value = headers.last(where: { $0.key == Self.header })?.stringValue else {
            return "the record carries no \(Self.header) header: enrich did not write it"
        }
        guard let colon = value.firstIndex(of: ":"), let mac = Data(base64Encoded: String(value[value.index(after: colon)...])) else {
            return "the \(Self.header) header is not '<key id>:<base64 MAC>'"
        }
        let id = String(value[..<colon])
        guard let key = keys.first(where: { $0.id == id }) else {
            return "the record is signed with key \(id.prefix(40)), which is not among RECORD_MAC_KEYS_FILE's"
        }
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: body, using: key.key) else {
            return "the record's MAC does not match its body: it was changed or forged"
        }
        return nil
    }
}
