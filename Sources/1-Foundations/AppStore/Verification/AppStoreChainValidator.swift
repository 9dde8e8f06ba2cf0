import Foundation
@_spi(FixedExpiryValidationTime) import X509

/// Validates an App Store signing chain (leaf and intermediate from `x5c`) against configured roots.
///
/// It applies RFC 5280 path validation at one given time plus Apple's chain rule (three certificates,
/// marker extensions), and optionally OCSP. It knows nothing of JWS, so the verifier, the `inspect`
/// CLI and tests can validate certificates directly. Failures are classified into stable codes from the
/// certificates themselves, never from library message text (except OCSP "revoked", see below).
public struct AppStoreChainValidator: Sendable {
    private let roots: CertificateStore
    private let appleRoot: Certificate?
    private let revocation: RevocationChecking?

    /// - Parameters:
    ///   - trustedRoots: Roots the chain may end in; Apple Root CA - G3 is added unless `trustAppleRoot` is false.
    ///   - trustAppleRoot: Whether the embedded Apple Root CA - G3 is trusted.
    ///   - revocation: OCSP settings, or `nil` for offline validation.
    public init(trustedRoots: [Certificate], trustAppleRoot: Bool = true, revocation: RevocationChecking? = nil) {
        var all = trustedRoots
        let appleRoot = trustAppleRoot ? AppleRootCertificates.appleRootCAG3 : nil
        if let appleRoot, !all.contains(appleRoot) { all.append(appleRoot) }
        self.roots = CertificateStore(all)
        self.appleRoot = appleRoot
        self.revocation = revocation
    }

    /// Validates `leaf` → `intermediate` → a trusted root at `time`.
    /// - Throws: ``AppStoreVerificationError`` with a `verification.` code: `missing_marker_extension`,
    ///   `certificate_expired`, `certificate_not_yet_valid`, `untrusted_root`, `invalid_chain`, `revoked`,
    ///   `revocation_check_failed` or `revocation_check_unavailable`.
    public func validate(
        leaf: Certificate,
        intermediate: Certificate,
        at time: Date
    ) async throws(AppStoreVerificationError) -> ValidatedChain {
        try Self.checkMarkers(leaf: leaf, intermediate: intermediate)
        try Self.checkValidity(of: leaf, name: "leaf", at: time)
        try Self.checkValidity(of: intermediate, name: "intermediate", at: time)

        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            AppStoreMarkerPolicy()
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        let chain: ValidatedCertificateChain
        switch result {
        case .validCertificate(let validated):
            chain = validated
        case .couldNotValidate(let failures):
            throw Self.classify(failures, at: time)
        }
        let root = chain.root
        var revocationChecked = false
        if let revocation {
            try await Self.checkRevocation(
                leaf: leaf,
                intermediate: intermediate,
                root: root,
                at: time,
                using: revocation
            )
            revocationChecked = true
        }
        return ValidatedChain(
            leaf: leaf,
            intermediate: intermediate,
            root: root,
            isAnchoredInAppleRoot: appleRoot.map { $0 == root } ?? false,
            revocationChecked: revocationChecked,
            isXcodeTesting: false
        )
    }

    private static func checkMarkers(leaf: Certificate, intermediate: Certificate) throws(AppStoreVerificationError) {
        guard leaf.extensions[oid: AppleMarkerExtensions.receiptSigning] != nil else {
            throw AppStoreVerificationError(
                .missingMarkerExtension,
                "the signing certificate lacks extension \(AppleMarkerExtensions.receiptSigning)"
            )
        }
        guard intermediate.extensions[oid: AppleMarkerExtensions.wwdrIntermediate] != nil else {
            throw AppStoreVerificationError(
                .missingMarkerExtension,
                "the intermediate certificate lacks extension \(AppleMarkerExtensions.wwdrIntermediate)"
            )
        }
    }

    private static func checkValidity(
        of certificate: Certificate,
        name: String,
        at time: Date
    ) throws(AppStoreVerificationError) {
        if time < certificate.notValidBefore {
            throw AppStoreVerificationError(
                .certificateNotYetValid,
                "the \(name) certificate is valid from \(certificate.notValidBefore), after the validation time \(time)"
            )
        }
        if time > certificate.notValidAfter {
            throw AppStoreVerificationError(
                .certificateExpired,
                "the \(name) certificate expired at \(certificate.notValidAfter), before the validation time \(time)"
            )
        }
    }

    /// Classifies a failed path validation from the candidate chains it tried.
    private static func classify(
        _ failures: [CertificateValidationResult.PolicyFailure],
        at time: Date
    ) -> AppStoreVerificationError {
        guard let first = failures.first else {
            return AppStoreVerificationError(
                .untrustedRoot,
                "no chain from the signing certificate through the intermediate reaches a trusted root"
            )
        }
        for failure in failures {
            for certificate in failure.chain {
                if time < certificate.notValidBefore {
                    return AppStoreVerificationError(
                        .certificateNotYetValid,
                        "certificate \(certificate.subject) is not yet valid at \(time)"
                    )
                }
                if time > certificate.notValidAfter {
                    return AppStoreVerificationError(
                        .certificateExpired,
                        "certificate \(certificate.subject) has expired at \(time)"
                    )
                }
            }
        }
        return AppStoreVerificationError(
            .invalidChain,
            "the certificate chain is invalid: \(first.policyFailureReason)"
        )
    }

    private static func checkRevocation(
        leaf: Certificate,
        intermediate: Certificate,
        root: Certificate,
        at time: Date,
        using revocation: RevocationChecking
    ) async throws(AppStoreVerificationError) {
        let requester = OCSPRequesterAdapter(transport: revocation.transport)
        // RFC5280Policy again because it is what handles the certificates' critical extensions; the
        // chain already passed it, so any failure here is OCSP's.
        var verifier = Verifier(rootCertificates: CertificateStore([root])) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            OCSPVerifierPolicy(failureMode: .hard, requester: requester, fixedExpiryValidationTime: time)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .couldNotValidate(let failures) = result else { return }
        let unreachable = requester.transportFailures
        if !unreachable.isEmpty {
            throw AppStoreVerificationError(
                .revocationCheckUnavailable,
                "the OCSP responder could not be reached: \(unreachable.joined(separator: "; "))"
            )
        }
        let reasons = failures.map { String(describing: $0.policyFailureReason) }
        // swift-certificates 1.21 states a revoked status as "revoked through OCSP"; every other
        // reason (bad signature, stale or unknown status) fails closed as revocation_check_failed.
        if reasons.contains(where: { $0.contains("revoked through OCSP") }) {
            throw AppStoreVerificationError(.revoked, "OCSP reports a certificate of the chain as revoked")
        }
        throw AppStoreVerificationError(
            .revocationCheckFailed,
            "OCSP did not confirm the chain as good: \(reasons.first ?? "no usable response")"
        )
    }
}
