import Foundation
import HTTPTypes
import Hummingbird
import JSONCoding
import LogKeys
import Logging
import NIOCore
import OfferSigning
import PipelineRecords

/// `POST /v1/offers/signature`: signs a promotional offer (the original way, or as a JWS) or an
/// introductory-offer eligibility override for the calling user, with the app's In-App Purchase key.
/// The credential is the upload's (``UploadAuthenticator``, jwt or hmac) and is checked before the
/// body is read; the customer a v1 signature names is the one that credential is
/// (``CustomerIdentity``), never one the body picks: a body naming another customer gets 403.
struct OfferSignatureRoute: Sendable {
    let settings: OfferSigningSettings
    let authenticator: UploadAuthenticator
    let logger: Logger

    /// A signature request is a handful of short fields.
    static let maximumBodyBytes = 16 << 10

    func respond(to request: Request) async throws -> Response {
        let requestID = RequestID.accepted(request.headers[.requestID])
        do {
            return try await sign(request, requestID: requestID)
        } catch let error as IngestError {
            logger.debug("offer signature refused", metadata: [LogKey.requestID: "\(requestID)", LogKey.errorCode: "\(error.code)"])
            throw error.answering(requestID)
        }
    }

    private func sign(_ request: Request, requestID: String) async throws -> Response {
        if let type = request.headers[.contentType], !IngestHandler.isJSON(type) { throw IngestError.unsupportedMediaType(type) }
        let body: [UInt8]
        do {
            body = Array(try await request.body.collect(upTo: Self.maximumBodyBytes).readableBytesView)
        } catch {
            throw IngestError.bodyTooLarge(limit: Self.maximumBodyBytes)
        }
        // Credentials first: an unauthenticated client learns nothing about its body.
        let credential = try await authenticator.authenticate(headers: request.headers, body: body)
        let asked = try OfferSignatureRequest.read(body)
        let customer = try Self.customer(credential: credential, asked: asked).uuidString.lowercased()
        let bundleId = try bundle(asked.bundleId)
        let answer: [UInt8]
        switch asked.kind {
        case .promotionalOfferV1(let offerIdentifier):
            guard let signer = settings.promotionalOfferSigner(for: bundleId) else { throw IngestError.offerAppNotConfigured(bundleId) }
            let signed = try Self.signing { () throws(OfferSigningError) in
                try signer.sign(productIdentifier: asked.productId, offerIdentifier: offerIdentifier, appAccountToken: customer)
            }
            answer = try StreamingJSONEncoder.encode(
                PromotionalOfferAnswer(
                    appAccountToken: customer, keyID: signed.keyID, nonce: signed.nonce.uuidString.lowercased(),
                    offerIdentifier: offerIdentifier, productId: asked.productId, signature: signed.signature, timestamp: signed.timestamp,
                    type: asked.kind.name))
        case .promotionalOffer(let offerIdentifier, let transactionId):
            guard let signer = settings.jwsSigner(for: bundleId) else { throw IngestError.offerAppNotConfigured(bundleId) }
            let jws = try Self.signing { () throws(OfferSigningError) in
                try signer.promotionalOffer(productId: asked.productId, offerIdentifier: offerIdentifier, transactionId: transactionId)
            }
            answer = try StreamingJSONEncoder.encode(OfferJWSAnswer(appAccountToken: customer, jws: jws, type: asked.kind.name))
        case .introductoryOfferEligibility(let allow, let transactionId):
            guard let signer = settings.jwsSigner(for: bundleId) else { throw IngestError.offerAppNotConfigured(bundleId) }
            let jws = try Self.signing { () throws(OfferSigningError) in
                try signer.introductoryOfferEligibility(productId: asked.productId, allowIntroductoryOffer: allow, transactionId: transactionId)
            }
            answer = try StreamingJSONEncoder.encode(OfferJWSAnswer(appAccountToken: customer, jws: jws, type: asked.kind.name))
        }
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store", .requestID: requestID],
            body: .init(byteBuffer: ByteBuffer(bytes: answer)))
    }

    /// The app the body names, or the only configured one when it names none.
    private func bundle(_ named: String?) throws(IngestError) -> String {
        if let named { return named }
        guard settings.bundleIds.count == 1 else {
            throw IngestError.missingField("bundleId")
        }
        return settings.bundleIds[0]
    }

    /// The caller's own customer: the token's user (jwt) or the body's `userId` the backend vouches
    /// for (hmac). A body `appAccountToken` may only repeat it.
    static func customer(credential: UploadCredential, asked: OfferSignatureRequest) throws(IngestError) -> UUID {
        let user: String
        switch credential.mode {
        case .jwt:
            guard let tokenUser = credential.tokenUser else { preconditionFailure("a jwt credential names its user") }
            user = tokenUser
        case .hmac:
            guard let bodyUser = asked.hints.userId else { throw IngestError.missingField("userId") }
            user = bodyUser
        case .none:
            throw IngestError(
                .unauthorized, .missingCredentials, "offer signatures need an authenticated user (INGEST_UPLOAD_AUTH jwt or hmac)")
        }
        let customer = CustomerIdentity.customer(forUser: user)
        if let token = asked.hints.appAccountToken.flatMap(AppUploadHints.appAccountToken(from:)), token != customer {
            throw IngestError.foreignOfferAccountToken()
        }
        return customer
    }

    /// Runs a signer, its refusals as ingest's answers: a field it cannot sign is the client's 400,
    /// a failure to sign is ours (500).
    private static func signing<T>(_ body: () throws(OfferSigningError) -> T) throws(IngestError) -> T {
        switch Result(catching: body) {
        case .success(let value):
            return value
        case .failure(let error) where error.code == .invalidField:
            throw IngestError.invalidField("the offer", "cannot be signed: \(error.message)")
        case .failure(let error):
            throw IngestError(.internalServerError, IngestError.Code(rawValue: error.code.rawValue), error.message)
        }
    }
}

