import Foundation
import KafkaClient
import Logging

/// Where the tests find the local stack that `deploy/local/up` starts.
///
/// Suites that need a service are enabled when it answers, and always when `CI=true`: in CI a
/// missing service must fail the run, not skip it.
public enum TestServices {
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    public static var bootstrapServers: String {
        ProcessInfo.processInfo.environment["KAFKA_BOOTSTRAP_SERVERS"] ?? "127.0.0.1:\(LocalStack.value("BROKER_PORT"))"
    }

    /// How long an ingest a test starts waits for the broker's acknowledgement before answering 503.
    /// Beside the whole suite on two cores Tansu has taken longer than ingest's default (5 s), and a
    /// test of ingest's answers must not get the 503 meant for a slow broker. Shorter than the tests'
    /// HTTP clients wait (60 s and more), so a broker that never answers still shows as a 503.
    public static let ingestAckTimeout: Duration = .seconds(50)
    /// ``ingestAckTimeout`` as an ingest process reads it from `INGEST_ACK_TIMEOUT_MS`.
    public static var ingestAckTimeoutMilliseconds: String { "\(ingestAckTimeout.milliseconds)" }

    /// True when the broker accepts TCP connections, or when running in CI.
    public static var brokerEnabled: Bool { isCI || portOpen(bootstrapServers) }

    /// The repository's root, found from this file's path: the one place tests derive it.
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static func clientConfiguration(_ clientID: String = "tests") -> KafkaClientConfiguration {
        KafkaClientConfiguration(bootstrapServers: bootstrapServers, clientID: clientID)
    }

    /// Consumer settings tuned for a local broker: fast group joins and fetches.
    public static func consumerConfiguration(group: String, topics: [String]) -> KafkaConsumerConfiguration {
        KafkaConsumerConfiguration(
            client: clientConfiguration("tests-consumer"), groupID: group, topics: topics,
            sessionTimeout: .milliseconds(LocalStack.int("LOCAL_KAFKA_SESSION_TIMEOUT_MS")),
            heartbeatInterval: .milliseconds(LocalStack.int("LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS")), fetchWaitMax: .milliseconds(25),
            commitInterval: .milliseconds(200)
        )
    }

    public static func producerConfiguration(deliveryTimeout: Duration = .seconds(10)) -> KafkaProducerConfiguration {
        KafkaProducerConfiguration(client: clientConfiguration("tests-producer"), deliveryTimeout: deliveryTimeout, linger: .milliseconds(1))
    }

    /// Creates a fresh topic with a unique name.
    public static func makeTopic(_ prefix: String, partitions: Int = 1) async throws -> String {
        let name = "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
        try await KafkaAdmin(configuration: clientConfiguration("tests-admin")).createTopics([.init(name: name, partitions: partitions)])
        return name
    }

    public static func uniqueGroup(_ prefix: String) -> String { "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())" }

    public static var logger: Logger {
        var l = Logger(label: "tests")
        l.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        return l
    }

    /// A producer with ``producerConfiguration(deliveryTimeout:)``; the caller closes it.
    public static func makeProducer() throws -> KafkaProducer {
        try KafkaProducer(configuration: producerConfiguration(), logger: logger)
    }

    /// Whether the first `host:port` of a bootstrap list accepts TCP connections now.
    public static func portOpen(_ hostPort: String) -> Bool {
        let first = hostPort.split(separator: ",").first.map(String.init) ?? hostPort
        let parts = first.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { return false }
        return portOpen(host: String(parts[0]), port: port)
    }

