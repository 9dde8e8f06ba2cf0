import Foundation
import KafkaClient
import PipelineRecords

/// Checks what consumers of `entitlements.changes.v1` rely on: each customer's changes carry
/// `seq` 1, 2, 3, … without a gap, and no change is published twice under different numbers.
/// The outbox publishes at least once, so the same record delivered again (same `seq`, same
/// body) is counted but is not a fault: consumers skip a `seq` they have seen. An
/// `external_purchase_token` names no customer and has no `seq`: counted, not audited.
public struct ChangeStreamAudit: Sendable, Codable, Hashable {
    /// One customer whose stream is broken, and how.
    public struct Fault: Sendable, Codable, Hashable {
        /// `<environment>:<customerId>`.
        public var customer: String
        /// `gap` (a `seq` is missing), `conflict` (one `seq`, two different bodies) or `repeated`
        /// (one change published under two `seq`s).
        public var kind: String
        public var detail: String
    }

    public var records = 0
    public var customers = 0
    /// Records delivered again unchanged (at-least-once publishing).
    public var redelivered = 0
    /// `external_purchase_token` records (no customer, no `seq`; consumers drop repeats by `cause.eventKey`).
    public var externalPurchaseTokens = 0
    public var faults: [Fault] = []

    public var isConsistent: Bool { faults.isEmpty }

    /// The fields the audit compares; the rest of the body is compared byte for byte.
    private struct Kind: Decodable { var change: String? }

    private struct Change: Decodable {
        struct Cause: Decodable { var eventKey: String? }
        var environment: String
        var customerId: String
        var seq: Int64
        var change: String
        var entitlementKey: String
        var sourceId: String
        var cause: Cause?
    }

    /// Audits records of the changes topic (any order across partitions; one customer's records
    /// are on one partition).
    public init(messages: [KafkaMessage]) throws {
        var bySeq: [String: [Int64: [UInt8]]] = [:]
        var changeKeys: [String: [String: Int64]] = [:]
        let decoder = JSONDecoder()
        for message in messages {
            records += 1
            let change: Change
            do {
                if try decoder.decode(Kind.self, from: Data(message.value)).change == "external_purchase_token" {
                    externalPurchaseTokens += 1
                    continue
                }
                change = try decoder.decode(Change.self, from: Data(message.value))
            } catch {
                throw OperationsError(
                    .malformedChange, "record \(message.partition)/\(message.offset) is not an entitlement change: \(error)")
            }
            let customer = "\(change.environment):\(change.customerId.lowercased())"
            if let seen = bySeq[customer]?[change.seq] {
                if seen == message.value {
                    redelivered += 1
                } else {
                    faults.append(.init(customer: customer, kind: "conflict", detail: "seq \(change.seq) has two different bodies"))
                }
                continue
            }
            bySeq[customer, default: [:]][change.seq] = message.value
            let identity = [change.entitlementKey, change.sourceId, change.change, change.cause?.eventKey ?? ""].joined(separator: "|")
            if let earlier = changeKeys[customer]?[identity] {
                faults.append(
                    .init(customer: customer, kind: "repeated", detail: "seq \(earlier) and \(change.seq) are the same change (\(identity))"))
            }
            changeKeys[customer, default: [:]][identity] = change.seq
        }
        customers = bySeq.count
        for (customer, seqs) in bySeq.sorted(by: { $0.key < $1.key }) {
            let highest = seqs.keys.max() ?? 0
            let missing = (1...max(highest, 1)).filter { seqs[$0] == nil }
            if !missing.isEmpty {
                let shown = missing.prefix(5).map(String.init).joined(separator: ", ")
                faults.append(.init(customer: customer, kind: "gap", detail: "missing seq \(shown)\(missing.count > 5 ? ", …" : "") of 1…\(highest)"))
            }
        }
    }

    /// Reads the whole changes topic (every partition from its start) and audits it.
    public static func scan(client: KafkaClientConfiguration, topic: String = Topics.entitlementChanges) async throws -> ChangeStreamAudit {
        let partitions = try await KafkaGroupOffsets(configuration: client).partitions(of: topic)
        let start = Dictionary(uniqueKeysWithValues: partitions.map { ($0, Int64?.none) })
        let scanner = KafkaTopicScanner(configuration: client, idle: .seconds(3), limit: 10_000_000)
        return try ChangeStreamAudit(messages: try await scanner.scan(start))
    }
}
