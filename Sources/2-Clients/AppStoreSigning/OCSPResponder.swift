import AppStore
import Crypto
import Foundation
import SwiftASN1
import X509

/// An OCSP responder for a ``SigningAuthority``: answers for the intermediate (signed by the root)
/// and for any leaf the intermediate issued (signed by the intermediate).
///
/// It lets tests, and the simulated Apple server, exercise the verifier's online revocation checks
/// without the internet. It conforms to ``OCSPTransport`` so a verifier can use it in-process;
/// a simulator can also serve ``response(to:)`` over HTTP. swift-certificates keeps its OCSP types
/// internal, so the RFC 6960 messages are assembled here with SwiftASN1's DER serializer.
public struct OCSPResponder: OCSPTransport {
    /// The authority answered for.
    public let authority: SigningAuthority
    /// Serial numbers reported as revoked.
    public var revokedSerialNumbers: Set<Certificate.SerialNumber>
    /// How long an answer is valid (`nextUpdate - thisUpdate`), in seconds.
    public var validity: TimeInterval
    /// The responder's clock.
    public var clock: @Sendable () -> Date

    public init(
        authority: SigningAuthority,
        revokedSerialNumbers: Set<Certificate.SerialNumber> = [],
        validity: TimeInterval = 12 * 3600,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.authority = authority
        self.revokedSerialNumbers = revokedSerialNumbers
        self.validity = validity
        self.clock = clock
    }

    public func send(request: [UInt8], to url: String) async throws -> [UInt8] {
        try response(to: request)
    }

    /// The DER `OCSPResponse` for a DER `OCSPRequest`: `successful` with a signed single response for
    /// the first requested certificate, `malformedRequest` when the request does not parse, and
    /// `unauthorized` when the issuer is not this authority's root or intermediate.
    public func response(to request: [UInt8]) throws -> [UInt8] {
        guard let parsed = try? ParsedRequest(request) else {
            return try Self.unsuccessful(status: 1)
        }
        let issuer: (certificate: Certificate, key: P384.Signing.PrivateKey)
        if Self.keyHashes(of: authority.intermediate).contains(parsed.issuerKeyHash) {
            issuer = (authority.intermediate, authority.intermediateKey)
        } else if Self.keyHashes(of: authority.root).contains(parsed.issuerKeyHash) {
            issuer = (authority.root, authority.rootKey)
        } else {
            return try Self.unsuccessful(status: 6)
        }
        let now = clock()
        var tbs = DER.Serializer()
        try tbs.appendConstructedNode(identifier: .sequence) { coder in
            // responderID: byName [1] EXPLICIT Name
            try coder.serialize(
                issuer.certificate.subject,
                explicitlyTaggedWithTagNumber: 1,
                tagClass: .contextSpecific
            )
            try coder.serialize(Self.generalizedTime(now))
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    coder.serialize(parsed.certID)
                    try serializeStatus(for: parsed.serialNumber, at: now, into: &coder)
                    try coder.serialize(Self.generalizedTime(now))
                    try coder.serialize(
                        Self.generalizedTime(now.addingTimeInterval(validity)),
                        explicitlyTaggedWithTagNumber: 0,
                        tagClass: .contextSpecific
                    )
                }
            }
            if let nonceExtensions = parsed.requestExtensions {
                coder.serialize(explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific) { coder in
                    coder.serialize(nonceExtensions)
                }
            }
        }
        let tbsBytes = tbs.serializedBytes
        let signature = try issuer.key.signature(for: Data(tbsBytes))

        var basic = DER.Serializer()
        try basic.appendConstructedNode(identifier: .sequence) { coder in
            coder.serializeRawBytes(tbsBytes)
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.serialize(Self.ecdsaWithSHA384)
            }
            try coder.serialize(ASN1BitString(bytes: Array(signature.derRepresentation)[...]))
        }

        var response = DER.Serializer()
        try response.appendConstructedNode(identifier: .sequence) { coder in
            coder.appendPrimitiveNode(identifier: .enumerated) { $0.append(0) }
            try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                try coder.appendConstructedNode(identifier: .sequence) { coder in
                    try coder.serialize(Self.basicResponseType)
                    try coder.serialize(ASN1OctetString(contentBytes: basic.serializedBytes[...]))
                }
            }
        }
        return response.serializedBytes
    }

    private func serializeStatus(
        for serialNumber: Certificate.SerialNumber,
        at now: Date,
        into coder: inout DER.Serializer
    ) throws {
        if revokedSerialNumbers.contains(serialNumber) {
            // revoked [1] IMPLICIT RevokedInfo { revocationTime }
            try coder.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)) {
                coder in
                try coder.serialize(Self.generalizedTime(now.addingTimeInterval(-60)))
            }
        } else {
            // good [0] IMPLICIT NULL
            coder.appendPrimitiveNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) { _ in }
        }
    }

    private static let basicResponseType: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 1]
    private static let ecdsaWithSHA384: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 3, 3]

    /// An `OCSPResponse` with only an unsuccessful `responseStatus` (RFC 6960 4.2.1: 1 malformedRequest,
    /// 2 internalError, 3 tryLater, 5 sigRequired, 6 unauthorized) and no response bytes.
    public static func unsuccessful(status: UInt8) throws -> [UInt8] {
        var response = DER.Serializer()
        response.appendConstructedNode(identifier: .sequence) { coder in
            coder.appendPrimitiveNode(identifier: .enumerated) { $0.append(status) }
        }
        return response.serializedBytes
    }

    /// SHA-1 and SHA-256 of the certificate's public key bits, as a CertID's issuerKeyHash holds.
    private static func keyHashes(of certificate: Certificate) -> [[UInt8]] {
        let key = certificate.publicKey.subjectPublicKeyInfoBytes
        return [Array(Insecure.SHA1.hash(data: key)), Array(SHA256.hash(data: key))]
    }

    private static func generalizedTime(_ date: Date) throws -> GeneralizedTime {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return try GeneralizedTime(
            year: parts.year ?? 1970,
            month: parts.month ?? 1,
            day: parts.day ?? 1,
            hours: parts.hour ?? 0,
            minutes: parts.minute ?? 0,
            seconds: parts.second ?? 0,
            fractionalSeconds: 0
        )
    }
}

