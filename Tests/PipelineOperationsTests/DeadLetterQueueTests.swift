import Foundation
import KafkaClient
import PipelineOperations
import PipelineRecords
import StageRuntime
import TestSupport
import Testing

@Suite("Dead letters: list, show, replay", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct DeadLetterQueueTests {
    let client = TestServices.clientConfiguration("tests-dlq")

    /// A queue holding `count` dead letters (see ``makeStageWithDeadLetters(_:letters:attempts:)``).
    func makeQueue(count: Int) async throws -> (DeadLetterQueue, KafkaProducer) {
        let (stage, producer) = try await makeStageWithDeadLetters("dlq", letters: count)
        return (DeadLetterQueue(stage: stage, client: client), producer)
    }

    @Test("list shows every dead letter with its code, reason and source")
    func list() async throws {
        let (queue, producer) = try await makeQueue(count: 6)
        defer { Task { await producer.close() } }
        let letters = try await queue.list()
        #expect(letters.count == 6)
        #expect(letters.filter { $0.code == "verification.invalid_signature" }.count == 3)
        #expect(letters.filter { $0.code == "record.malformed" }.count == 3)
        #expect(letters.allSatisfy { !$0.replayed && $0.attempts == 1 && $0.source.hasPrefix(queue.stage.inputTopic) })
        let first = try #require(letters.first { $0.message.key == Array("key-0".utf8) })
        #expect(first.reason == "signature 0 does not match")
        let shown = try await queue.letter(partition: first.message.partition, offset: first.message.offset)
        #expect(shown?.message.value == Array("{\"n\":0}".utf8))
    }

    @Test("replay re-injects each dead letter once, unchanged, into the topic it came from")
    func replayOnce() async throws {
        let (queue, producer) = try await makeQueue(count: 6)
        let outcome = try await queue.replay(producer: producer)
        #expect(outcome.replayed.count == 6)

        let reinjected = try await TopicReader.read(queue.stage.inputTopic) { $0.count >= 6 }
        #expect(reinjected.count == 6)
        #expect(Set(reinjected.map { String(decoding: $0.value, as: UTF8.self) }) == Set((0..<6).map { "{\"n\":\($0)}" }))
        #expect(
            reinjected.allSatisfy { message in
                !message.headers.contains { $0.key.hasPrefix("dlq-") && $0.key != "dlq-replayed-from" }
                    && message.headers.string("source") == "apple-webhook"
                    && message.headers.string("dlq-replayed-from")?.hasPrefix(queue.stage.deadLetterTopic) == true
            })

        // Remembered: a second plain replay takes nothing, and the listing says so.
        let second = try await queue.replay(producer: producer)
        #expect(second.replayed.isEmpty)
        #expect(second.skipped == 6)
        #expect(try await queue.list().allSatisfy(\.replayed))
        await producer.close()
    }

    @Test("a filtered replay takes only the chosen code; with includeReplayed even when replayed before")
    func filtered() async throws {
        let (queue, producer) = try await makeQueue(count: 6)
        _ = try await queue.replay(producer: producer)
        #expect(try await queue.replay(filter: DeadLetterFilter(codes: ["record.malformed"]), producer: producer).replayed.isEmpty)
        let outcome = try await queue.replay(filter: DeadLetterFilter(codes: ["record.malformed"]), includeReplayed: true, producer: producer)
        #expect(outcome.replayed.count == 3)
        #expect(outcome.replayed.allSatisfy { $0.code == "record.malformed" })
        let reinjected = try await TopicReader.read(queue.stage.inputTopic) { $0.count >= 9 }
        #expect(reinjected.count == 9)
        await producer.close()
    }
}
