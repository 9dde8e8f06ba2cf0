import Foundation

/// The fixtures shared beside the repository (`../shared/fixtures`): Apple's real signed data and
/// the test data of Apple's own library. Not part of a clone, so tests that read them are enabled
/// only when they are present.
public enum SharedFixtures {
    /// The fixtures directory, when present.
    public static let directory: URL? = {
        let fixtures = TestServices.repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/fixtures")
        return FileManager.default.fileExists(atPath: fixtures.path) ? fixtures : nil
    }()

    /// A fixture file's URL, when it is present.
    public static func url(_ path: String) -> URL? {
        guard let url = directory?.appendingPathComponent(path), FileManager.default.fileExists(atPath: url.path) else { return nil }
        return url
    }

    /// Whether Apple's real signed samples (`apple-real-jws/`, with their manifest) are present.
    public static var hasRealJWS: Bool { url("apple-real-jws/manifest.json") != nil }

    /// Whether the test data of Apple's library (`apple-library-testdata/`) is present.
    public static var hasAppleLibraryData: Bool { url("apple-library-testdata/certs/testCA.der") != nil }

    /// The file names of every real signed sample (`*.jws`).
    public static func realJWSFiles() throws -> [String] {
        guard let directory = url("apple-real-jws") else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".jws") }.sorted()
    }

    /// A real sample's compact JWS, without surrounding white space.
    public static func realToken(_ file: String) throws -> String {
        guard let url = url("apple-real-jws/\(file)") else { throw TestSupportError("the shared fixture apple-real-jws/\(file) is missing") }
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// One entry of `apple-real-jws/manifest.json`: a sample, what it is, and the verdict Apple's
    /// Python library gave it offline.
    public struct RealSample: Decodable, Sendable {
        public let file: String
        public let kind: String
        public let environment: String?
        public let bundleId: String?
        public let appAppleId: Int64?
        public let parentFile: String?
        public let appleLibraryVerdict: String

        enum CodingKeys: String, CodingKey {
            case file, kind, environment, bundleId, appAppleId
            case parentFile = "parent_file"
            case appleLibraryVerdict = "official_python_lib_offline"
        }
    }

    /// Every sample of the manifest.
    public static func realSamples() throws -> [RealSample] {
        guard let url = url("apple-real-jws/manifest.json") else {
            throw TestSupportError("the shared fixture apple-real-jws/manifest.json is missing")
        }
        return try JSONDecoder().decode([RealSample].self, from: Data(contentsOf: url))
    }
}