/// The body of `POST /v1/offers/signature`, checked.
struct OfferSignatureRequest {
    enum Kind {
        /// `promotional-offer-v1`: Apple's original signature (keyID, nonce, timestamp, signature).
        case promotionalOfferV1(offerIdentifier: String)
        /// `promotional-offer`: the JWS; `transactionId` optional, as Apple's creators take it.
        case promotionalOffer(offerIdentifier: String, transactionId: String?)
        /// `introductory-offer-eligibility`: the JWS; `transactionId` required.
        case introductoryOfferEligibility(allow: Bool, transactionId: String)

        var name: String {
            switch self {
            case .promotionalOfferV1: "promotional-offer-v1"
            case .promotionalOffer: "promotional-offer"
            case .introductoryOfferEligibility: "introductory-offer-eligibility"
            }
        }
    }

    static let kinds = ["promotional-offer-v1", "promotional-offer", "introductory-offer-eligibility"]

    var kind: Kind
    var productId: String
    var bundleId: String?
    var hints: RequestValidation.Hints

    static func read(_ body: [UInt8]) throws(IngestError) -> OfferSignatureRequest {
        let object = try RequestValidation.jsonObject(body)
        guard let type = object["type"] as? String else { throw IngestError.missingField("type") }
        let productId = try text(object, "productId")
        let kind: Kind
        switch type {
        case "promotional-offer-v1":
            kind = .promotionalOfferV1(offerIdentifier: try text(object, "offerIdentifier"))
        case "promotional-offer":
            kind = .promotionalOffer(offerIdentifier: try text(object, "offerIdentifier"), transactionId: try transaction(object))
        case "introductory-offer-eligibility":
            guard let allow = object["allowIntroductoryOffer"] as? Bool else {
                throw IngestError.invalidField("allowIntroductoryOffer", "must be true or false")
            }
            guard let transactionId = try transaction(object) else { throw IngestError.missingField("transactionId") }
            kind = .introductoryOfferEligibility(allow: allow, transactionId: transactionId)
        default:
            throw IngestError.invalidField("type", "must be one of \(kinds.joined(separator: ", "))")
        }
        var bundleId: String?
        if object["bundleId"] != nil { bundleId = try text(object, "bundleId") }
        return OfferSignatureRequest(kind: kind, productId: productId, bundleId: bundleId, hints: try RequestValidation.hints(object))
    }

    /// A required string of 1 to 256 bytes.
    private static func text(_ object: [String: Any], _ name: String) throws(IngestError) -> String {
        guard let value = object[name] else { throw IngestError.missingField(name) }
        guard let text = value as? String, (1...256).contains(text.utf8.count) else {
            throw IngestError.invalidField(name, "must be a string of 1 to 256 bytes")
        }
        return text
    }

    /// Apple's transaction IDs (and `appTransactionId`) are decimal digits; absent or null is nil.
    private static func transaction(_ object: [String: Any]) throws(IngestError) -> String? {
        guard let value = object["transactionId"], !(value is NSNull) else {
            return nil
        }
        guard let text = value as? String, (1...32).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw IngestError.invalidField("transactionId", "must be Apple's numeric transaction ID (or appTransactionId) as a string")
        }
        return text
    }
}

/// A `promotional-offer-v1` answer: what StoreKit's promotional offer takes, and the
/// `appAccountToken` the purchase must carry (the message names it).
struct PromotionalOfferAnswer: Encodable {
    var appAccountToken: String
    var keyID: String
    var nonce: String
    var offerIdentifier: String
    var productId: String
    var signature: String
    var timestamp: Int64
    var type: String
}

/// A JWS answer, with the `appAccountToken` the purchase should carry.
struct OfferJWSAnswer: Encodable {
    var appAccountToken: String
    var jws: String
    var type: String
}
