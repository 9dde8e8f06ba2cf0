import ErrorClassification
import KafkaClient

/// One stage of the pipeline: turns a record of its input topic into records for its output
/// topics. The runtime owns everything else: consuming, retries, dead letters, offsets, metrics.
///
/// Throw an error conforming to ``ClassifiedError`` to say whether a failure is worth retrying;
/// anything else counts as permanent and goes to the stage's dead-letter topic.
public protocol PipelineStage: Sendable {
    /// The stage's name in metrics, logs and dead-letter headers (e.g. `verify`).
    var name: String { get }

    /// Processes one record. The returned records are produced, and acknowledged by the broker,
    /// before the input's offset is committed.
    func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage]

    /// Processes consecutive records of one partition together (one database transaction, one
    /// API lookup for several events). Returns one result per record, in order. The default
    /// calls ``process(_:)`` for each.
    ///
    /// A transient failure for a record means it and every record after it are retried; a
    /// permanent one dead-letters that record alone. If the whole call throws, a transient error
    /// retries the batch and a permanent one makes the runtime process the records one by one to
    /// find the bad one.
    func process(batch: [KafkaMessage]) async throws -> [Result<[KafkaOutgoingMessage], any Error>]

    /// Called, in order, with input records of one partition whose outputs were all produced and
    /// acknowledged by the broker (and whose offsets were stored); never with a record that was
    /// dead-lettered. Until this call an output may still be lost and its record processed again,
    /// so a stage that remembers what it has done (enrich's replay cache) remembers it here. The
    /// default does nothing.
    func delivered(_ inputs: [KafkaMessage])

    /// Called whenever the part of the input this member owns changes (after each rebalance), so a
    /// stage that spends a budget shared by its whole group (enrich's App Store API rate) can take
    /// its part of it. The default does nothing.
    func ownershipChanged(_ ownership: PartitionOwnership)
}

/// How many of its input's partitions a member of a consumer group owns.
public struct PartitionOwnership: Hashable, Sendable, CustomStringConvertible {
    public var owned: Int
    public var total: Int

    public init(owned: Int, total: Int) {
        self.owned = owned
        self.total = total
    }

    /// The member's part (0…1) of the group's work: the partitions it owns over all there are.
    public var share: Double { total > 0 ? Double(min(owned, total)) / Double(total) : 0 }

    public var description: String { "\(owned) of \(total)" }
}

extension PipelineStage {
    public func delivered(_ inputs: [KafkaMessage]) {}

    public func ownershipChanged(_ ownership: PartitionOwnership) {}

    public func process(batch: [KafkaMessage]) async throws -> [Result<[KafkaOutgoingMessage], any Error>] {
        var results: [Result<[KafkaOutgoingMessage], any Error>] = []
        for message in batch {
            do {
                results.append(.success(try await process(message)))
            } catch {
                results.append(.failure(error))
                // Nothing after a transient failure may run ahead of it.
                if FailureClassification(error).isTransient { break }
            }
        }
        return results
    }
}
