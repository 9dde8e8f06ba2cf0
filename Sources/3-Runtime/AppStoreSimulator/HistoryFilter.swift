import AppStore
import AppStoreServerAPI
import Foundation
import Hummingbird
import NIOCore

/// The query parameters of Get Transaction History v2, validated with Apple's error codes.
struct HistoryFilter {
    var startDate: Date?
    var endDate: Date?
    var productIds: Set<String>
    var productTypes: Set<HistoryProductType>
    var groups: Set<String>
    var ownership: String?
    var revoked: Bool?
    var descending = false

    init(_ query: Parameters) throws(SimulatorError) {
        func date(_ name: String, _ code: Int64) throws(SimulatorError) -> Date? {
            guard let raw = query.get(name) else { return nil }
            guard let ms = Int64(raw), ms >= 0 else { throw SimulatorError.badRequest(code, "Invalid \(name).") }
            return AppStoreJSON.date(milliseconds: ms)
        }
        startDate = try date("startDate", 4_000_015)
        endDate = try date("endDate", 4_000_016)
        if let startDate, let endDate, startDate >= endDate {
            throw SimulatorError.badRequest(4_000_013, "Start date after end date.")
        }
        productIds = Set(query.getAll("productId"))
        var types: Set<HistoryProductType> = []
        for raw in query.getAll("productType") {
            guard let type = HistoryProductType(rawValue: String(raw)) else { throw SimulatorError.badRequest(4_000_022, "Invalid product type.") }
            types.insert(type)
        }
        productTypes = types
        groups = Set(query.getAll("subscriptionGroupIdentifier"))
        if let raw = query.get("inAppOwnershipType") {
            guard raw == "PURCHASED" || raw == "FAMILY_SHARED" else {
                throw SimulatorError.badRequest(4_000_026, "Invalid in-app ownership type.")
            }
            ownership = String(raw)
        }
        if let raw = query.get("revoked") {
            guard raw == "true" || raw == "false" else { throw SimulatorError.badRequest(4_000_030, "Invalid revoked.") }
            revoked = raw == "true"
        }
        if let raw = query.get("sort") {
            guard raw == "ASCENDING" || raw == "DESCENDING" else { throw SimulatorError.badRequest(4_000_021, "Invalid sort.") }
            descending = raw == "DESCENDING"
        }
    }

    func matches(_ t: JWSTransactionDecodedPayload) -> Bool {
        if let startDate, (t.purchaseDate ?? .distantPast) < startDate { return false }
        if let endDate, (t.purchaseDate ?? .distantPast) >= endDate { return false }
        if !productIds.isEmpty, !productIds.contains(t.productId ?? "") { return false }
        if !productTypes.isEmpty {
            guard let type = HistoryProductType(t.type), productTypes.contains(type) else { return false }
        }
        if !groups.isEmpty, !groups.contains(t.subscriptionGroupIdentifier ?? "") { return false }
        if let ownership, t.inAppOwnershipType?.rawValue != ownership { return false }
        if let revoked, (t.revocationDate != nil) != revoked { return false }
        return true
    }
}
