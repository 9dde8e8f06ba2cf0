/// The JOSE header fields the verifier reads; every other field is ignored.
struct JWSHeader: Decodable, Sendable {
    /// Must be `ES256`.
    var alg: String?
    /// Standard-base64 DER certificates: leaf, intermediate, root.
    var x5c: [String]?
}
