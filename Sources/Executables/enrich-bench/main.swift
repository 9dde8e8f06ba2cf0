import AppStore
import AppStoreServerAPI
import AppStoreSigning
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import EnrichService
import Foundation
import KafkaClient
import Logging
import PipelineRecords
import ServiceLifecycle
import StageRuntime

/// `enrich-bench`: the real enrich stage on the real broker against the simulator on loopback, with
/// lookup coalescing on and off. Events arrive in bursts (several per purchase in a row, as renewals,
/// retries and app uploads do), so coalescing has something to share. Prints one line per mode and,
/// last, one JSON object. Run through `deploy/local/bench enrich`.
struct Options {
    var events = 2000
    var perPurchase = 5
    var batchSize = 50
    var latencyMilliseconds = 0
    var bootstrap = ProcessInfo.processInfo.environment["KAFKA_BOOTSTRAP_SERVERS"] ?? "127.0.0.1:19092"

    init(_ arguments: [String]) {
        var it = arguments.makeIterator()
        while let name = it.next() {
            let value = it.next().flatMap(Int.init) ?? 0
            switch name {
            case "--events": events = max(10, value)
            case "--per-purchase": perPurchase = max(1, value)
            case "--batch": batchSize = max(1, value)
            case "--latency-ms": latencyMilliseconds = max(0, value)
            default:
                FileHandle.standardError.write(Data("usage: enrich-bench [--events N] [--per-purchase K] [--batch B] [--latency-ms L]\n".utf8))
                exit(2)
            }
        }
    }
}

struct ModeResult: Codable {
    var coalesce: Bool
    var events: Int
    var seconds: Double
    var eventsPerSecond: Double
    var apiCalls: Int
    var apiCallsPerThousandEvents: Double
    var deadLetters: Int
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
var logger = Logger(label: "enrich-bench")
logger.logLevel = .warning
let kafka = KafkaClientConfiguration(bootstrapServers: options.bootstrap, clientID: "enrich-bench")

// The simulator, in process, on a free loopback port.
let apiKey = SimulatorAPIKey(issuerID: UUID().uuidString.lowercased(), keyID: "BENCHKEY01", privateKey: .init())
let authority = try SigningAuthority(options: SigningAuthorityOptions(name: "Enrich Bench Sim"))
let apple = try SimulatedApple(authority: authority, apiKey: apiKey)
let bundleId = "com.example.entitlements"
let (portStream, portContinuation) = AsyncStream.makeStream(of: Int.self)
let simApp = apple.makeApplication(host: "127.0.0.1", port: 0, logger: logger) { port in portContinuation.yield(port) }
let simGroup = ServiceGroup(services: [simApp], logger: logger)
let simTask = Task { try await simGroup.run() }
var boundPort: Int?
for await port in portStream {
    boundPort = port
    break
}
guard let simPort = boundPort else { fatalError("the simulator did not start") }
apple.faults.set(FaultPlan(latencyMilliseconds: options.latencyMilliseconds))

// Purchases, each with `perPurchase` transactions, and one verified notification per transaction.
let purchases = max(1, options.events / options.perPurchase)
let t0 = Date().addingTimeInterval(-Double(options.perPurchase + 1) * 30 * 86_400)
var records: [VerifiedRecord] = []
for p in 0..<purchases {
    let original = String(3_000_000_000_000_000 + p * 1000)
    var transactions: [JWSTransactionDecodedPayload] = []
    for i in 0..<options.perPurchase {
        let purchased = AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: t0.addingTimeInterval(Double(i) * 30 * 86_400)))
        transactions.append(
            JWSTransactionDecodedPayload(
                originalTransactionId: original, transactionId: String(Int(original)! + i), bundleId: bundleId,
                productId: "com.example.premium.monthly", subscriptionGroupIdentifier: "21000000", purchaseDate: purchased,
                originalPurchaseDate: t0, expiresDate: purchased.addingTimeInterval(30 * 86_400), quantity: 1, type: .autoRenewableSubscription,
                appAccountToken: i == 0 ? UUID() : nil, inAppOwnershipType: .purchased, environment: .sandbox, transactionReason: .purchase))
    }
    try apple.store.upsert(transactions)
    for t in transactions {
        let uuid = UUID().uuidString.lowercased()
        records.append(
            VerifiedRecord(
                kind: .notification, source: "apple-webhook", environment: .sandbox, bundleId: bundleId, originalTransactionId: original,
                transactionId: t.transactionId, notificationUUID: uuid,
                notification: ResponseBodyV2DecodedPayload(
                    notificationType: .didRenew, notificationUUID: uuid, data: NotificationData(environment: .sandbox, bundleId: bundleId),
                    version: "2.0", signedDate: Date()),
                transaction: t, signedPayload: "h.p.s", verifiedAt: Date()))
    }
}

