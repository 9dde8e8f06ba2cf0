import AppStore
import AppStoreSigning
import Crypto
import Foundation
import JSONCoding
import TestSupport
import Testing
import X509

@Suite("Local signing authority")
struct SigningAuthorityTests {
    @Test("the chain has Apple's shape: P-384 root and intermediate, P-256 leaf, marker extensions")
    func shape() throws {
        let authority = try TestPKI.authority(SigningAuthorityOptions(ocspBaseURL: "http://127.0.0.1:9/ocsp"))
        #expect(P384.Signing.PublicKey(authority.root.publicKey) != nil)
        #expect(P384.Signing.PublicKey(authority.intermediate.publicKey) != nil)
        #expect(P256.Signing.PublicKey(authority.leaf.publicKey) != nil)
        #expect(authority.intermediate.extensions[oid: AppleMarkerExtensions.wwdrIntermediate]?.value == [0x05, 0x00])
        #expect(authority.leaf.extensions[oid: AppleMarkerExtensions.receiptSigning]?.critical == false)
        #expect(try authority.leaf.extensions.basicConstraints == .notCertificateAuthority)
        #expect(
            try authority.intermediate.extensions.authorityInformationAccess?.first?.location
                == .uniformResourceIdentifier("http://127.0.0.1:9/ocsp/root")
        )
        #expect(try authority.root.extensions.authorityInformationAccess == nil)
        let bare = try TestPKI.authority(SigningAuthorityOptions(intermediateHasMarker: false, leafHasMarker: false))
        #expect(bare.intermediate.extensions[oid: AppleMarkerExtensions.wwdrIntermediate] == nil)
        #expect(bare.leaf.extensions[oid: AppleMarkerExtensions.receiptSigning] == nil)
    }

    @Test("a signed JWS is header.payload.signature with an ES256 x5c header and raw r‖s")
    func jwsShape() throws {
        let authority = try TestPKI.authority()
        let token = try authority.makeSigner().sign(["signedDate": AppStoreJSON.date(milliseconds: 1_700_000_000_123)])
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        let header = try AppStoreJSON.decoder.decode(
            [String: JSONValue].self,
            from: Data(try #require(Base64.decodeURL(parts[0])))
        )
        #expect(header["alg"] == .string("ES256"))
        guard case .array(let x5c) = header["x5c"] else {
            Issue.record("no x5c")
            return
        }
        #expect(x5c.count == 3)
        #expect(
            String(decoding: try #require(Base64.decodeURL(parts[1])), as: UTF8.self)
                == #"{"signedDate":1700000000123}"#
        )
        #expect(Base64.decodeURL(parts[2])?.count == 64)
    }

    @Test("an authority written to a directory loads back identical, and loadOrCreate reuses it")
    func storage() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "appstore-ca-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: directory) }

        let created = try SigningAuthority.loadOrCreate(at: directory)
        let reloaded = try SigningAuthority.loadOrCreate(at: directory)
        #expect(reloaded.root == created.root)
        #expect(reloaded.intermediate == created.intermediate)
        #expect(reloaded.leaf == created.leaf)
        #expect(reloaded.leafKey.rawRepresentation == created.leafKey.rawRepresentation)
        let attributes = try FileManager.default.attributesOfItem(
            atPath: directory.appendingPathComponent(SigningAuthority.FileName.leafKey).path
        )
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        // A JWS signed by the reloaded authority verifies against the original root.
        let verifier = try TestPKI.verifier(trusting: [created.root])
        _ = try await verifier.verifyTransaction(reloaded.makeSigner().sign(TestPKI.transaction()))
    }

    @Test("a stored authority asked for another OCSP URL keeps its root and keys; its intermediate and leaf are re-issued naming the URL")
    func reissueForOCSP() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("appstore-ca-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let created = try SigningAuthority.loadOrCreate(at: directory)
        #expect(created.ocspBaseURL == nil)
        let moved = try SigningAuthority.loadOrCreate(at: directory, options: SigningAuthorityOptions(ocspBaseURL: "http://sim:8090/ocsp"))
        #expect(moved.ocspBaseURL == "http://sim:8090/ocsp")
        #expect(moved.root == created.root)
        #expect(moved.leafKey.rawRepresentation == created.leafKey.rawRepresentation)
        #expect(moved.leaf != created.leaf && moved.intermediate != created.intermediate)
        #expect(moved.leaf.serialNumber != created.leaf.serialNumber)
        #expect(moved.leaf.notValidAfter == created.leaf.notValidAfter)
        // Stored: the next start with the same URL changes nothing.
        let again = try SigningAuthority.loadOrCreate(at: directory, options: SigningAuthorityOptions(ocspBaseURL: "http://sim:8090/ocsp"))
        #expect(again.leaf == moved.leaf && again.intermediate == moved.intermediate)
        // Both the old and the new chain still verify under the one root.
        let verifier = try TestPKI.verifier(trusting: [created.root])
        _ = try await verifier.verifyTransaction(created.makeSigner().sign(TestPKI.transaction()))
        _ = try await verifier.verifyTransaction(again.makeSigner().sign(TestPKI.transaction()))
    }

    @Test("mismatched keys and damaged files are refused")
    func refusesDamage() throws {
        let a = try TestPKI.authority()
        let b = try TestPKI.authority()
        #expect(throws: SigningAuthorityError.self) {
            try SigningAuthority(
                root: a.root,
                intermediate: a.intermediate,
                leaf: a.leaf,
                rootKey: a.rootKey,
                intermediateKey: a.intermediateKey,
                leafKey: b.leafKey
            )
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "appstore-ca-\(UUID().uuidString)"
        )
        defer { try? FileManager.default.removeItem(at: directory) }
        try a.write(to: directory)
        try Data("garbage".utf8).write(to: directory.appendingPathComponent(SigningAuthority.FileName.leaf))
        #expect(throws: SigningAuthorityError.self) { try SigningAuthority(contentsOf: directory) }
    }
}
