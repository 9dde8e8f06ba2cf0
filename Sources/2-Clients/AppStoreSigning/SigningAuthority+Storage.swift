import Crypto
import Foundation
import SwiftASN1
import X509

extension SigningAuthority {
    /// File names inside an authority's directory: certificates and PKCS#8 keys, all PEM.
    public enum FileName {
        public static let root = "root.pem"
        public static let rootKey = "root.key.pem"
        public static let intermediate = "intermediate.pem"
        public static let intermediateKey = "intermediate.key.pem"
        public static let leaf = "leaf.pem"
        public static let leafKey = "leaf.key.pem"
    }

    /// Writes the authority as PEM files into `directory` (created if needed); key files are
    /// readable by the owner only.
    public func write(to directory: URL) throws {
        let manager = FileManager.default
        do {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true)
            try write(
                root.serializeAsPEM().pemString,
                to: directory.appendingPathComponent(FileName.root),
                secret: false
            )
            try write(
                intermediate.serializeAsPEM().pemString,
                to: directory.appendingPathComponent(FileName.intermediate),
                secret: false
            )
            try write(
                leaf.serializeAsPEM().pemString,
                to: directory.appendingPathComponent(FileName.leaf),
                secret: false
            )
            try write(rootKey.pemRepresentation, to: directory.appendingPathComponent(FileName.rootKey), secret: true)
            try write(
                intermediateKey.pemRepresentation,
                to: directory.appendingPathComponent(FileName.intermediateKey),
                secret: true
            )
            try write(leafKey.pemRepresentation, to: directory.appendingPathComponent(FileName.leafKey), secret: true)
        } catch let error as SigningAuthorityError {
            throw error
        } catch {
            throw SigningAuthorityError("cannot write the signing authority to \(directory.path): \(error)")
        }
    }

    /// Loads an authority written by ``write(to:)``.
    public init(contentsOf directory: URL) throws {
        func read(_ name: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            do {
                return try String(contentsOf: url, encoding: .utf8)
            } catch {
                throw SigningAuthorityError("cannot read \(url.path)")
            }
        }
        do {
            try self.init(
                root: try Certificate(pemEncoded: read(FileName.root)),
                intermediate: try Certificate(pemEncoded: read(FileName.intermediate)),
                leaf: try Certificate(pemEncoded: read(FileName.leaf)),
                rootKey: try P384.Signing.PrivateKey(pemRepresentation: read(FileName.rootKey)),
                intermediateKey: try P384.Signing.PrivateKey(pemRepresentation: read(FileName.intermediateKey)),
                leafKey: try P256.Signing.PrivateKey(pemRepresentation: read(FileName.leafKey))
            )
        } catch let error as SigningAuthorityError {
            throw error
        } catch {
            throw SigningAuthorityError("the files in \(directory.path) are not a valid signing authority")
        }
    }

    /// Loads the authority stored in `directory`, or creates one there when the directory holds none:
    /// what a simulator does on start so its root stays the same across restarts.
    ///
    /// When `options.ocspBaseURL` is set and the stored leaf names another OCSP responder (the
    /// simulator moved to another address, or the authority predates OCSP), the intermediate and leaf
    /// are re-issued under the same root with the new URL and stored (``reissued(ocspBaseURL:options:)``).
    /// Without one the stored authority is used as it is, so a process that only signs with it
    /// (a test beside a running simulator) never rewrites it.
    public static func loadOrCreate(
        at directory: URL,
        options: SigningAuthorityOptions = SigningAuthorityOptions()
    ) throws -> SigningAuthority {
        let rootFile = directory.appendingPathComponent(FileName.root)
        if FileManager.default.fileExists(atPath: rootFile.path) {
            let stored = try SigningAuthority(contentsOf: directory)
            guard let wanted = options.ocspBaseURL, stored.ocspBaseURL != wanted else { return stored }
            let reissued = try stored.reissued(ocspBaseURL: wanted, options: options)
            try reissued.write(to: directory)
            return reissued
        }
        let authority = try SigningAuthority(options: options)
        try authority.write(to: directory)
        return authority
    }

    private func write(_ text: String, to url: URL, secret: Bool) throws {
        try Data(text.utf8).write(to: url, options: .atomic)
        if secret {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        }
    }
}
