import AppStore
import Foundation
import X509

extension SigningAuthority {
    /// The OCSP base URL the leaf names (its AIA location without the trailing `/intermediate`), or
    /// `nil` when the leaf names no responder. See ``SigningAuthorityOptions/ocspBaseURL``.
    public var ocspBaseURL: String? {
        guard let location = Self.ocspLocation(of: leaf) else { return nil }
        let suffix = "/intermediate"
        return location.hasSuffix(suffix) ? String(location.dropLast(suffix.count)) : location
    }

    /// The same root with a new intermediate and leaf (same keys, names and validity, new serial
    /// numbers) naming `ocspBaseURL` as their responders, or none when `nil`.
    ///
    /// The root is what pipelines are told to trust, so moving a simulator to another address must
    /// not change it: only the certificates below the root carry the responder's URL. Data signed
    /// before keeps its own `x5c` and still chains to the same root.
    public func reissued(ocspBaseURL: String?, options: SigningAuthorityOptions = SigningAuthorityOptions()) throws -> SigningAuthority {
        let hasIntermediateMarker = intermediate.extensions[oid: AppleMarkerExtensions.wwdrIntermediate] != nil
        let hasLeafMarker = leaf.extensions[oid: AppleMarkerExtensions.receiptSigning] != nil
        let newIntermediate = try CertificateFactory.makeIntermediate(
            commonName: "\(options.name) Intermediate CA",
            key: intermediateKey,
            validity: intermediate.notValidBefore...intermediate.notValidAfter,
            issuer: root,
            issuerKey: rootKey,
            hasMarker: hasIntermediateMarker,
            ocspURL: ocspBaseURL.map { "\($0)/root" }
        )
        let newLeaf = try CertificateFactory.makeLeaf(
            commonName: "\(options.name) Receipt Signing",
            key: leafKey,
            validity: leaf.notValidBefore...leaf.notValidAfter,
            issuer: newIntermediate,
            issuerKey: intermediateKey,
            hasMarker: hasLeafMarker,
            ocspURL: ocspBaseURL.map { "\($0)/intermediate" }
        )
        return try SigningAuthority(
            root: root,
            intermediate: newIntermediate,
            leaf: newLeaf,
            rootKey: rootKey,
            intermediateKey: intermediateKey,
            leafKey: leafKey
        )
    }

    /// The first OCSP URI in a certificate's Authority Information Access extension.
    static func ocspLocation(of certificate: Certificate) -> String? {
        guard let access = try? certificate.extensions.authorityInformationAccess else { return nil }
        for description in access where description.method == .ocspServer {
            if case .uniformResourceIdentifier(let uri) = description.location { return uri }
        }
        return nil
    }
}
