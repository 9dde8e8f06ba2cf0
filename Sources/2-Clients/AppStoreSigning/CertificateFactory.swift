import AppStore
import Crypto
import Foundation
import SwiftASN1
import X509

/// Builds the certificates of a local App Store signing chain with swift-certificates.
///
/// Kept separate from ``SigningAuthority`` so tests and the simulator can mint extra variants (a
/// second leaf, a leaf without its marker) under an existing authority.
public enum CertificateFactory {
    /// A self-signed P-384 root: CA, key usage keyCertSign/cRLSign, subject key identifier.
    public static func makeRoot(
        commonName: String,
        key: P384.Signing.PrivateKey,
        validity: ClosedRange<Date>
    ) throws -> Certificate {
        let name = try distinguishedName(commonName)
        let publicKey = Certificate.PublicKey(key.publicKey)
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(hash: publicKey)
        }
        return try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: publicKey,
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
    }

    /// A P-384 intermediate under `issuer`: CA with path length 0, optionally Apple's WWDR marker and
    /// an OCSP location.
    public static func makeIntermediate(
        commonName: String,
        key: P384.Signing.PrivateKey,
        validity: ClosedRange<Date>,
        issuer: Certificate,
        issuerKey: P384.Signing.PrivateKey,
        hasMarker: Bool = true,
        ocspURL: String? = nil
    ) throws -> Certificate {
        let publicKey = Certificate.PublicKey(key.publicKey)
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(hash: publicKey)
            AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: issuer.publicKey).keyIdentifier)
        }
        if hasMarker {
            try extensions.append(marker(AppleMarkerExtensions.wwdrIntermediate))
        }
        if let ocspURL {
            try extensions.append(ocspLocation(ocspURL))
        }
        return try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: publicKey,
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: issuer.subject,
            subject: try distinguishedName(commonName),
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(issuerKey)
        )
    }

    /// A P-256 signing leaf under `issuer`: not a CA, digitalSignature, optionally Apple's
    /// receipt-signing marker and an OCSP location.
    public static func makeLeaf(
        commonName: String,
        key: P256.Signing.PrivateKey,
        validity: ClosedRange<Date>,
        issuer: Certificate,
        issuerKey: P384.Signing.PrivateKey,
        hasMarker: Bool = true,
        ocspURL: String? = nil
    ) throws -> Certificate {
        let publicKey = Certificate.PublicKey(key.publicKey)
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            SubjectKeyIdentifier(hash: publicKey)
            AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: issuer.publicKey).keyIdentifier)
        }
        if hasMarker {
            try extensions.append(marker(AppleMarkerExtensions.receiptSigning))
        }
        if let ocspURL {
            try extensions.append(ocspLocation(ocspURL))
        }
        return try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: publicKey,
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: issuer.subject,
            subject: try distinguishedName(commonName),
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(issuerKey)
        )
    }

    /// Apple's marker extension: non-critical, value DER NULL.
    public static func marker(_ oid: ASN1ObjectIdentifier) -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: AppleMarkerExtensions.value[...])
    }

    private static func ocspLocation(_ url: String) throws -> Certificate.Extension {
        try Certificate.Extension(
            AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(url))]),
            critical: false
        )
    }

    private static func distinguishedName(_ commonName: String) throws -> DistinguishedName {
        try DistinguishedName {
            CommonName(commonName)
            OrganizationalUnitName("App Store Entitlements test PKI")
            OrganizationName("Local")
            CountryName("US")
        }
    }
}
