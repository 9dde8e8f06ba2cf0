import AppStore
import Foundation
import JSONCoding
import SwiftASN1
import Synchronization
import X509

/// A cheap look at an uploaded JWS before anything is written, so junk costs the sender a 400 and
/// costs the pipeline no disk, no verify time and no dead letter.
///
/// It checks only what verify would refuse anyway, never more: the header's `alg` is ES256, its
/// `x5c` holds three certificates (or the single one of Xcode's StoreKit testing signer, which
/// verify judges by its own rules), and the intermediate was issued by a trusted root (Apple Root
/// CA - G3, or a root of `APPSTORE_TRUSTED_ROOTS`): its issuer names the root's subject, and its
/// authority key identifier, when present, the root's key. No signature is checked here — verify
/// does that — so a copy of a real chain passes, and costs its sender the per-user quota. An
/// intermediate seen to match is remembered by its bytes (Apple has a handful), so the usual
/// upload costs a header decode and a set lookup.
public final class ChainPrecheck: Sendable {
    struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
    }

    struct Issuer: Hashable {
        var subject: DistinguishedName
        var keyIdentifier: ArraySlice<UInt8>?
    }

    private let issuers: [Issuer]
    private let known = Mutex<Set<[UInt8]>>([])
    /// Most intermediates remembered; more than Apple will ever use at once.
    static let capacity = 64

    /// - Parameter trustedRoots: the roots verify trusts besides Apple Root CA - G3.
    public init(trustedRoots: [Certificate]) {
        let roots = (AppleRootCertificates.appleRootCAG3.map { [$0] } ?? []) + trustedRoots
        issuers = roots.map { root in
            Issuer(subject: root.subject, keyIdentifier: (try? root.extensions.subjectKeyIdentifier)??.keyIdentifier)
        }
    }

    /// - Throws: ``IngestError`` 400 `request.untrusted_chain` naming what is wrong.
    public func check(_ jws: String, name: String) throws(IngestError) {
        guard let end = jws.utf8.firstIndex(of: UInt8(ascii: ".")),
            let bytes = Base64.decodeURL(jws[..<end]),
            let header = try? JSONDecoder().decode(Header.self, from: Data(bytes))
        else { throw .untrustedChain(name, "its header is not a JSON object with alg and x5c") }
        guard header.alg == "ES256" else { throw .untrustedChain(name, "its alg is not ES256") }
        guard let x5c = header.x5c else { throw .untrustedChain(name, "its header has no x5c certificate chain") }
        if x5c.count == 1 { return }
        guard x5c.count == 3 else { throw .untrustedChain(name, "its x5c holds \(x5c.count) certificates instead of 3") }
        guard let der = Base64.decodeStandard(x5c[1]) else { throw .untrustedChain(name, "its intermediate certificate is not base64") }
        if known.withLock({ $0.contains(der) }) { return }
        guard let intermediate = try? Certificate(derEncoded: der) else {
            throw .untrustedChain(name, "its intermediate certificate is not a DER X.509 certificate")
        }
        let authority = (try? intermediate.extensions.authorityKeyIdentifier)??.keyIdentifier
        let issued = issuers.contains { root in
            root.subject == intermediate.issuer && (authority == nil || root.keyIdentifier == nil || authority == root.keyIdentifier)
        }
        guard issued else { throw .untrustedChain(name, "its intermediate was not issued by a trusted root") }
        known.withLock { if $0.count < Self.capacity { $0.insert(der) } }
    }
}
