import Crypto
import EnvironmentSettings
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import IngestService
import KafkaClient
import NIOCore
import OfferSigning
import StageRuntime
import Synchronization
import TestSupport
import Testing

/// Upload authentication settings the ingest tests run with.
enum TestUploads {
    static let issuer = "https://id.example.test/"
    static let audience = "appstore-ingest-tests"
    /// 44 bytes; what a backend and ingest would share.
    static let secret = Array("test-upload-secret-0123456789abcdef-0123456".utf8)

    /// Open uploads for a Sandbox-only app, read as the executable reads them.
    static func open(_ bundleId: String = "com.example.uploads") throws -> UploadAuthSettings {
        try UploadAuthSettings.read(EnvironmentReader(["INGEST_UPLOAD_AUTH": "none", "APPSTORE_APPS": "\(bundleId)::Sandbox"]))
    }

    static func jwt(
        _ keys: JWTUploadSettings.KeySource, userClaim: String = "sub", refresh: Duration = .seconds(600),
        refetchMinimum: Duration = .zero
    ) -> UploadAuthSettings {
        .jwt(
            JWTUploadSettings(
                keys: keys, issuer: issuer, audience: audience, userClaim: userClaim, refreshInterval: refresh,
                refetchMinimumInterval: refetchMinimum))
    }

    static func hmac() throws -> UploadAuthSettings {
        .hmac(HMACUploadSettings(secret: try HMACUploadSettings.Secret(fileContents: secret)))
    }

    /// Valid claims for `subject`, as the tests' identity provider issues them.
    static func claims(_ subject: String? = "user-from-token") -> UploadClaims {
        UploadClaims(issuer: issuer, audience: [audience], subject: subject)
    }
}

func sha256Hex(_ text: String) -> String {
    SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
}

/// An app upload body, with the JWS-shaped string the tests use.
func uploadBody(jws: String = fakeJWS(), userId: String? = "user-from-body", extra: String = "") -> String {
    let user = userId.map { #","userId":"\#($0)""# } ?? ""
    return #"{"signedTransaction":"\#(jws)"\#(user)\#(extra)}"#
}

/// Runs an in-process ingest with `uploads`. Without a topic (`bootstrap` unreachable) the
/// refusals still run: they never reach the broker.
func withUploadIngest(
    _ uploads: UploadAuthSettings, topic: String = "unused-raw", bootstrap: String = "127.0.0.1:1",
    offerSigning: OfferSigningSettings? = nil, userUploads: (perMinute: Int, burst: Int) = (60, 120), precheck: ChainPrecheck? = nil,
    _ body: @Sendable (any TestClientProtocol) async throws -> Void
) async throws {
    // Without a broker an upload that gets through answers 503 after the acknowledgement timeout: keep it short.
    let config = IngestConfiguration(
        kafka: KafkaClientConfiguration(bootstrapServers: bootstrap), uploadAuthentication: uploads, rawTopic: topic,
        ackTimeout: bootstrap == "127.0.0.1:1" ? .seconds(1) : TestServices.ingestAckTimeout, offerSigning: offerSigning,
        userUploadsPerMinute: userUploads.perMinute, userUploadBurst: userUploads.burst, uploadPrecheck: precheck)
    let producer = try KafkaProducer(configuration: config.producer, logger: TestServices.logger)
    let app = IngestApplication.build(configuration: config, producer: producer, registry: nil, logger: TestServices.logger)
    try await app.test(.router) { client in try await body(client) }
    await producer.close()
}

/// POSTs an upload with extra headers; returns the response's status, headers and decoded error (if any).
func postUpload(
    _ client: any TestClientProtocol, body: String, headers extra: [(name: String, value: String)] = [],
    uri: String = "/v1/transactions"
) async throws -> (status: HTTPResponse.Status, headers: HTTPFields, error: ErrorBody?, text: String) {
    var headers: HTTPFields = [.contentType: "application/json"]
    for (name, value) in extra { headers[HTTPField.Name(name)!] = value }
    return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body)) { response in
        let data = Data(response.body.readableBytesView)
        return (response.status, response.headers, try? JSONDecoder().decode(ErrorBody.self, from: data), String(decoding: data, as: UTF8.self))
    }
}

func bearer(_ token: String) -> [(name: String, value: String)] { [("Authorization", "Bearer \(token)")] }

/// A JWKS served over HTTP on loopback, as an identity provider serves it; the document can be
/// swapped (key rotation) and fetches are counted.
final class JWKSServer: Sendable {
    let document: Mutex<String>
    let fetches = Atomic<Int>(0)

    init(_ document: String) { self.document = Mutex(document) }

    func publish(_ document: String) { self.document.withLock { $0 = document } }

    /// Serves until `body` returns; `body` gets the JWKS URL.
    func serving(_ body: @Sendable (URL) async throws -> Void) async throws {
        let router = Router()
        router.get("/.well-known/jwks.json") { _, _ -> Response in
            self.fetches.add(1, ordering: .relaxed)
            let text = self.document.withLock { $0 }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            try await body(URL(string: "http://127.0.0.1:\(port)/.well-known/jwks.json")!)
        }
    }
}
