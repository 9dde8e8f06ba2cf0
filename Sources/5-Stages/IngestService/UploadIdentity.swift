import Foundation
import PipelineRecords

/// Who an upload's purchase is for, from its credential: the authenticated user and the one
/// customer that user is (``CustomerIdentity``). The body can only repeat that customer; a body
/// `appAccountToken` naming anyone else is refused (403), so an authenticated user can name no
/// other customer.
struct UploadIdentity: Equatable {
    /// The user stored with the upload: the token's (jwt), the body's (hmac vouches for it; with
    /// open uploads it is only a claim).
    var userId: String?
    /// The customer stored as the upload's `appAccountToken`.
    var customer: UUID?

    static func resolve(credential: UploadCredential, accepted: RequestValidation.Hints) throws(IngestError) -> UploadIdentity {
        let bodyToken = accepted.appAccountToken.flatMap(AppUploadHints.appAccountToken(from:))
        let user: String?
        switch credential.mode {
        case .jwt: user = credential.tokenUser
        case .hmac, .none: user = accepted.userId
        }
        guard let user else {
            // No user: a signing backend vouches for the body's customer; open uploads only claim it.
            return UploadIdentity(userId: nil, customer: bodyToken)
        }
        let customer = CustomerIdentity.customer(forUser: user)
        if credential.mode != .none, let bodyToken, bodyToken != customer {
            throw IngestError.foreignAccountToken()
        }
        return UploadIdentity(userId: user, customer: credential.mode == .none ? bodyToken ?? customer : customer)
    }
}
