import AppStoreSigning
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import IngestService
import KafkaClient
import NIOCore
import PipelineRecords
import TestSupport
import Testing

/// Junk uploads cost their sender a 400 and the pipeline nothing, while every chain verify would
/// accept still passes.
@Suite("Uploads: the certificate chain is looked at before anything is written")
struct ChainPrecheckTests {
    static func code(_ body: () throws(IngestError) -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return error.code.rawValue
        }
    }

    static func jws(header: String) -> String {
        "\(UploadTokens.base64URL(Data(header.utf8))).\(UploadTokens.base64URL(Data("{}".utf8))).c2lnbmF0dXJl"
    }

    @Test("a chain from a trusted root passes; another authority's, a wrong alg, a missing or short x5c and a header that is not JSON do not")
    func verdicts() throws {
        let precheck = ChainPrecheck(trustedRoots: [TestPKI.trusted.root])
        let valid = try TestPKI.signedTransaction(originalTransactionId: "2000000000100001")
        #expect(Self.code { () throws(IngestError) in try precheck.check(valid, name: "signedTransaction") } == nil)
        // Twice: the second time the intermediate is known by its bytes.
        #expect(Self.code { () throws(IngestError) in try precheck.check(valid, name: "signedTransaction") } == nil)

        let forged = try TestPKI.signedTransaction(originalTransactionId: "2000000000100001", signer: TestPKI.forger)
        #expect(Self.code { () throws(IngestError) in try precheck.check(forged, name: "signedTransaction") } == "request.untrusted_chain")
        // Without the test root only Apple's is trusted: the same valid upload is refused.
        let appleOnly = ChainPrecheck(trustedRoots: [])
        #expect(Self.code { () throws(IngestError) in try appleOnly.check(valid, name: "signedTransaction") } == "request.untrusted_chain")

        for header in [
            #"{"alg":"HS256","x5c":["a","b","c"]}"#, #"{"alg":"ES256"}"#, #"{"alg":"ES256","x5c":["a","b"]}"#,
            #"{"alg":"ES256","x5c":["a","!!","c"]}"#, #"{"alg":"ES256","x5c":["a","YWJj","c"]}"#, "[", #"{"alg":1}"#,
        ] {
            #expect(
                Self.code { () throws(IngestError) in try precheck.check(Self.jws(header: header), name: "signedTransaction") }
                    == "request.untrusted_chain", "\(header)")
        }
    }

    @Test(
        "every real Apple-signed sample passes with no root besides Apple's",
        .enabled(if: SharedFixtures.hasRealJWS || TestServices.isCI, Comment(rawValue: SharedFixtures.skipReason)))
    func realAppleChains() throws {
        let precheck = ChainPrecheck(trustedRoots: [])
        let files = try SharedFixtures.realJWSFiles()
        #expect(files.count > 50)
        for file in files {
            let token = try SharedFixtures.realToken(file)
            #expect(Self.code { () throws(IngestError) in try precheck.check(token, name: "signedTransaction") } == nil, "\(file)")
        }
    }

    @Test("a refused upload is answered 400 request.untrusted_chain and never written", .enabled(if: TestServices.brokerEnabled))
    func refusedBeforeWritten() async throws {
        let topic = try await TestServices.makeTopic("precheck-raw")
        let config = IngestConfiguration(
            kafka: KafkaClientConfiguration(bootstrapServers: TestServices.bootstrapServers), uploadAuthentication: try TestUploads.open(),
            rawTopic: topic, ackTimeout: TestServices.ingestAckTimeout, uploadPrecheck: ChainPrecheck(trustedRoots: [TestPKI.trusted.root]))
        let producer = try KafkaProducer(configuration: config.producer, logger: TestServices.logger)
        let app = IngestApplication.build(configuration: config, producer: producer, registry: nil, logger: TestServices.logger)
        let forged = try TestPKI.signedTransaction(originalTransactionId: "2000000000100002", signer: TestPKI.forger)
        let valid = try TestPKI.signedTransaction(originalTransactionId: "2000000000100003")
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/v1/transactions", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(bytes: TestPKI.uploadBody(forged))
            ) { response in
                try expectError(response, .badRequest, "request.untrusted_chain")
            }
            // Ingest writes before it answers: once the valid upload's 200 is in, a refused body
            // that had been written would be on the topic too.
            try await client.execute(
                uri: "/v1/transactions", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(bytes: TestPKI.uploadBody(valid))
            ) { response in
                #expect(response.status == .ok)
            }
        }
        let stored = try await TopicReader.read(topic) { !$0.isEmpty }
        await producer.close()
        #expect(stored.count == 1)
        #expect(stored.first?.text.contains(valid) == true)
        #expect(stored.contains { $0.text.contains(forged) } == false)
    }
}
