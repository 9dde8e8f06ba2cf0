import Foundation
import PipelineRecords
import Testing

@Suite("an authenticated user's customer")
struct CustomerIdentityTests {
    @Test("name-based IDs are RFC 9562 version 5 (its published example)")
    func rfcVector() {
        let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
        #expect(CustomerIdentity.nameBased("www.example.com", in: dns) == UUID(uuidString: "2ed6657d-e927-568b-95e1-2665a8aea6a2"))
    }

    @Test("a UUID user ID is the customer; any other user has one stable customer of its own")
    func mapping() {
        let uuid = UUID()
        #expect(CustomerIdentity.customer(forUser: uuid.uuidString.lowercased()) == uuid)
        let alice = CustomerIdentity.customer(forUser: "alice@idp")
        #expect(alice == CustomerIdentity.customer(forUser: "alice@idp"))
        #expect(alice != CustomerIdentity.customer(forUser: "Alice@idp"), "user IDs are compared exactly")
        #expect(alice.uuidString.lowercased().dropFirst(14).first == "5", "version 5")
        let many = Set((0..<10_000).map { CustomerIdentity.customer(forUser: "user-\($0)") })
        #expect(many.count == 10_000)
    }
}
