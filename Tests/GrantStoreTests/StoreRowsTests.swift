import Foundation
import Testing

@testable import EntitlementStore

@Suite("batch rows")
struct StoreRowsTests {
    @Test("a UUID in a batch row is written exactly as Foundation writes it, present or absent")
    func uuidText() throws {
        var ids = (0..<2000).map { _ in UUID() }
        ids += [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))]
        for id in ids { #expect(UUIDField.text(id) == id.uuidString) }

        struct Foundationish: Encodable { var customerId: UUID; var owner: UUID? }
        struct Ours: Encodable { @UUIDField var customerId: UUID; @OptionalUUIDField var owner: UUID? }
        let id = ids[0]
        let foundation = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Foundationish(customerId: id, owner: ids[1]))) as? NSDictionary
        let ours = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Ours(customerId: id, owner: ids[1]))) as? NSDictionary
        #expect(foundation == ours)
        let absent = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Ours(customerId: id, owner: nil))) as? [String: Any]
        #expect(absent?["owner"] is NSNull)
    }
}
