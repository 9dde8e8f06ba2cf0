import Foundation

/// Finds the JWS in what support pastes: a bare compact JWS (line breaks allowed), a JSON string,
/// or a JSON body such as Apple's `{"signedPayload": …}` or an app upload `{"signedTransaction": …}`.
public enum InspectInput {
    /// The body fields searched, in order.
    public static let fields = [
        "signedPayload", "signedTransaction", "signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo",
    ]

    /// The token and, for a JSON body, the field it came from.
    /// - Throws: ``InspectFailure`` `verification.malformed` when the input holds no token.
    public static func extract(from text: String) throws(InspectFailure) -> (token: String, field: String?) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw malformed("the input is empty")
        }
        if trimmed.hasPrefix("{") || trimmed.hasPrefix("[") || trimmed.hasPrefix("\"") {
            guard let parsed = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8), options: [.fragmentsAllowed]) else {
                throw malformed("the input starts like JSON but is not valid JSON")
            }
            if let string = parsed as? String {
                return (compact(string), nil)
            }
            guard let object = parsed as? [String: Any] else {
                throw malformed("the JSON input is not an object")
            }
            for field in fields {
                if let token = object[field] as? String { return (compact(token), field) }
            }
            throw malformed("the JSON input has none of \(fields.joined(separator: ", "))")
        }
        return (compact(trimmed), nil)
    }

    /// Drops whitespace (a token pasted from a wrapped log line); base64url has none.
    private static func compact(_ token: String) -> String {
        String(token.unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) }.map(Character.init))
    }

    private static func malformed(_ message: String) -> InspectFailure {
        .rejected(AppStoreVerificationError(.malformed, message))
    }
}
