import Foundation
import SwiftASN1

/// The transaction a StoreKit 1 receipt names, read the way Apple's `ReceiptUtility` reads it, so an
/// app still on StoreKit 1 can hand its receipt to the pipeline instead of a signed transaction.
///
/// Nothing here checks a signature, as Apple's utility checks none: the identifier only drives a
/// call to the App Store Server API (Get Transaction History), whose answers are verified like every
/// signed payload. A receipt therefore grants nothing that Apple's signed answers do not confirm.
public enum LegacyReceipt {
    /// The longest base64 receipt taken. An app receipt carries one entry per in-app purchase of
    /// the account (a few hundred bytes each); a megabyte is thousands of purchases.
    public static let maxEncodedBytes = 1 << 20

    /// The identifier of an in-app purchase in a base64 app receipt (PKCS #7 signed data whose
    /// content is the receipt's attribute set). `nil` when the receipt lists no in-app purchase.
    /// Like Apple's utility it takes the transaction identifier (1703) or the original
    /// transaction identifier (1705), the last one in the receipt's order.
    public static func transactionID(appReceipt: String) throws(LegacyReceiptError) -> String? {
        try read(appReceipt: appReceipt).transactionId
    }

    /// What routes a legacy receipt's lookup: the transaction it names, and the app and environment
    /// it says it is from. None of it is trusted: Apple's signed answers to the lookup are verified,
    /// and must name the app and environment asked about.
    public struct Contents: Sendable, Equatable {
        /// As ``LegacyReceipt/transactionID(appReceipt:)`` finds it; nil when the receipt names none.
        public var transactionId: String?
        /// The app receipt's bundle ID (attribute 2), a transaction receipt's `bid`.
        public var bundleId: String?
        /// The app receipt's receipt type (attribute 0: `Production`, `ProductionSandbox`, `Xcode`), a
        /// transaction receipt's `environment` (`Sandbox`; absent in Production).
        public var environment: AppStoreEnvironment?

        public init(transactionId: String?, bundleId: String? = nil, environment: AppStoreEnvironment? = nil) {
            self.transactionId = transactionId
            self.bundleId = bundleId
            self.environment = environment
        }
    }

    /// The contents of a base64 app receipt (see ``transactionID(appReceipt:)``).
    public static func read(appReceipt: String) throws(LegacyReceiptError) -> Contents {
        let bytes = try decodeBase64(appReceipt)
        let payload: [UInt8]
        do {
            payload = try signedContent(of: BER.parse(bytes))
        } catch let error as LegacyReceiptError {
            throw error
        } catch {
            throw LegacyReceiptError(.malformed, "the app receipt is not PKCS #7 signed data in BER: \(error)")
        }
        var contents = Contents(transactionId: nil)
        for attribute in try attributes(payload, what: "the receipt's attribute set") {
            switch attribute.type {
            case Self.bundleIdentifier:
                contents.bundleId = text(attribute.value)
            case Self.receiptType:
                contents.environment = text(attribute.value).flatMap(Self.environment(receiptType:))
            case Self.inAppPurchase:
                for field in try attributes(attribute.value, what: "an in-app purchase's attribute set")
                where field.type == Self.transactionIdentifier || field.type == Self.originalTransactionIdentifier {
                    guard let id = text(field.value) else {
                        throw LegacyReceiptError(.malformed, "an in-app purchase's transaction identifier is not a UTF8String")
                    }
                    contents.transactionId = id
                }
            default:
                continue
            }
        }
        return contents
    }

    /// A UTF8String attribute value, or nil when it is not one.
    private static func text(_ value: [UInt8]) -> String? {
        (try? ASN1UTF8String(berEncoded: BER.parse(value), withIdentifier: .utf8String)).map { String($0) }
    }

    /// The environment an app receipt's type names.
    static func environment(receiptType: String) -> AppStoreEnvironment? {
        switch receiptType {
        case "Production": .production
        case "ProductionSandbox", "Sandbox": .sandbox
        case "Xcode": .xcode
        default: nil
        }
    }

    /// The `transaction-id` in a base64 transaction receipt (the old-style property list whose
    /// `purchase-info` is itself base64 text). `nil` when the purchase info names none.
    public static func transactionID(transactionReceipt: String) throws(LegacyReceiptError) -> String? {
        try read(transactionReceipt: transactionReceipt).transactionId
    }

    /// The contents of a base64 transaction receipt (see ``transactionID(transactionReceipt:)``).
    public static func read(transactionReceipt: String) throws(LegacyReceiptError) -> Contents {
        guard let text = String(bytes: try decodeBase64(transactionReceipt), encoding: .utf8) else {
            throw LegacyReceiptError(.malformed, "the transaction receipt is not UTF-8 text")
        }
        guard let purchaseInfo = quotedValue(of: "purchase-info", in: text) else {
            throw LegacyReceiptError(.malformed, "the transaction receipt has no \"purchase-info\"")
        }
        guard let info = String(bytes: try decodeBase64(purchaseInfo), encoding: .utf8) else {
            throw LegacyReceiptError(.malformed, "the transaction receipt's purchase-info is not UTF-8 text")
        }
        let environment: AppStoreEnvironment = quotedValue(of: "environment", in: text) == "Sandbox" ? .sandbox : .production
        return Contents(
            transactionId: quotedValue(of: "transaction-id", in: info), bundleId: quotedValue(of: "bid", in: info), environment: environment)
    }

