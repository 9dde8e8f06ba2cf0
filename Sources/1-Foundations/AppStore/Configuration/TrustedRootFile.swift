import Foundation
import SwiftASN1
import X509

/// Loads extra trust anchors (a local test CA, the simulator's root) from DER or PEM files.
///
/// Shared by the verify stage's configuration and `appstorectl inspect`, so both accept the same
/// files. Such roots are honoured for non-Production data only; the verifier enforces that.
public enum TrustedRootFile {
    /// A file that does not hold usable certificates.
    public struct LoadError: Error, Hashable, Sendable, CustomStringConvertible {
        public let path: String
        public let problem: String
        public var description: String { "\(path): \(problem)" }
    }

    /// The certificates in `path`: one DER certificate, or one or more PEM `CERTIFICATE` blocks.
    public static func load(_ path: String) throws(LoadError) -> [Certificate] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LoadError(path: path, problem: "cannot be read")
        }
        return try parse(Array(data), path: path)
    }

    /// The certificates in a file's bytes (see ``load(_:)``).
    public static func parse(_ bytes: [UInt8], path: String) throws(LoadError) -> [Certificate] {
        let text = String(decoding: bytes, as: UTF8.self)
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        guard text.contains(begin) else {
            do {
                return [try Certificate(derEncoded: bytes)]
            } catch {
                throw LoadError(path: path, problem: "is neither a DER certificate nor PEM with a CERTIFICATE block")
            }
        }
        var certificates: [Certificate] = []
        var rest = Substring(text)
        while let start = rest.range(of: begin) {
            guard let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) else {
                throw LoadError(path: path, problem: "has a PEM CERTIFICATE block without its END line")
            }
            do {
                certificates.append(try Certificate(pemEncoded: String(rest[start.lowerBound..<stop.upperBound])))
            } catch {
                throw LoadError(path: path, problem: "has a PEM block that is not an X.509 certificate")
            }
            rest = rest[stop.upperBound...]
        }
        return certificates
    }
}
