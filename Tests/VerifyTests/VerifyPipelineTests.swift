import AppStore
import EnvironmentSettings
import Foundation
import HTTPTypes
import HummingbirdTesting
import IngestService
import KafkaClient
import Logging
import NIOCore
import PipelineRecords
import StageRuntime
import TestSupport
import Testing
import VerifyService

/// raw → verify → verified / DLQ on the real broker, through the stage runtime.
@Suite("verify stage on the real broker", .enabled(if: TestServices.brokerEnabled), .timeLimit(.minutes(15)))
struct VerifyPipelineTests {
    func makeStage(_ topics: PipelineTopics) throws -> VerifyStage {
        try VerifyStage(configuration: TestPKI.configuration(), outputTopic: topics.verified, logger: TestServices.logger)
    }

    @Test("valid notifications are verified and keyed; forgeries are dead-lettered with their code; none is lost")
    func endToEnd() async throws {
        let topics = try await PipelineTopics.make("verify-e2e")
        var inputs: [(body: [UInt8], source: String)] = []
        var expectedKeys: [String] = []
        // 12 valid notifications over 4 purchases, 3 events each.
        for i in 0..<12 {
            let otid = "20000000000010\(i % 4)"
            inputs.append((TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: otid)), "apple-webhook"))
            expectedKeys.append("Sandbox:\(otid)")
        }
        // A TEST notification, keyed by its UUID.
        let testUUID = UUID().uuidString.lowercased()
        inputs.append((TestPKI.webhookBody(try TestPKI.testNotification(uuid: testUUID)), "apple-webhook"))
        expectedKeys.append("Sandbox:notification:\(testUUID)")
        // An app upload of one of those purchases.
        let upload = try TestPKI.signedTransaction(originalTransactionId: "200000000000101")
        inputs.append((TestPKI.uploadBody(upload, appAccountToken: "0b7e2c55-9d0e-4a53-8d55-2f1d3c6f4a10", userId: "u-1"), "app-upload"))
        expectedKeys.append("Sandbox:200000000000101")
        // Forgeries and junk, with the code each must be dead-lettered with.
        let valid = try TestPKI.notification(originalTransactionId: "200000000000199")
        let other = try TestPKI.notification(originalTransactionId: "200000000000198")
        let forged: [(body: [UInt8], source: String, code: String)] = [
            (
                TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "9", signer: TestPKI.forger)), "apple-webhook",
                "verification.untrusted_root"
            ),
            (TestPKI.webhookBody(TestPKI.tampered(valid, payloadFrom: other)), "apple-webhook", "verification.invalid_signature"),
            (
                TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "9", bundleId: TestPKI.otherBundleId)), "apple-webhook",
                "verification.wrong_bundle_id"
            ),
            (
                TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "9", environment: .production)), "apple-webhook",
                "verification.untrusted_root"
            ),
            (
                TestPKI.uploadBody(try TestPKI.signedTransaction(originalTransactionId: "9", signer: TestPKI.forger)), "app-upload",
                "verification.untrusted_root"
            ),
            (Array("not json".utf8), "apple-webhook", "record.malformed"),
            (Array(#"{"signedPayload":"x.y"}"#.utf8), "apple-webhook", "verification.malformed"),
        ]
        // Interleave the forgeries with the valid records.
        var all = inputs
        for (n, f) in forged.enumerated() { all.insert((f.body, f.source), at: min(all.count, n * 2 + 1)) }
        try await produceRaw(topics.raw, all)

        let harness = try StageHarness(
            stage: try makeStage(topics), input: topics.raw, deadLetters: topics.deadLetters, groupID: TestServices.uniqueGroup("verify"))
        let verified = try await TopicReader.read(topics.verified) { $0.count >= inputs.count }
        let letters = try await TopicReader.read(topics.deadLetters) { $0.count >= forged.count }
        try await harness.stop()
        // Nothing more arrived (no duplicates): read up to end markers written after the stage stopped, the topic holds exactly as many.
        let verifiedAgain = try await TopicReader.readAll(topics.verified)

        #expect(verified.count == inputs.count)
        #expect(letters.count == forged.count)
        #expect(verifiedAgain.count == inputs.count)
        #expect(verified.count + letters.count == all.count, "count in = count verified + count DLQ")
        #expect(verified.compactMap(\.keyString).sorted() == expectedKeys.sorted())

        var perKey: [String: [Int64]] = [:]
        for record in verified {
            #expect(record.header(PipelineHeader.schema) == Topics.verified)
            #expect(record.header(PipelineHeader.requestID)?.hasPrefix("req-") == true)
            #expect(record.header(PipelineHeader.traceparent)?.hasPrefix("00-0af7651916cd43dd8448eb211c80319c-") == true)
            #expect(record.header(PipelineHeader.ingestedAt) != nil)
            let body = try VerifiedRecord.decode(record.value)
            #expect(record.keyString == body.key)
            #expect(body.source == record.header(PipelineHeader.source))
            if let key = record.keyString { perKey[key, default: []].append(record.offset) }
        }
        // One purchase's records share a partition.
        for (key, _) in perKey {
            let partitions = Set(verified.filter { $0.keyString == key }.map(\.partition))
            #expect(partitions.count == 1, "\(key) spread over \(partitions)")
        }
        let uploadRecord = try #require(verified.first { $0.header(PipelineHeader.source) == "app-upload" })
        let uploadBody = try VerifiedRecord.decode(uploadRecord.value)
        #expect(uploadBody.kind == .transaction)
        #expect(uploadBody.hints?.userId == "u-1")

        #expect(letters.compactMap { $0.header(DeadLetterHeader.errorCode) }.sorted() == forged.map(\.code).sorted())
        for letter in letters {
            #expect(letter.header(DeadLetterHeader.stage) == "verify")
            #expect(letter.header(DeadLetterHeader.sourceTopic) == topics.raw)
            #expect(letter.header(PipelineHeader.schema) == Topics.raw, "a dead letter keeps the raw record's headers")
            #expect(forged.contains { $0.body == letter.value }, "a dead letter keeps the raw body byte for byte")
        }

        let errors = try await SchemaValidator.errors(of: verified.map(\.value), schema: "verified.v1.schema.json")
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test("through ingest's HTTP: webhook and app upload → raw → verified, request ids carried")
    func throughIngest() async throws {
        let topics = try await PipelineTopics.make("verify-ingest")
        // Open uploads (Sandbox-only app): the body's userId is stored, marked "none".
        let uploads = try UploadAuthSettings.read(EnvironmentReader(["INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "\(TestPKI.bundleId)::Sandbox"]))
        let config = IngestConfiguration(
            kafka: TestServices.clientConfiguration("ingest"), uploadAuthentication: uploads, rawTopic: topics.raw,
            ackTimeout: TestServices.ingestAckTimeout)
        let producer = try KafkaProducer(configuration: config.producer, logger: TestServices.logger)
        let app = IngestApplication.build(configuration: config, producer: producer, registry: nil, logger: TestServices.logger)
        let notification = try TestPKI.notification(originalTransactionId: "200000000000555")
        let upload = try TestPKI.signedTransaction(originalTransactionId: "200000000000556")
        let forged = try TestPKI.notification(originalTransactionId: "200000000000557", signer: TestPKI.forger)
        let posts: [(String, [UInt8], String)] = [
            ("/v2/notifications", TestPKI.webhookBody(notification), "ingest-req-1"),
            ("/v1/transactions", TestPKI.uploadBody(upload, userId: "user-9"), "ingest-req-2"),
            ("/v2/notifications", TestPKI.webhookBody(forged), "ingest-req-3"),
        ]
        try await app.test(.router) { client in
            for (uri, body, requestID) in posts {
                try await client.execute(
                    uri: uri, method: .post,
                    headers: [.contentType: "application/json", HTTPField.Name("X-Request-Id")!: requestID],
                    body: ByteBuffer(bytes: body)
                ) { response in
                    #expect(response.status == .ok)
                }
            }
        }
        await producer.close()

        let harness = try StageHarness(
            stage: try makeStage(topics), input: topics.raw, deadLetters: topics.deadLetters, groupID: TestServices.uniqueGroup("verify"))
        let verified = try await TopicReader.read(topics.verified) { $0.count >= 2 }
        let letters = try await TopicReader.read(topics.deadLetters) { !$0.isEmpty }
        try await harness.stop()

        #expect(verified.count == 2)
        let byRequest = Dictionary(uniqueKeysWithValues: verified.compactMap { m in m.header(PipelineHeader.requestID).map { ($0, m) } })
        let webhook = try #require(byRequest["ingest-req-1"])
        #expect(webhook.keyString == "Sandbox:200000000000555")
        #expect(webhook.header(PipelineHeader.source) == "apple-webhook")
        #expect(try VerifiedRecord.decode(webhook.value).signedPayload == notification)
        let app2 = try #require(byRequest["ingest-req-2"])
        #expect(app2.keyString == "Sandbox:200000000000556")
        #expect(app2.header(PipelineHeader.source) == "app-upload")
        #expect(try VerifiedRecord.decode(app2.value).hints?.userId == "user-9")
        #expect(letters.count == 1)
        #expect(letters.first?.header(DeadLetterHeader.errorCode) == "verification.untrusted_root")
        #expect(letters.first?.header(PipelineHeader.requestID) == "ingest-req-3")
    }

    @Test("the verify executable: configuration from the environment, raw → verified and DLQ, graceful stop")
    func executable() async throws {
        let topics = try await PipelineTopics.make("verify-exe")
        let roots = try TestPKI.writeRoot()
        let port = LocalHTTP.freePort()
        let stage = try await ManagedProcess(
            "verify",
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": TestServices.bootstrapServers, "INPUT_TOPIC": topics.raw,
                "OUTPUT_TOPIC": topics.verified, "DLQ_TOPIC": topics.deadLetters,
                "KAFKA_GROUP_ID": TestServices.uniqueGroup("verify-exe"),
                "KAFKA_SESSION_TIMEOUT_MS": LocalStack.value("LOCAL_KAFKA_SESSION_TIMEOUT_MS"),
                "KAFKA_HEARTBEAT_INTERVAL_MS": LocalStack.value("LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS"), "KAFKA_FETCH_WAIT_MAX_MS": "25",
                "HTTP_HOST": "127.0.0.1",
                "HTTP_PORT": String(port), "LOG_LEVEL": "info",
                "APPSTORE_APPS": "\(TestPKI.bundleId):\(TestPKI.appAppleId):Sandbox+Production",
                "APPSTORE_TRUSTED_ROOTS": roots.pem,
            ], logName: "verify-executable-test")
        try await LocalHTTP.waitForPort(port)
        let token = try TestPKI.notification(originalTransactionId: "200000000000888")
        try await produceRaw(
            topics.raw,
            [
                (TestPKI.webhookBody(token), "apple-webhook"),
                (TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "200000000000889", signer: TestPKI.forger)), "apple-webhook"),
            ])
        let verified = try await TopicReader.read(topics.verified) { !$0.isEmpty }
        let letters = try await TopicReader.read(topics.deadLetters) { !$0.isEmpty }
        let status = await stage.terminate(grace: .seconds(30))
        #expect(status == .exited(0), "\(stage.output)")
        #expect(verified.first?.keyString == "Sandbox:200000000000888")
        #expect(try VerifiedRecord.decode(try #require(verified.first).value).signedPayload == token)
        #expect(letters.first?.header(DeadLetterHeader.errorCode) == "verification.untrusted_root")
        #expect(!stage.output.contains(token), "the JWS never reaches the log at info level")
        #expect(stage.output.contains("non-Production data only"))
    }

    @Test("the verify executable refuses bad configuration with exit 78, naming the variable")
    func badConfiguration() async throws {
        var base = ProcessInfo.processInfo.environment
        base["KAFKA_BOOTSTRAP_SERVERS"] = TestServices.bootstrapServers
        base["HTTP_PORT"] = String(LocalHTTP.freePort())
        base["APPSTORE_APPS"] = nil
        let missing = try await BuiltProducts.run("verify", [], environment: base)
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("APPSTORE_APPS"))
        base["APPSTORE_APPS"] = "com.example::Sandbox"
        base["APPSTORE_TRUSTED_ROOTS"] = "/nonexistent/root.pem"
        let badRoot = try await BuiltProducts.run("verify", [], environment: base)
        #expect(badRoot.status == 78)
        #expect(badRoot.stderr.contains("APPSTORE_TRUSTED_ROOTS"))
        base["APPSTORE_TRUSTED_ROOTS"] = nil
        base["APPSTORE_REVOCATION_CHECK"] = "sometimes"
        let badRevocation = try await BuiltProducts.run("verify", [], environment: base)
        #expect(badRevocation.status == 78)
        #expect(badRevocation.stderr.contains("APPSTORE_REVOCATION_CHECK") && badRevocation.stderr.contains("off, on"), "\(badRevocation.stderr)")
    }
}
