import EnvironmentSettings
import Foundation
import PipelineRecords
import StageRuntime

/// A raw-topic body, read just enough to find the JWS in it. Nothing here is checked against
/// Apple: the hints an app sends with an upload are carried along as claims, with how ingest
/// authenticated them (`userAuthentication`), for grant to weigh.
public enum RawRecord: Hashable, Sendable {
    /// Apple's webhook envelope `{"signedPayload": "<JWS>"}` (also what notification history replays).
    case notification(signedPayload: String)
    /// An app upload `{"signedTransaction": "<JWS>", "appAccountToken"?, "userId"?, "userAuthentication"?}`.
    case transaction(signedTransaction: String, hints: AppUploadHints?)

    /// Reads a raw body.
    /// - Parameter source: the record's `source` header; an `app-upload` must carry `signedTransaction`.
    /// - Throws: `StageError` with code `record.malformed` when the body is not a JSON object with
    ///   exactly one of `signedPayload` (a string) or `signedTransaction` (a string), or a hint is invalid.
    public static func parse(_ body: [UInt8], source: String?) throws(StageError) -> RawRecord {
        let envelope: Envelope
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: Data(body))
        } catch {
            throw MalformedRecord.error("the raw body is not a JSON object with string signedPayload or signedTransaction")
        }
        switch (envelope.signedPayload, envelope.signedTransaction) {
        case (let payload?, nil):
            guard source != PipelineHeader.Source.appUpload else {
                throw MalformedRecord.error("an app upload must carry signedTransaction, not signedPayload")
            }
            return .notification(signedPayload: payload)
        case (nil, let transaction?):
            return .transaction(signedTransaction: transaction, hints: try hints(envelope))
        case (.some, .some):
            throw MalformedRecord.error("the raw body carries both signedPayload and signedTransaction")
        case (nil, nil):
            let wanted = source == PipelineHeader.Source.appUpload ? "signedTransaction" : "signedPayload"
            throw MalformedRecord.error("the raw body has no \(wanted)")
        }
    }

    private static func hints(_ envelope: Envelope) throws(StageError) -> AppUploadHints? {
        var token: UUID?
        if let text = envelope.appAccountToken {
            guard let parsed = UUID(uuidString: text) else {
                throw MalformedRecord.error("appAccountToken is not a UUID")
            }
            token = parsed
        }
        if let user = envelope.userId, user.isEmpty || user.utf8.count > 256 {
            throw MalformedRecord.error("userId must be a non-empty string of at most 256 bytes")
        }
        var authentication: UploadAuthentication?
        if let text = envelope.userAuthentication {
            guard let parsed = UploadAuthentication(rawValue: text) else {
                throw MalformedRecord.error("userAuthentication is not one of \(UploadAuthentication.allCases.map(\.rawValue))")
            }
            authentication = parsed
        }
        guard token != nil || envelope.userId != nil else { return nil }
        return AppUploadHints(appAccountToken: token, userId: envelope.userId, authentication: authentication)
    }

    private struct Envelope: Decodable {
        var signedPayload: String?
        var signedTransaction: String?
        var appAccountToken: String?
        var userId: String?
        var userAuthentication: String?
    }
}
