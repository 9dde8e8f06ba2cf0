import AppStore
import Foundation
import SwiftASN1

/// StoreKit 1 receipts as an old app version holds them, minted from the simulator's purchases: an
/// app receipt (PKCS #7 signed data over the receipt's SET of attributes, each in-app purchase a SET
/// of its own) and a transaction receipt (the old-style property list). Unsigned: nothing that reads
/// a receipt checks a signature (Apple's `ReceiptUtility` does not), the transaction ID it names only
/// drives a lookup whose answers are verified.
public enum SimulatedReceipt {
    /// A receipt attribute's value.
    public enum Value: Sendable {
        case integer(Int64)
        case text(String)
    }

    /// A base64 app receipt listing `purchases` (each its in-app purchase attributes, e.g. 1703
    /// transaction ID, 1705 original transaction ID, 1702 product ID), with the receipt type
    /// (attribute 0) of `environment` and the bundle ID (attribute 2). The object identifiers can be
    /// changed to make a receipt that is not one.
    public static func appReceipt(
        bundleId: String, environment: AppStoreEnvironment = .sandbox, purchases: [[(Int64, Value)]],
        contentType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2], innerType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
    ) throws -> String {
        var attributes: [(Int64, [UInt8])] = [(0, try encode(.text(receiptType(environment)))), (2, try encode(.text(bundleId)))]
        for purchase in purchases {
            attributes.append((17, try attributeSet(purchase.map { type, value in (type, try encode(value)) })))
        }
        let payload = try attributeSet(attributes)
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { coder in
            try coder.serialize(contentType)
            try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(Int64(1))
                    try coder.appendConstructedNode(identifier: .set) { _ in }
                    try coder.appendConstructedNode(identifier: .sequence) { coder in
                        try coder.serialize(innerType)
                        try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                            try coder.serialize(ASN1OctetString(contentBytes: payload[...]))
                        }
                    }
                    try coder.appendConstructedNode(identifier: .set) { _ in }
                }
            }
        }
        return Data(serializer.serializedBytes).base64EncodedString()
    }

    /// The app receipt of `transactions` (StoreKit 1 lists each purchase with its IDs and product).
    public static func appReceipt(bundleId: String, transactions: [JWSTransactionDecodedPayload]) throws -> String {
        try appReceipt(
            bundleId: bundleId, environment: transactions.first?.environment ?? .sandbox,
            purchases: transactions.map { t in
                [
                    (1701, .integer(Int64(t.quantity ?? 1))), (1702, .text(t.productId ?? "")), (1703, .text(t.transactionId ?? "")),
                    (1705, .text(t.originalTransactionId ?? "")),
                ]
            })
    }

    /// A base64 transaction receipt (`SKPaymentTransaction.transactionReceipt`) of `transaction`.
    public static func transactionReceipt(_ transaction: JWSTransactionDecodedPayload) -> String {
        let info =
            #"{ "product-id" = "\#(transaction.productId ?? "")"; "transaction-id" = "\#(transaction.transactionId ?? "")"; "bid" = "\#(transaction.bundleId ?? "")"; }"#
        let environment = transaction.environment == .production ? "" : #" "environment" = "Sandbox";"#
        let receipt = #"{ "signature" = "AAAA"; "purchase-info" = "\#(Data(info.utf8).base64EncodedString())";\#(environment) }"#
        return Data(receipt.utf8).base64EncodedString()
    }

    static func receiptType(_ environment: AppStoreEnvironment) -> String {
        switch environment {
        case .production: "Production"
        case .xcode: "Xcode"
        default: "ProductionSandbox"
        }
    }

    static func encode(_ value: Value) throws -> [UInt8] {
        var serializer = DER.Serializer()
        switch value {
        case .integer(let n): try serializer.serialize(n)
        case .text(let s): try serializer.serialize(ASN1UTF8String(s))
        }
        return serializer.serializedBytes
    }

    static func attributeSet(_ attributes: [(Int64, [UInt8])]) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .set) { coder in
            for (type, value) in attributes {
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(type)
                    try coder.serialize(Int64(1))
                    try coder.serialize(ASN1OctetString(contentBytes: value[...]))
                }
            }
        }
        return serializer.serializedBytes
    }
}