/// The parts of an `OCSPRequest` the responder needs: the first CertID (echoed verbatim), its
/// issuer key hash and serial number, and the request extensions (nonce, echoed verbatim).
private struct ParsedRequest {
    let certID: ASN1Node
    let issuerKeyHash: [UInt8]
    let serialNumber: Certificate.SerialNumber
    let requestExtensions: ASN1Node?

    init(_ bytes: [UInt8]) throws {
        let root = try DER.parse(bytes)
        guard case .constructed(let top) = root.content, let tbs = top.first(where: { _ in true }),
            case .constructed(let tbsChildren) = tbs.content
        else { throw ASN1Error.invalidASN1Object(reason: "OCSPRequest is not a sequence") }
        var requestList: ASN1Node?
        var extensions: ASN1Node?
        let extensionsTag = ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific)
        for child in tbsChildren {
            if child.identifier == .sequence, requestList == nil {
                requestList = child
            } else if child.identifier == extensionsTag, case .constructed(let inner) = child.content {
                extensions = inner.first(where: { _ in true })
            }
        }
        guard let requestList, case .constructed(let requests) = requestList.content,
            let request = requests.first(where: { _ in true }),
            case .constructed(let requestChildren) = request.content,
            let certID = requestChildren.first(where: { _ in true }),
            case .constructed(let certIDChildren) = certID.content
        else { throw ASN1Error.invalidASN1Object(reason: "OCSPRequest has no CertID") }
        let fields = Array(certIDChildren)
        guard fields.count == 4 else { throw ASN1Error.invalidASN1Object(reason: "CertID has 4 fields") }
        self.certID = certID
        self.issuerKeyHash = Array(try ASN1OctetString(derEncoded: fields[2]).bytes)
        self.serialNumber = Certificate.SerialNumber(bytes: try ArraySlice<UInt8>(derEncoded: fields[3]))
        self.requestExtensions = extensions
    }
}
