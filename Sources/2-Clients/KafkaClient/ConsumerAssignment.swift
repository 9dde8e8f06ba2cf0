/// The partitions a group's coordinator gave one member, read from the member's assignment as the
/// consumer protocol encodes it (Kafka's `ConsumerProtocolAssignment`: a version, then each topic
/// with its partitions, then user data; big-endian). `DescribeGroups` hands the bytes over as they
/// are, so this is how an outsider (the operator's status, a member holding nothing) learns who
/// holds what.
enum ConsumerAssignment {
    /// The assigned partitions; `nil` when there are no bytes or they are not a consumer assignment.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> [KafkaTopicPartition]? {
        var reader = Reader(bytes: bytes)
        guard let version = reader.int16(), version >= 0, let topicCount = reader.int32(), topicCount >= 0 else { return nil }
        var result: [KafkaTopicPartition] = []
        for _ in 0..<topicCount {
            guard let nameLength = reader.int16(), nameLength >= 0, let name = reader.string(Int(nameLength)),
                let partitionCount = reader.int32(), partitionCount >= 0
            else { return nil }
            for _ in 0..<partitionCount {
                guard let partition = reader.int32() else { return nil }
                result.append(KafkaTopicPartition(topic: name, partition: partition))
            }
        }
        return result
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func int16() -> Int16? {
            guard offset + 2 <= bytes.count else { return nil }
            defer { offset += 2 }
            return Int16(bitPattern: UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]))
        }

        mutating func int32() -> Int32? {
            guard offset + 4 <= bytes.count else { return nil }
            defer { offset += 4 }
            var value: UInt32 = 0
            for i in 0..<4 { value = value << 8 | UInt32(bytes[offset + i]) }
            return Int32(bitPattern: value)
        }

        mutating func string(_ length: Int) -> String? {
            guard offset + length <= bytes.count else { return nil }
            defer { offset += length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
        }
    }
}
