import EnvironmentSettings
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import IngestService
import KafkaClient
import NIOCore
import StageRuntime
import TestSupport
import Testing

extension Resilience {
    @Suite("Broker outage", .timeLimit(.minutes(15)))
    struct BrokerOutageTests {
        /// Each answer during the outage is bounded by the acknowledgement timeout (a hung request would
        /// end the suite by its time limit); the times are printed, not asserted, since a loaded
        /// machine stretches them.
        @Test("with the broker down ingest answers 503, not a hung request; after it returns ingest serves again without a restart")
        func brokerDownAndBack() async throws {
            let raw = try await TestServices.makeTopic("outage-raw")
            let ackTimeout = Duration.seconds(1)
            let uploads = try UploadAuthSettings.read(
                EnvironmentReader(["INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "com.example.outage::Sandbox"]))
            let config = IngestConfiguration(
                kafka: TestServices.clientConfiguration("outage-ingest"), uploadAuthentication: uploads, rawTopic: raw, ackTimeout: ackTimeout)
            let producer = try KafkaProducer(configuration: config.producer, logger: TestServices.logger)
            let app = IngestApplication.build(configuration: config, producer: producer, registry: nil, logger: TestServices.logger)
            let counter = Counter()
            @Sendable func post(_ client: some TestClientProtocol) async throws -> (HTTPResponse.Status, Int, Duration) {
                let id = counter.increment()
                let start = ContinuousClock.now
                let body =
                    #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.\#(Data(#"{"loadgenId":\#(id)}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")).c2ln"}"#
                let status = try await client.execute(
                    uri: "/v2/notifications", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: body)
                ) { $0.status }
                return (status, id, ContinuousClock.now - start)
            }

            try await app.test(.live) { client in
                #expect(try await post(client).0 == .ok)

                try await LocalHTTP.runScript("deploy/local/down", ["broker"])
                var answeredDuringOutage: [HTTPResponse.Status] = []
                var outageAnswerTimes: [Duration] = []
                for _ in 0..<5 {
                    let (status, _, elapsed) = try await post(client)
                    answeredDuringOutage.append(status)
                    outageAnswerTimes.append(elapsed)
                }
                print("broker outage: answers took \(outageAnswerTimes) with an acknowledgement timeout of \(ackTimeout)")
                #expect(answeredDuringOutage.allSatisfy { $0 == .serviceUnavailable }, "\(answeredDuringOutage)")

                try await LocalHTTP.runScript("deploy/local/up", ["broker"])
                // The local broker keeps data in memory: it comes back empty, so the test topic is made again.
                try await KafkaAdmin(configuration: TestServices.clientConfiguration()).createTopics([.init(name: raw, partitions: 1)])
                var recovered = false
                let deadline = ContinuousClock.now + .seconds(60)
                var okAfter: [Int] = []
                while ContinuousClock.now < deadline {
                    let (status, id, _) = try await post(client)
                    if status == .ok {
                        recovered = true
                        okAfter.append(id)
                        break
                    }
                    try await Task.sleep(for: .milliseconds(200))
                }
                #expect(recovered, "ingest serves again after the broker returns, without a restart")
                for _ in 0..<20 {
                    let (status, id, _) = try await post(client)
                    #expect(status == .ok)
                    if status == .ok { okAfter.append(id) }
                }
                let stored = try await TopicReader.read(raw) { Set(loadgenIDs($0.map(\.value))).isSuperset(of: okAfter) }
                let storedIDs = Set(loadgenIDs(stored.map(\.value)))
                #expect(storedIDs.isSuperset(of: okAfter), "every request answered 200 was stored")
                print(
                    "broker outage: 503 during outage: \(answeredDuringOutage.count), producer replacements: \(producer.replacements), stored after recovery: \(okAfter.count)"
                )
            }
            await producer.close()
        }
    }
}