    // MARK: - The app receipt's structure

    static let signedDataType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    static let dataType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
    static let receiptType: Int64 = 0
    static let bundleIdentifier: Int64 = 2
    static let inAppPurchase: Int64 = 17
    static let transactionIdentifier: Int64 = 1703
    static let originalTransactionIdentifier: Int64 = 1705

    /// `ContentInfo { signedData, [0] SignedData { version, digestAlgorithms, encapContentInfo { data, [0] OCTET STRING }, … } }`:
    /// the bytes of the encapsulated content.
    private static func signedContent(of root: ASN1Node) throws -> [UInt8] {
        try BER.sequence(root, identifier: .sequence) { nodes in
            let contentType = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard contentType == signedDataType else {
                throw LegacyReceiptError(.notSignedData, "the app receipt's content type is \(contentType), not PKCS #7 signed data")
            }
            let content = try BER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { signedData in
                try BER.sequence(signedData, identifier: .sequence) { fields in
                    _ = fields.next()  // version
                    _ = fields.next()  // digestAlgorithms
                    guard let encapsulated = fields.next() else {
                        throw LegacyReceiptError(.malformed, "the signed data has no encapsulated content")
                    }
                    defer { while fields.next() != nil {} }  // certificates, signer infos: nothing here reads them
                    return try BER.sequence(encapsulated, identifier: .sequence) { inner in
                        let innerType = try ASN1ObjectIdentifier(berEncoded: &inner)
                        guard innerType == dataType else {
                            throw LegacyReceiptError(.notSignedData, "the signed content's type is \(innerType), not PKCS #7 data")
                        }
                        let octets = try BER.optionalExplicitlyTagged(&inner, tagNumber: 0, tagClass: .contextSpecific) {
                            try ASN1OctetString(berEncoded: $0)
                        }
                        guard let octets else { throw LegacyReceiptError(.malformed, "the signed data carries no content") }
                        return [UInt8](octets.bytes)
                    }
                }
            }
            guard let content else { throw LegacyReceiptError(.malformed, "the content info carries no signed data") }
            return content
        }
    }

    /// A receipt attribute: `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    struct Attribute {
        var type: Int64
        var value: [UInt8]
    }

    /// The attributes of a `SET OF` receipt attributes. Entries of another shape are skipped, as
    /// Apple's utility skips them (receipts carry attribute types it does not name).
    private static func attributes(_ bytes: [UInt8], what: String) throws(LegacyReceiptError) -> [Attribute] {
        do {
            return try BER.sequence(BER.parse(bytes), identifier: .set) { nodes in
                var result: [Attribute] = []
                while let node = nodes.next() {
                    guard
                        let attribute = try? BER.sequence(
                            node, identifier: .sequence,
                            { fields -> Attribute? in
                                guard let type = fields.next(), fields.next() != nil, let value = fields.next() else { return nil }
                                return Attribute(
                                    type: try Int64(berEncoded: type, withIdentifier: .integer),
                                    value: [UInt8](try ASN1OctetString(berEncoded: value).bytes))
                            })
                    else { continue }
                    result.append(attribute)
                }
                return result
            }
        } catch {
            throw LegacyReceiptError(.malformed, "\(what) is not a BER SET of attributes")
        }
    }

    // MARK: - Text

    private static func decodeBase64(_ text: String) throws(LegacyReceiptError) -> [UInt8] {
        guard text.utf8.count <= maxEncodedBytes else {
            throw LegacyReceiptError(.tooLarge, "the receipt is \(text.utf8.count) bytes of base64, more than \(maxEncodedBytes)")
        }
        guard let data = Data(base64Encoded: text), !data.isEmpty else {
            throw LegacyReceiptError(.notBase64, "the receipt is not base64")
        }
        return [UInt8](data)
    }

    /// The value of `"key" = "value";` in an old-style property list, the value in the base64 alphabet
    /// plus `.` and `-` (the only characters the keys read here carry: base64, IDs, bundle IDs).
    private static func quotedValue(of key: String, in text: String) -> String? {
        var rest = Substring(text)
        let opening = "\"\(key)\""
        while let found = rest.range(of: opening) {
            var cursor = rest[found.upperBound...]
            let afterKey = cursor.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
            if afterKey.count < cursor.count, afterKey.first == "=" {
                cursor = afterKey.dropFirst()
                let value = cursor.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
                if value.count < cursor.count, value.first == "\"" {
                    let body = value.dropFirst().prefix { $0.isASCII && ($0.isLetter || $0.isNumber || "+/=.-".contains($0)) }
                    let after = value.dropFirst().dropFirst(body.count)
                    if !body.isEmpty, after.hasPrefix("\";") { return String(body) }
                }
            }
            rest = rest[found.upperBound...]
        }
        return nil
    }
}

/// Why a legacy receipt could not be read; an upload with one is refused with 400 and the code.
public struct LegacyReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not base64 text (or empty).
        public static let notBase64 = Code("receipt.not_base64")
        /// Longer than ``LegacyReceipt/maxEncodedBytes``.
        public static let tooLarge = Code("receipt.too_large")
        /// Not PKCS #7 signed data over PKCS #7 data (another structure or object identifier).
        public static let notSignedData = Code("receipt.not_signed_data")
        /// Truncated, or not the structure a receipt has.
        public static let malformed = Code("receipt.malformed")
    }

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
