import Foundation
import KafkaClient
import PipelineOperations
import Testing

/// What downstream consumers of entitlements.changes.v1 rely on, checked from the records alone.
@Suite("the entitlement changes stream audit")
struct ChangeStreamAuditTests {
    private var offset: Int64 = 0

    private mutating func record(customer: String, seq: Int64, event: String, change: String = "granted", key: String = "premium") -> KafkaMessage {
        offset += 1
        let body =
            #"{"schema":"entitlements.changes.v1","environment":"Sandbox","customerId":"\#(customer)","seq":\#(seq),"change":"\#(change)","entitlementKey":"\#(key)","sourceId":"1000","productId":"p","active":true,"reason":"purchased","cause":{"eventKey":"\#(event)","type":"SUBSCRIBED","lookup":"history","asOf":1}}"#
        return KafkaMessage(
            topic: "entitlements.changes.v1", partition: 0, offset: offset, key: Array("Sandbox:\(customer)".utf8), value: Array(body.utf8),
            headers: [], timestamp: nil)
    }

    @Test("whole streams pass, and a record delivered again unchanged is counted, not a fault")
    mutating func whole() throws {
        let a = record(customer: "A", seq: 1, event: "n1")
        let messages = [a, record(customer: "A", seq: 2, event: "n2"), record(customer: "B", seq: 1, event: "n3"), a]
        let audit = try ChangeStreamAudit(messages: messages)
        #expect(audit.isConsistent)
        #expect(audit.records == 4)
        #expect(audit.customers == 2)
        #expect(audit.redelivered == 1)
    }

    @Test("an external purchase token (no customer, no seq) is counted apart and breaks no customer's stream")
    mutating func externalPurchaseToken() throws {
        offset += 1
        let body =
            #"{"schema":"entitlements.changes.v1","environment":"Sandbox","change":"external_purchase_token","externalPurchaseToken":{"externalPurchaseId":"SANDBOX_1","tokenCreationDate":1},"cause":{"eventKey":"notification:x","type":"EXTERNAL_PURCHASE_TOKEN","lookup":"none","asOf":1}}"#
        let token = KafkaMessage(
            topic: "entitlements.changes.v1", partition: 0, offset: offset, key: Array("Sandbox:external-purchase:SANDBOX_1".utf8),
            value: Array(body.utf8), headers: [], timestamp: nil)
        let audit = try ChangeStreamAudit(messages: [record(customer: "A", seq: 1, event: "n1"), token, record(customer: "A", seq: 2, event: "n2")])
        #expect(audit.isConsistent)
        #expect(audit.records == 3 && audit.customers == 1 && audit.externalPurchaseTokens == 1)
    }

    @Test("a missing seq, one seq with two bodies, and one change under two seqs are each a fault")
    mutating func faults() throws {
        let gap = try ChangeStreamAudit(messages: [record(customer: "A", seq: 1, event: "n1"), record(customer: "A", seq: 3, event: "n3")])
        #expect(gap.faults.map(\.kind) == ["gap"])
        #expect(gap.faults.first?.detail.contains("missing seq 2") == true)

        let conflict = try ChangeStreamAudit(messages: [
            record(customer: "A", seq: 1, event: "n1"), record(customer: "A", seq: 1, event: "n1", change: "revoked"),
        ])
        #expect(conflict.faults.map(\.kind) == ["conflict"])

        let repeated = try ChangeStreamAudit(messages: [record(customer: "A", seq: 1, event: "n1"), record(customer: "A", seq: 2, event: "n1")])
        #expect(repeated.faults.map(\.kind) == ["repeated"])
    }

    @Test("a record that is not an entitlement change is a typed error naming where it is")
    func malformed() throws {
        let bad = KafkaMessage(
            topic: "entitlements.changes.v1", partition: 3, offset: 9, key: nil, value: Array("{}".utf8), headers: [], timestamp: nil)
        #expect {
            try ChangeStreamAudit(messages: [bad])
        } throws: { error in
            (error as? OperationsError)?.code == .malformedChange && "\(error)".contains("3/9")
        }
    }
}
