import CRdKafka
import Foundation

/// A consumer group's committed positions, read and moved from outside the group: what an operator
/// needs to replay a stage (reset its group to a time or an offset) while the stage is stopped.
///
/// Kafka only accepts offsets committed from outside a group while the group has no active member,
/// so ``groupState(_:)`` lets callers refuse early with a clear message; the broker refuses anyway.
public struct KafkaGroupOffsets: Sendable {
    /// A group's membership as the coordinator reports it.
    public struct GroupState: Sendable, Hashable {
        /// `Empty`, `Stable`, `PreparingRebalance`, `Dead`, … as the broker names it.
        public var state: String
        /// How many members are joined now.
        public var members: Int
        /// True when offsets may be committed from outside (no member is joined).
        public var isInactive: Bool { members == 0 }
    }

    /// The first and one-past-last offsets of a partition.
    public struct Watermarks: Sendable, Hashable {
        public var low: Int64
        public var high: Int64
    }

    public let configuration: KafkaClientConfiguration
    public let timeout: Duration

    public init(configuration: KafkaClientConfiguration, timeout: Duration = .seconds(15)) {
        self.configuration = configuration
        self.timeout = timeout
    }

    /// The partitions of `topic`, from the cluster's metadata.
    public func partitions(of topic: String) async throws -> [KafkaTopicPartition] {
        guard let count = try await KafkaAdmin(configuration: configuration, timeout: timeout).describeTopics()[topic] else {
            throw KafkaError(code: .metadata, reason: "topic \(topic) does not exist")
        }
        return (0..<Int32(count)).map { KafkaTopicPartition(topic: topic, partition: $0) }
    }

    /// The group's membership, or `nil` when the broker does not know the group (never used).
    public func groupState(_ group: String) async throws -> GroupState? {
        try await describeGroup(group).map { GroupState(state: $0.state, members: $0.members.count) }
    }

    /// One joined member of a group, as the coordinator lists it.
    public struct Member: Sendable, Hashable, Codable {
        public var memberID: String
        /// The member's `client.id` (the stages set theirs to the stage's name).
        public var clientID: String
        /// Where the member connected from, as the broker saw it (`/10.0.0.7`); empty when unknown.
        public var host: String
        /// The partitions the coordinator assigned it; `nil` when the broker did not say.
        public var assignment: [KafkaTopicPartition]?

        public init(memberID: String, clientID: String, host: String, assignment: [KafkaTopicPartition]? = nil) {
            self.memberID = memberID
            self.clientID = clientID
            self.host = host
            self.assignment = assignment
        }
    }

    /// A group's membership with its members.
    public struct GroupDescription: Sendable, Hashable {
        public var state: String
        public var members: [Member]
    }

    /// Every partition some member holds; `nil` when a member's assignment is unknown.
    public static func held(by members: [Member]) -> Set<KafkaTopicPartition>? {
        var held: Set<KafkaTopicPartition> = []
        for member in members {
            guard let assignment = member.assignment else { return nil }
            held.formUnion(assignment)
        }
        return held
    }

    /// The group's state and joined members (client IDs and hosts), or `nil` when the broker does
    /// not know the group (never used, or dead).
    public func describeGroup(_ group: String) async throws -> GroupDescription? {
        try await withHandle(group: nil) { (rk, timeoutMs) throws(KafkaError) -> GroupDescription? in
            var list: UnsafePointer<rd_kafka_group_list>?
            let err = rd_kafka_list_groups(rk, group, &list, timeoutMs)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let list else {
                throw .rdKafka(.admin, err, context: "describe group \(group)")
            }
            defer { rd_kafka_group_list_destroy(list) }
            for i in 0..<Int(list.pointee.group_cnt) {
                let info = list.pointee.groups[i]
                guard String(cString: info.group) == group, info.err == RD_KAFKA_RESP_ERR_NO_ERROR else { continue }
                let state = info.state.map { String(cString: $0) } ?? ""
                if state == "Dead" { return nil }
                var members: [Member] = []
                for m in 0..<Int(max(0, info.member_cnt)) {
                    guard let pointer = info.members?.advanced(by: m) else { break }
                    let member = pointer.pointee
                    let assignment = member.member_assignment.flatMap { bytes in
                        ConsumerAssignment.decode(UnsafeRawBufferPointer(start: bytes, count: Int(max(0, member.member_assignment_size))))
                    }
                    members.append(
                        Member(
                            memberID: member.member_id.map { String(cString: $0) } ?? "",
                            clientID: member.client_id.map { String(cString: $0) } ?? "",
                            host: member.client_host.map { String(cString: $0) } ?? "",
                            assignment: assignment))
                }
                return GroupDescription(state: state, members: members)
            }
            return nil
        }
    }

    /// What waits on `topic` for `group`, and who could take it.
    public struct Waiting: Sendable, Hashable {
        /// Records not yet committed, per partition that has any.
        public var lag: [KafkaTopicPartition: Int64]
        /// The group's committed offset of each partition with lag (`nil`: none committed).
        public var committed: [KafkaTopicPartition: Int64?]
        /// The partitions the group's members hold; `nil` when a member's assignment is unknown
        /// (some brokers, the local Tansu among them, do not report assignments).
        public var held: Set<KafkaTopicPartition>?
        /// How many members the group has.
        public var members: Int