    /// Whether `host:port` (an IPv4 address or `localhost`) accepts TCP connections now: how suites
    /// that need a local service decide whether to run.
    public static func portOpen(host: String, port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr(host == "localhost" ? "127.0.0.1" : host)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// Collects records from a topic until a condition holds or a deadline passes.
public enum TopicReader {
    /// The header that marks the records ``readAll(_:timeout:)`` writes.
    public static let markerHeader = "test-end-marker"

    /// Everything on `topic`, known to be complete: writes a marker record to each partition, reads
    /// from the beginning until every marker has come back, and returns the records before them
    /// (markers left out). Call it once whatever writes the topic has stopped (its producer closed):
    /// what it wrote lies before the marker in each partition, so the absence of a record is seen
    /// at a point the topic had to pass, not waited out for a while. Throws when the markers do not
    /// all come back within `timeout` (a generous deadline against a hang, never a claim about speed).
    public static func readAll(_ topic: String, timeout: Duration = patience) async throws -> [KafkaMessage] {
        let partitions = try await KafkaGroupOffsets(configuration: TestServices.clientConfiguration("tests-marker")).partitions(of: topic)
        let marker = UUID().uuidString
        let producer = try TestServices.makeProducer()
        do {
            for partition in partitions {
                _ = try await producer.send(
                    KafkaOutgoingMessage(
                        topic: topic, key: [UInt8]?.none, value: Array("end marker \(marker)".utf8),
                        headers: [KafkaHeader(key: markerHeader, string: marker)], partition: partition.partition))
            }
        } catch {
            await producer.close()
            throw error
        }
        await producer.close()
        func isMarker(_ message: KafkaMessage) -> Bool {
            message.headers.contains { $0.key == markerHeader && $0.value == Array(marker.utf8) }
        }
        let seen = try await read(topic, timeout: timeout) { $0.filter(isMarker).count >= partitions.count }
        guard seen.filter(isMarker).count >= partitions.count else {
            throw TestSupportError("\(topic): the end markers written to its \(partitions.count) partitions did not all come back within \(timeout)")
        }
        // Markers of an earlier call on the same topic are left out too.
        return seen.filter { !$0.headers.contains { $0.key == markerHeader } }
    }

    /// How long a read waits by default for what a test expects: a deadline against a hang. Beside
    /// the whole suite on two cores a stage has taken minutes for what takes it seconds alone (100
    /// trivial records in more than 120 s on CI), and a read that succeeds returns at once anyway.
    public static let patience: Duration = .seconds(600)

    /// Reads `topic` from the beginning in a fresh group until `until` returns true for the
    /// records so far (asked when the topic goes quiet, and at most every 200 ms while records
    /// flow), or `timeout` passes. Returns what was read.
    ///   - settle: after `until` holds, how long to keep reading, so records beyond the condition
    ///     (duplicates) are seen too.
    public static func read(
        _ topic: String, timeout: Duration = patience, settle: Duration = .zero, until: ([KafkaMessage]) -> Bool
    ) async throws -> [KafkaMessage] {
        let consumer = try KafkaConsumer(
            configuration: TestServices.consumerConfiguration(group: TestServices.uniqueGroup("reader"), topics: [topic]),
            logger: TestServices.logger)
        var seen: [KafkaMessage] = []
        let deadline = ContinuousClock.now + timeout
        var lastCheck = ContinuousClock.now - .seconds(1)
        var done = until(seen)
        while ContinuousClock.now < deadline, !done {
            let next = await consumer.poll(timeout: .milliseconds(100))
            if let next { seen.append(next) }
            if next == nil || ContinuousClock.now - lastCheck > .milliseconds(200) {
                done = until(seen)
                lastCheck = .now
            }
        }
        if !done {
            let partitions = Dictionary(grouping: seen, by: \.partition).mapValues(\.count).sorted { $0.key < $1.key }
            print("TopicReader: \(topic) read for \(timeout) without the condition holding: \(seen.count) records (per partition \(partitions))")
        }
        let settled = ContinuousClock.now + settle
        while done, ContinuousClock.now < settled {
            if let next = await consumer.poll(timeout: .milliseconds(100)) { seen.append(next) }
        }
        await consumer.close()
        return seen
    }
}
