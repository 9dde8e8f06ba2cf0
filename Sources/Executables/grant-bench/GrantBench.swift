import EntitlementStore
import EnvironmentSettings
import Foundation
import GrantDecision
import GrantWorkload
import Logging
import PipelineRecords
import StageRuntime

/// Grant's database throughput: generated lifecycles (purchases, renewals, upgrades, refunds,
/// consumables…) applied through `EntitlementStore` into a scratch database of the local Postgres,
/// with batching on (BENCH_BATCH_SIZE events per transaction) and off (one per transaction).
/// Prints a human line per run and, last, one JSON object. Connection from POSTGRES_* variables.
/// `grant-bench produce TOPIC COUNT` instead writes generated enriched events to a topic (see
/// ``ReplayTopicWriter``).
@main
struct GrantBench {
    let base: StoreConfiguration
    let policy = GrantPolicy(catalog: LifecycleGenerator.catalog)
    let concurrency: Int
    let logger: Logger

    /// One grant process works every partition it is assigned at once, each in its own database
    /// transaction: the bench's lanes default to the enriched topic's partition count, as one grant
    /// replica consuming the whole topic would run them.
    static let enrichedPartitions = Topics.catalogue.first { $0.name == Topics.enriched }?.partitions ?? 8

    static func main() async throws {
        let env = ProcessInfo.processInfo.environment
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "produce" {
            guard arguments.count == 3, let count = Int(arguments.last!), count > 0 else {
                throw ConfigurationError(variable: "arguments", problem: "usage: grant-bench produce TOPIC COUNT")
            }
            return try await ReplayTopicWriter.run(topic: Array(arguments)[1], count: count, logger: Logger(label: "grant-bench"))
        }
        let customers = Int(env["BENCH_CUSTOMERS"] ?? "") ?? 2000
        let batchSize = Int(env["BENCH_BATCH_SIZE"] ?? "") ?? 500
        let unbatchedEvents = Int(env["BENCH_UNBATCHED_EVENTS"] ?? "") ?? 3000
        var logger = Logger(label: "grant-bench")
        logger.logLevel = .warning
        let bench = GrantBench(
            base: try StoreConfiguration(environment: EnvironmentReader()),
            concurrency: Int(env["BENCH_CONCURRENCY"] ?? "") ?? Self.enrichedPartitions, logger: logger)
        let events = try LifecycleGenerator(seed: 2026).stream(customers: customers).map { try GrantEvent($0) }
        let batched = try await bench.measure(events, size: batchSize)
        print(
            "grant-bench: batching on (\(batchSize) events per transaction, \(bench.concurrency) lanes): \(Int(batched)) events/s over \(events.count) events"
        )
        let subset = Array(events.prefix(unbatchedEvents))
        let unbatched = try await bench.measure(subset, size: 1)
        print(
            "grant-bench: batching off (1 event per transaction, \(bench.concurrency) lanes): \(Int(unbatched)) events/s over \(subset.count) events")
        print(
            #"{"scenario": "grant", "events": \#(events.count), "batch_size": \#(batchSize), "lanes": \#(bench.concurrency), "batched_events_per_s": \#(Int(batched)), "unbatched_events_per_s": \#(Int(unbatched)), "target_events_per_s": 10000}"#
        )
    }

    /// A fresh database on the configured server, with one connection per lane.
    func withDatabase<T: Sendable>(_ body: @Sendable (EntitlementStore) async throws -> T) async throws -> T {
        var server = base
        server.maximumConnections = max(2, concurrency)
        return try await TemporaryDatabase.with(on: server, prefix: "grant_bench", logger: logger) { _, _, client in
            try await body(EntitlementStore(client: client, logger: logger))
        }
    }

    /// Applies `events` split by purchase into `concurrency` lanes (as the stage's partitions would
    /// be), each lane in batches of `size`; returns events per second.
    func measure(_ events: [GrantEvent], size: Int) async throws -> Double {
        let lanesCount = concurrency
        let policy = self.policy
        return try await withDatabase { store in
            var lanes = [[GrantEvent]](repeating: [], count: lanesCount)
            for e in events {
                let key = e.purchaseKey?.purchaseId ?? e.eventKey
                lanes[Int(key.utf8.reduce(UInt32(2_166_136_261)) { ($0 ^ UInt32($1)) &* 16_777_619 } % UInt32(lanesCount))].append(e)
            }
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in lanes {
                    group.addTask {
                        var i = 0
                        while i < lane.count {
                            let batch = Array(lane[i..<min(i + size, lane.count)])
                            for result in try await store.apply(batch, policy: policy) { _ = try result.get() }
                            i += size
                        }
                    }
                }
                try await group.waitForAll()
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return Double(events.count) / seconds
        }
    }
}