        public init(lag: [KafkaTopicPartition: Int64], committed: [KafkaTopicPartition: Int64?], held: Set<KafkaTopicPartition>?, members: Int) {
            self.lag = lag
            self.committed = committed
            self.held = held
            self.members = members
        }
    }

    /// The partitions of `topic` with records `group` has not committed, with the group's committed
    /// offsets and, where the broker says, which partitions its members hold.
    public func waiting(group: String, topic: String) async throws -> Waiting {
        let members = try await describeGroup(group)?.members ?? []
        let held = Self.held(by: members)
        let partitions = try await self.partitions(of: topic)
        let committed = try await self.committed(group: group, partitions: partitions)
        let marks = try await watermarks(partitions)
        var result = Waiting(lag: [:], committed: [:], held: held, members: members.count)
        for partition in partitions {
            guard let mark = marks[partition] else { continue }
            let position = (committed[partition] ?? nil)
            let lag = mark.high - (position ?? mark.low)
            guard lag > 0 else { continue }
            result.lag[partition] = lag
            result.committed[partition] = position
        }
        return result
    }

    /// The offsets `group` has committed for `partitions` (`nil` where it has none).
    public func committed(group: String, partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64?] {
        try await withHandle(group: group) { (rk, timeoutMs) throws(KafkaError) -> [KafkaTopicPartition: Int64?] in
            let list = TopicPartitionList.of(partitions)
            let err = rd_kafka_committed(rk, list.pointer, timeoutMs)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(.offsetCommit, err, context: "read committed offsets of \(group)") }
            var result: [KafkaTopicPartition: Int64?] = [:]
            for entry in list.entries {
                guard entry.error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw .rdKafka(.offsetCommit, entry.error, context: "read committed offset of \(entry.partition)")
                }
                result[entry.partition] = entry.offset >= 0 ? entry.offset : nil
            }
            return result
        }
    }

    /// The watermarks of each partition.
    public func watermarks(_ partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Watermarks] {
        try await withHandle(group: nil) { (rk, timeoutMs) throws(KafkaError) -> [KafkaTopicPartition: Watermarks] in
            var result: [KafkaTopicPartition: Watermarks] = [:]
            for partition in partitions {
                var low: Int64 = 0
                var high: Int64 = 0
                let err = rd_kafka_query_watermark_offsets(rk, partition.topic, partition.partition, &low, &high, timeoutMs)
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(.metadata, err, context: "watermarks of \(partition)") }
                result[partition] = Watermarks(low: low, high: high)
            }
            return result
        }
    }

    /// For each partition, the first offset whose record timestamp is at or after `time`;
    /// `nil` where no record is that recent.
    public func offsets(at time: Date, for partitions: [KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64?] {
        let millis = Int64((time.timeIntervalSince1970 * 1000).rounded(.down))
        return try await withHandle(group: nil) { (rk, timeoutMs) throws(KafkaError) -> [KafkaTopicPartition: Int64?] in
            let list = TopicPartitionList(capacity: partitions.count)
            for partition in partitions { list.add(partition, offset: millis) }
            let err = rd_kafka_offsets_for_times(rk, list.pointer, timeoutMs)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(.metadata, err, context: "look up offsets by time") }
            var result: [KafkaTopicPartition: Int64?] = [:]
            for entry in list.entries {
                guard entry.error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw .rdKafka(.metadata, entry.error, context: "look up the offset by time of \(entry.partition)")
                }
                result[entry.partition] = entry.offset >= 0 ? entry.offset : nil
            }
            return result
        }
    }

    /// Commits `offsets` (the next offset to read, per partition) for `group` from outside it.
    /// The broker refuses while the group has active members.
    public func commit(group: String, offsets: [KafkaTopicPartition: Int64]) async throws {
        try await withHandle(group: group) { (rk, _) throws(KafkaError) in
            let list = TopicPartitionList(capacity: offsets.count)
            for (partition, offset) in offsets.sorted(by: { $0.key.description < $1.key.description }) {
                list.add(partition, offset: offset)
            }
            let err = rd_kafka_commit(rk, list.pointer, 0)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw .rdKafka(.offsetCommit, err, context: "commit offsets for group \(group) (is a member still running?)")
            }
            for entry in list.entries where entry.error != RD_KAFKA_RESP_ERR_NO_ERROR {
                throw .rdKafka(.offsetCommit, entry.error, context: "commit the offset of \(entry.partition) for group \(group)")
            }
        }
    }

    /// Runs `body` on a short-lived consumer handle (with `group.id` when given) off the
    /// cooperative pool, since every call here blocks.
    private func withHandle<T: Sendable>(
        group: String?, _ body: @escaping @Sendable (OpaquePointer, Int32) throws(KafkaError) -> T
    ) async throws -> T {
        var props = configuration.baseProperties.merging(configuration.properties) { _, o in o }
        props["enable.auto.commit"] = "false"
        props["enable.auto.offset.store"] = "false"
        if let group { props["group.id"] = group }
        let timeoutMs = Int32(clamping: timeout.milliseconds)
        return try await Blocking.run { [props] () -> Result<T, KafkaError> in
            Result { () throws(KafkaError) -> T in
                let conf = try RDKafkaConfig.make(props)
                let rk = try RDKafkaConfig.newHandle(type: RD_KAFKA_CONSUMER, conf: conf)
                defer {
                    if group != nil { _ = rd_kafka_consumer_close(rk) }
                    rd_kafka_destroy(rk)
                }
                return try body(rk, timeoutMs)
            }
        }.get()
    }
}
