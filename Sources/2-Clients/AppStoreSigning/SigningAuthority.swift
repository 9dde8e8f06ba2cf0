import AppStore
import Crypto
import Foundation
import X509

/// A local stand-in for Apple's App Store signing PKI: a P-384 root and intermediate and a P-256
/// leaf, shaped like Apple's (marker extensions, optional OCSP locations).
///
/// Tests build one in code for every rule the verifier enforces; the simulated Apple server creates
/// one on first start, stores it as PEM files and reuses it, so its root can be configured as an
/// additional trusted root of the pipeline. Verifiers accept it only for non-Production data.
/// - Important: The private keys are test keys and are exposed on purpose. Never configure such a
///   root in a verifier that handles real customers' Production data (the verifier refuses anyway).
public struct SigningAuthority: Sendable {
    /// The self-signed root; configure it as an additional trusted root.
    public let root: Certificate
    /// The intermediate (WWDR stand-in).
    public let intermediate: Certificate
    /// The signing leaf.
    public let leaf: Certificate
    /// The root's key.
    public let rootKey: P384.Signing.PrivateKey
    /// The intermediate's key; signs leaves and the leaf's OCSP answers.
    public let intermediateKey: P384.Signing.PrivateKey
    /// The leaf's key; signs JWS.
    public let leafKey: P256.Signing.PrivateKey

    /// Creates a fresh authority with new keys.
    public init(options: SigningAuthorityOptions = SigningAuthorityOptions()) throws {
        let rootKey = P384.Signing.PrivateKey()
        let intermediateKey = P384.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let root = try CertificateFactory.makeRoot(
            commonName: "\(options.name) Root CA",
            key: rootKey,
            validity: options.rootValidity
        )
        let intermediate = try CertificateFactory.makeIntermediate(
            commonName: "\(options.name) Intermediate CA",
            key: intermediateKey,
            validity: options.intermediateValidity,
            issuer: root,
            issuerKey: rootKey,
            hasMarker: options.intermediateHasMarker,
            ocspURL: options.ocspBaseURL.map { "\($0)/root" }
        )
        let leaf = try CertificateFactory.makeLeaf(
            commonName: "\(options.name) Receipt Signing",
            key: leafKey,
            validity: options.leafValidity,
            issuer: intermediate,
            issuerKey: intermediateKey,
            hasMarker: options.leafHasMarker,
            ocspURL: options.ocspBaseURL.map { "\($0)/intermediate" }
        )
        try self.init(
            root: root,
            intermediate: intermediate,
            leaf: leaf,
            rootKey: rootKey,
            intermediateKey: intermediateKey,
            leafKey: leafKey
        )
    }

    /// Assembles an authority from existing parts, checking that each key matches its certificate.
    public init(
        root: Certificate,
        intermediate: Certificate,
        leaf: Certificate,
        rootKey: P384.Signing.PrivateKey,
        intermediateKey: P384.Signing.PrivateKey,
        leafKey: P256.Signing.PrivateKey
    ) throws {
        guard root.publicKey == Certificate.PublicKey(rootKey.publicKey),
            intermediate.publicKey == Certificate.PublicKey(intermediateKey.publicKey),
            leaf.publicKey == Certificate.PublicKey(leafKey.publicKey)
        else {
            throw SigningAuthorityError("a private key does not match its certificate")
        }
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
    }

    /// The certificate chain as Apple sends it in `x5c`: leaf, intermediate, root.
    public var certificateChain: [Certificate] { [leaf, intermediate, root] }

    /// A signer that produces JWS with this authority's leaf and full chain.
    public func makeSigner() throws -> JWSSigner {
        try JWSSigner(key: leafKey, certificateChain: certificateChain)
    }

    /// Issues another leaf under this authority's intermediate (a rotated signing key, or a broken
    /// variant for tests), and returns a signer for it with the chain leaf, intermediate, root.
    public func issueLeaf(
        commonName: String = "Local App Store Receipt Signing (extra)",
        validity: ClosedRange<Date>? = nil,
        hasMarker: Bool = true,
        ocspURL: String? = nil
    ) throws -> JWSSigner {
        let key = P256.Signing.PrivateKey()
        let certificate = try CertificateFactory.makeLeaf(
            commonName: commonName,
            key: key,
            validity: validity ?? leaf.notValidBefore...leaf.notValidAfter,
            issuer: intermediate,
            issuerKey: intermediateKey,
            hasMarker: hasMarker,
            ocspURL: ocspURL
        )
        return try JWSSigner(key: key, certificateChain: [certificate, intermediate, root])
    }
}
