import Foundation
import KafkaClient
import TestSupport
import Testing

@testable import StageRuntime

/// A stage that cannot start must not leave a member in its group: seen on the local stack, a verify
/// whose HTTP port was still held joined its group, stopped on `bind: Address already in use`, and
/// the broker then assigned the group nothing, to any new member, for over twenty minutes.
@Suite("Stage start and group membership", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct StageStartTests {
    @Test("a stage whose HTTP port is taken exits 1 without joining its group; the next one on a free port gets every partition")
    func portTakenNeverJoins() async throws {
        let input = try await TestServices.makeTopic("start-in", partitions: 4)
        let output = try await TestServices.makeTopic("start-out", partitions: 4)
        let dlq = try await TestServices.makeTopic("start-dlq")
        let group = TestServices.uniqueGroup("start")
        try await produceNumbered(input, count: 40, keys: 8)
        let held = try HeldPort()
        var environment = [
            "KAFKA_BOOTSTRAP_SERVERS": TestServices.bootstrapServers, "INPUT_TOPIC": input, "OUTPUT_TOPIC": output, "DLQ_TOPIC": dlq,
            "KAFKA_GROUP_ID": group, "HTTP_HOST": "127.0.0.1", "HTTP_PORT": "\(held.port)",
            "KAFKA_SESSION_TIMEOUT_MS": LocalStack.value("LOCAL_KAFKA_SESSION_TIMEOUT_MS"),
            "KAFKA_HEARTBEAT_INTERVAL_MS": LocalStack.value("LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS"), "KAFKA_FETCH_WAIT_MAX_MS": "25",
            "LOG_LEVEL": "info",
        ]
        let failed = try await ManagedProcess("stage-relay", environment: environment, logName: "start-port-taken")
        let status = await failed.waitForExit()
        #expect(status == .exited(1), "exit status \(status); log: \(failed.output.suffix(600))")
        #expect(failed.output.contains("Address already in use"), "\(failed.output.suffix(600))")
        let offsets = KafkaGroupOffsets(configuration: TestServices.clientConfiguration("tests-start"))
        #expect(try await offsets.describeGroup(group)?.members.isEmpty ?? true, "the failed start left a member")
        held.release()

        let port = LocalHTTP.freePort()
        environment["HTTP_PORT"] = "\(port)"
        let relay = try await ManagedProcess("stage-relay", environment: environment, logName: "start-port-free")
        let copied = try await TopicReader.read(output) { $0.count >= 40 }
        let members = try await offsets.describeGroup(group)?.members ?? []
        #expect(await relay.terminate(grace: .seconds(60)) == .exited(0))
        #expect(copied.count == 40, "the group handed its partitions to the new member: \(members)")
    }

    @Test("where the broker says who holds what, a partition with lag held by nobody is unowned from the first check")
    func unownedKnownOwners() {
        let p0 = KafkaTopicPartition(topic: "in", partition: 0)
        let p1 = KafkaTopicPartition(topic: "in", partition: 1)
        var spell = UnownedPartitions()
        let start = ContinuousClock.now
        let none = spell.update(.init(lag: [p0: 3], committed: [p0: 7], held: [p0], members: 1), now: start)
        #expect(!none, "held by a member: not unowned")
        let began = spell.update(.init(lag: [p0: 3, p1: 5], committed: [p0: 8, p1: 2], held: [p0], members: 1), now: start + .seconds(5))
        #expect(began && spell.partitions == [p1: 5])
        let again = spell.update(.init(lag: [p1: 9], committed: [p1: 2], held: [], members: 1), now: start + .seconds(10))
        #expect(!again, "later checks continue the spell")
        #expect(!spell.lasting(longerThan: .seconds(90), now: start + .seconds(95)))
        #expect(spell.lasting(longerThan: .seconds(90), now: start + .seconds(96)))
        let ended = spell.update(.init(lag: [:], committed: [:], held: [], members: 1), now: start + .seconds(100))
        #expect(!ended && spell.partitions.isEmpty)
        #expect(!spell.lasting(longerThan: .seconds(90), now: start + .seconds(500)), "a check with none ended it")
    }

    @Test("where owners are unknown (the local broker), a partition with lag counts only while its committed offset does not move")
    func unownedUnknownOwners() {
        let p0 = KafkaTopicPartition(topic: "in", partition: 0)
        var spell = UnownedPartitions()
        let start = ContinuousClock.now
        let first = spell.update(.init(lag: [p0: 40], committed: [p0: 100], held: nil, members: 1), now: start)
        #expect(!first && spell.partitions.isEmpty, "one look cannot tell a partition being consumed from one left alone")
        let moving = spell.update(.init(lag: [p0: 35], committed: [p0: 110], held: nil, members: 1), now: start + .seconds(5))
        #expect(!moving && spell.partitions.isEmpty, "its committed offset moved: someone consumes it")
        let stopped = spell.update(.init(lag: [p0: 50], committed: [p0: 110], held: nil, members: 1), now: start + .seconds(10))
        #expect(stopped && spell.partitions == [p0: 50], "unmoved since the last check")
        #expect(!spell.lasting(longerThan: .seconds(90), now: start + .seconds(95)))
        #expect(spell.lasting(longerThan: .seconds(90), now: start + .seconds(96)), "counted from when it stopped moving")
        let resumed = spell.update(.init(lag: [p0: 49], committed: [p0: 111], held: nil, members: 1), now: start + .seconds(100))
        #expect(!resumed && spell.partitions.isEmpty)
    }
}
