import AppStore
import AppStoreSimulator
import Foundation
import SwiftASN1
import TestSupport
import Testing

/// The StoreKit 1 receipt reader against Apple's own test expectations (the fixtures of Apple's
/// library, read from `../shared`), receipts made here, malformed input and 100,000 mutations.
@Suite(
    "Legacy receipts: the transaction a StoreKit 1 receipt names",
    .enabled(if: SharedFixtures.hasAppleLibraryData || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason)))
struct LegacyReceiptTests {
    static func fixture(_ path: String) throws -> String {
        try String(contentsOf: try SharedFixtures.require("apple-library-testdata/\(path)"), encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    @Test("Apple's fixtures: an Xcode app receipt with one purchase names \"0\", one without names none, a transaction receipt names 33993399")
    func applesExpectations() throws {
        #expect(try LegacyReceipt.transactionID(appReceipt: Self.fixture("xcode/xcode-app-receipt-with-transaction")) == "0")
        #expect(try LegacyReceipt.transactionID(appReceipt: Self.fixture("xcode/xcode-app-receipt-empty")) == nil)
        #expect(try LegacyReceipt.transactionID(transactionReceipt: Self.fixture("mock_signed_data/legacyTransaction")) == "33993399")
    }

    @Test("a receipt made here: the last transaction identifier of the last in-app purchase, other attributes skipped")
    func madeHere() throws {
        let receipt = try SimulatedReceipt.appReceipt(
            bundleId: "com.example.entitlements",
            purchases: [
                [(1701, .integer(1)), (1703, .text("2000000111")), (1705, .text("2000000100"))],
                [(1702, .text("com.example.premium")), (1703, .text("2000000222"))],
            ])
        #expect(try LegacyReceipt.transactionID(appReceipt: receipt) == "2000000222")
        #expect(try LegacyReceipt.transactionID(appReceipt: SimulatedReceipt.appReceipt(bundleId: "com.example.entitlements", purchases: [])) == nil)
        let transaction = Data(
            #"{ "signature" = "AAAA"; "purchase-info" = "\#(Data(#"{ "product-id" = "coins"; "transaction-id" = "1000000042"; }"#.utf8).base64EncodedString())"; }"#
                .utf8
        ).base64EncodedString()
        #expect(try LegacyReceipt.transactionID(transactionReceipt: transaction) == "1000000042")
    }

    @Test("what routes the lookup: the receipt's bundle ID and environment, from receipts the simulated Apple mints and Apple's fixtures")
    func contents() throws {
        let purchase = JWSTransactionDecodedPayload(
            originalTransactionId: "2000000300", transactionId: "2000000301", bundleId: "com.example.entitlements", productId: "premium",
            quantity: 1, environment: .sandbox)
        let app = try LegacyReceipt.read(appReceipt: SimulatedReceipt.appReceipt(bundleId: "com.example.entitlements", transactions: [purchase]))
        #expect(app == LegacyReceipt.Contents(transactionId: "2000000300", bundleId: "com.example.entitlements", environment: .sandbox))
        let single = try LegacyReceipt.read(transactionReceipt: SimulatedReceipt.transactionReceipt(purchase))
        #expect(single == LegacyReceipt.Contents(transactionId: "2000000301", bundleId: "com.example.entitlements", environment: .sandbox))
        var production = purchase
        production.environment = .production
        #expect(try LegacyReceipt.read(transactionReceipt: SimulatedReceipt.transactionReceipt(production)).environment == .production)
        let xcode = try LegacyReceipt.read(appReceipt: Self.fixture("xcode/xcode-app-receipt-with-transaction"))
        #expect(xcode.transactionId == "0")
        print("Apple's Xcode receipt: bundle \(xcode.bundleId ?? "-"), environment \(xcode.environment?.rawValue ?? "-")")
    }

    @Test("malformed receipts are refused with a typed error: not base64, too large, truncated, another object identifier, not a receipt")
    func malformed() throws {
        let valid = try Self.fixture("xcode/xcode-app-receipt-with-transaction")
        let bytes = [UInt8](Data(base64Encoded: valid)!)
        func code(_ body: () throws -> String?) -> String? {
            do {
                _ = try body()
                return nil
            } catch let error as LegacyReceiptError {
                return error.code.rawValue
            } catch {
                return "untyped: \(error)"
            }
        }
        #expect(code { try LegacyReceipt.transactionID(appReceipt: "not base64 at all!") } == "receipt.not_base64")
        #expect(code { try LegacyReceipt.transactionID(appReceipt: "") } == "receipt.not_base64")
        #expect(code { try LegacyReceipt.transactionID(appReceipt: String(repeating: "A", count: 10_000_000)) } == "receipt.too_large")
        for cut in [1, 10, bytes.count / 2, bytes.count - 1] {
            #expect(
                code { try LegacyReceipt.transactionID(appReceipt: Data(bytes.prefix(cut)).base64EncodedString()) } == "receipt.malformed",
                "truncated to \(cut) bytes")
        }
        let otherType = try SimulatedReceipt.appReceipt(
            bundleId: "com.example.entitlements", purchases: [[(1703, .text("1"))]], contentType: [1, 2, 840, 113_549, 1, 7, 3])
        #expect(code { try LegacyReceipt.transactionID(appReceipt: otherType) } == "receipt.not_signed_data")
        let otherContent = try SimulatedReceipt.appReceipt(
            bundleId: "com.example.entitlements", purchases: [[(1703, .text("1"))]], innerType: [1, 2, 840, 113_549, 1, 9, 9])
        #expect(code { try LegacyReceipt.transactionID(appReceipt: otherContent) } == "receipt.not_signed_data")
        #expect(code { try LegacyReceipt.transactionID(appReceipt: Data("just text".utf8).base64EncodedString()) } == "receipt.malformed")
        #expect(code { try LegacyReceipt.transactionID(transactionReceipt: Data([0xff, 0xfe]).base64EncodedString()) } == "receipt.malformed")
        #expect(
            code { try LegacyReceipt.transactionID(transactionReceipt: Data(#"{ "signature" = "AAAA"; }"#.utf8).base64EncodedString()) }
                == "receipt.malformed")
    }

    /// Each mutation flips, drops, repeats or cuts the receipt's bytes; the reader must answer a
    /// typed error or an identifier, never crash or hang.
    @Test("100,000 mutations of Apple's receipt: a typed error or an identifier, never a crash")
    func fuzz() throws {
        let bytes = [UInt8](Data(base64Encoded: try Self.fixture("xcode/xcode-app-receipt-with-transaction"))!)
        var random = SeededGenerator(seed: SeededGenerator.seed(from: "RECEIPT_FUZZ_SEED", label: "receipt fuzz"))
        var outcomes: [String: Int] = [:]
        for _ in 0..<100_000 {
            var mutated = bytes
            let position = Int.random(in: 0..<mutated.count, using: &random)
            switch Int.random(in: 0..<5, using: &random) {
            case 0: mutated[position] = UInt8.random(in: 0...255, using: &random)
            case 1: mutated[position] ^= 1 << UInt8.random(in: 0..<8, using: &random)
            case 2: mutated.removeSubrange(position..<min(mutated.count, position + Int.random(in: 1...32, using: &random)))
            case 3: mutated.insert(contentsOf: mutated[position..<min(mutated.count, position + 16)], at: position)
            default: mutated = Array(mutated.prefix(position))
            }
            do {
                let id = try LegacyReceipt.transactionID(appReceipt: Data(mutated).base64EncodedString())
                outcomes[id == nil ? "none" : "identifier", default: 0] += 1
            } catch {
                outcomes[error.code.rawValue, default: 0] += 1
            }
        }
        print("receipt fuzz outcomes: \(outcomes.sorted { $0.key < $1.key })")
        #expect(outcomes.values.reduce(0, +) == 100_000)
        #expect(outcomes["receipt.malformed", default: 0] > 0, "mutations that break the structure are refused as malformed")
    }
}
