import Foundation
import JSONCoding

/// The one JSON coder pair for everything Apple signs.
///
/// Apple writes every date as milliseconds since 1970 (Xcode-signed data even uses fractional
/// milliseconds). Sharing one configured pair keeps decoding (the verifier) and encoding symmetric,
/// so a model round-trips byte-stable. The hot paths (the stages' published bodies, grant's batch
/// rows, the local signing authority) encode with ``StreamingJSONEncoder`` instead, which keeps the
/// same conventions but not the sorted keys. Both coders are configured once and must not be
/// reconfigured by callers.
public enum AppStoreJSON {
    /// Decodes Apple payloads: dates in milliseconds, unknown keys ignored (the default).
    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let milliseconds = try container.decode(Double.self)
            guard milliseconds.isFinite else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "date is not a finite number")
            }
            return Date(timeIntervalSince1970: milliseconds / 1000)
        }
        return decoder
    }()

    /// Decodes an Apple payload into the same models as ``decoder`` (dates in milliseconds, unknown
    /// keys ignored), faster: what the verifier uses for every JWS. It parses strict RFC 8259 JSON,
    /// so it never accepts a document ``decoder`` rejects (it also refuses the trailing commas and
    /// unread malformed values that Foundation tolerates).
    /// - Throws: `DecodingError`, with the coding path of the value that did not fit.
    ///
    /// The notification, its `data`, the transaction and the renewal info are read straight from the
    /// bytes (``DirectJSONDecodable``) when the document allows; anything else, including every
    /// document that does not decode, takes the general path, so results and errors are the same.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        if let direct = type as? any DirectJSONDecodable.Type, let value = direct.decodeDirectly(from: bytes) {
            // The cast cannot fail: `direct` is `T`'s own metatype.
            return value as! T
        }
        return try decodeGenerally(type, from: bytes)
    }

    /// Decodes through ``JSONTree`` only (no direct reader): the reference the direct readers are
    /// tested against.
    static func decodeGenerally<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try JSONTree.decode(type, from: bytes)
    }

    /// The top-level keys of a JSON object, or `nil` when `bytes` are not a JSON object.
    static func objectKeys(of bytes: [UInt8]) -> Set<String>? {
        guard case .object(let members) = try? JSONTree.parse(bytes) else { return nil }
        return Set(members.map(\.key))
    }

    /// Encodes models the way Apple does: dates as whole milliseconds when they are whole (``EncodedMilliseconds``), keys sorted
    /// so the output is deterministic, slashes unescaped.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = EncodedMilliseconds.foundationDateStrategy
        return encoder
    }()

    /// Milliseconds since 1970 for a date, as Apple writes it.
    public static func milliseconds(since1970 date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// The date for Apple's milliseconds since 1970.
    public static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