@MainActor
func runMode(coalesce: Bool) async throws -> ModeResult {
    let suffix = "\(coalesce ? "on" : "off")-\(UUID().uuidString.prefix(6).lowercased())"
    let input = "bench-verified-\(suffix)"
    let output = "bench-enriched-\(suffix)"
    let dlq = "bench-enrich-dlq-\(suffix)"
    _ = try await KafkaAdmin(configuration: kafka).createTopics([
        .init(name: input, partitions: 8), .init(name: output, partitions: 8), .init(name: dlq, partitions: 1),
    ])
    let loader = try KafkaProducer(configuration: KafkaProducerConfiguration(client: kafka, linger: .milliseconds(5)), logger: logger)
    _ = try await loader.sendAll(try records.map { KafkaOutgoingMessage(topic: input, key: $0.key, value: try $0.encoded()) })
    await loader.close()
    let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(client: kafka, linger: .milliseconds(2)), logger: logger)

    let client = try AppStoreServerAPIClient(
        configuration: .init(
            credentials: [AppStoreAPICredentials(bundleId: bundleId, issuerID: apiKey.issuerID, keyID: apiKey.keyID, privateKey: apiKey.privateKey)],
            baseURLOverride: "http://127.0.0.1:\(simPort)", rateLimits: RateLimitPolicy(scale: 10_000)),
        httpClient: HTTPClient.shared,
        verifier: try SignedDataVerifier(
            configuration: .init(
                apps: [try AppStoreApp(bundleId: bundleId, environments: [.sandbox])], additionalTrustedRoots: [authority.root])),
        logger: logger)
    let stage = EnrichStage(lookup: PurchaseLookup(client: client), outputTopic: output, coalesce: coalesce, logger: logger)
    let consumerConfiguration = { (group: String, topic: String) in
        KafkaConsumerConfiguration(
            client: kafka, groupID: group, topics: [topic], sessionTimeout: .seconds(6), heartbeatInterval: .seconds(2),
            fetchWaitMax: .milliseconds(25), commitInterval: .milliseconds(500))
    }
    let runner = try StageRunner(
        stage: stage, consumerConfiguration: consumerConfiguration("bench-enrich-\(suffix)", input), producer: producer,
        configuration: StageRunnerConfiguration(deadLetterTopic: dlq, maxBatchSize: options.batchSize), logger: logger)
    let group = ServiceGroup(services: [producer, runner.consumer, runner], logger: logger)
    apple.faults.resetStatistics()
    let stageTask = Task { try await group.run() }

    // Count the output; the clock runs from the first enriched record to the last, so the group join
    // (about 3 s on the local broker) is not counted.
    let reader = try KafkaConsumer(configuration: consumerConfiguration("bench-reader-\(suffix)", output), logger: logger)
    var seen = 0
    var first: ContinuousClock.Instant?
    var last = ContinuousClock.now
    let deadline = ContinuousClock.now + .seconds(600)
    while seen < records.count, ContinuousClock.now < deadline {
        if await reader.poll(timeout: .milliseconds(100)) != nil {
            seen += 1
            last = .now
            if first == nil { first = last }
        }
    }
    let seconds = Double((last - (first ?? last)).components.attoseconds) / 1e18 + Double((last - (first ?? last)).components.seconds)
    let calls = apple.faults.statistics.requests
    await group.triggerGracefulShutdown()
    _ = try? await stageTask.value
    await reader.close()
    let deadLetters = try await countDeadLetters(dlq, consumerConfiguration("bench-dlq-\(suffix)", dlq))
    guard seen == records.count else {
        throw BenchError("only \(seen) of \(records.count) enriched records arrived (coalesce \(coalesce))")
    }
    return ModeResult(
        coalesce: coalesce, events: records.count, seconds: seconds, eventsPerSecond: Double(records.count - 1) / max(seconds, 0.001),
        apiCalls: calls, apiCallsPerThousandEvents: Double(calls) * 1000 / Double(records.count), deadLetters: deadLetters)
}

@MainActor
func countDeadLetters(_ topic: String, _ configuration: KafkaConsumerConfiguration) async throws -> Int {
    let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
    var count = 0
    let until = ContinuousClock.now + .seconds(4)
    while ContinuousClock.now < until {
        if await consumer.poll(timeout: .milliseconds(100)) != nil { count += 1 }
    }
    await consumer.close()
    return count
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

var results: [ModeResult] = []
for coalesce in [true, false] {
    let result = try await runMode(coalesce: coalesce)
    results.append(result)
    print(
        String(
            format: "coalescing %@: %d events in %.2f s = %.0f enriched events/s, %d API calls (%.0f per 1,000 events), %d dead letters",
            coalesce ? "on " : "off", result.events, result.seconds, result.eventsPerSecond, result.apiCalls, result.apiCallsPerThousandEvents,
            result.deadLetters))
}
await simGroup.triggerGracefulShutdown()
_ = try? await simTask.value
let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys]
struct Summary: Codable {
    var scenario = "enrich"
    var eventsPerPurchase: Int
    var batchSize: Int
    var simulatorLatencyMs: Int
    var modes: [ModeResult]
}
print(
    String(
        decoding: try encoder.encode(
            Summary(
                eventsPerPurchase: options.perPurchase, batchSize: options.batchSize, simulatorLatencyMs: options.latencyMilliseconds, modes: results)
        ),
        as: UTF8.self))
